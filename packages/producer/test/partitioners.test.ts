import { Partitioners } from 'kafkajs'
import { describe, expect, it } from 'vitest'
import { ClusterMetadata } from '@tidelog/client'
import { Accumulator } from '../src/accumulator.js'
import { partitioners, type ProducerRecord } from '../src/index.js'
import { STICKY, strategyFor } from '../src/partitioners/index.js'
import { randomKeys } from './helpers.js'

function metadata(partitions: number, leaderless: number[] = []): ClusterMetadata {
  const brokers = new Map([[1, { nodeId: 1, host: 'h', port: 1, rack: null }]])
  const parts = Array.from({ length: partitions }, (_, p) => ({
    partition: p,
    leader: leaderless.includes(p) ? -1 : 1,
    leaderEpoch: 0,
    replicas: [1],
    isr: [1],
    offlineReplicas: [],
    errorCode: 0,
  }))
  return new ClusterMetadata(null, 1, brokers, new Map([['t', { name: 't', topicId: '', isInternal: false, partitions: parts }]]), 1)
}

describe('partitioners', () => {
  it("murmur2 puts 10,000 keys (non-ASCII and bytes too) where kafkajs' Java-compatible partitioner does", () => {
    const keys = randomKeys()
    const javaCompatible = Partitioners.JavaCompatiblePartitioner()
    const strategy = strategyFor(undefined)
    const acc = new Accumulator(16384, 1 << 20, () => {})
    for (const count of [1, 3, 6, 7, 100]) {
      const t = acc.topic('t')
      t.sync(metadata(count), count)
      const partitionMetadata = Array.from({ length: count }, (_, partitionId) => ({ partitionId, leader: 1, replicas: [1], isr: [1], partitionErrorCode: 0 }))
      for (const key of keys) {
        const expected = javaCompatible({ topic: 't', partitionMetadata, message: { key, value: null } })
        expect(strategy({ topic: 't', key, value: null }, t)).toBe(expected)
        expect(partitioners.murmur2({ topic: 't', key, value: null }, t.context)).toBe(expected)
        const bytes = Buffer.from(key, 'utf8')
        expect(strategy({ topic: 't', key: new Uint8Array(bytes), value: null }, t)).toBe(javaCompatible({ topic: 't', partitionMetadata, message: { key: bytes, value: null } }))
      }
    }
  })

  it('the default leaves keyless records to sticky placement; an empty key is a key', () => {
    const acc = new Accumulator(16384, 1 << 20, () => {})
    const t = acc.topic('t')
    t.sync(metadata(6), 6)
    const strategy = strategyFor(undefined)
    expect(strategy({ topic: 't', value: 'v' }, t)).toBe(STICKY)
    expect(strategy({ topic: 't', key: null, value: 'v' }, t)).toBe(STICKY)
    expect(strategy({ topic: 't', key: '', value: 'v' }, t)).toBe(partitioners.murmur2({ topic: 't', key: '', value: null }, t.context))
    expect(strategyFor('sticky')({ topic: 't', key: 'ignored', value: 'v' }, t)).toBe(STICKY)
    expect(strategyFor(partitioners.sticky)).toBe(strategyFor('sticky'))
  })

  it('roundRobin cycles over the partitions that have a leader, keys or not', () => {
    const acc = new Accumulator(16384, 1 << 20, () => {})
    const t = acc.topic('t')
    t.sync(metadata(5, [1, 3]), 5)
    const rr = strategyFor(partitioners.roundRobin)
    const got = Array.from({ length: 7 }, (_, i) => rr({ topic: 't', key: `k${i}`, value: null }, t))
    expect(got).toEqual([0, 2, 4, 0, 2, 4, 0])
    expect(strategyFor('roundRobin')).toBe(rr)
    const standalone = Array.from({ length: 4 }, () => partitioners.roundRobin({ topic: 'rr-standalone', value: null }, { topic: 'rr-standalone', partitionCount: 3 }))
    expect(standalone).toEqual([0, 1, 2, 0])
  })

  it('random stays among partitions with a leader and reaches all of them', () => {
    const acc = new Accumulator(16384, 1 << 20, () => {})
    const t = acc.topic('t')
    t.sync(metadata(6, [5]), 6)
    const random = strategyFor('random')
    const seen = new Set<number>()
    for (let i = 0; i < 2_000; i++) seen.add(random({ topic: 't', value: null }, t))
    expect([...seen].sort()).toEqual([0, 1, 2, 3, 4])
    for (let i = 0; i < 100; i++) {
      const p = partitioners.random({ topic: 't', value: null }, { topic: 't', partitionCount: 3 })
      expect(p >= 0 && p < 3 && Number.isInteger(p)).toBe(true)
    }
  })

  it('a custom function gets the record and { topic, partitionCount }', () => {
    const acc = new Accumulator(16384, 1 << 20, () => {})
    const t = acc.topic('t')
    t.sync(metadata(4), 4)
    const calls: unknown[] = []
    const custom = strategyFor((record: ProducerRecord, ctx) => {
      calls.push([record.value, ctx])
      return 3
    })
    expect(custom({ topic: 't', value: 'x' }, t)).toBe(3)
    expect(calls).toEqual([['x', { topic: 't', partitionCount: 4 }]])
    expect(Object.isFrozen((calls[0] as unknown[])[1])).toBe(true)
    expect(() => strategyFor('nope' as never)).toThrow(RangeError)
  })
})

describe('uniform sticky placement (KIP-480)', () => {
  function place(acc: Accumulator, t: ReturnType<Accumulator['topic']>, n: number, size: number): number[] {
    const owner = { complete() {}, fail() {} } as never
    const out: number[] = []
    for (let i = 0; i < n; i++) {
      const p = acc.stickyPartition(t, size)
      t.stickyBatch = acc.append(t, p, { value: null }, 0, size, owner, i, 0)
      out.push(p)
    }
    return out
  }

  it('fills one partition a batch at a time, then moves on, never to the same partition', () => {
    const acc = new Accumulator(1_000, 1 << 30, () => {})
    const t = acc.topic('t')
    t.sync(metadata(6), 6)
    // (1000 - 61) / 100 = 9 records per batch.
    const placed = place(acc, t, 9 * 600, 100)
    const runs: [number, number][] = []
    for (const p of placed) {
      const last = runs[runs.length - 1]
      if (last !== undefined && last[0] === p) last[1]++
      else runs.push([p, 1])
    }
    expect(runs.every(([, n]) => n === 9)).toBe(true)
    const counts = new Array(6).fill(0)
    for (const p of placed) counts[p]++
    // Uniform: 600 batches over 6 partitions, none far from 100 batches.
    for (const c of counts) expect(c / 9).toBeGreaterThan(60)
  })

  it('moves on when the batch it was filling is taken by the sender', () => {
    const acc = new Accumulator(1 << 20, 1 << 30, () => {})
    const t = acc.topic('t')
    t.sync(metadata(6), 6)
    const first = place(acc, t, 5, 10)
    expect(new Set(first).size).toBe(1)
    acc.close(t.queue(first[0]!))
    const next = place(acc, t, 5, 10)
    expect(new Set(next).size).toBe(1)
    expect(next[0]).not.toBe(first[0])
  })

  it('skips partitions without a leader', () => {
    const acc = new Accumulator(200, 1 << 30, () => {})
    const t = acc.topic('t')
    t.sync(metadata(4, [0, 2]), 4)
    expect(new Set(place(acc, t, 500, 50))).toEqual(new Set([1, 3]))
  })
})
