/**
 * The codec alone against real Apache Kafka (4.x and 3.9): every request here is
 * encoded by @tidelog/protocol and every response decoded by it, over a plain
 * socket. Records we encode (each codec) must be accepted, stored and served back
 * by Kafka unchanged, and Kafka's own version ranges must be decodable.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  ApiKeys,
  CompressionType,
  decodeRecordBatches,
  encodeRecordBatch,
  errorByCode,
  getApi,
  type ApiVersionsResponse,
  type CompressionName,
  type MetadataResponse,
} from '@tidelog/protocol'
import { mkdirSync, writeFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { KAFKA_VERSIONS, peerUnavailable, startKafka, type KafkaNode } from '../helpers/kafka.js'
import { kafkaUse, recordsPeers } from '../helpers/peers.js'
import { RawClient } from '../helpers/raw-client.js'

// zstd is encoded only where node:zlib has it (Node >= 22.15); on Node 20 it is
// covered by having Kafka itself recompress (below), which also proves we read
// what the Java codecs write (xerial-framed snappy, Kafka's lz4 frames).
// TIDELOG_UPDATE_GOLDEN=1 stores the raw response bodies Kafka sent as golden
// fixtures (hex, with their origin) for the protocol package's unit tests, which
// decode them and re-encode them byte for byte without needing Kafka.
const goldenDir = fileURLToPath(new URL('../../packages/protocol/test/golden/kafka/', import.meta.url))
function capture(kafkaVersion: string, apiName: string, apiVersion: number, raw: Buffer): void {
  if (process.env.TIDELOG_UPDATE_GOLDEN !== '1') return
  const dir = `${goldenDir}${kafkaVersion}`
  mkdirSync(dir, { recursive: true })
  const note = `# ${apiName} response v${apiVersion}, body only (after the response header), sent by Apache Kafka ${kafkaVersion} (single-node KRaft) to test/interop/codec-kafka.test.ts\n`
  writeFileSync(`${dir}/${apiName}-v${apiVersion}-response.hex`, note + raw.toString('hex').replace(/(.{128})/g, '$1\n') + '\n')
}

const codecs: CompressionName[] = ['none', 'gzip', 'snappy', 'lz4']
const brokerCodecs: CompressionName[] = ['gzip', 'snappy', 'lz4', 'zstd']

for (const version of [KAFKA_VERSIONS.latest, KAFKA_VERSIONS.previous]) {
  describe(`codec against Apache Kafka ${version}`, () => {
    let kafka: KafkaNode | undefined
    recordsPeers(() => kafkaUse(kafka))
    let client: RawClient
    let skip: string | undefined
    const brokerRange = new Map<number, { min: number; max: number }>()
    const use = (apiKey: number) => {
      const ours = getApi(apiKey)!
      const theirs = brokerRange.get(apiKey)
      if (!theirs) throw new Error(`Kafka ${version} does not serve api ${apiKey}`)
      return Math.min(ours.maxVersion, theirs.max)
    }

    beforeAll(async () => {
      try {
        kafka = await startKafka({ version })
      } catch (e) {
        skip = peerUnavailable(`Apache Kafka ${version}`, e) as string
        return
      }
      client = await RawClient.connect(kafka.host, kafka.port)
    })

    // A new partition's leader can answer NOT_LEADER_OR_FOLLOWER for a moment after
    // Metadata names it (it learns of its election asynchronously); ListOffsets is
    // served by the leader only, so it tells when produce will be accepted.
    async function waitForLeaders(topic: string, count: number): Promise<void> {
      for (let i = 0; i < 200; i++) {
        const { body } = await client.request(ApiKeys.ListOffsets, use(ApiKeys.ListOffsets), {
          replicaId: -1,
          isolationLevel: 0,
          topics: [{ name: topic, partitions: Array.from({ length: count }, (_, partitionIndex) => ({ partitionIndex, timestamp: -1n })) }],
        })
        if (body.topics[0].partitions.every((p: { errorCode: number }) => p.errorCode === 0)) return
        await new Promise((r) => setTimeout(r, 50))
      }
      throw new Error(`leaders of ${topic} never became ready`)
    }

    async function topicIdOf(topic: string): Promise<string> {
      const { body } = await client.request<MetadataResponse>(ApiKeys.Metadata, use(ApiKeys.Metadata), {
        topics: [{ name: topic }],
        allowAutoTopicCreation: false,
      })
      return body.topics[0]!.topicId ?? ''
    }

    afterAll(async () => {
      client?.close()
      await kafka?.stop()
    })

    it('ApiVersions v0-v4 decode, and Kafka serves every API we generate at some version', async (ctx) => {
      if (skip) return ctx.skip()
      for (let v = 0; v <= 4; v++) {
        const req = v >= 3 ? { clientSoftwareName: 'tidelog-test', clientSoftwareVersion: '0.0.1' } : {}
        const { body, raw } = await client.request<ApiVersionsResponse>(ApiKeys.ApiVersions, v, req)
        capture(version, 'ApiVersions', v, raw)
        expect(body.errorCode).toBe(0)
        expect(body.apiKeys.length).toBeGreaterThan(20)
        if (v === 4) for (const k of body.apiKeys) brokerRange.set(k.apiKey, { min: k.minVersion, max: k.maxVersion })
      }
      for (const key of [ApiKeys.Produce, ApiKeys.Fetch, ApiKeys.Metadata, ApiKeys.ListOffsets, ApiKeys.CreateTopics, ApiKeys.JoinGroup]) {
        const theirs = brokerRange.get(key)!
        const ours = getApi(key)!
        // Overlap, so a client built on this codec can always negotiate.
        expect(Math.min(theirs.max, ours.maxVersion)).toBeGreaterThanOrEqual(Math.max(theirs.min, ours.minVersion))
      }
    })

    it('Metadata at every version we share with Kafka', async (ctx) => {
      if (skip) return ctx.skip()
      const max = use(ApiKeys.Metadata)
      for (let v = 0; v <= max; v++) {
        const { body, raw } = await client.request<MetadataResponse>(ApiKeys.Metadata, v, { topics: v >= 1 ? null : [] })
        capture(version, 'Metadata', v, raw)
        expect(body.brokers).toEqual([expect.objectContaining({ nodeId: 1, host: '127.0.0.1', port: kafka!.port })])
      }
    })

    it('CreateTopics, then Produce (every codec) and Fetch back what we wrote', async (ctx) => {
      if (skip) return ctx.skip()
      const topic = `codec-${version.replace(/\./g, '-')}`
      const created = await client.request(ApiKeys.CreateTopics, use(ApiKeys.CreateTopics), {
        topics: [{ name: topic, numPartitions: codecs.length, replicationFactor: 1, assignments: [], configs: [] }],
        timeoutMs: 30_000,
      })
      capture(version, 'CreateTopics', use(ApiKeys.CreateTopics), created.raw)
      expect(created.body.topics[0].errorCode, errorByCode(created.body.topics[0].errorCode).name).toBe(0)

      // Leaders are elected asynchronously after CreateTopics; wait for them.
      let topicId = ''
      for (let i = 0; i < 100; i++) {
        const { body } = await client.request<MetadataResponse>(ApiKeys.Metadata, use(ApiKeys.Metadata), {
          topics: [{ name: topic }],
          allowAutoTopicCreation: false,
        })
        const t = body.topics[0]!
        if (t.errorCode === 0 && t.partitions.length === codecs.length && t.partitions.every((p) => p.leaderId === 1)) {
          topicId = t.topicId ?? ''
          break
        }
        await new Promise((r) => setTimeout(r, 100))
      }

      const produceVersion = use(ApiKeys.Produce)
      const sent = codecs.map((codec, partition) =>
        Array.from({ length: 50 }, (_, i) => ({
          key: `key-${partition}-${i}`,
          value: `value ${codec} ${i} ${'x'.repeat(i * 7)}`,
          headers: [{ key: 'h', value: `hv-${i}` }],
          timestamp: 1_700_000_000_000n + BigInt(i),
        })),
      )
      const produceRequest = {
        transactionalId: null,
        acks: -1,
        timeoutMs: 30_000,
        topicData: [
          {
            name: topic,
            partitionData: codecs.map((codec, index) => ({
              index,
              records: encodeRecordBatch({ records: sent[index]!, compression: CompressionType[codecName(codec)] }),
            })),
          },
        ],
      }
      await waitForLeaders(topic, codecs.length)
      const produced = await client.request(ApiKeys.Produce, produceVersion, produceRequest)
      capture(version, 'Produce', produceVersion, produced.raw)
      for (const p of produced.body.responses[0].partitionResponses) {
        expect(p.errorCode, `partition ${p.index}: ${errorByCode(p.errorCode).name} ${p.errorMessage ?? ''}`).toBe(0)
        expect(p.baseOffset).toBe(0n)
      }

      const fetchVersion = use(ApiKeys.Fetch)
      const { body: fetched, raw: fetchedRaw } = await client.request(ApiKeys.Fetch, fetchVersion, {
        replicaId: -1,
        maxWaitMs: 500,
        minBytes: 1,
        maxBytes: 50 * 1024 * 1024,
        isolationLevel: 0,
        topics: [
          {
            topic,
            topicId,
            partitions: codecs.map((_, partition) => ({ partition, fetchOffset: 0n, partitionMaxBytes: 1024 * 1024 })),
          },
        ],
        forgottenTopicsData: [],
        rackId: '',
      })
      capture(version, 'Fetch', fetchVersion, fetchedRaw)
      const partitions = fetched.responses[0].partitions
      expect(partitions).toHaveLength(codecs.length)
      for (const p of partitions) {
        expect(p.errorCode).toBe(0)
        expect(p.highWatermark).toBe(50n)
        const batches = decodeRecordBatches(p.records!)
        expect(batches).toHaveLength(1)
        expect(batches[0]!.compression).toBe(CompressionType[codecName(codecs[p.partitionIndex]!)])
        const records = batches[0]!.toArray()
        const expected = sent[p.partitionIndex]!
        expect(records.map((r) => r.offset)).toEqual(expected.map((_, i) => BigInt(i)))
        expect(records.map((r) => r.key!.toString())).toEqual(expected.map((r) => r.key))
        expect(records.map((r) => r.value!.toString())).toEqual(expected.map((r) => r.value))
        expect(records.map((r) => r.timestamp)).toEqual(expected.map((r) => r.timestamp))
        expect(records.map((r) => r.headers[0]!.value!.toString())).toEqual(expected.map((r) => r.headers[0]!.value))
      }

      const { body: offsets, raw: offsetsRaw } = await client.request(ApiKeys.ListOffsets, use(ApiKeys.ListOffsets), {
        replicaId: -1,
        isolationLevel: 0,
        topics: [{ name: topic, partitions: [{ partitionIndex: 0, timestamp: -1n }, { partitionIndex: 1, timestamp: -2n }] }],
      })
      capture(version, 'ListOffsets', use(ApiKeys.ListOffsets), offsetsRaw)
      const byPartition = new Map<number, bigint>(
        offsets.topics[0].partitions.map((p: { partitionIndex: number; offset: bigint }) => [p.partitionIndex, p.offset]),
      )
      expect(byPartition.get(0)).toBe(50n)
      expect(byPartition.get(1)).toBe(0n)
    })

    it('reads batches that Kafka compressed itself (compression.type on the topic)', async (ctx) => {
      if (skip) return ctx.skip()
      for (const codec of brokerCodecs) {
        const topic = `recompress-${codec}`
        const created = await client.request(ApiKeys.CreateTopics, use(ApiKeys.CreateTopics), {
          topics: [{ name: topic, numPartitions: 1, replicationFactor: 1, assignments: [], configs: [{ name: 'compression.type', value: codec }] }],
          timeoutMs: 30_000,
        })
        expect(created.body.topics[0].errorCode).toBe(0)
        const records = Array.from({ length: 200 }, (_, i) => ({ key: `k${i}`, value: `${codec} record ${i} `.repeat(20) }))
        await waitForLeaders(topic, 1)
        const produced = await client.request(ApiKeys.Produce, use(ApiKeys.Produce), {
          transactionalId: null,
          acks: -1,
          timeoutMs: 30_000,
          topicData: [{ name: topic, partitionData: [{ index: 0, records: encodeRecordBatch({ records }) }] }],
        })
        expect(errorByCode(produced.body.responses[0].partitionResponses[0].errorCode).name).toBe('NONE')
        const { body } = await client.request(ApiKeys.Fetch, use(ApiKeys.Fetch), {
          replicaId: -1, maxWaitMs: 100, minBytes: 1, maxBytes: 10 * 1024 * 1024, isolationLevel: 0,
          topics: [{ topic, topicId: await topicIdOf(topic), partitions: [{ partition: 0, fetchOffset: 0n, partitionMaxBytes: 1024 * 1024 }] }],
          forgottenTopicsData: [], rackId: '',
        })
        const batches = decodeRecordBatches(body.responses[0].partitions[0].records!)
        expect(batches.map((b) => b.compression)).toEqual([CompressionType[codecName(codec)]])
        const got = batches[0]!.toArray()
        expect(got.map((r) => r.value!.toString())).toEqual(records.map((r) => r.value))
        expect(got.map((r) => r.key!.toString())).toEqual(records.map((r) => r.key))
      }
    })

    it('Kafka rejects a batch whose CRC we corrupted with CORRUPT_MESSAGE, and keeps serving', async (ctx) => {
      if (skip) return ctx.skip()
      const batch = encodeRecordBatch({ records: [{ key: 'k', value: 'v' }] })
      batch[batch.length - 1]! ^= 0xff
      const { body } = await client.request(ApiKeys.Produce, use(ApiKeys.Produce), {
        transactionalId: null,
        acks: 1,
        timeoutMs: 10_000,
        topicData: [{ name: `codec-${version.replace(/\./g, '-')}`, partitionData: [{ index: 0, records: batch }] }],
      })
      expect(errorByCode(body.responses[0].partitionResponses[0].errorCode).name).toBe('CORRUPT_MESSAGE')
    })
  })
}

function codecName(c: CompressionName): keyof typeof CompressionType {
  return ({ none: 'None', gzip: 'Gzip', snappy: 'Snappy', lz4: 'Lz4', zstd: 'Zstd' } as const)[c]
}
