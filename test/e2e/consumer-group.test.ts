import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startBroker, type Broker } from '@tidelog/broker'
import { Consumer, type ConsumerOptions } from '@tidelog/consumer'
import { afterEach, describe, expect, it } from 'vitest'
import { GroupAudit } from '../../packages/consumer/test/helpers/group-audit.js'
import { TestProducer, waitFor } from '../../packages/consumer/test/helpers/produce.js'

const cleanup: (() => Promise<void>)[] = []
afterEach(async () => {
  for (const f of cleanup.splice(0).reverse()) await f().catch(() => {})
})

async function setup(partitions = 6) {
  const dir = mkdtempSync(join(tmpdir(), 'tidelog-consumer-group-'))
  const broker: Broker = await startBroker({ port: 0, dataDir: dir, numPartitions: partitions, groups: { initialRebalanceDelayMs: 300 } })
  const brokers = [`127.0.0.1:${broker.port}`]
  const producer = new TestProducer(brokers)
  cleanup.push(async () => {
    await producer.close()
    await broker.close()
    rmSync(dir, { recursive: true, force: true })
  })
  return { broker, brokers, producer }
}

/** Watches the group's committed offsets and records any that move backwards. */
function watchCommitted(brokers: string[], groupId: string, topic: string, partitions: number) {
  const watcher = new Consumer({ brokers, groupId })
  const last = new Map<number, bigint>()
  const backwards: string[] = []
  let stopped = false
  const loop = (async () => {
    // One more look after stop(), so the last commits are seen.
    for (let final = false; !final; ) {
      final = stopped
      try {
        const list = await watcher.committed(Array.from({ length: partitions }, (_, partition) => ({ topic, partition })))
        for (const o of list) {
          const prev = last.get(o.partition) ?? -1n
          if (o.offset < prev) backwards.push(`${topic}-${o.partition}: ${prev} -> ${o.offset}`)
          if (o.offset > prev) last.set(o.partition, o.offset)
        }
      } catch {
        // The coordinator may be busy; the next poll looks again.
      }
      await new Promise((r) => setTimeout(r, 50))
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

const base = (brokers: string[], groupId: string, extra: Partial<ConsumerOptions> = {}): ConsumerOptions => ({
  brokers,
  groupId,
  autoOffsetReset: 'earliest',
  sessionTimeoutMs: 6000,
  heartbeatIntervalMs: 300,
  maxPollIntervalMs: 20_000,
  autoCommitIntervalMs: 500,
  ...extra,
})

describe('consumer group against the tidelog broker', () => {
  it('3 members over 6 partitions read 300,000 records exactly once; under churn (join, leave, kill) every record at least once', async () => {
    const { brokers, producer } = await setup()
    const topic = 'orders'
    const audit = new GroupAudit()
    cleanup.push(() => audit.stopAll())
    await producer.fill(topic, 6, 300_000, { perBatch: 1000 })
    const committed = watchCommitted(brokers, 'billing', topic, 6)
    cleanup.push(() => committed.stop())

    // b auto-commits rarely, so that killing it leaves an uncommitted window to be read again.
    for (const name of ['a', 'b', 'c']) await audit.start(name, base(brokers, 'billing', name === 'b' ? { autoCommitIntervalMs: 60_000 } : {}), [topic])
    await waitFor(() => audit.values.size === 300_000, 30_000, 'the first 300,000 records')
    await new Promise((r) => setTimeout(r, 300))
    expect(audit.duplicates()).toBe(0)
    const stable = [...audit.owners.values()].at(-1)!
    expect([...stable.values()].map((l) => l.length).sort()).toEqual([2, 2, 2])

    // Churn while producing goes on: d joins, a leaves, b is killed (no LeaveGroup, no commit).
    let producing = true
    let produced = 300_000
    const more = (async () => {
      while (producing) {
        await producer.fill(topic, 6, 3000, { from: produced, perBatch: 250 })
        produced += 3000
        await new Promise((r) => setTimeout(r, 50))
      }
    })()
    const latest = () => Math.max(...audit.owners.keys())
    await audit.start('d', base(brokers, 'billing'), [topic])
    await waitFor(() => audit.owners.get(latest())?.has('d') === true, 15_000, 'd to get partitions')
    await audit.stop('a')
    await waitFor(() => audit.owners.get(latest())?.has('a') === false, 15_000, 'a to be gone')
    const beforeKill = latest()
    await new Promise((r) => setTimeout(r, 500))
    await audit.stop('b', { leaveGroup: false, commit: false })
    // b's session (6 s) has to expire before its partitions move.
    await waitFor(() => latest() > beforeKill && audit.owners.get(latest())?.has('b') === false, 20_000, "b's partitions to move")
    await new Promise((r) => setTimeout(r, 500))
    producing = false
    await more
    await waitFor(() => audit.values.size === produced, 30_000, 'every record after the churn')

    audit.assertSingleOwners()
    expect(audit.unexplainedDuplicates()).toEqual([])
    // The kill left b's processed-but-uncommitted records to be read again; a leaving cleanly
    // can at most repeat the one message it held when it closed, per partition.
    const byMember = audit.duplicatesByFirstMember()
    expect(byMember.get('b') ?? 0).toBeGreaterThan(0)
    expect(byMember.get('a') ?? 0).toBeLessThanOrEqual(2)
    expect([...byMember.keys()].filter((m) => m !== 'a' && m !== 'b')).toEqual([])
    await new Promise((r) => setTimeout(r, 1500))
    await audit.stopAll()
    await committed.stop()
    expect(committed.backwards).toEqual([])
    // Everything was committed in the end: the committed offsets add up to all records.
    const total = [...committed.last.values()].reduce((n, o) => n + o, 0n)
    expect(total).toBe(BigInt(produced))
  }, 90_000)
})
