/**
 * The consumer against Apache Kafka: the issue's headline group test at full size (300,000
 * records exactly once, then join / leave / kill under load), cooperative-sticky's incremental
 * rebalance, static membership, read_committed over real aborted transactions, and groups shared
 * with Java's own consumer (ConsoleConsumer) under range and cooperative-sticky.
 */
import { performance } from 'node:perf_hooks'
import { Admin } from '@tidelog/client'
import { Consumer, type ConsumerOptions, type Message, type TopicPartition } from '@tidelog/consumer'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { KAFKA_VERSIONS, peerUnavailable, startKafka, type KafkaNode } from '../helpers/kafka.js'
import { kafkaUse, recordPeer, recordsPeers } from '../helpers/peers.js'
import { GroupAudit } from '../../packages/consumer/test/helpers/group-audit.js'
import { TestProducer, waitFor } from '../../packages/consumer/test/helpers/produce.js'
import { TestTransactions } from '../../packages/consumer/test/helpers/transactions.js'

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

const groupOptions = (brokers: string[], groupId: string, extra: Partial<ConsumerOptions> = {}): ConsumerOptions => ({
  brokers,
  groupId,
  autoOffsetReset: 'earliest',
  sessionTimeoutMs: 6000,
  heartbeatIntervalMs: 500,
  maxPollIntervalMs: 30_000,
  autoCommitIntervalMs: 500,
  ...extra,
})

/** Polls the group's committed offsets; any that move backwards are recorded. */
function watchCommitted(brokers: string[], groupId: string, topic: string, partitions: number) {
  const watcher = new Consumer({ brokers, groupId })
  const last = new Map<number, bigint>()
  const backwards: string[] = []
  let stopped = false
  const loop = (async () => {
    // The look after stop() must succeed: it is the one that sees the commits made on close.
    for (let final = false, finalTries = 0; !final || finalTries > 0; ) {
      final = stopped
      try {
        for (const o of await watcher.committed(Array.from({ length: partitions }, (_, partition) => ({ topic, partition })))) {
          const prev = last.get(o.partition) ?? -1n
          if (o.offset < prev) backwards.push(`${o.partition}: ${prev} -> ${o.offset}`)
          if (o.offset > prev) last.set(o.partition, o.offset)
        }
        finalTries = 0
      } catch (e) {
        // Coordinator busy; look again.
        if (final && ++finalTries > 20) throw e
      }
      if (!final || finalTries > 0) await sleep(100)
    }
  })()
  return {
    backwards,
    last,
    async stop() {
      stopped = true
      await loop
      await watcher.close()
    },
  }
}

for (const version of [KAFKA_VERSIONS.latest, KAFKA_VERSIONS.previous]) {
  describe(`consumer group against Apache Kafka ${version}`, () => {
    let kafka: KafkaNode | undefined
    recordsPeers(() => kafkaUse(kafka))
    let skip: string | undefined
    let producer: TestProducer

    beforeAll(async () => {
      try {
        kafka = await startKafka({ version, properties: { 'num.partitions': 6 } })
      } catch (e) {
        skip = peerUnavailable('Apache Kafka', e) as string
        return
      }
      producer = new TestProducer(kafka.bootstrap)
    })
    afterAll(async () => {
      await producer?.close()
      await kafka?.stop()
    })

    it('3 members, 6 partitions, 300,000 records exactly once; churn under load: at least once, single owners, commits never backwards', async (ctx) => {
      if (skip) return ctx.skip()
      const brokers = [kafka!.bootstrap]
      const topic = 'headline'
      const audit = new GroupAudit()
      await producer.fill(topic, 6, 300_000, { perBatch: 1000 })
      const committed = watchCommitted(brokers, 'headline-group', topic, 6)
      try {
        for (const name of ['a', 'b', 'c']) {
          await audit.start(name, groupOptions(brokers, 'headline-group', name === 'b' ? { autoCommitIntervalMs: 60_000 } : {}), [topic])
        }
        await waitFor(() => audit.values.size === 300_000, 120_000, 'the first 300,000 records')
        await sleep(500)
        expect(audit.duplicates()).toBe(0)

        let producing = true
        let produced = 300_000
        const more = (async () => {
          while (producing) {
            await producer.fill(topic, 6, 3000, { from: produced, perBatch: 250 })
            produced += 3000
            await sleep(50)
          }
        })()
        const latest = () => Math.max(...audit.owners.keys())
        await audit.start('d', groupOptions(brokers, 'headline-group'), [topic])
        await waitFor(() => audit.owners.get(latest())?.has('d') === true, 60_000, 'd to get partitions')
        await audit.stop('a')
        await waitFor(() => audit.owners.get(latest())?.has('a') === false, 60_000, 'a to be gone')
        const beforeKill = latest()
        await sleep(500)
        await audit.stop('b', { leaveGroup: false, commit: false })
        await waitFor(() => latest() > beforeKill && audit.owners.get(latest())?.has('b') === false, 60_000, "b's partitions to move")
        await sleep(500)
        producing = false
        await more
        await waitFor(() => audit.values.size === produced, 120_000, 'every record after the churn')

        audit.assertSingleOwners()
        expect(audit.unexplainedDuplicates()).toEqual([])
        const byMember = audit.duplicatesByFirstMember()
        expect(byMember.get('b') ?? 0).toBeGreaterThan(0)
        expect(byMember.get('a') ?? 0).toBeLessThanOrEqual(2)
        expect([...byMember.keys()].filter((m) => m !== 'a' && m !== 'b')).toEqual([])
        await sleep(1500)
        await audit.stopAll()
        await committed.stop()
        expect(committed.backwards).toEqual([])
        expect([...committed.last.values()].reduce((n, o) => n + o, 0n), `committed per partition: ${[...committed.last].map(([p, o]) => `${p}=${o}`).join(' ')}`).toBe(BigInt(produced))
        console.log(`Kafka ${version}: ${produced} records, ${audit.owners.size} generations, ${audit.duplicates()} duplicates, each inside an uncommitted window`)
      } finally {
        await audit.stopAll()
        await committed.stop().catch(() => {})
      }
    }, 600_000)
  })
}

describe(`consumer features against Apache Kafka ${KAFKA_VERSIONS.latest}`, () => {
  let kafka: KafkaNode | undefined
  recordsPeers(() => kafkaUse(kafka))
  let skip: string | undefined
  let producer: TestProducer
  let brokers: string[]

  beforeAll(async () => {
    try {
      kafka = await startKafka({ properties: { 'num.partitions': 6 } })
    } catch (e) {
      skip = peerUnavailable('Apache Kafka', e) as string
      return
    }
    brokers = [kafka.bootstrap]
    producer = new TestProducer(kafka.bootstrap)
  })
  afterAll(async () => {
    await producer?.close()
    await kafka?.stop()
  })

  it('cooperative-sticky: a joiner takes only the partitions that move, the rest keep flowing', async (ctx) => {
    if (skip) return ctx.skip()
    const topic = 'coop'
    await producer.fill(topic, 6, 600)
    const members: { c: Consumer; revoked: string[]; owned: string[]; seen: { at: number; partition: number }[]; joiningAt: number[] }[] = []
    const start = async () => {
      const c = new Consumer(groupOptions(brokers, 'coop-group', { assignors: ['cooperative-sticky'] }))
      const m = { c, revoked: [] as string[], owned: [] as string[], seen: [] as { at: number; partition: number }[], joiningAt: [] as number[] }
      c.on('member.state', ({ to }: { to: string }) => {
        if (to === 'joining') m.joiningAt.push(performance.now())
      })
      await c.subscribe([topic], {
        listener: {
          onPartitionsRevoked: (p) => void m.revoked.push(...p.map((tp) => `${tp.partition}`)),
          onPartitionsAssigned: () => void (m.owned = c.assigned().map((tp) => `${tp.partition}`)),
        },
      })
      void (async () => {
        for await (const msg of c) m.seen.push({ at: performance.now(), partition: msg.partition })
      })()
      members.push(m)
      return m
    }
    try {
      const a = await start()
      const b = await start()
      await waitFor(() => a.owned.length === 3 && b.owned.length === 3, 60_000, 'a and b to split 6 partitions')
      const before = { a: a.owned.slice(), b: b.owned.slice() }
      // 'a' may have owned all six before 'b' arrived (and revoked three then); only
      // revocations from c's join on count.
      a.revoked.length = 0
      b.revoked.length = 0
      let producing = true
      let from = 600
      const flow = (async () => {
        while (producing) {
          await producer.fill(topic, 6, 600, { from, perBatch: 100 })
          from += 600
          await sleep(30)
        }
      })()
      await sleep(500)
      const joinedAt = performance.now()
      const c = await start()
      await waitFor(() => c.owned.length === 2, 60_000, 'c to get two partitions')
      const settledAt = performance.now()
      producing = false
      await flow
      expect(a.revoked.length).toBe(1)
      expect(b.revoked.length).toBe(1)
      expect([...a.revoked, ...b.revoked].sort()).toEqual(c.owned.slice().sort())
      const kept = [...before.a, ...before.b].filter((p) => !a.revoked.includes(p) && !b.revoked.includes(p)).map(Number)
      expect(a.owned.length + b.owned.length).toBe(4)
      const rebalanceStart = Math.min(...[a, b].map((m) => m.joiningAt.find((t) => t >= joinedAt) ?? Infinity))
      const during = [...a.seen, ...b.seen].filter((s) => s.at > rebalanceStart && s.at < settledAt && kept.includes(s.partition))
      expect(during.length).toBeGreaterThan(0)
    } finally {
      for (const m of members) await m.c.close()
    }
  }, 180_000)

  it('static membership: a restart within the session keeps the assignment, no rebalance', async (ctx) => {
    if (skip) return ctx.skip()
    const topic = 'static'
    await producer.fill(topic, 6, 60)
    const open: Consumer[] = []
    const start = async (id: string) => {
      const c = new Consumer(groupOptions(brokers, 'static-group', { groupInstanceId: id, sessionTimeoutMs: 20_000 }))
      const s = { c, owned: [] as number[], revoked: 0 }
      await c.subscribe([topic], {
        listener: { onPartitionsAssigned: () => void (s.owned = c.assigned().map((tp) => tp.partition)), onPartitionsRevoked: () => void s.revoked++ },
      })
      void (async () => {
        for await (const _ of c) void _
      })()
      open.push(c)
      return s
    }
    try {
      const one = await start('one')
      const two = await start('two')
      await waitFor(() => one.owned.length === 3 && two.owned.length === 3, 60_000, 'a stable static group')
      const generation = one.c.generation!.generationId
      // 'one' may have owned all six before 'two' arrived (and revoked three then);
      // only revocations from the restart on count.
      const revokedBefore = one.revoked
      const had = two.owned.slice()
      await two.c.close()
      const again = await start('two')
      await waitFor(() => again.owned.length === 3, 60_000, 'the restarted member to get its partitions')
      expect(again.owned).toEqual(had)
      await sleep(2000)
      expect(one.revoked).toBe(revokedBefore)
      expect(one.c.generation!.generationId).toBe(generation)
    } finally {
      for (const c of open) await c.close()
    }
  }, 180_000)

  it('read_committed hides aborted transactions; read_uncommitted shows them', async (ctx) => {
    if (skip) return ctx.skip()
    const topic = 'txn'
    const tx = new TestTransactions(producer, 'consumer-interop-txn')
    await tx.init()
    await producer.send(topic, 0, [{ value: 'plain-1' }])
    await tx.write(topic, 0, [{ value: 'aborted-1' }, { value: 'aborted-2' }], false)
    await tx.write(topic, 0, [{ value: 'committed-1' }], true)
    await producer.send(topic, 0, [{ value: 'plain-2' }])
    await tx.write(topic, 0, [{ value: 'aborted-3' }], false)
    await producer.send(topic, 0, [{ value: 'last' }])
    const read = async (isolationLevel: 'read_committed' | 'read_uncommitted', n: number): Promise<string[]> => {
      const c = new Consumer({ brokers, autoOffsetReset: 'earliest', isolationLevel })
      c.assign([{ topic, partition: 0 }])
      const out: string[] = []
      try {
        for await (const m of c) {
          out.push(m.value!.toString())
          if (out.length === n) break
        }
      } finally {
        await c.close()
      }
      return out
    }
    expect(await read('read_committed', 4)).toEqual(['plain-1', 'committed-1', 'plain-2', 'last'])
    expect(await read('read_uncommitted', 7)).toEqual(['plain-1', 'aborted-1', 'aborted-2', 'committed-1', 'plain-2', 'aborted-3', 'last'])
  }, 180_000)

  for (const [assignor, javaClass, javaLeads] of [
    ['range', 'org.apache.kafka.clients.consumer.RangeAssignor', false],
    ['range', 'org.apache.kafka.clients.consumer.RangeAssignor', true],
    ['cooperative-sticky', 'org.apache.kafka.clients.consumer.CooperativeStickyAssignor', false],
    ['cooperative-sticky', 'org.apache.kafka.clients.consumer.CooperativeStickyAssignor', true],
  ] as const) {
    it(`shares a group with Java's ConsoleConsumer (${assignor}, ${javaLeads ? 'Java' : 'tidelog'} leads)`, async (ctx) => {
      if (skip) return ctx.skip()
      // ConsoleConsumer runs from the broker's own jars.
      recordPeer('Java client', kafka!.runtimeVersion)
      const topic = `mixed-${assignor}-${javaLeads}`
      const groupId = `mixed-${assignor}-${javaLeads}-group`
      await producer.fill(topic, 6, 6, { perBatch: 1 })
      const seen: string[] = []
      const owned = new Map<string, TopicPartition[]>()
      const ours: Consumer[] = []
      const startJava = () =>
        kafka!.java(
          'org.apache.kafka.tools.consumer.ConsoleConsumer',
          [
            '--bootstrap-server', kafka!.bootstrap,
            '--topic', topic,
            '--group', groupId,
            '--consumer-property', `partition.assignment.strategy=${javaClass}`,
            '--consumer-property', 'auto.offset.reset=earliest',
            '--timeout-ms', '20000',
          ],
          { timeoutMs: 120_000 },
        )
      let java: ReturnType<typeof startJava> | undefined
      if (javaLeads) {
        // The first member to join leads: let the JVM form the group alone first.
        java = startJava()
        const admin = new Admin({ brokers })
        try {
          const deadline = Date.now() + 90_000
          for (;;) {
            const [g] = await admin.describeGroups([groupId]).catch(() => [])
            if (g !== undefined && g.state === 'Stable' && g.members.length === 1) break
            if (Date.now() > deadline) throw new Error('the Java member did not form the group')
            await sleep(200)
          }
        } finally {
          await admin.close()
        }
      }
      try {
        for (const name of ['t1', 't2']) {
          const c = new Consumer(groupOptions(brokers, groupId, { assignors: [assignor] }))
          await c.subscribe([topic], { listener: { onPartitionsAssigned: () => void owned.set(name, c.assigned()) } })
          void (async () => {
            for await (const m of c as AsyncIterable<Message>) seen.push(m.value!.toString())
          })()
          ours.push(c)
        }
        if (java === undefined) {
          await waitFor(() => [...owned.values()].flat().length === 6, 60_000, 'the tidelog members to own the topic')
          java = startJava()
        }
        await waitFor(() => owned.size === 2 && [...owned.values()].every((l) => l.length === 2), 90_000, 'the Java member to take two partitions')
        const javaPartitions = [0, 1, 2, 3, 4, 5].filter((p) => ![...owned.values()].flat().some((tp) => tp.partition === p))
        expect(javaPartitions.length).toBe(2)
        // Java's output is watched as it comes; once every record has been read by someone, the
        // JVM is stopped (SIGTERM: its shutdown hook leaves the group) rather than left to idle out.
        let live = ''
        java.child?.stdout?.on('data', (d: Buffer) => void (live += d.toString()))
        const fresh = (values: string[]) => values.filter((v) => Number(v.slice(1)) >= 6).length
        await producer.fill(topic, 6, 6000, { from: 6, perBatch: 100 })
        await waitFor(() => fresh(seen) + fresh(live.split('\n').filter((l) => l.startsWith('v'))) >= 6000, 90_000, 'all records')
        java.child?.kill('SIGTERM')
        const { stdout } = await java.catch((e: { stdout?: string }) => ({ stdout: e.stdout ?? '' }))
        const javaValues = stdout.split('\n').filter((l) => l.startsWith('v'))
        const all = [...seen, ...javaValues].filter((v) => Number(v.slice(1)) >= 6)
        expect(new Set(all).size).toBe(6000)
        expect(all.length).toBe(6000)
        // The Java member read exactly its two partitions' records.
        expect(javaValues.filter((v) => Number(v.slice(1)) >= 6).every((v) => javaPartitions.includes(Number(v.slice(1)) % 6))).toBe(true)
      } finally {
        for (const c of ours) await c.close()
      }
    }, 240_000)
  }
})
