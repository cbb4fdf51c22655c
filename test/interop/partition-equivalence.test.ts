/**
 * Partition equivalence with the Java client: Kafka's ConsoleProducer (default
 * partitioner) sends 10,000 keyed records, ASCII and not, to a 7-partition topic on
 * Apache Kafka; for every record we fetch back, our murmur2Partition must name the
 * partition the Java producer chose.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ApiKeys, decodeRecordBatches, murmur2Partition, type MetadataResponse } from '@tidelog/protocol'
import { KAFKA_VERSIONS, peerUnavailable, startKafka, type KafkaNode } from '../helpers/kafka.js'
import { kafkaUse, recordsPeers } from '../helpers/peers.js'
import { RawClient } from '../helpers/raw-client.js'

const PARTITIONS = 7
const COUNT = 10_000

// Deterministic keys: ASCII, Latin-1, CJK, emoji (4-byte UTF-8), and lengths 1..40,
// so every tail length of murmur2 (0-3 leftover bytes) is exercised.
function keys(): string[] {
  const alphabet = ['a', 'Z', '9', '-', 'é', 'ß', 'Ж', '中', '文', '🙂', 'ø', '_']
  let seed = 0x9e3779b9
  const rnd = () => {
    seed ^= seed << 13
    seed ^= seed >>> 17
    seed ^= seed << 5
    return (seed >>> 0) / 2 ** 32
  }
  const out = new Set<string>()
  while (out.size < COUNT) {
    const len = 1 + Math.floor(rnd() * 40)
    let k = ''
    for (let i = 0; i < len; i++) k += alphabet[Math.floor(rnd() * alphabet.length)]
    out.add(k)
  }
  return [...out]
}

describe(`partition equivalence with the Java producer (Kafka ${KAFKA_VERSIONS.latest})`, () => {
  let kafka: KafkaNode | undefined
  // The Java producer runs from the broker's own jars: one version for both.
  recordsPeers(() => kafka && [...kafkaUse(kafka)!, { peer: 'Java client', version: kafka.runtimeVersion }])
  let client: RawClient
  let skip: string | undefined

  beforeAll(async () => {
    try {
      kafka = await startKafka()
    } catch (e) {
      skip = peerUnavailable('Apache Kafka', e) as string
      return
    }
    client = await RawClient.connect(kafka.host, kafka.port)
  })
  afterAll(async () => {
    client?.close()
    await kafka?.stop()
  })

  it('10,000 keys land where murmur2Partition says', async (ctx) => {
    if (skip) return ctx.skip()
    const topic = 'partition-equivalence'
    await kafka!.java('org.apache.kafka.tools.TopicCommand', ['--bootstrap-server', kafka!.bootstrap, '--create', '--topic', topic, '--partitions', String(PARTITIONS)])
    const all = keys()
    const input = all.map((k, i) => `${k}\t${i}`).join('\n') + '\n'
    await kafka!.java(
      'org.apache.kafka.tools.ConsoleProducer',
      ['--bootstrap-server', kafka!.bootstrap, '--topic', topic, '--property', 'parse.key=true', '--property', 'key.separator=\t',
        '--producer-property', 'linger.ms=20'],
      { input },
    )

    const { body: meta } = await client.request<MetadataResponse>(ApiKeys.Metadata, 12, { topics: [{ name: topic }], allowAutoTopicCreation: false })
    const topicId = meta.topics[0]!.topicId!
    const seen = new Map<string, number>()
    const offsets = new Array<bigint>(PARTITIONS).fill(0n)
    for (let round = 0; round < 200 && seen.size < all.length; round++) {
      const { body } = await client.request(ApiKeys.Fetch, 17, {
        replicaId: -1, maxWaitMs: 200, minBytes: 1, maxBytes: 32 * 1024 * 1024, isolationLevel: 0,
        topics: [{ topicId, partitions: offsets.map((fetchOffset, partition) => ({ partition, fetchOffset, partitionMaxBytes: 4 * 1024 * 1024 })) }],
        forgottenTopicsData: [], rackId: '',
      })
      for (const p of body.responses[0].partitions) {
        for (const batch of decodeRecordBatches(p.records ?? Buffer.alloc(0))) {
          for (const r of batch) {
            seen.set(r.key!.toString('utf8'), p.partitionIndex)
            offsets[p.partitionIndex] = r.offset + 1n
          }
        }
      }
    }
    expect(seen.size).toBe(all.length)
    let mismatches = 0
    for (const k of all) if (murmur2Partition(k, PARTITIONS) !== seen.get(k)) mismatches++
    expect(mismatches).toBe(0)
    // Non-trivial spread: every partition received keys.
    expect(new Set(seen.values()).size).toBe(PARTITIONS)
  })
})
