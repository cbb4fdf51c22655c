import { Kafka, logLevel } from 'kafkajs'
import { afterEach, describe, expect, it } from 'vitest'
import { startBroker } from '../../src/index.js'
import { tempDir } from '../helpers/tmp.js'

const cleanup: (() => Promise<void>)[] = []
afterEach(async () => {
  for (const f of cleanup.splice(0).reverse()) await f().catch(() => {})
})

describe('retention', () => {
  it('drops old segments, moves the earliest offset, and sends a consumer at an old offset back per its reset policy', async () => {
    const b = await startBroker({ port: 0, dataDir: tempDir(), segmentBytes: 1024, retentionMs: 30_000, retentionCheckIntervalMs: 50, groups: { initialRebalanceDelayMs: 50 } })
    cleanup.push(() => b.close())
    const kafka = new Kafka({ clientId: 'retention', brokers: [`127.0.0.1:${b.port}`], logLevel: logLevel.NOTHING, retry: { retries: 3, initialRetryTime: 100 } })
    const admin = kafka.admin()
    await admin.connect()
    cleanup.push(() => admin.disconnect())
    await admin.createTopics({ topics: [{ topic: 'r', numPartitions: 1 }] })
    const producer = kafka.producer()
    await producer.connect()
    cleanup.push(() => producer.disconnect())
    const old = Date.now() - 60_000
    for (let i = 0; i < 40; i++) await producer.send({ topic: 'r', messages: [{ value: `old-${i}`.padEnd(100, '.'), timestamp: String(old) }] })
    const deadline = Date.now() + 10_000
    let low = '0'
    while (Date.now() < deadline) {
      low = (await admin.fetchTopicOffsets('r'))[0]!.low
      if (low === '40') break
      await new Promise((r) => setTimeout(r, 50))
    }
    expect(low).toBe('40')
    for (let i = 0; i < 5; i++) await producer.send({ topic: 'r', messages: [{ value: `new-${i}` }] })
    expect((await admin.fetchTopicOffsets('r'))[0]).toMatchObject({ low: '40', high: '45' })

    // A group that committed offset 3 long ago is now out of range: kafkajs resets to the earliest.
    await admin.setOffsets({ groupId: 'late', topic: 'r', partitions: [{ partition: 0, offset: '3' }] })
    const consumer = kafka.consumer({ groupId: 'late', sessionTimeout: 10_000, heartbeatInterval: 500, maxWaitTimeInMs: 100 })
    cleanup.push(() => consumer.disconnect())
    const got: string[] = []
    await consumer.connect()
    await consumer.subscribe({ topic: 'r', fromBeginning: true })
    await consumer.run({ eachMessage: async ({ message }) => void got.push(message.value!.toString()) })
    const until = Date.now() + 20_000
    while (got.length < 5 && Date.now() < until) await new Promise((r) => setTimeout(r, 50))
    expect(got).toEqual(['new-0', 'new-1', 'new-2', 'new-3', 'new-4'])
  })
})
