import { ApiKeys, ZERO_UUID, decodeRecordBatches } from '@tidelog/protocol'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { type Broker, type BrokerOptions, startBroker } from '../src/index.js'
import { LogSegment } from '../src/log/segment.js'
import { makeBatch } from './helpers/batches.js'
import { RawClient } from './helpers/raw-client.js'
import { tempDir } from './helpers/tmp.js'
import { connectTracked, createTopic, trackOpened } from './helpers/opened.js'

const open = trackOpened()
afterEach(() => {
  vi.restoreAllMocks()
})

async function start(opts: BrokerOptions = {}) {
  const b = await startBroker({ port: 0, dataDir: tempDir(), ...opts })
  open.brokers.push(b)
  const c = await RawClient.connect(b.port)
  open.clients.push(c)
  return { b, c }
}

const connect = (b: Broker) => connectTracked(open, b)

async function produce(c: RawClient, topic: string, partition: number, records: Buffer): Promise<bigint> {
  const r = await c.request(ApiKeys.Produce, 9, {
    transactionalId: null,
    acks: -1,
    timeoutMs: 1000,
    topicData: [{ name: topic, partitionData: [{ index: partition, records }] }],
  })
  const p = r.responses[0].partitionResponses[0]
  expect(p.errorCode).toBe(0)
  return p.baseOffset
}

interface Want {
  partition: number
  offset: bigint
  partitionMaxBytes?: number
}

function fetch(c: RawClient, topic: string, wants: Want[], o: { maxBytes?: number; minBytes?: number; maxWaitMs?: number; isolationLevel?: number } = {}) {
  return c.request(ApiKeys.Fetch, 12, {
    replicaId: -1,
    maxWaitMs: o.maxWaitMs ?? 0,
    minBytes: o.minBytes ?? 1,
    maxBytes: o.maxBytes ?? 50 << 20,
    isolationLevel: o.isolationLevel ?? 0,
    sessionId: 0,
    sessionEpoch: -1,
    topics: [
      {
        topic,
        partitions: wants.map((w) => ({
          partition: w.partition,
          fetchOffset: w.offset,
          partitionMaxBytes: w.partitionMaxBytes ?? 1 << 20,
          logStartOffset: -1n,
          currentLeaderEpoch: -1,
        })),
      },
    ],
    forgottenTopicsData: [],
    rackId: '',
  })
}

const sizeOf = (records: Uint8Array | null) => records?.length ?? 0

/** Batches of one 1,000-byte record each: 1,083 bytes on the wire. */
const BATCH = makeBatch(1, { valueSize: 1000 }).length

describe('fetch limits', () => {
  it('caps a response at fetch.max.bytes in whole batches; a good consumer still reads everything', async () => {
    const { b, c } = await start({ fetchMaxBytes: 10 * BATCH + BATCH / 2 })
    await createTopic(c, 'capped', 2)
    for (let i = 0; i < 40; i++) await produce(c, 'capped', i % 2, makeBatch(1, { valueSize: 1000 }))

    // The request allows 50 MiB; the broker's cap wins.
    const r = await fetch(c, 'capped', [{ partition: 0, offset: 0n }, { partition: 1, offset: 0n }])
    const parts = r.responses[0].partitions
    const total = sizeOf(parts[0].records) + sizeOf(parts[1].records)
    expect(total).toBeLessThanOrEqual(10 * BATCH + BATCH / 2)
    expect(total).toBe(10 * BATCH)
    // The first partition takes the whole budget; every byte is part of a whole batch.
    expect(decodeRecordBatches(parts[0].records)).toHaveLength(10)
    expect(sizeOf(parts[1].records)).toBe(0)
    expect(parts[1].highWatermark).toBe(20n)

    // The request's own max_bytes, when smaller, wins over the broker's.
    const small = await fetch(c, 'capped', [{ partition: 0, offset: 0n }], { maxBytes: 3 * BATCH })
    expect(sizeOf(small.responses[0].partitions[0].records)).toBe(3 * BATCH)

    // A second consumer on its own connection pages through both partitions to the end.
    const good = await connect(b)
    const next = [0n, 0n]
    let fetches = 0
    while (next[0]! < 20n || next[1]! < 20n) {
      const f = await fetch(good, 'capped', [{ partition: 0, offset: next[0]! }, { partition: 1, offset: next[1]! }])
      let bytes = 0
      for (const p of f.responses[0].partitions) {
        expect(p.errorCode).toBe(0)
        bytes += sizeOf(p.records)
        for (const batch of decodeRecordBatches(p.records)) {
          expect(batch.baseOffset).toBe(next[p.partitionIndex]!)
          next[p.partitionIndex] = batch.baseOffset + BigInt(batch.lastOffsetDelta) + 1n
        }
      }
      expect(bytes).toBeGreaterThan(0)
      expect(bytes).toBeLessThanOrEqual(10 * BATCH + BATCH / 2)
      fetches++
    }
    expect(fetches).toBe(4)
  })

  it('caps each partition at its partition_max_bytes', async () => {
    const { c } = await start()
    await createTopic(c, 'per-part', 3)
    for (let p = 0; p < 3; p++) for (let i = 0; i < 5; i++) await produce(c, 'per-part', p, makeBatch(1, { valueSize: 1000 }))
    const r = await fetch(c, 'per-part', [
      { partition: 0, offset: 0n, partitionMaxBytes: 2 * BATCH + 10 },
      { partition: 1, offset: 1n, partitionMaxBytes: 3 * BATCH },
      { partition: 2, offset: 0n, partitionMaxBytes: BATCH - 1 },
    ])
    const [p0, p1, p2] = r.responses[0].partitions
    expect(sizeOf(p0.records)).toBe(2 * BATCH)
    expect(decodeRecordBatches(p1.records).map((x) => x.baseOffset)).toEqual([1n, 2n, 3n])
    // Not the first partition with data: its limit holds even though it is smaller than one batch.
    expect(sizeOf(p2.records)).toBe(0)
    expect(p2.errorCode).toBe(0)
  })

  it('returns the first batch of the first non-empty partition even when it is larger than every limit (KIP-74)', async () => {
    const { b, c } = await start({ fetchMaxBytes: 4096, maxMessageBytes: 64 * 1024 })
    await createTopic(c, 'big', 3)
    const big = makeBatch(1, { valueSize: 20_000 })
    await produce(c, 'big', 1, big)
    await produce(c, 'big', 1, makeBatch(1, { valueSize: 1000 }))
    await produce(c, 'big', 2, makeBatch(1, { valueSize: 1000 }))

    // Partition 0 is empty; partition 1 is the first with data: exactly its first (oversized) batch comes back.
    const r = await fetch(c, 'big', [
      { partition: 0, offset: 0n, partitionMaxBytes: 100 },
      { partition: 1, offset: 0n, partitionMaxBytes: 100 },
      { partition: 2, offset: 0n },
    ], { maxBytes: 100 })
    const [p0, p1, p2] = r.responses[0].partitions
    expect(sizeOf(p0.records)).toBe(0)
    expect(sizeOf(p1.records)).toBe(big.length)
    expect(decodeRecordBatches(p1.records)).toHaveLength(1)
    // The budget is spent: later partitions get nothing in this response.
    expect(sizeOf(p2.records)).toBe(0)

    // The consumer makes progress: the next fetch starts after the big batch.
    const next = await fetch(c, 'big', [{ partition: 1, offset: 1n, partitionMaxBytes: 100 }], { maxBytes: 100 })
    expect(decodeRecordBatches(next.responses[0].partitions[0].records).map((x) => x.baseOffset)).toEqual([1n])

    // A long poll with min_bytes above the cap answers as soon as the cap's worth is there.
    const other = await connect(b)
    const t0 = Date.now()
    const lp = await fetch(other, 'big', [{ partition: 2, offset: 0n }], { minBytes: 1 << 20, maxWaitMs: 5000, maxBytes: 1000 })
    expect(Date.now() - t0).toBeLessThan(2000)
    expect(decodeRecordBatches(lp.responses[0].partitions[0].records)).toHaveLength(1)
  })

  it('reads from disk only the bytes the response carries, starting at the offset index', async () => {
    const { c } = await start({ segmentBytes: 1 << 30 })
    await createTopic(c, 'exact', 1)
    for (let i = 0; i < 200; i++) await produce(c, 'exact', 0, makeBatch(1, { valueSize: 1000 }))
    const reads: number[] = []
    const orig = LogSegment.prototype.read
    vi.spyOn(LogSegment.prototype, 'read').mockImplementation(function (this: LogSegment, position: number, length: number) {
      reads.push(length)
      return orig.call(this, position, length)
    })
    for (const [offset, max] of [[0n, 5 * BATCH + 500], [150n, 7 * BATCH], [199n, 1 << 20], [37n, 3 * BATCH - 1]] as const) {
      reads.length = 0
      const r = await fetch(c, 'exact', [{ partition: 0, offset, partitionMaxBytes: max }])
      const records = r.responses[0].partitions[0].records
      const batches = decodeRecordBatches(records)
      expect(batches[0]!.baseOffset).toBe(offset)
      expect(sizeOf(records)).toBe(Math.min(Math.floor(max / BATCH), 200 - Number(offset)) * BATCH)
      // One read per fetch, of exactly the bytes sent: no segment-sized buffer, no partial batch cut off afterwards.
      expect(reads).toEqual([sizeOf(records)])
    }
  })
})

describe('fetch across segments', () => {
  it.each([['0', 'an index entry per batch'], ['4096', 'the default index interval']])(
    'pages through rolled segments in whole batches with index.interval.bytes=%s (%s)',
    async (interval) => {
      const { c } = await start()
      // About seven batches a segment; the limit is three and a half batches.
      await createTopic(c, 'rolled', 1, { 'internal.segment.bytes': String(7 * BATCH + 100), 'index.interval.bytes': interval })
      for (let i = 0; i < 40; i++) await produce(c, 'rolled', 0, makeBatch(1, { valueSize: 1000 }))
      const reads: number[] = []
      const orig = LogSegment.prototype.read
      vi.spyOn(LogSegment.prototype, 'read').mockImplementation(function (this: LogSegment, position: number, length: number) {
        reads.push(length)
        return orig.call(this, position, length)
      })
      let next = 0n
      while (next < 40n) {
        reads.length = 0
        const r = await fetch(c, 'rolled', [{ partition: 0, offset: next, partitionMaxBytes: Math.floor(3.5 * BATCH) }])
        const records = r.responses[0].partitions[0].records
        const batches = decodeRecordBatches(records)
        expect(batches.length).toBeGreaterThan(0)
        expect(sizeOf(records)).toBeLessThanOrEqual(3.5 * BATCH)
        expect(reads).toEqual([sizeOf(records)])
        for (const b of batches) {
          expect(b.baseOffset).toBe(next)
          next++
        }
      }
    },
  )
})

describe('fetch by topic id', () => {
  it('applies the same limits on v17', async () => {
    const { c } = await start({ fetchMaxBytes: 2 * BATCH })
    await createTopic(c, 'ids', 1)
    for (let i = 0; i < 5; i++) await produce(c, 'ids', 0, makeBatch(1, { valueSize: 1000 }))
    const meta = await c.request(ApiKeys.Metadata, 12, { topics: [{ name: 'ids', topicId: ZERO_UUID }], allowAutoTopicCreation: false, includeTopicAuthorizedOperations: false })
    const r = await c.request(ApiKeys.Fetch, 17, {
      replicaId: -1, maxWaitMs: 0, minBytes: 1, maxBytes: 1 << 20, isolationLevel: 0, sessionId: 0, sessionEpoch: -1,
      topics: [{ topicId: meta.topics[0].topicId, partitions: [{ partition: 0, fetchOffset: 0n, partitionMaxBytes: 1 << 20, logStartOffset: -1n, currentLeaderEpoch: -1, lastFetchedEpoch: -1 }] }],
      forgottenTopicsData: [], rackId: '',
    })
    expect(sizeOf(r.responses[0].partitions[0].records)).toBe(2 * BATCH)
  })
})

describe('fetch of a topic deleted while the request waits', () => {
  // A long poll holds the partition's log; DeleteTopics discards it meanwhile (the
  // librdkafka suite runs tests two at a time, so this happens there) and wakes it.
  for (const isolationLevel of [0, 1]) {
    it(`answers UNKNOWN_TOPIC_OR_PARTITION and keeps the connection (isolation level ${isolationLevel})`, async () => {
      const { b, c } = await start()
      await createTopic(c, 'doomed', 1)
      await produce(c, 'doomed', 0, makeBatch(2))
      // max_wait_ms beyond the test's timeout: only the deletion can end this long poll in time.
      const waiting = fetch(c, 'doomed', [{ partition: 0, offset: 2n }], { maxWaitMs: 600_000, minBytes: 1, isolationLevel })
      const admin = await connect(b)
      await new Promise((r) => setTimeout(r, 100))
      const deleted = await admin.request(ApiKeys.DeleteTopics, 6, { topics: [{ name: 'doomed', topicId: ZERO_UUID }], timeoutMs: 5000 })
      expect(deleted.responses[0].errorCode).toBe(0)
      const r = await waiting
      expect(r.errorCode).toBe(0)
      expect(r.responses[0].partitions[0].errorCode).toBe(3) // UNKNOWN_TOPIC_OR_PARTITION
      // The same connection still serves requests.
      const again = await fetch(c, 'doomed', [{ partition: 0, offset: 0n }], { isolationLevel })
      expect(again.responses[0].partitions[0].errorCode).toBe(3)
    })
  }
})
