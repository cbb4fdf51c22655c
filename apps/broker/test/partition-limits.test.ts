import { readdirSync } from 'node:fs'
import { ApiKeys, ErrorCodes, ZERO_UUID } from '@tidelog/protocol'
import { Kafka, logLevel } from 'kafkajs'
import { describe, expect, it } from 'vitest'
import { type Broker, type BrokerOptions, startBroker } from '../src/index.js'
import { RawClient } from './helpers/raw-client.js'
import { tempDir } from './helpers/tmp.js'
import { trackOpened } from './helpers/opened.js'

const open = trackOpened()

async function start(opts: BrokerOptions = {}): Promise<{ broker: Broker; c: RawClient }> {
  const broker = await startBroker({ port: 0, dataDir: tempDir(), ...opts })
  open.brokers.push(broker)
  const c = await RawClient.connect(broker.port)
  open.clients.push(c)
  return { broker, c }
}

const topic = (name: string, numPartitions: number, replicationFactor = 1) => ({ name, numPartitions, replicationFactor, assignments: [], configs: [] })
const createTopics = (c: RawClient, topics: unknown[], validateOnly = false) =>
  c.request(ApiKeys.CreateTopics, 7, { topics, timeoutMs: 5000, validateOnly })
const createPartitions = (c: RawClient, topics: unknown[], validateOnly = false) =>
  c.request(ApiKeys.CreatePartitions, 3, { topics, timeoutMs: 5000, validateOnly })
const partitionDirs = (b: Broker) => readdirSync(b.dataDir).filter((d) => /-\d+$/.test(d)).length

describe('CreateTopics partition limits', () => {
  it('refuses a request over max.partitions.per.request as KRaft does, creating nothing', async () => {
    const { broker, c } = await start()
    // 6,000 + 5,000 = 11,000 > 10,000 (Kafka's MAX_PARTITIONS_PER_BATCH): every topic fails, even the small one.
    const r = await createTopics(c, [topic('foo', 6000), topic('bar', 5000), topic('baz', 1)])
    expect(r.topics.map((t: any) => [t.name, t.errorCode, t.errorMessage])).toEqual([
      ['foo', ErrorCodes.POLICY_VIOLATION, 'Excessively large number of partitions per request.'],
      ['bar', ErrorCodes.POLICY_VIOLATION, 'Excessively large number of partitions per request.'],
      ['baz', ErrorCodes.POLICY_VIOLATION, 'Excessively large number of partitions per request.'],
    ])
    expect(partitionDirs(broker)).toBe(0)
    // The same broker and connection carry on.
    const ok = await createTopics(c, [topic('baz', 3)])
    expect(ok.topics[0].errorCode).toBe(ErrorCodes.NONE)
    expect(partitionDirs(broker)).toBe(3)
  })

  it('counts an absurd single topic against the cap, not as "non-positive"', async () => {
    const { c } = await start()
    const r = await createTopics(c, [topic('huge', 100_001)])
    expect(r.topics[0]).toMatchObject({ errorCode: ErrorCodes.POLICY_VIOLATION, errorMessage: 'Excessively large number of partitions per request.' })
    const max = await createTopics(c, [topic('max', 2 ** 31 - 1)], true)
    expect(max.topics[0].errorCode).toBe(ErrorCodes.POLICY_VIOLATION)
  })

  it('answers bad counts with INVALID_PARTITIONS and Kafka\'s message', async () => {
    const { c } = await start()
    const r = await createTopics(c, [topic('zero', 0), topic('neg', -2), topic('rf', 1, 0)])
    expect(r.topics.map((t: any) => [t.errorCode, t.errorMessage])).toEqual([
      [ErrorCodes.INVALID_PARTITIONS, 'Number of partitions was set to an invalid non-positive value.'],
      [ErrorCodes.INVALID_PARTITIONS, 'Number of partitions was set to an invalid non-positive value.'],
      [ErrorCodes.INVALID_REPLICATION_FACTOR, 'Replication factor must be larger than 0, or -1 to use the default value.'],
    ])
  })

  it('honours a lower --max-partitions-per-request, counting default-sized topics', async () => {
    const { c } = await start({ maxPartitionsPerRequest: 10, numPartitions: 4 })
    const over = await createTopics(c, [topic('a', -1), topic('b', -1), topic('c', 3)]) // 4 + 4 + 3 = 11
    expect(over.topics.map((t: any) => t.errorCode)).toEqual([44, 44, 44])
    const fits = await createTopics(c, [topic('a', -1), topic('b', -1), topic('c', 2)]) // 10
    expect(fits.topics.map((t: any) => [t.errorCode, t.numPartitions])).toEqual([[0, 4], [0, 4], [0, 2]])
  })

  it('stops at max.broker.partitions, topic by topic, validate_only included', async () => {
    const { broker, c } = await start({ maxBrokerPartitions: 10 })
    expect((await createTopics(c, [topic('a', 6)])).topics[0].errorCode).toBe(0)
    // validate_only reserves what it grants within the request: 3 fits, the next 2 do not.
    const v = await createTopics(c, [topic('b', 3), topic('c', 2)], true)
    expect(v.topics.map((t: any) => t.errorCode)).toEqual([0, ErrorCodes.POLICY_VIOLATION])
    expect(v.topics[1].errorMessage).toBe('2 more partition(s) would bring this broker to 11, above its limit of 10 (max.broker.partitions)')
    const r = await createTopics(c, [topic('b', 4), topic('c', 1)])
    expect(r.topics.map((t: any) => t.errorCode)).toEqual([0, ErrorCodes.POLICY_VIOLATION])
    expect(partitionDirs(broker)).toBe(10)
    // Auto-creation through Metadata is held to the same total.
    const m = await c.request(ApiKeys.Metadata, 12, { topics: [{ name: 'auto', topicId: ZERO_UUID }], allowAutoTopicCreation: true, includeTopicAuthorizedOperations: false })
    expect(m.topics[0].errorCode).toBe(ErrorCodes.POLICY_VIOLATION)
    expect(partitionDirs(broker)).toBe(10)
  })
})

describe('CreatePartitions limits', () => {
  it('caps what one request adds and the broker total, with Kafka\'s messages for bad counts', async () => {
    const { broker, c } = await start({ maxBrokerPartitions: 20_000 })
    await createTopics(c, [topic('t', 2), topic('u', 1)])
    const huge = await createPartitions(c, [{ name: 't', count: 2 ** 31 - 1, assignments: null }, { name: 'u', count: 2, assignments: null }])
    expect(huge.results.map((r: any) => [r.name, r.errorCode, r.errorMessage])).toEqual([
      ['t', ErrorCodes.POLICY_VIOLATION, 'Excessively large number of partitions per request.'],
      ['u', ErrorCodes.POLICY_VIOLATION, 'Excessively large number of partitions per request.'],
    ])
    expect(partitionDirs(broker)).toBe(3)
    const bad = await createPartitions(c, [
      { name: 't', count: 2, assignments: null },
      { name: 'u', count: 0, assignments: null },
      { name: 't', count: 4, assignments: [{ brokerIds: [broker.nodeId] }] },
    ])
    expect(bad.results.map((r: any) => [r.errorCode, r.errorMessage])).toEqual([
      [ErrorCodes.INVALID_PARTITIONS, 'Topic already has 2 partition(s).'],
      [ErrorCodes.INVALID_PARTITIONS, 'The topic u currently has 1 partition(s); 0 would not be an increase.'],
      [ErrorCodes.INVALID_REPLICA_ASSIGNMENT, 'Attempted to add 2 additional partition(s), but only 1 assignment(s) were specified.'],
    ])
    const ok = await createPartitions(c, [{ name: 't', count: 5, assignments: null }])
    expect(ok.results[0].errorCode).toBe(0)
    expect(partitionDirs(broker)).toBe(6)
  })

  it('refuses growth past max.broker.partitions', async () => {
    const { broker, c } = await start({ maxBrokerPartitions: 8 })
    await createTopics(c, [topic('t', 4)])
    const r = await createPartitions(c, [{ name: 't', count: 9, assignments: null }])
    expect(r.results[0]).toMatchObject({
      errorCode: ErrorCodes.POLICY_VIOLATION,
      errorMessage: '5 more partition(s) would bring this broker to 9, above its limit of 8 (max.broker.partitions)',
    })
    expect((await createPartitions(c, [{ name: 't', count: 8, assignments: null }])).results[0].errorCode).toBe(0)
    expect(partitionDirs(broker)).toBe(8)
  })
})

describe('what a real client sees', () => {
  it('kafkajs gets POLICY_VIOLATION, and the broker keeps serving it', async () => {
    const { broker } = await start()
    const kafka = new Kafka({ clientId: 'limits', brokers: [`127.0.0.1:${broker.port}`], logLevel: logLevel.NOTHING, retry: { retries: 0 } })
    const admin = kafka.admin()
    await admin.connect()
    try {
      const err = await admin.createTopics({ topics: [{ topic: 'huge', numPartitions: 100_001 }] }).catch((e: unknown) => e)
      const causes = (err as { errors?: { type?: string; message?: string }[] }).errors ?? [err as { type?: string; message?: string }]
      // kafkajs prints its own text for the code; the broker's message is checked on the wire above.
      expect(causes.map((e) => e.type)).toEqual(['POLICY_VIOLATION'])
      expect(await admin.createTopics({ topics: [{ topic: 'fine', numPartitions: 2 }] })).toBe(true)
      const big = await admin.createPartitions({ topicPartitions: [{ topic: 'fine', count: 50_000 }] }).catch((e: unknown) => e)
      expect((big as { type?: string }).type).toBe('POLICY_VIOLATION')
      expect((await admin.fetchTopicMetadata({ topics: ['fine'] })).topics[0]!.partitions).toHaveLength(2)
    } finally {
      await admin.disconnect()
    }
  })
})
