import { Kafka, logLevel } from 'kafkajs'
import { afterEach, describe, expect, it } from 'vitest'
import { kafkajsVersion, recordsPeers } from '../../../../test/helpers/peers.js'
import { type Broker, createLogger, startBroker } from '../../src/index.js'
import { tempDir } from '../helpers/tmp.js'

const cleanup: (() => Promise<void>)[] = []
afterEach(async () => {
  for (const f of cleanup.splice(0).reverse()) await f().catch(() => {})
})

async function setup() {
  const b: Broker = await startBroker({ port: 0, dataDir: tempDir(), groups: { initialRebalanceDelayMs: 100 }, ...(process.env.BROKER_DEBUG ? { logger: createLogger('debug') } : {}) })
  cleanup.push(() => b.close())
  const kafka = new Kafka({ clientId: 'admin-test', brokers: [`127.0.0.1:${b.port}`], logLevel: logLevel.NOTHING, retry: { retries: 2, initialRetryTime: 100 } })
  const admin = kafka.admin()
  await admin.connect()
  cleanup.push(() => admin.disconnect())
  return { b, kafka, admin }
}

describe('kafkajs admin against the broker', () => {
  recordsPeers(() => [{ peer: 'kafkajs', version: kafkajsVersion() }])
  it('creates, describes, grows and deletes topics', async () => {
    const { b, admin } = await setup()
    expect(await admin.createTopics({ topics: [{ topic: 'a', numPartitions: 3, configEntries: [{ name: 'retention.ms', value: '60000' }] }] })).toBe(true)
    expect(await admin.createTopics({ topics: [{ topic: 'a', numPartitions: 3 }] })).toBe(false)
    await expect(admin.createTopics({ topics: [{ topic: 'b', configEntries: [{ name: 'no.such.config', value: '1' }] }] })).rejects.toThrow()
    await expect(admin.createTopics({ topics: [{ topic: 'c', replicationFactor: 3 }] })).rejects.toThrow()
    expect((await admin.listTopics()).sort()).toEqual(['a'])
    const cluster = await admin.describeCluster()
    expect(cluster).toMatchObject({ brokers: [{ nodeId: b.nodeId, host: '127.0.0.1', port: b.port }], controller: b.nodeId, clusterId: b.clusterId })

    const configs = await admin.describeConfigs({ resources: [{ type: 2, name: 'a' }], includeSynonyms: false })
    const entries = new Map(configs.resources[0]!.configEntries.map((e) => [e.configName, e]))
    expect(entries.get('retention.ms')).toMatchObject({ configValue: '60000', isDefault: false })
    expect(entries.get('segment.bytes')).toMatchObject({ configValue: String(2 ** 30), isDefault: true })
    expect(entries.get('cleanup.policy')?.configValue).toBe('delete')

    await admin.createPartitions({ topicPartitions: [{ topic: 'a', count: 5 }] })
    const meta = await admin.fetchTopicMetadata({ topics: ['a'] })
    expect(meta.topics[0]!.partitions.length).toBe(5)
    await expect(admin.createPartitions({ topicPartitions: [{ topic: 'a', count: 2 }] })).rejects.toThrow()

    await admin.deleteTopics({ topics: ['a'] })
    expect(await admin.listTopics()).toEqual([])
  })

  it('deletes records, and lists, describes and deletes groups and their offsets', async () => {
    const { kafka, admin } = await setup()
    await admin.createTopics({ topics: [{ topic: 't', numPartitions: 1 }] })
    const producer = kafka.producer()
    await producer.connect()
    cleanup.push(() => producer.disconnect())
    await producer.send({ topic: 't', messages: Array.from({ length: 10 }, (_, i) => ({ value: `m${i}` })) })
    // kafkajs looks the leader up in its cached metadata only: make it know the topic first.
    await admin.fetchTopicMetadata({ topics: ['t'] })
    await admin.deleteTopicRecords({ topic: 't', partitions: [{ partition: 0, offset: '4' }] })
    expect(await admin.fetchTopicOffsets('t')).toEqual([{ partition: 0, offset: '10', high: '10', low: '4' }])

    await admin.setOffsets({ groupId: 'g1', topic: 't', partitions: [{ partition: 0, offset: '7' }] })
    expect((await admin.fetchOffsets({ groupId: 'g1', topics: ['t'] }))[0]!.partitions).toEqual([{ partition: 0, offset: '7', metadata: null }])
    const consumer = kafka.consumer({ groupId: 'g1', sessionTimeout: 10_000, heartbeatInterval: 500, maxWaitTimeInMs: 100 })
    const got: string[] = []
    await consumer.connect()
    await consumer.subscribe({ topic: 't' })
    await consumer.run({ eachMessage: async ({ message }) => void got.push(message.value!.toString()) })
    const deadline = Date.now() + 20_000
    while (got.length < 3 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50))
    expect(got).toEqual(['m7', 'm8', 'm9'])
    const listed = await admin.listGroups()
    expect(listed.groups).toEqual([{ groupId: 'g1', protocolType: 'consumer' }])
    const described = await admin.describeGroups(['g1'])
    expect(described.groups[0]).toMatchObject({ groupId: 'g1', state: 'Stable', protocolType: 'consumer', protocol: 'RoundRobinAssigner' })
    expect(described.groups[0]!.members.length).toBe(1)
    await expect(admin.deleteGroups(['g1'])).rejects.toThrow()
    await consumer.disconnect()
    expect(await admin.deleteGroups(['g1'])).toEqual([{ groupId: 'g1', errorCode: 0 }])
    expect((await admin.fetchOffsets({ groupId: 'g1', topics: ['t'] }))[0]!.partitions[0]!.offset).toBe('-1')
  })
})
