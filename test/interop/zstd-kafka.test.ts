/**
 * zstd batches compressed by our pure-JS compressor (the codec Node 20 uses; pinned here so the
 * test proves it on any Node) against Apache Kafka, which decompresses every compressed batch to
 * validate it before accepting it (KIP-110 zstd needs Produce v7+ and Fetch v10+). Batches from
 * encodeRecordBatch over a raw socket, then the @tidelog/producer -> Kafka -> @tidelog/consumer
 * path, with kcat (librdkafka's libzstd) as an independent reader where it is installed.
 */
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  ApiKeys,
  CompressionType,
  RECORD_BATCH_OVERHEAD,
  crc32c,
  decodeRecordBatches,
  encodeRecordBatch,
  errorByCode,
  getApi,
  getCodec,
  registerCodec,
  type ApiVersionsResponse,
  type CompressionCodec,
  type MetadataResponse,
} from '@tidelog/protocol'
import { Producer } from '@tidelog/producer'
import { Consumer, type Message } from '@tidelog/consumer'
import { zstdCompress } from '../../packages/protocol/src/records/codecs/zstd-compress.js'
import { KAFKA_VERSIONS, peerUnavailable, startKafka, type KafkaNode } from '../helpers/kafka.js'
import { kafkaUse, kcatVersion, recordPeer, recordsPeers } from '../helpers/peers.js'
import { RawClient } from '../helpers/raw-client.js'

const run = promisify(execFile)

/** xorshift32, so a failure replays. */
function rng(seed: number) {
  let s = seed | 0 || 1
  return () => {
    s ^= s << 13
    s ^= s >>> 17
    s ^= s << 5
    return s >>> 0
  }
}
const next = rng(0x25d)
const WORDS = 'order payment user session checkout cart item product shipped delivered failed retry timeout request'.split(' ')
const text = (n: number) => {
  let s = ''
  while (s.length < n) s += `${WORDS[next() % WORDS.length]} ${next() % 10_000} `
  return s.slice(0, n)
}
const randomBytes = (n: number) => Buffer.from(Array.from({ length: n }, () => next() & 0xff))

describe(`zstd from the pure-JS compressor, against Apache Kafka ${KAFKA_VERSIONS.latest}`, () => {
  let kafka: KafkaNode | undefined
  recordsPeers(() => kafkaUse(kafka))
  let client: RawClient
  let skip: string | undefined
  let original: CompressionCodec
  const ranges = new Map<number, number>()
  const use = (apiKey: number) => Math.min(getApi(apiKey)!.maxVersion, ranges.get(apiKey)!)

  beforeAll(async () => {
    original = getCodec(CompressionType.Zstd)
    registerCodec(CompressionType.Zstd, { compress: (d) => zstdCompress(d), decompress: original.decompress })
    try {
      kafka = await startKafka({ properties: { 'num.partitions': 1 } })
    } catch (e) {
      skip = peerUnavailable('Apache Kafka', e) as string
      return
    }
    client = await RawClient.connect(kafka.host, kafka.port)
    const { body } = await client.request<ApiVersionsResponse>(ApiKeys.ApiVersions, 3, {
      clientSoftwareName: 'tidelog-test',
      clientSoftwareVersion: '0.0.1',
    })
    for (const k of body.apiKeys) ranges.set(k.apiKey, k.maxVersion)
  })

  afterAll(async () => {
    registerCodec(CompressionType.Zstd, original)
    client?.close()
    await kafka?.stop()
  })

  async function createTopic(name: string): Promise<string> {
    const created = await client.request(ApiKeys.CreateTopics, use(ApiKeys.CreateTopics), {
      topics: [{ name, numPartitions: 1, replicationFactor: 1, assignments: [], configs: [] }],
      timeoutMs: 30_000,
    })
    expect(errorByCode(created.body.topics[0].errorCode).name).toBe('NONE')
    // The leader learns of its election asynchronously; ListOffsets is served by the leader only.
    for (let i = 0; i < 200; i++) {
      const { body } = await client.request(ApiKeys.ListOffsets, use(ApiKeys.ListOffsets), {
        replicaId: -1,
        isolationLevel: 0,
        topics: [{ name, partitions: [{ partitionIndex: 0, timestamp: -1n }] }],
      })
      if (body.topics[0].partitions[0].errorCode === 0) break
      await new Promise((r) => setTimeout(r, 50))
    }
    const { body } = await client.request<MetadataResponse>(ApiKeys.Metadata, use(ApiKeys.Metadata), {
      topics: [{ name }],
      allowAutoTopicCreation: false,
    })
    return body.topics[0]!.topicId ?? ''
  }

  async function fetchAll(topic: string, topicId: string, want: number) {
    const batches: ReturnType<typeof decodeRecordBatches> = []
    let offset = 0n
    for (let tries = 0; offset < BigInt(want); tries++) {
      if (tries === 100) throw new Error(`fetched ${offset} of ${want} records from ${topic}`)
      const { body } = await client.request(ApiKeys.Fetch, use(ApiKeys.Fetch), {
        replicaId: -1,
        maxWaitMs: 500,
        minBytes: 1,
        maxBytes: 50 * 1024 * 1024,
        isolationLevel: 0,
        topics: [{ topic, topicId, partitions: [{ partition: 0, fetchOffset: offset, partitionMaxBytes: 8 * 1024 * 1024 }] }],
        forgottenTopicsData: [],
        rackId: '',
      })
      const p = body.responses[0].partitions[0]
      expect(p.errorCode).toBe(0)
      const got = decodeRecordBatches(p.records!)
      if (got.length === 0) continue
      batches.push(...got)
      const last = got[got.length - 1]!
      offset = last.baseOffset + BigInt(last.lastOffsetDelta) + 1n
    }
    return batches
  }

  it('Kafka accepts batches from encodeRecordBatch (text, incompressible, multi-block, tiny) and returns the same records', async (ctx) => {
    if (skip) return ctx.skip()
    const topic = 'zstd-raw'
    const topicId = await createTopic(topic)
    const withHeaders = Array.from({ length: 3000 }, (_, i) => ({
      key: `k${i}`,
      value: `${text(60)} #${i}`,
      headers: [{ key: 'n', value: String(i) }],
    }))
    const shapes = [
      Array.from({ length: 500 }, (_, i) => ({ key: `user-${String(i % 97).padStart(5, '0')}`, value: text(100) })),
      Array.from({ length: 40 }, (_, i) => ({ key: `r${i}`, value: randomBytes(3000) })),
      withHeaders,
      [{ key: 'only', value: 'one record' }],
    ]
    let total = 0
    for (const records of shapes) {
      const batch = encodeRecordBatch({ records, compression: 'zstd', baseOffset: 0n })
      const { body } = await client.request(ApiKeys.Produce, use(ApiKeys.Produce), {
        transactionalId: null,
        acks: -1,
        timeoutMs: 30_000,
        topicData: [{ name: topic, partitionData: [{ index: 0, records: batch }] }],
      })
      const p = body.responses[0].partitionResponses[0]
      expect(p.errorCode, `${errorByCode(p.errorCode).name} ${p.errorMessage ?? ''}`).toBe(0)
      expect(p.baseOffset).toBe(BigInt(total))
      total += records.length
    }
    // Acceptance means Kafka decoded our frames: one it cannot decode (a reserved frame header bit
    // set, the batch CRC fixed up) is refused.
    const bad = encodeRecordBatch({ records: shapes[0]!, compression: 'zstd' })
    bad[RECORD_BATCH_OVERHEAD + 4]! |= 0x08
    bad.writeUInt32BE(crc32c(bad.subarray(21)), 17)
    const refused = await client.request(ApiKeys.Produce, use(ApiKeys.Produce), {
      transactionalId: null,
      acks: -1,
      timeoutMs: 30_000,
      topicData: [{ name: topic, partitionData: [{ index: 0, records: bad }] }],
    })
    // (Kafka 4.4 answers UNKNOWN_SERVER_ERROR for zstd-jni's decode failure; a bad CRC would be CORRUPT_MESSAGE.)
    expect(['UNKNOWN_SERVER_ERROR', 'CORRUPT_MESSAGE', 'INVALID_RECORD']).toContain(
      errorByCode(refused.body.responses[0].partitionResponses[0].errorCode).name,
    )

    const batches = await fetchAll(topic, topicId, total)
    expect(batches.map((b) => b.compression)).toEqual(shapes.map(() => CompressionType.Zstd))
    const got = batches.flatMap((b) => b.toArray())
    const sent = shapes.flat()
    expect(got.map((r) => r.offset)).toEqual(sent.map((_, i) => BigInt(i)))
    expect(got.map((r) => r.key!.toString())).toEqual(sent.map((r) => r.key))
    for (let i = 0; i < sent.length; i++) expect(Buffer.from(got[i]!.value!).equals(Buffer.from(sent[i]!.value))).toBe(true)
    expect(got.slice(540, 3540).map((r) => r.headers[0]!.value!.toString())).toEqual(withHeaders.map((r) => r.headers[0]!.value))
  })

  it("@tidelog/producer (compression: 'zstd') to Kafka, read back by @tidelog/consumer and by kcat", async (ctx) => {
    if (skip) return ctx.skip()
    const topic = 'zstd-producer'
    const count = 5000
    const values = Array.from({ length: count }, (_, i) => `${i} ${text(90)}`)
    const producer = new Producer({ brokers: [kafka!.bootstrap], compression: 'zstd' })
    await producer.send(values.map((value, i) => ({ topic, key: `k${i % 50}`, value, headers: { i: String(i) } })))
    await producer.close()

    // What Kafka stored (and validated) is zstd.
    const { body } = await client.request<MetadataResponse>(ApiKeys.Metadata, use(ApiKeys.Metadata), {
      topics: [{ name: topic }],
      allowAutoTopicCreation: false,
    })
    const batches = await fetchAll(topic, body.topics[0]!.topicId ?? '', count)
    expect(new Set(batches.map((b) => b.compression))).toEqual(new Set([CompressionType.Zstd]))

    const consumer = new Consumer({ brokers: [kafka!.bootstrap], autoOffsetReset: 'earliest' })
    consumer.assign([{ topic, partition: 0 }])
    const got: Message[] = []
    const timer = setTimeout(() => void consumer.close(), 60_000)
    for await (const m of consumer) {
      got.push(m)
      if (got.length === count) break
    }
    clearTimeout(timer)
    await consumer.close()
    expect(got).toHaveLength(count)
    expect(got.map((m) => m.offset)).toEqual(values.map((_, i) => BigInt(i)))
    expect(got.map((m) => m.value!.toString())).toEqual(values)
    expect(got.map((m) => m.key!.toString())).toEqual(values.map((_, i) => `k${i % 50}`))
    expect(got.map((m) => m.headers[0]!.value!.toString())).toEqual(values.map((_, i) => String(i)))

    // kcat is the independent reader this row claims: missing, it fails under CI=true.
    let kcat: string | undefined
    try {
      kcat = kcatVersion()
    } catch (e) {
      peerUnavailable('kcat', e)
    }
    if (kcat) {
      recordPeer('kcat', kcat)
      const { stdout } = await run('kcat', ['-C', '-b', kafka!.bootstrap, '-t', topic, '-e', '-q', '-f', '%s\\n'], {
        maxBuffer: 64 * 1024 * 1024,
      })
      expect(stdout.split('\n').filter((l) => l !== '')).toEqual(values)
    }
  })
})
