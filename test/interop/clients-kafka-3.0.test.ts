/**
 * The oldest release the README claims: the clients against Apache Kafka 3.0, in ZooKeeper
 * mode (KRaft was not production-ready before 3.3, so that is how 3.0 clusters ran). Kafka 3.0
 * has no KIP-890, KIP-848 or Fetch 13+ (topic ids): the clients must negotiate down to what it
 * serves. One broker for the file; Admin, the producer with every codec, and a consumer group
 * that commits and resumes.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { CompressionName } from '@tidelog/protocol'
import { Admin } from '@tidelog/client'
import { Producer } from '@tidelog/producer'
import { Consumer, type Message } from '@tidelog/consumer'
import { KAFKA_VERSIONS, peerUnavailable, startKafka, type KafkaNode } from '../helpers/kafka.js'
import { kafkaUse, recordsPeers } from '../helpers/peers.js'

const version = KAFKA_VERSIONS.oldest
const codecs: CompressionName[] = ['none', 'gzip', 'snappy', 'lz4', 'zstd']

/** Retries an assertion while metadata reaches the broker. */
async function eventually<T>(fn: () => Promise<T>, timeoutMs = 20_000): Promise<T> {
  const end = Date.now() + timeoutMs
  for (;;) {
    try {
      return await fn()
    } catch (e) {
      if (Date.now() > end) throw e
      await new Promise((r) => setTimeout(r, 200))
    }
  }
}

async function readAll(consumer: Consumer, count: number, timeoutMs = 60_000): Promise<Message[]> {
  const got: Message[] = []
  const timer = setTimeout(() => void consumer.close(), timeoutMs)
  try {
    for await (const m of consumer) {
      got.push(m)
      if (got.length === count) break
    }
  } finally {
    clearTimeout(timer)
  }
  return got
}

describe(`clients against Apache Kafka ${version} (ZooKeeper mode)`, () => {
  let kafka: KafkaNode | undefined
  recordsPeers(() => kafkaUse(kafka))
  let admin: Admin
  let skip: string | undefined

  beforeAll(async () => {
    try {
      kafka = await startKafka({ version, properties: { 'num.partitions': 3 } })
    } catch (e) {
      skip = peerUnavailable(`Apache Kafka ${version}`, e) as string
      return
    }
    admin = new Admin({ brokers: [kafka.bootstrap], clientId: 'tidelog-interop', timeoutMs: 30_000 })
    await admin.connect()
  })
  afterAll(async () => {
    await admin?.close()
    await kafka?.stop()
  })

  it('Admin: describeCluster, createTopics, describeTopics, listOffsets', async (ctx) => {
    if (skip) return ctx.skip()
    expect(kafka!.runtimeVersion).toBe(version)
    const cluster = await admin.describeCluster()
    expect(cluster.brokers).toEqual([{ nodeId: 1, host: '127.0.0.1', port: kafka!.port, rack: null }])
    const created = await admin.createTopics([{ name: 'old-admin', partitions: 3, replicationFactor: 1 }])
    expect(created[0]).toMatchObject({ name: 'old-admin', partitions: 3, replicationFactor: 1 })
    const [desc] = await eventually(() => admin.describeTopics(['old-admin']))
    expect(desc!.partitions.map((p) => [p.partition, p.leader, p.replicas])).toEqual([
      [0, 1, [1]],
      [1, 1, [1]],
      [2, 1, [1]],
    ])
    const latest = await eventually(() => admin.listOffsets('old-admin', 'latest'))
    expect(latest.map((o) => o.offset)).toEqual([0n, 0n, 0n])
  })

  for (const codec of codecs) {
    it(`producer (idempotent, acks=all), ${codec}: the consumer reads every record back in order`, async (ctx) => {
      if (skip) return ctx.skip()
      const topic = `old-${codec}`
      const count = 2_000
      const values = Array.from({ length: count }, (_, i) => `${codec} ${i} ${'payload '.repeat(i % 7)}`)
      const producer = new Producer({ brokers: [kafka!.bootstrap], compression: codec })
      const sent = await producer.send(values.map((value, i) => ({ topic, key: `k${i}`, value, headers: { i: String(i) } })))
      await producer.close()
      expect(sent).toHaveLength(count)

      const consumer = new Consumer({ brokers: [kafka!.bootstrap], clientId: 'old-reader' })
      try {
        consumer.assign([0, 1, 2].map((partition) => ({ topic, partition })))
        await consumer.seekToBeginning()
        const got = await readAll(consumer, count)
        expect(got).toHaveLength(count)
        expect(got.map((m) => m.value!.toString()).sort()).toEqual([...values].sort())
        for (const m of got) {
          const i = Number(m.headers[0]!.value!.toString())
          expect(m.key!.toString()).toBe(`k${i}`)
          expect(sent[i]).toMatchObject({ partition: m.partition, offset: m.offset })
        }
      } finally {
        await consumer.close()
      }
    })
  }

  it('a consumer group reads everything and commits; the next member resumes after the commit', async (ctx) => {
    if (skip) return ctx.skip()
    const topic = 'old-group'
    const groupId = 'old-group-members'
    const producer = new Producer({ brokers: [kafka!.bootstrap] })
    await producer.send(Array.from({ length: 900 }, (_, i) => ({ topic, key: `k${i}`, value: `first ${i}` })))

    const first = new Consumer({ brokers: [kafka!.bootstrap], groupId, autoOffsetReset: 'earliest' })
    await first.subscribe([topic])
    const firstGot = await readAll(first, 900)
    expect(new Set(firstGot.map((m) => m.value!.toString())).size).toBe(900)
    await first.commit()
    await first.close()

    await producer.send(Array.from({ length: 300 }, (_, i) => ({ topic, key: `k${i}`, value: `second ${i}` })))
    await producer.close()
    const second = new Consumer({ brokers: [kafka!.bootstrap], groupId, autoOffsetReset: 'earliest' })
    try {
      await second.subscribe([topic])
      const secondGot = await readAll(second, 300)
      expect(secondGot.map((m) => m.value!.toString()).sort()).toEqual(Array.from({ length: 300 }, (_, i) => `second ${i}`).sort())
    } finally {
      await second.close()
    }
  }, 120_000)
})
