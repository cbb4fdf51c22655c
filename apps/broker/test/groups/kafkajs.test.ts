import { type Consumer, type EachMessagePayload, Kafka, logLevel } from 'kafkajs'
import { afterEach, describe, expect, it } from 'vitest'
import { type Broker, createLogger, startBroker } from '../../src/index.js'
import { tempDir } from '../helpers/tmp.js'

// kafkajs 2.2.4 consumer groups against the broker: membership, rebalances, commits, restarts.

const cleanup: (() => Promise<void>)[] = []
afterEach(async () => {
  for (const f of cleanup.splice(0).reverse()) await f().catch(() => {})
})

async function start(dataDir: string): Promise<Broker> {
  const b = await startBroker({
    port: 0,
    dataDir,
    numPartitions: 6,
    groups: { initialRebalanceDelayMs: 200 },
    ...(process.env.BROKER_DEBUG ? { logger: createLogger('debug') } : {}),
  })
  cleanup.push(() => b.close())
  return b
}

const kafka = (b: Broker) =>
  new Kafka({ clientId: 'groups-test', brokers: [`127.0.0.1:${b.port}`], logLevel: logLevel.NOTHING, retry: { retries: 8, initialRetryTime: 100 } })

async function produce(b: Broker, topic: string, from: number, count: number): Promise<void> {
  const producer = kafka(b).producer()
  await producer.connect()
  for (let i = 0; i < count; i += 200) {
    const n = Math.min(200, count - i)
    await producer.send({ topic, acks: -1, messages: Array.from({ length: n }, (_, j) => ({ key: `k${from + i + j}`, value: String(from + i + j) })) })
  }
  await producer.disconnect()
}

async function until(cond: () => boolean, what: string, ms = 30_000): Promise<void> {
  const deadline = Date.now() + ms
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 25))
  }
}

interface Member {
  consumer: Consumer
  /** Its partitions of the topic, after each rebalance it joined. */
  assignments: number[][]
  stopped: boolean
}

/** Starts a group member that records every value it reads (and who read it). */
async function member(b: Broker, groupId: string, topic: string, seen: Map<string, string[]>, name: string): Promise<Member> {
  const consumer = kafka(b).consumer({ groupId, sessionTimeout: 10_000, heartbeatInterval: 300, maxWaitTimeInMs: 100, rebalanceTimeout: 10_000 })
  const m: Member = { consumer, assignments: [], stopped: false }
  consumer.on(consumer.events.GROUP_JOIN, (e) => {
    m.assignments.push(((e.payload.memberAssignment[topic] ?? []) as number[]).slice().sort())
  })
  await consumer.connect()
  await consumer.subscribe({ topic, fromBeginning: true })
  await consumer.run({
    eachMessage: async ({ message }: EachMessagePayload) => {
      const v = message.value!.toString()
      seen.set(v, [...(seen.get(v) ?? []), name])
    },
  })
  cleanup.push(async () => {
    if (!m.stopped) await consumer.disconnect()
  })
  return m
}

const lastAssignment = (m: Member) => m.assignments.at(-1) ?? []

describe('kafkajs consumer groups', () => {
  it('3 members over 6 partitions read every record once; when one leaves the others take over its partitions', async () => {
    const b = await start(tempDir())
    await produce(b, 'events', 0, 1) // creates the 6-partition topic
    const seen = new Map<string, string[]>()
    const members = [await member(b, 'g', 'events', seen, 'm0'), await member(b, 'g', 'events', seen, 'm1'), await member(b, 'g', 'events', seen, 'm2')]
    // Wait for the generation where the 3 members split the 6 partitions.
    await until(() => {
      const parts = members.map(lastAssignment)
      return parts.every((p) => p.length === 2) && new Set(parts.flat()).size === 6 && seen.has('0')
    }, 'a stable group of 3 members with 2 partitions each')
    await produce(b, 'events', 1, 2999)
    await until(() => seen.size === 3000, 'all 3000 records')
    await new Promise((r) => setTimeout(r, 300))
    expect(seen.size).toBe(3000)
    expect([...seen.values()].filter((who) => who.length !== 1)).toEqual([])

    // m2 leaves (LeaveGroup): m0 and m1 rebalance and split all 6 partitions between them.
    const leaving = members[2]!
    const itsPartitions = lastAssignment(leaving)
    leaving.stopped = true
    await leaving.consumer.disconnect()
    await until(() => {
      const parts = [members[0]!, members[1]!].map(lastAssignment)
      return parts.every((p) => p.length === 3) && new Set(parts.flat()).size === 6
    }, 'the two remaining members to take over')
    expect(itsPartitions.every((p) => members.slice(0, 2).some((m) => lastAssignment(m).includes(p)))).toBe(true)
    // Records produced after the rebalance are all read, by the two remaining members only.
    await produce(b, 'events', 3000, 600)
    await until(() => seen.size === 3600, 'the 600 records produced after the rebalance')
    for (let i = 3000; i < 3600; i++) expect(seen.get(String(i))!.every((who) => who !== 'm2')).toBe(true)

    // The admin API sees what the group committed: everything read, once members commit.
    for (const m of members.slice(0, 2)) {
      m.stopped = true
      await m.consumer.disconnect()
    }
    const admin = kafka(b).admin()
    await admin.connect()
    cleanup.push(() => admin.disconnect())
    const committed = await admin.fetchOffsets({ groupId: 'g', topics: ['events'] })
    const topicOffsets = await admin.fetchTopicOffsets('events')
    expect(committed[0]!.partitions.map((p) => [p.partition, p.offset]).sort()).toEqual(topicOffsets.map((p) => [p.partition, p.high]).sort())
    const described = await admin.describeGroups(['g'])
    expect(described.groups[0]).toMatchObject({ groupId: 'g', state: 'Empty', protocolType: 'consumer', members: [] })
  })

  it('after a restart, a group resumes from its committed offsets without re-reading committed records', async () => {
    const dataDir = tempDir()
    let b = await start(dataDir)
    await produce(b, 'orders', 0, 600)
    const before = new Map<string, string[]>()
    const m = await member(b, 'billing', 'orders', before, 'first')
    await until(() => before.size === 600, 'the first 600 records')
    m.stopped = true
    await m.consumer.disconnect() // commits what it read, then leaves
    await b.close()

    b = await start(dataDir)
    const admin = kafka(b).admin()
    await admin.connect()
    cleanup.push(() => admin.disconnect())
    const committed = await admin.fetchOffsets({ groupId: 'billing', topics: ['orders'] })
    expect(committed[0]!.partitions.reduce((n, p) => n + Number(p.offset), 0)).toBe(600)
    await produce(b, 'orders', 600, 300)
    const after = new Map<string, string[]>()
    await member(b, 'billing', 'orders', after, 'second')
    await until(() => after.size >= 300, 'the 300 new records')
    await new Promise((r) => setTimeout(r, 300))
    expect([...after.keys()].map(Number).sort((x, y) => x - y)).toEqual(Array.from({ length: 300 }, (_, i) => 600 + i))
  })
})
