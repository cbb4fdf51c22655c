/**
 * Where records land on the tidelog broker: keyed records where kafkajs' Java-compatible
 * partitioner (and so the Java client) puts them, keyless ones in sticky runs, round robin,
 * explicit partitions and custom functions.
 */
import { Partitioners } from 'kafkajs'
import { afterEach, describe, expect, it } from 'vitest'
import { Producer, partitioners, type ProducerOptions } from '@tidelog/producer'
import { startTestBroker, type TestBroker } from '../../packages/producer/test/broker.js'
import { randomKeys, readTopic } from '../../packages/producer/test/helpers.js'

const cleanup: (() => Promise<void>)[] = []
afterEach(async () => {
  for (const f of cleanup.splice(0).reverse()) await f()
})

async function setup(partitions: number, opts: Partial<ProducerOptions> = {}): Promise<{ b: TestBroker; p: Producer }> {
  const b = await startTestBroker({ numPartitions: partitions })
  cleanup.push(() => b.close())
  const p = new Producer({ brokers: [b.bootstrap], ...opts })
  cleanup.push(() => p.close())
  return { b, p }
}

describe('record placement on the tidelog broker', () => {
  it("10,000 keys, non-ASCII ones too, land where kafkajs' Java-compatible partitioner puts them", async () => {
    const partitions = 7
    const { b, p } = await setup(partitions)
    const keys = randomKeys()
    const results = await p.send(keys.map((key, i) => ({ topic: 'keys', key, value: String(i) })))
    const javaCompatible = Partitioners.JavaCompatiblePartitioner()
    const partitionMetadata = Array.from({ length: partitions }, (_, partitionId) => ({ partitionId, leader: 1, replicas: [1], isr: [1], partitionErrorCode: 0 }))
    const expected = keys.map((key) => javaCompatible({ topic: 'keys', partitionMetadata, message: { key, value: null } }))
    expect(results.map((r) => r.partition)).toEqual(expected)
    const read = await readTopic('127.0.0.1', b.broker.port, 'keys', partitions, keys.length)
    for (const part of read) for (const r of part) expect(r.partition).toBe(expected[Number(r.value)])
    expect(read.flat().map((r) => r.key).sort()).toEqual([...keys].sort())
  })

  it('keyless records go to one partition at a time, a batch each, spread over all partitions', async () => {
    const { p } = await setup(6, { batchBytes: 2_000 })
    const value = 'x'.repeat(100)
    const results = await p.send(Array.from({ length: 6_000 }, () => ({ topic: 'sticky', value })))
    const runs: number[] = []
    let last = -1
    for (const r of results) {
      if (r.partition !== last) runs.push(0)
      runs[runs.length - 1]!++
      last = r.partition
    }
    // (2000 - 61) / ~110 bytes: 17 records per batch, and a run never spans less than a batch.
    expect(runs.slice(0, -1).every((n) => n >= 15 && n <= 18)).toBe(true)
    const counts = new Array(6).fill(0)
    for (const r of results) counts[r.partition]++
    for (const c of counts) expect(c).toBeGreaterThan(400)
  })

  it('roundRobin gives each partition its turn; explicit partitions and custom functions are obeyed', async () => {
    const { b } = await setup(6)
    const rr = new Producer({ brokers: [b.bootstrap], partitioner: partitioners.roundRobin })
    cleanup.push(() => rr.close())
    const results = await rr.send(Array.from({ length: 600 }, (_, i) => ({ topic: 'rr', key: 'same', value: String(i) })))
    const first = results[0]!.partition
    expect(results.map((r) => r.partition)).toEqual(results.map((_, i) => (first + i) % 6))

    const custom = new Producer({ brokers: [b.bootstrap], partitioner: (record, { partitionCount }) => Number(record.value) % partitionCount })
    cleanup.push(() => custom.close())
    const placed = await custom.send(Array.from({ length: 12 }, (_, i) => ({ topic: 'custom', value: String(i) })))
    expect(placed.map((r) => r.partition)).toEqual([0, 1, 2, 3, 4, 5, 0, 1, 2, 3, 4, 5])
    const explicit = await custom.send({ topic: 'custom', value: '1', partition: 4 })
    expect(explicit.partition).toBe(4)

    const byName = new Producer({ brokers: [b.bootstrap], partitioner: 'random' })
    cleanup.push(() => byName.close())
    const random = await byName.send(Array.from({ length: 300 }, () => ({ topic: 'random', key: 'k', value: 'v' })))
    expect(new Set(random.map((r) => r.partition)).size).toBe(6)
  })
})
