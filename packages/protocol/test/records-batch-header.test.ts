import { describe, expect, it } from 'vitest'
import {
  CorruptRecordError,
  DecodeError,
  InvalidRecordError,
  RECORD_BATCH_OVERHEAD,
  RecordTooLargeError,
  crc32c,
  iterateBatches,
  readBatchHeader,
  setBaseOffset,
  setPartitionLeaderEpoch,
  validateRecordBatch,
} from '@tidelog/protocol'
import { kafkajsBatch } from './golden-records/kafkajs.js'

const TS = 1_700_000_000_123

async function sample(n = 3, extra: Partial<Parameters<typeof kafkajsBatch>[0]> = {}) {
  return kafkajsBatch({
    records: Array.from({ length: n }, (_, i) => ({ key: Buffer.from(`k${i}`), value: Buffer.from(`value-${i}`) })),
    firstTimestamp: TS,
    maxTimestamp: TS + 5,
    producerId: 4242n,
    producerEpoch: 3,
    firstSequence: 17,
    partitionLeaderEpoch: 9,
    firstOffset: 100n,
    transactional: true,
    ...extra,
  })
}

const recrc = (b: Buffer) => b.writeUInt32BE(crc32c(b, 21, b.length), 17)

describe('readBatchHeader / validateRecordBatch', () => {
  it('reads every field of a kafkajs batch', async () => {
    const b = await sample()
    const h = validateRecordBatch(b)
    expect(h).toEqual(readBatchHeader(b))
    expect(h).toMatchObject({
      baseOffset: 100n,
      batchLength: b.length - 12,
      partitionLeaderEpoch: 9,
      magic: 2,
      crc: b.readUInt32BE(17),
      lastOffsetDelta: 2,
      baseTimestamp: BigInt(TS),
      maxTimestamp: BigInt(TS + 5),
      producerId: 4242n,
      producerEpoch: 3,
      baseSequence: 17,
      recordCount: 3,
      compression: 0,
      timestampType: 0,
      isTransactional: true,
      isControl: false,
      hasDeleteHorizon: false,
    })
    expect(RECORD_BATCH_OVERHEAD).toBe(61)
  })

  it('reads negative int64 fields and attribute bits', async () => {
    const b = await sample(1, { producerId: -1n, firstOffset: -(2n ** 63n) })
    b.writeInt16BE(0x7f & ~0x07 | 2, 21)
    const h = readBatchHeader(b)
    expect(h.producerId).toBe(-1n)
    expect(h.baseOffset).toBe(-(2n ** 63n))
    expect(h).toMatchObject({ compression: 2, timestampType: 1, isTransactional: true, isControl: true, hasDeleteHorizon: true })
  })

  it('throws DecodeError on a short header', async () => {
    const b = await sample()
    expect(() => readBatchHeader(b.subarray(0, 60))).toThrow(DecodeError)
    expect(() => readBatchHeader(b, b.length - 10)).toThrow(DecodeError)
  })

  it('rejects a flipped bit anywhere in the CRC range as corrupt (code 2)', async () => {
    const b = await sample()
    for (let i = 21; i < b.length; i++) {
      const c = Buffer.from(b)
      c[i]! ^= 0x10
      const err = (() => { try { validateRecordBatch(c) } catch (e) { return e } })() as CorruptRecordError
      expect(err).toBeInstanceOf(CorruptRecordError)
      expect(err.code).toBe(2)
      expect(err.retriable).toBe(true)
    }
  })

  it('ignores changes outside the CRC range that setBaseOffset / setPartitionLeaderEpoch make', async () => {
    const b = await sample()
    setBaseOffset(b, 0, 2n ** 40n + 7n)
    setPartitionLeaderEpoch(b, 0, 123456)
    const h = validateRecordBatch(b)
    expect(h.baseOffset).toBe(2n ** 40n + 7n)
    expect(h.partitionLeaderEpoch).toBe(123456)
    setBaseOffset(b, 0, -1n)
    expect(readBatchHeader(b).baseOffset).toBe(-1n)
    expect(() => setBaseOffset(b, b.length - 4, 0n)).toThrow(DecodeError)
    expect(() => setPartitionLeaderEpoch(b, b.length - 8, 0)).toThrow(DecodeError)
  })

  it('rejects lengths, magic and counts as Kafka does', async () => {
    const b = await sample()
    expect(() => validateRecordBatch(b.subarray(0, 11))).toThrow(CorruptRecordError)
    expect(() => validateRecordBatch(b.subarray(0, b.length - 1))).toThrow(CorruptRecordError)
    const short = Buffer.from(b)
    short.writeInt32BE(48, 8)
    expect(() => validateRecordBatch(short)).toThrow(CorruptRecordError)
    const magic = Buffer.from(b)
    magic[16] = 1
    expect(() => validateRecordBatch(magic)).toThrow(/magic 1/)
    expect(() => validateRecordBatch(b, 0, { maxBatchBytes: b.length - 1 })).toThrow(RecordTooLargeError)
    expect(validateRecordBatch(b, 0, { maxBatchBytes: b.length }).recordCount).toBe(3)

    const count = Buffer.from(b)
    count.writeInt32BE(4, 57)
    recrc(count)
    const e = (() => { try { validateRecordBatch(count) } catch (x) { return x } })() as InvalidRecordError
    expect(e).toBeInstanceOf(InvalidRecordError)
    expect(e.code).toBe(87)
    const zero = Buffer.from(b)
    zero.writeInt32BE(0, 57)
    zero.writeInt32BE(-1, 23)
    recrc(zero)
    expect(() => validateRecordBatch(zero)).toThrow(InvalidRecordError)
    const codec = Buffer.from(b)
    codec.writeInt16BE(5, 21)
    recrc(codec)
    expect(() => validateRecordBatch(codec)).toThrow(/compression/)
  })

  it('validates a batch at an offset inside a larger buffer', async () => {
    const b = await sample()
    const big = Buffer.concat([Buffer.alloc(7, 0xaa), b, Buffer.alloc(5)])
    expect(validateRecordBatch(big, 7).recordCount).toBe(3)
  })
})

describe('iterateBatches', () => {
  it('walks concatenated batches and skips a trailing partial one', async () => {
    const a = await sample(2)
    const b = await sample(5, { firstOffset: 102n })
    const c = await sample(1, { firstOffset: 107n })
    const all = Buffer.concat([a, b, c])
    const seen = [...iterateBatches(all)].map((x) => [x.offset, x.size, x.header.baseOffset, x.header.recordCount])
    expect(seen).toEqual([
      [0, a.length, 100n, 2],
      [a.length, b.length, 102n, 5],
      [a.length + b.length, c.length, 107n, 1],
    ])
    for (let cut = 1; cut < c.length; cut++) {
      const partial = all.subarray(0, all.length - cut)
      expect([...iterateBatches(partial)].length).toBe(2)
    }
    expect([...iterateBatches(Buffer.alloc(0))]).toEqual([])
    expect([...iterateBatches(Uint8Array.from(all))].length).toBe(3)
  })

  it('throws CorruptRecordError on an impossible length or a foreign magic', async () => {
    const a = await sample(2)
    const bad = Buffer.concat([a, Buffer.from('000000000000000000000003', 'hex'), Buffer.alloc(10)])
    const it = iterateBatches(bad)
    expect(it.next().value?.header.recordCount).toBe(2)
    expect(() => it.next()).toThrow(CorruptRecordError)
    const m = Buffer.from(a)
    m[16] = 0
    expect(() => [...iterateBatches(m)]).toThrow(CorruptRecordError)
  })
})
