import { performance } from 'node:perf_hooks'
import { Consumer, type ConsumerOptions, type Message, type TopicPartition } from '@tidelog/consumer'
import { describe, expect, it } from 'vitest'
import { cleanup, sleep, startTestBroker } from '../../packages/consumer/test/helpers/broker.js'
import { waitFor } from '../../packages/consumer/test/helpers/produce.js'

const opts = (brokers: string[], groupId: string, extra: Partial<ConsumerOptions> = {}): ConsumerOptions => ({
  brokers,
  groupId,
  autoOffsetReset: 'earliest',
  sessionTimeoutMs: 6000,
  heartbeatIntervalMs: 200,
  autoCommitIntervalMs: 500,
  ...extra,
})

const names = (l: TopicPartition[]) => l.map((tp) => `${tp.topic}-${tp.partition}`).sort()

interface Member {
  consumer: Consumer
  seen: { at: number; partition: number; value: string }[]
  revoked: string[][]
  assigned: string[][]
  lost: string[][]
  states: { at: number; to: string }[]
  run: Promise<void>
}

async function member(options: ConsumerOptions, topic: string, handle?: (m: Message) => Promise<void>): Promise<Member> {
  const consumer = new Consumer(options)
  const m: Member = { consumer, seen: [], revoked: [], assigned: [], lost: [], states: [], run: Promise.resolve() }
  consumer.on('member.state', ({ to }: { to: string }) => m.states.push({ at: performance.now(), to }))
  consumer.on('partitions.lost', ({ partitions }: { partitions: TopicPartition[] }) => m.lost.push(names(partitions)))
  await consumer.subscribe([topic], {
    listener: {
      onPartitionsRevoked: (p) => void m.revoked.push(names(p)),
      onPartitionsAssigned: () => void m.assigned.push(names(consumer.assigned())),
    },
  })
  m.run = (async () => {
    for await (const msg of consumer) {
      m.seen.push({ at: performance.now(), partition: msg.partition, value: msg.value!.toString() })
      if (handle !== undefined) await handle(msg)
    }
  })()
  cleanup(async () => {
    await consumer.close()
    await m.run.catch(() => {})
  })
  return m
}

function keepProducing(producer: { fill: (t: string, p: number, n: number, o: { from: number; perBatch: number }) => Promise<void> }, topic: string, start = 0) {
  let on = true
  let produced = start
  const done = (async () => {
    while (on) {
      await producer.fill(topic, 6, 600, { from: produced, perBatch: 100 })
      produced += 600
      await sleep(30)
    }
  })()
  return {
    get produced() {
      return produced
    },
    async stop() {
      on = false
      await done
    },
  }
}

describe('rebalancing against the tidelog broker', () => {
  it('cooperative-sticky: a joining member takes only the partitions that move; the rest keep flowing', async () => {
    const { brokers, producer } = await startTestBroker()
    const topic = 'coop'
    await producer.fill(topic, 6, 600)
    const o = (name: string) => opts(brokers, 'coop-group', { assignors: ['cooperative-sticky'], clientId: name })
    const a = await member(o('a'), topic)
    const b = await member(o('b'), topic)
    await waitFor(() => a.assigned.at(-1)?.length === 3 && b.assigned.at(-1)?.length === 3, 20_000, 'a and b to split the partitions')
    const before = { a: a.assigned.at(-1)!, b: b.assigned.at(-1)! }
    const flow = keepProducing(producer, topic, 600)
    cleanup(() => flow.stop())
    await sleep(500)

    const joinedAt = performance.now()
    const c = await member(o('c'), topic)
    await waitFor(() => c.assigned.at(-1)?.length === 2, 20_000, 'c to receive two partitions')
    const settledAt = performance.now()
    await sleep(300)
    await flow.stop()

    // a and b each gave up exactly one partition, the ones c got; they never gave up the others.
    const revokedA = a.revoked.flat()
    const revokedB = b.revoked.flat()
    expect(revokedA.length).toBe(1)
    expect(revokedB.length).toBe(1)
    expect([...revokedA, ...revokedB].sort()).toEqual(c.assigned.at(-1))
    const keptA = before.a.filter((p) => !revokedA.includes(p))
    const keptB = before.b.filter((p) => !revokedB.includes(p))
    expect(a.assigned.at(-1)).toEqual(keptA)
    expect(b.assigned.at(-1)).toEqual(keptB)

    // No stop-the-world: kept partitions were consumed while the group rebalanced (eager
    // members revoke everything when the rebalance starts and consume nothing until it ends).
    const rebalanceStart = Math.min(...[a, b].map((m) => m.states.find((s) => s.at >= joinedAt && s.to === 'joining')?.at ?? Infinity))
    expect(rebalanceStart).toBeLessThan(settledAt)
    const keptPartitions = new Set([...keptA, ...keptB].map((p) => Number(p.split('-').at(-1))))
    const during = [...a.seen, ...b.seen].filter((s) => s.at > rebalanceStart && s.at < settledAt && keptPartitions.has(s.partition))
    expect(during.length).toBeGreaterThan(0)
  }, 60_000)

  it('static membership: a member restarted within the session timeout gets its partitions back without a rebalance', async () => {
    const { brokers, producer } = await startTestBroker()
    const topic = 'static'
    await producer.fill(topic, 6, 600)
    const o = (id: string) => opts(brokers, 'static-group', { groupInstanceId: id, sessionTimeoutMs: 10_000 })
    const s1 = await member(o('instance-1'), topic)
    const s2 = await member(o('instance-2'), topic)
    await waitFor(() => s1.assigned.at(-1)?.length === 3 && s2.assigned.at(-1)?.length === 3, 20_000, 'a stable group')
    const leaderFirst = s1.consumer.generation!.generationId
    const [restart, other] = [s2, s1]
    const had = restart.assigned.at(-1)!
    // instance-1 may have owned everything before instance-2 arrived; only what is
    // revoked from the restart on counts.
    const revokedBefore = other.revoked.length
    await restart.consumer.close() // static: no LeaveGroup
    await restart.run
    const again = await member(o('instance-2'), topic)
    await waitFor(() => again.assigned.length > 0, 20_000, 'the restarted member to get an assignment')
    expect(again.assigned.at(-1)).toEqual(had)
    await sleep(1000)
    // The other member saw no rebalance: nothing revoked, same generation.
    expect(other.revoked.slice(revokedBefore)).toEqual([])
    expect(other.consumer.generation!.generationId).toBe(leaderFirst)
  }, 60_000)

  it('max.poll.interval: a member holding a message too long leaves, its partitions move, and it rejoins after', async () => {
    const { brokers, producer } = await startTestBroker()
    const topic = 'slowpoke'
    await producer.fill(topic, 6, 60)
    let stall = true
    const slow = await member(opts(brokers, 'poll-group', { maxPollIntervalMs: 1500, clientId: 'slow' }), topic, async () => {
      if (stall) {
        stall = false
        await sleep(4000)
      }
    })
    await waitFor(() => slow.seen.length > 0, 20_000, 'the slow member to get a message')
    const fast = await member(opts(brokers, 'poll-group', { clientId: 'fast' }), topic)
    await waitFor(() => fast.assigned.some((l) => l.length === 6), 20_000, 'the fast member to own everything')
    expect(slow.lost.flat().length).toBeGreaterThan(0)
    // Once the handler returns, the slow member rejoins and the partitions are shared again.
    await waitFor(() => slow.assigned.at(-1)?.length === 3 && fast.assigned.at(-1)?.length === 3, 30_000, 'the slow member to rejoin')
  }, 60_000)

  it('heartbeats run on their own timer: a slow async handler keeps the membership', async () => {
    const { brokers, producer } = await startTestBroker()
    const topic = 'patient'
    await producer.fill(topic, 6, 600)
    const a = await member(opts(brokers, 'patient-group', { sessionTimeoutMs: 6000, heartbeatIntervalMs: 1000 }), topic, () => sleep(1500))
    const b = await member(opts(brokers, 'patient-group', { sessionTimeoutMs: 6000, heartbeatIntervalMs: 1000 }), topic)
    await waitFor(() => a.assigned.at(-1)?.length === 3 && b.assigned.at(-1)?.length === 3, 20_000, 'a stable group')
    const generation = a.consumer.generation!.generationId
    const seenBefore = a.seen.length
    // Twice the session timeout of handling, 1.5 s per message.
    await sleep(12_000)
    expect(a.seen.length).toBeGreaterThan(seenBefore + 4)
    expect(a.consumer.generation?.generationId).toBe(generation)
    expect(b.revoked).toEqual([])
    expect(a.lost).toEqual([])
  }, 60_000)
})

describe('pattern subscriptions against the tidelog broker', () => {
  it('subscribes to every matching topic, and picks up matching topics created later', async () => {
    const { brokers, producer } = await startTestBroker(2)
    await producer.fill('re-a', 2, 20, { prefix: 'a' })
    await producer.fill('other', 2, 20, { prefix: 'o' })
    const seen: string[] = []
    const c = new Consumer(opts(brokers, 're-group', { metadataMaxAgeMs: 300 }))
    await c.subscribe(/^re-/)
    expect(c.subscription()).toEqual(['re-a'])
    const run = (async () => {
      for await (const m of c) seen.push(`${m.topic}:${m.value!.toString()}`)
    })()
    cleanup(async () => {
      await c.close()
      await run
    })
    await waitFor(() => seen.length === 20, 20_000, 're-a records')
    await producer.fill('re-b', 2, 20, { prefix: 'b' })
    await waitFor(() => seen.length === 40, 20_000, 're-b records')
    expect(c.subscription()).toEqual(['re-a', 're-b'])
    expect(seen.every((s) => s.startsWith('re-'))).toBe(true)
  }, 60_000)
})
