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
    })
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

  it('encodes records as given while their timestamps share a millisecond, and wraps them otherwise', () => {
    const d = new Delivery([], false)
    const same = new ProducerBatch(queue, 0)
    same.add({ topic: 't', value: 'a' }, 1_000, true, 10, d, 0)
    same.add({ topic: 't', value: 'b', timestamp: 5n }, 5, false, 10, d, 1)
    same.add({ topic: 't', value: 'c' }, 1_000, true, 10, d, 2)
    expect(same.stamps).toBeUndefined()
    expect([...decodeRecordBatch(same.encode(0))].map((r) => r.timestamp)).toEqual([1_000n, 5n, 1_000n])

    const mixed = new ProducerBatch(queue, 0)
    mixed.add({ topic: 't', value: 'a' }, 1_000, true, 10, d, 0)
    mixed.add({ topic: 't', value: 'b', timestamp: 7 }, 7, false, 10, d, 1)
    mixed.add({ topic: 't', value: 'c' }, 1_001, true, 10, d, 2)
    mixed.add({ topic: 't', value: 'd', timestamp: new Date(9) }, 9, false, 10, d, 3)
    expect(mixed.stamps).toEqual([1_000, 7, 1_001, 9])
    expect([...decodeRecordBatch(mixed.encode(0))].map((r) => r.timestamp)).toEqual([1_000n, 7n, 1_001n, 9n])
    expect([0, 1, 2, 3].map((i) => mixed.timestampOf(i))).toEqual([1_000, 7, 1_001, 9])
  })

  it('encodes the producer id, epoch and sequence it holds', () => {
    const b = new ProducerBatch(queue, 0)
    b.add({ topic: 't', value: 'a' }, 1, true, 10, new Delivery([], false), 0)
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
    b.add(records[0]!, 1, true, 1, d1, 0)
    b.add(records[1]!, 1, true, 1, d1, 1)
    b.add(records[0]!, 1, true, 1, d2, 0)
    b.add(records[3]!, 1, true, 1, d1, 3)
    b.add(records[1]!, 1, true, 1, d2, 1)
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
