import { type Consumer, Kafka, logLevel } from 'kafkajs'
import { afterEach, describe, expect, it } from 'vitest'
import { kafkajsVersion, recordsPeers } from '../../../../test/helpers/peers.js'
import { type Broker, createLogger, startBroker } from '../../src/index.js'
import { tempDir } from '../helpers/tmp.js'

const cleanup: (() => Promise<void>)[] = []
afterEach(async () => {
  for (const f of cleanup.splice(0).reverse()) await f().catch(() => {})
})

async function start(dataDir: string) {
  const b = await startBroker({
    port: 0,
    dataDir,
    numPartitions: 6,
    groups: { initialRebalanceDelayMs: 300 },
    ...(process.env.BROKER_DEBUG ? { logger: createLogger('debug') } : {}),
  })
  cleanup.push(() => b.close())
  return b
}

const kafkaFor = (b: Broker) =>
  new Kafka({ clientId: 'group-test', brokers: [`127.0.0.1:${b.port}`], logLevel: logLevel.NOTHING, retry: { retries: 5, initialRetryTime: 100 } })

async function produce(b: Broker, topic: string, from: number, count: number) {
  const producer = kafkaFor(b).producer()
  await producer.connect()
  const messages = Array.from({ length: count }, (_, i) => ({ key: `k${from + i}`, value: `v${from + i}` }))
  for (let i = 0; i < messages.length; i += 100) await producer.send({ topic, acks: -1, messages: messages.slice(i, i + 100) })
  await producer.disconnect()
}

async function waitFor(cond: () => boolean, ms: number, what: string) {
  const deadline = Date.now() + ms
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 50))
  }
}

describe('kafkajs consumer group against the broker', () => {
  recordsPeers(() => [{ peer: 'kafkajs', version: kafkajsVersion() }])
  it('3 members over 6 partitions read every record exactly once, and resume from committed offsets after a restart', async () => {
    const dataDir = tempDir()
    let b = await start(dataDir)
    await produce(b, 'orders', 0, 1) // creates the 6-partition topic
    const seen = new Map<string, number>()
    const assigned = new Map<number, number>()
    const consumers: Consumer[] = []
    for (let i = 0; i < 3; i++) {
      const c = kafkaFor(b).consumer({ groupId: 'billing', sessionTimeout: 10_000, heartbeatInterval: 500, maxWaitTimeInMs: 200 })
      c.on(c.events.GROUP_JOIN, (e) => {
        const parts = (e.payload.memberAssignment['orders'] ?? []) as number[]
        assigned.set(i, parts.length)
      })
      await c.connect()
      await c.subscribe({ topic: 'orders', fromBeginning: true })
      await c.run({
        eachMessage: async ({ message }) => {
          const v = message.value!.toString()
          seen.set(v, (seen.get(v) ?? 0) + 1)
        },
      })
      consumers.push(c)
    }
    cleanup.push(async () => {
      for (const c of consumers) await c.disconnect()
    })
    await waitFor(() => assigned.size === 3 && [...assigned.values()].every((n) => n === 2) && seen.has('v0'), 30_000, 'a stable group of 3 with 2 partitions each')
    await produce(b, 'orders', 1, 2999)
    await waitFor(() => seen.size === 3000, 30_000, 'all 3000 records')
    await new Promise((r) => setTimeout(r, 500))
    expect([...seen.values()].every((n) => n === 1)).toBe(true)
    expect(seen.size).toBe(3000)
    for (const c of consumers.splice(0)) await c.disconnect()

    const admin = kafkaFor(b).admin()
    await admin.connect()
    const committed = await admin.fetchOffsets({ groupId: 'billing', topics: ['orders'] })
    const total = committed[0]!.partitions.reduce((n, p) => n + Number(p.offset), 0)
    expect(total).toBe(3000)
    await admin.disconnect()

    // Restart: the group resumes where it committed.
    await b.close()
    b = await start(dataDir)
    await produce(b, 'orders', 3000, 100)
    const after = new Set<string>()
    const c = kafkaFor(b).consumer({ groupId: 'billing', sessionTimeout: 10_000, heartbeatInterval: 500, maxWaitTimeInMs: 200 })
    await c.connect()
    await c.subscribe({ topic: 'orders', fromBeginning: true })
    await c.run({ eachMessage: async ({ message }) => void after.add(message.value!.toString()) })
    cleanup.push(() => c.disconnect())
    await waitFor(() => after.size >= 100, 30_000, 'the 100 new records')
    await new Promise((r) => setTimeout(r, 500))
    expect(after.size).toBe(100)
    expect([...after].every((v) => Number(v.slice(1)) >= 3000)).toBe(true)
  })
})
