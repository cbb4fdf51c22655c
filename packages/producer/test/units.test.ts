import { describe, expect, it } from 'vitest'
import { CompressionError, RECORD_BATCH_OVERHEAD, decodeRecordBatch, encodeRecordBatch, getCodec, registerCodec } from '@tidelog/protocol'
import { Accumulator } from '../src/accumulator.js'
import { ProducerBatch, incrementSequence } from '../src/batch-builder.js'
import { Delivery } from '../src/delivery.js'
import { Producer, SendError, type ProducerRecord } from '../src/index.js'
import { resolveOptions } from '../src/options.js'
import { recordSize } from '../src/record.js'

describe('options', () => {
  it("defaults to Java's producer settings", () => {
    expect(resolveOptions({ brokers: 'b:1' })).toEqual({
      acks: -1,
      idempotent: true,
      idempotenceExplicit: false,
      compression: 0,
      lingerMs: 5,
      batchBytes: 16_384,
      maxRequestBytes: 1_048_576,
      bufferMemory: 33_554_432,
      maxBlockMs: 60_000,
      maxInFlight: 5,
      deliveryTimeoutMs: 120_000,
      retries: Infinity,
      requestTimeoutMs: 30_000,
      metadataMaxIdleMs: 300_000,
      transactionalId: undefined,
      transactionTimeoutMs: 60_000,
    })
  })

  it('a transactionalId needs idempotence, as Java (transactional.id without enable.idempotence is a ConfigException)', () => {
    expect(resolveOptions({ brokers: 'b', transactionalId: 'tx' })).toMatchObject({ idempotent: true, idempotenceExplicit: true, transactionalId: 'tx' })
    expect(() => resolveOptions({ brokers: 'b', transactionalId: 'tx', idempotent: false })).toThrow(/transactionalId/)
    expect(() => resolveOptions({ brokers: 'b', transactionalId: 'tx', acks: 1 })).toThrow(/transactionalId conflicts with acks/)
    expect(() => resolveOptions({ brokers: 'b', transactionalId: '' })).toThrow(RangeError)
    expect(() => resolveOptions({ brokers: 'b', transactionalId: 'tx', transactionTimeoutMs: 0 })).toThrow(RangeError)
  })

  it('turns implicit idempotence off where it cannot work, and refuses explicit idempotence there', () => {
    expect(resolveOptions({ brokers: 'b', acks: 1 }).idempotent).toBe(false)
    expect(resolveOptions({ brokers: 'b', acks: 0 }).idempotent).toBe(false)
    expect(resolveOptions({ brokers: 'b', maxInFlight: 6 }).idempotent).toBe(false)
    expect(resolveOptions({ brokers: 'b', retries: 0 }).idempotent).toBe(false)
    expect(() => resolveOptions({ brokers: 'b', acks: 1, idempotent: true })).toThrow(/acks/)
    expect(() => resolveOptions({ brokers: 'b', maxInFlight: 6, idempotent: true })).toThrow(/maxInFlight/)
    expect(resolveOptions({ brokers: 'b', idempotent: true }).idempotenceExplicit).toBe(true)
    expect(resolveOptions({ brokers: 'b', idempotent: false }).idempotent).toBe(false)
  })

  it('checks values', () => {
    expect(() => resolveOptions({ brokers: 'b', acks: 2 as never })).toThrow(RangeError)
    expect(() => resolveOptions({ brokers: 'b', lingerMs: -1 })).toThrow(RangeError)
    expect(() => resolveOptions({ brokers: 'b', compression: 'brotli' as never })).toThrow(/compression/)
    expect(() => resolveOptions({ brokers: 'b', deliveryTimeoutMs: 1_000 })).toThrow(/lingerMs \+ requestTimeoutMs/)
    expect(resolveOptions({ brokers: 'b', requestTimeoutMs: 200_000 }).deliveryTimeoutMs).toBe(200_005)
    expect(resolveOptions({ brokers: 'b', compression: 'lz4' }).compression).toBe(3)
  })

  it('refuses a compression codec that cannot compress here at construction', () => {
    const make = () => new Producer({ brokers: 'b:1', compression: 'zstd' })
    // zstd compresses on every Node version now (pure JS where node:zlib lacks it).
    expect(make).not.toThrow()
    const zstd = getCodec('zstd')
    registerCodec('zstd', {
      compress() {
        throw new Error('no zstd encoder here')
      },
      decompress: zstd.decompress,
    })
    try {
      expect(make).toThrow(CompressionError)
      expect(make).toThrow(/zstd/)
    } finally {
      registerCodec('zstd', zstd)
    }
    for (const c of ['gzip', 'snappy', 'lz4', 'none'] as const) expect(() => new Producer({ brokers: 'b:1', compression: c })).not.toThrow()
  })
})

describe('record sizes', () => {
  it('are within a few bytes of the encoded size', () => {
    const records: ProducerRecord[] = [
      { topic: 't', value: null },
      { topic: 't', key: 'k', value: 'x'.repeat(100) },
      { topic: 't', key: new Uint8Array(300), value: 'é'.repeat(70), headers: { a: 'b', c: ['d', null], skip: undefined } },
      { topic: 't', value: 'v', headers: [{ key: 'h', value: new Uint8Array(5) }] },
    ]
    for (const r of records) {
      const actual = encodeRecordBatch({ records: [r as never], now: 1 }).length - RECORD_BATCH_OVERHEAD
      expect(Math.abs(recordSize(r) - actual)).toBeLessThanOrEqual(4)
    }
  })
})

describe('ProducerBatch', () => {
  const queue = new Accumulator(1 << 20, 1 << 20, () => {}).topic('t').queue(0)

  it('encodes every record with its timestamp, as the Java producer lays a batch out', () => {
    const d = new Delivery([], false)
    const b = new ProducerBatch(queue, 0)
    b.add({ value: 'a' }, 1_000, 10, d, 0)
    b.add({ key: 'k', value: 'b', headers: { h: ['x', null], skip: undefined } }, 7, 10, d, 1)
    b.add({ key: new Uint8Array([1, 2]), value: null, headers: [{ key: 'é', value: 'ü'.repeat(30) }] }, 1_001, 10, d, 2)
    const decoded = decodeRecordBatch(b.encode(0))
    expect([decoded.baseTimestamp, decoded.maxTimestamp, decoded.lastOffsetDelta]).toEqual([1_000n, 1_001n, 2])
    const records = [...decoded]
    expect(records.map((r) => r.timestamp)).toEqual([1_000n, 7n, 1_001n])
    expect(records.map((r) => r.offset)).toEqual([0n, 1n, 2n])
    expect(records.map((r) => [r.key?.toString('hex') ?? null, r.value?.toString() ?? null])).toEqual([[null, 'a'], ['6b', 'b'], ['0102', null]])
    expect(records.map((r) => r.headers.map((h) => [h.key, h.value?.toString() ?? null]))).toEqual([[], [['h', 'x'], ['h', null]], [['é', 'ü'.repeat(30)]]])
    expect([0, 1, 2].map((i) => b.timestampOf(i))).toEqual([1_000, 7, 1_001])
    // The same bytes as the protocol's encoder writes for these records.
    const reference = encodeRecordBatch({ records: [{ value: 'a', timestamp: 1_000 }, { key: 'k', value: 'b', headers: { h: ['x', null] }, timestamp: 7 }, { key: new Uint8Array([1, 2]), value: null, headers: [{ key: 'é', value: 'ü'.repeat(30) }], timestamp: 1_001 }] })
    expect(b.encode(0).equals(reference)).toBe(true)
  })

  it('writes timestamp deltas beyond 32 bits and long values as the protocol encoder does', () => {
    const b = new ProducerBatch(queue, 0)
    const d = new Delivery([], false)
    const big = 'é'.repeat(20_000)
    b.add({ key: 'a', value: big }, 1_700_000_000_000, 40_010, d, 0)
    b.add({ value: new Uint8Array(300).fill(7) }, 0, 310, d, 1)
    b.add({ value: 'z' }, 8_000_000_000_000, 10, d, 2)
    const reference = encodeRecordBatch({ records: [{ key: 'a', value: big, timestamp: 1_700_000_000_000 }, { value: new Uint8Array(300).fill(7), timestamp: 0 }, { value: 'z', timestamp: 8_000_000_000_000 }] })
    expect(b.encode(0).equals(reference)).toBe(true)
  })

  it('keeps the bytes as they were when added, whatever the caller does to its Buffers after', () => {
    const value = Buffer.from('value-1234567890'.repeat(4))
    const key = Buffer.from('key')
    const b = new ProducerBatch(queue, 0)
    const r = { key, value, headers: { h: key } }
    b.add(r, 5, 10, new Delivery([], false), 0)
    value.fill(0)
    key.fill(0)
    r.value = Buffer.from('edited')
    const [got] = [...decodeRecordBatch(b.encode(2))]
    expect([got!.key!.toString(), got!.value!.toString(), got!.headers[0]!.value!.toString()]).toEqual(['key', 'value-1234567890'.repeat(4), 'key'])
  })

  it('leaves bytes already encoded alone when encoded again with a new sequence', () => {
    const b = new ProducerBatch(queue, 0)
    b.add({ value: 'a' }, 1, 10, new Delivery([], false), 0)
    b.producerId = 1n
    b.producerEpoch = 0
    b.baseSequence = 3
    const first = b.encode(0)
    b.producerEpoch = 1
    b.baseSequence = 0
    const second = b.encode(0)
    expect([decodeRecordBatch(first).producerEpoch, decodeRecordBatch(first).baseSequence]).toEqual([0, 3])
    expect([decodeRecordBatch(second).producerEpoch, decodeRecordBatch(second).baseSequence]).toEqual([1, 0])
  })

  it('grows its buffer past the first 4 KiB, records intact', () => {
    const b = new ProducerBatch(queue, 0)
    const d = new Delivery([], false)
    for (let i = 0; i < 100; i++) b.add({ key: String(i), value: 'v'.repeat(200) + i }, 1_000 + i, 210, d, i)
    const records = [...decodeRecordBatch(b.encode(0))]
    expect(records.length).toBe(100)
    expect(records.map((r) => r.value!.toString())).toEqual(Array.from({ length: 100 }, (_, i) => 'v'.repeat(200) + i))
  })

  it('encodes the producer id, epoch and sequence it holds', () => {
    const b = new ProducerBatch(queue, 0)
    b.add({ value: 'a' }, 1, 10, new Delivery([], false), 0)
    b.producerId = 42n
    b.producerEpoch = 3
    b.baseSequence = 17
    const h = decodeRecordBatch(b.encode(2))
    expect([h.producerId, h.producerEpoch, h.baseSequence, h.compression]).toEqual([42n, 3, 17, 2])
  })

  it('keeps which send() and slot each record answers to, in runs', () => {
    const records = Array.from({ length: 4 }, (_, i): ProducerRecord => ({ topic: 't', value: String(i) }))
    const d1 = new Delivery(records, false)
    const d2 = new Delivery(records.slice(0, 2), false)
    const b = new ProducerBatch(queue, 0)
    b.add(records[0]!, 1, 1, d1, 0)
    b.add(records[1]!, 1, 1, d1, 1)
    b.add(records[0]!, 1, 1, d2, 0)
    b.add(records[3]!, 1, 1, d1, 3)
    b.add(records[1]!, 1, 1, d2, 1)
    expect(b.owners).toEqual([d1, d2, d1, d2])
    expect(b.runStart).toEqual([0, 2, 3, 4])
    expect(b.runSlot).toEqual([0, 0, 3, 1])
  })

  it('wraps sequence numbers as Kafka does', () => {
    expect(incrementSequence(5, 3)).toBe(8)
    expect(incrementSequence(0x7fffffff, 1)).toBe(0)
    expect(incrementSequence(0x7ffffffe, 5)).toBe(3)
  })
})

describe('Delivery', () => {
  it('resolves an array in order, or rejects with every record settled', async () => {
    const recs = [{ topic: 't', value: 'a' }, { topic: 't', value: 'b' }]
    const ok = new Delivery(recs, false)
    ok.complete(1, { topic: 't', partition: 0, offset: 1n, timestamp: 0 })
    ok.complete(0, { topic: 't', partition: 0, offset: 0n, timestamp: 0 })
    expect((await ok.promise as { offset: bigint }[]).map((m) => m.offset)).toEqual([0n, 1n])

    const bad = new Delivery(recs, false)
    bad.fail(0, new Error('nope'))
    bad.complete(1, { topic: 't', partition: 0, offset: 1n, timestamp: 0 })
    const err = (await bad.promise.catch((e: unknown) => e)) as SendError
    expect(err).toBeInstanceOf(SendError)
    expect(err.errors.map((e) => e?.message)).toEqual(['nope', undefined])
    expect(err.results[0]).toBeUndefined()
    expect(err.results[1]!.offset).toBe(1n)
    expect(Object.keys(err.errors)).toEqual(['0', '1'])
  })
})

describe('Accumulator.expireIdle (metadataMaxIdleMs)', () => {
  it('drops idle topics only once nothing of theirs is unfinished, keeping sequence numbers', () => {
    const acc = new Accumulator(1 << 20, 1 << 20, () => {})
    const d = new Delivery([], false)
    const t = acc.topic('t')
    t.lastUsed = 10
    const batch = acc.append(t, 2, { value: 'v' }, 1, 10, d, 0, 10)
    const q = t.queue(2)
    q.producerId = 7n
    q.producerEpoch = 1
    q.nextSequence = 5
    q.lastAckedSequence = 4
    acc.topic('busy-not').lastUsed = 50
    expect(acc.expireIdle(20)).toEqual([])
    q.batches.length = 0
    acc.done(batch)
    expect(acc.expireIdle(20)).toEqual(['t'])
    expect(acc.hasTopic('t')).toBe(false)
    expect(acc.hasTopic('busy-not')).toBe(true)
    const again = acc.topic('t').queue(2)
    expect([again.producerId, again.producerEpoch, again.nextSequence, again.lastAckedSequence]).toEqual([7n, 1, 5, 4])
    expect(acc.topic('t').queue(0).nextSequence).toBe(0)
  })
})
