/**
 * consumer.run() end to end on the in-process broker over a real socket: a slow partition does
 * not stall the other five, and two members rebalancing under run() lose and duplicate nothing,
 * each committing only partitions it owns.
 */
import { performance } from 'node:perf_hooks'
import { Consumer, type ConsumerOptions, type TopicPartition, type TopicPartitionOffset } from '@tidelog/consumer'
import { describe, expect, it } from 'vitest'
import { cleanup, sleep, startTestBroker } from '../../packages/consumer/test/helpers/broker.js'
import { waitFor, type TestProducer } from '../../packages/consumer/test/helpers/produce.js'

const opts = (brokers: string[], groupId: string, extra: Partial<ConsumerOptions> = {}): ConsumerOptions => ({
  brokers,
  groupId,
  autoOffsetReset: 'earliest',
  sessionTimeoutMs: 6000,
  heartbeatIntervalMs: 200,
  autoCommitIntervalMs: 300,
  fetchMaxWaitMs: 50,
  ...extra,
})

async function fill(producer: TestProducer, topic: string, partitions: number[], perPartition: number): Promise<void> {
  for (const p of partitions) {
    for (let i = 0; i < perPartition; i += 250) {
      const n = Math.min(250, perPartition - i)
      await producer.send(topic, p, Array.from({ length: n }, (_, k) => ({ key: null, value: Buffer.from(`${p}:${i + k}`) })))
    }
  }
}

function start(brokers: string[], groupId: string, extra: Partial<ConsumerOptions> = {}): Consumer {
  const c = new Consumer(opts(brokers, groupId, extra))
  cleanup(() => c.close({ timeoutMs: 5000 }))
  return c
}

describe('consumer.run() end to end', () => {
  it('a partition whose handler sleeps 100 ms per message does not stall the other five', async () => {
    const { brokers, producer } = await startTestBroker(6)
    const PER = 20_000
    const topic = 'slow-one'
    await fill(producer, topic, [0, 1, 2, 3, 4, 5], PER)

    /** Time for partitions 1-5 to be handled to their end; partition 0 sleeps when `slow`. */
    const measure = async (groupId: string, slow: boolean): Promise<{ ms: number; slowDone: number; peak: number }> => {
      const c = start(brokers, groupId)
      await c.subscribe([topic])
      const done = new Array<number>(6).fill(0)
      const last = new Array<bigint>(6).fill(-1n)
      let outOfOrder = 0
      let t0 = 0
      const run = c.run({
        partitionsConsumedConcurrently: 6,
        eachMessage: async ({ partition, message }) => {
          if (t0 === 0) t0 = performance.now()
          if (message.offset !== last[partition]! + 1n) outOfOrder++
          last[partition] = message.offset
          if (slow && partition === 0) await sleep(100)
          done[partition]!++
        },
      })
      await waitFor(() => done.slice(1).every((n) => n === PER), 60_000, 'partitions 1-5 handled')
      const ms = performance.now() - t0
      const slowDone = done[0]!
      await c.stop()
      await run
      expect(outOfOrder).toBe(0)
      return { ms, slowDone, peak: c.peakHandlerConcurrency }
    }

    // Warm up first (JIT), then the two runs measured.
    await measure('warm-up', false)
    const without = await measure('without-slow', false)
    const withSlow = await measure('with-slow', true)
    // Far behind: at 100 ms a message it can have done only a small part of its records.
    expect(withSlow.slowDone).toBeLessThan(PER / 4)
    expect(withSlow.peak).toBeLessThanOrEqual(6)
    const ratio = without.ms / withSlow.ms
    console.log(
      `[runner] 5 fast partitions x ${PER}: ${withSlow.ms.toFixed(0)} ms with the slow one (it did ${withSlow.slowDone}), ${without.ms.toFixed(0)} ms without; throughput ratio ${ratio.toFixed(2)}`,
    )
  }, 120_000)

  it('two members rebalancing under run(): nothing lost or duplicated, commits only for owned partitions', async () => {
    const { brokers, producer } = await startTestBroker(6)
    const topic = 'rebalance-run'
    const PER = 300
    await fill(producer, topic, [0, 1, 2, 3, 4, 5], PER)
    const seen = new Map<string, number>()
    const foreignCommits: string[] = []
    const members: { c: Consumer; run: Promise<void>; handled: number }[] = []
    const join = async (name: string): Promise<void> => {
      const c = start(brokers, 'run-group')
      const m = { c, run: Promise.resolve(), handled: 0 }
      c.on('offsets.committed', ({ offsets }: { offsets: TopicPartitionOffset[] }) => {
        const owned = new Set(c.assigned().map((tp: TopicPartition) => `${tp.topic}-${tp.partition}`))
        for (const o of offsets) if (!owned.has(`${o.topic}-${o.partition}`)) foreignCommits.push(`${name}: ${o.partition}@${o.offset}`)
      })
      await c.subscribe([topic])
      m.run = c.run({
        partitionsConsumedConcurrently: 3,
        eachMessage: async ({ partition, message }) => {
          await sleep(2)
          const k = `${partition}:${message.offset}`
          seen.set(k, (seen.get(k) ?? 0) + 1)
          m.handled++
        },
      })
      members.push(m)
    }
    await join('a')
    await waitFor(() => seen.size >= 200, 30_000, 'a first part handled by a')
    await join('b')
    await waitFor(() => seen.size === 6 * PER, 60_000, 'every record handled')
    // Both took part, and the group settled with both members.
    await waitFor(() => members.every((m) => m.c.assigned().length === 3), 30_000, 'three partitions each')
    for (const m of members) await m.c.stop()
    await Promise.all(members.map((m) => m.run))
    expect(members[1]!.handled).toBeGreaterThan(0)
    const dups = [...seen].filter(([, n]) => n > 1)
    expect(dups).toEqual([])
    expect(foreignCommits).toEqual([])
    const committed = await members[0]!.c.committed([0, 1, 2, 3, 4, 5].map((partition) => ({ topic, partition })))
    expect(committed.map((o) => o.offset)).toEqual(Array(6).fill(BigInt(PER)))
  }, 120_000)
})
