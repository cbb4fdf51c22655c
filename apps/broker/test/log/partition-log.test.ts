import { existsSync, fstatSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import { validateRecordBatch } from '@tidelog/protocol'
import { describe, expect, it } from 'vitest'
import { OffsetOutOfRangeError, PartitionLog } from '../../src/log/index.js'
import { batchOffsets, makeBatch } from '../helpers/batches.js'
import { tempDir } from '../helpers/tmp.js'

function openLog(dir: string, config: Parameters<typeof PartitionLog.open>[0]['config'] = {}, extra = {}) {
  return PartitionLog.open({ dir: join(dir, 't-0'), topic: 't', partition: 0, config, clean: true, ...extra })
}

describe('PartitionLog append and read', () => {
  it('assigns offsets, patches only baseOffset and leader epoch, and reads whole batches back', async () => {
    const log = openLog(tempDir())
    expect(log.logEndOffset).toBe(0)
    const originals = [makeBatch(3), makeBatch(1), makeBatch(5)]
    const copies = originals.map((b) => Buffer.from(b))
    const results = copies.map((b) => log.append(b, { leaderEpoch: 7 }))
    expect(results.map((r) => [r.baseOffset, r.lastOffset, r.count])).toEqual([
      [0, 2, 3],
      [3, 3, 1],
      [4, 8, 5],
    ])
    expect(results[0]!.logAppendTime).toBe(-1)
    expect(log.logEndOffset).toBe(9)
    expect(log.highWatermark).toBe(9)

    const all = await log.read(0, 1 << 20)
    expect(all.records.length).toBe(originals.reduce((n, b) => n + b.length, 0))
    expect(batchOffsets(all.records)).toEqual([0, 3, 4])
    let p = 0
    for (const [i, orig] of originals.entries()) {
      const stored = all.records.subarray(p, p + orig.length)
      expect(Number(stored.readBigInt64BE(0))).toBe(results[i]!.baseOffset)
      expect(stored.readInt32BE(12)).toBe(7)
      // Everything from magic on is byte-identical to what the producer sent.
      expect(stored.subarray(16).equals(orig.subarray(16))).toBe(true)
      expect(() => validateRecordBatch(stored)).not.toThrow()
      p += orig.length
    }
    expect(all.highWatermark).toBe(9)
    expect(all.logStartOffset).toBe(0)
    await log.close()
  })

  it('starts at the batch holding the offset', async () => {
    const log = openLog(tempDir())
    log.append(makeBatch(3))
    log.append(makeBatch(3))
    log.append(makeBatch(3))
    for (const [offset, first] of [[0, 0], [2, 0], [3, 3], [5, 3], [8, 6]] as const) {
      expect(batchOffsets((await log.read(offset, 1 << 20)).records)[0]).toBe(first)
    }
    await log.close()
  })

  it('returns at least one whole batch, and only whole batches', async () => {
    const log = openLog(tempDir())
    const size = makeBatch(2, { valueSize: 100 }).length
    for (let i = 0; i < 4; i++) log.append(makeBatch(2, { valueSize: 100 }))
    expect((await log.read(0, 1)).records.length).toBe(size)
    expect((await log.read(0, 1, false)).records.length).toBe(0)
    expect((await log.read(0, size * 2 + size / 2)).records.length).toBe(size * 2)
    expect((await log.read(2, size * 10)).records.length).toBe(size * 3)
    await log.close()
  })

  it('answers at and past the end, and before the start', async () => {
    const log = openLog(tempDir())
    log.append(makeBatch(2))
    const atEnd = await log.read(2, 1000)
    expect(atEnd.records.length).toBe(0)
    expect(atEnd.highWatermark).toBe(2)
    await expect(log.read(3, 1000)).rejects.toBeInstanceOf(OffsetOutOfRangeError)
    await expect(log.read(-1, 1000)).rejects.toBeInstanceOf(OffsetOutOfRangeError)
    await log.close()
  })

  it('rejects bytes that are not whole batches without writing anything', () => {
    const log = openLog(tempDir())
    const b = makeBatch(2)
    expect(() => log.append(b.subarray(0, b.length - 1))).toThrow(/does not fit/)
    expect(() => log.append(Buffer.concat([b, Buffer.alloc(20)]))).toThrow(/not a record batch/)
    expect(() => log.append(Buffer.alloc(0))).toThrow(/no record batches/)
    expect(log.logEndOffset).toBe(0)
    expect(log.size).toBe(0)
  })

  it('appends several batches in one call', async () => {
    const log = openLog(tempDir())
    const r = log.append(Buffer.concat([makeBatch(2), makeBatch(3)]))
    expect([r.baseOffset, r.lastOffset]).toEqual([0, 4])
    expect(batchOffsets((await log.read(0, 1 << 20)).records)).toEqual([0, 2])
    await log.close()
  })

  it('stamps LogAppendTime and keeps the CRC valid', async () => {
    const log = openLog(tempDir())
    const r = log.append(makeBatch(2, { baseTimestamp: 1000 }), { logAppendTime: true, now: 1_700_000_000_000 })
    expect(r.logAppendTime).toBe(1_700_000_000_000)
    const h = validateRecordBatch((await log.read(0, 1000)).records)
    expect(h.timestampType).toBe(1)
    expect(h.maxTimestamp).toBe(1_700_000_000_000n)
    await log.close()
  })

  it('finds batches by timestamp and the batch with the largest timestamp', async () => {
    const log = openLog(tempDir(), { indexIntervalBytes: 64 })
    for (let i = 0; i < 50; i++) log.append(makeBatch(2, { baseTimestamp: 1000 + i * 10 }))
    log.append(makeBatch(1, { baseTimestamp: 5000 }))
    log.append(makeBatch(1, { baseTimestamp: 1200 }))
    expect((await log.findBatchByTimestamp(0))?.baseOffset).toBe(0)
    expect((await log.findBatchByTimestamp(1000))?.baseOffset).toBe(0)
    expect((await log.findBatchByTimestamp(1001))?.baseOffset).toBe(2)
    expect((await log.findBatchByTimestamp(1250))?.baseOffset).toBe(50)
    expect((await log.findBatchByTimestamp(1495))?.baseOffset).toBe(100)
    expect((await log.findBatchByTimestamp(5001))).toBeUndefined()
    const max = await log.batchWithMaxTimestamp()
    expect(max?.baseOffset).toBe(100)
    expect(max?.maxTimestamp).toBe(5000)
    expect(validateRecordBatch(max!.batch).recordCount).toBe(1)
    await log.close()
  })
})

describe('PartitionLog flush policy', () => {
  it('asks for an fsync once flush.messages are unflushed, and a flush moves the recovery point', async () => {
    const log = openLog(tempDir(), { flushMessages: 3 })
    log.append(makeBatch(2))
    expect(log.needsFlush).toBe(false)
    log.append(makeBatch(1))
    expect(log.needsFlush).toBe(true)
    expect(log.recoveryPoint).toBe(0)
    expect(log.active.dirty).toBe(true)
    await log.flush()
    expect(log.needsFlush).toBe(false)
    expect(log.unflushedMessages).toBe(0)
    expect(log.recoveryPoint).toBe(3)
    expect(log.active.dirty).toBe(false)
    await log.close()
  })

  it('leaves durability to the page cache by default', () => {
    const log = openLog(tempDir())
    for (let i = 0; i < 100; i++) log.append(makeBatch(10))
    expect(log.needsFlush).toBe(false)
  })

  it('shares one flush among concurrent callers and runs another for appends made meanwhile', async () => {
    const log = openLog(tempDir())
    log.append(makeBatch(1))
    const a = log.flush()
    log.append(makeBatch(1))
    const b = log.flush()
    const c = log.flush()
    expect(b).toBe(c)
    await Promise.all([a, b])
    expect(log.recoveryPoint).toBe(2)
    await log.close()
  })
})

describe('PartitionLog segments', () => {
  it('rolls by size into 20-digit segment files and reads across them', async () => {
    const dir = tempDir()
    const size = makeBatch(2, { valueSize: 50 }).length
    const log = openLog(dir, { segmentBytes: size * 3 })
    for (let i = 0; i < 10; i++) log.append(makeBatch(2, { valueSize: 50 }))
    expect(log.segments.map((s) => s.baseOffset)).toEqual([0, 6, 12, 18])
    const files = readdirSync(join(dir, 't-0')).sort()
    expect(files).toContain('00000000000000000006.log')
    expect(files).toContain('00000000000000000006.index')
    expect(files).toContain('00000000000000000006.timeindex')
    // A read stays within one segment, like Kafka's.
    expect(batchOffsets((await log.read(4, 1 << 20)).records)).toEqual([4])
    expect(batchOffsets((await log.read(6, 1 << 20)).records)).toEqual([6, 8, 10])
    expect(batchOffsets((await log.read(19, 1 << 20)).records)).toEqual([18])
    await log.close()
  })

  it('rolls by age, measured from the first batch timestamp', () => {
    const log = openLog(tempDir(), { segmentMs: 1000 })
    log.append(makeBatch(1, { baseTimestamp: 10_000 }), { now: 10_000 })
    log.append(makeBatch(1, { baseTimestamp: 10_500 }), { now: 10_500 })
    expect(log.segments.length).toBe(1)
    log.append(makeBatch(1, { baseTimestamp: 11_001 }), { now: 11_001 })
    expect(log.segments.map((s) => s.baseOffset)).toEqual([0, 2])
  })

  it('finds every offset through a sparse index, before and after reopening', async () => {
    const dir = tempDir()
    let log = openLog(dir, { indexIntervalBytes: 256, segmentBytes: 8192 })
    const sizes: number[] = []
    for (let i = 0; i < 200; i++) {
      const n = 1 + (i % 4)
      sizes.push(n)
      log.append(makeBatch(n, { valueSize: 20 + (i % 7) }))
    }
    const expected: number[] = []
    let o = 0
    for (const n of sizes) {
      for (let k = 0; k < n; k++) expected.push(o)
      o += n
    }
    expect(log.segments.length).toBeGreaterThan(3)
    expect(log.segments.some((s) => s.offsetIndex.entries > 3)).toBe(true)
    const check = async (l: PartitionLog) => {
      for (let off = 0; off < o; off++) {
        expect(batchOffsets((await l.read(off, 1)).records)).toEqual([expected[off]])
      }
    }
    await check(log)
    await log.close()
    log = openLog(dir, { indexIntervalBytes: 256, segmentBytes: 8192 })
    expect(log.recovery.recoveredSegments).toBe(0)
    expect(log.logEndOffset).toBe(o)
    await check(log)
    await log.close()
  })
})

describe('PartitionLog retention', () => {
  it('deletes segments whose newest timestamp is older than retention.ms, rolling an expired active segment', async () => {
    const dir = tempDir()
    const size = makeBatch(1).length
    const log = openLog(dir, { segmentBytes: size * 2, retentionMs: 1000 })
    for (let i = 0; i < 6; i++) log.append(makeBatch(1, { baseTimestamp: 1000 * i }), { now: 1000 * i })
    expect(log.segments.map((s) => s.baseOffset)).toEqual([0, 2, 4])
    // Newest timestamps: 1000, 3000, 5000.
    expect(log.deleteOldSegments(3500)).toBe(1)
    expect(log.logStartOffset).toBe(2)
    await expect(log.read(1, 100)).rejects.toBeInstanceOf(OffsetOutOfRangeError)
    expect(existsSync(join(dir, 't-0', '00000000000000000000.log'))).toBe(false)
    expect(log.deleteOldSegments(10_000)).toBe(2)
    expect(log.logStartOffset).toBe(6)
    expect(log.logEndOffset).toBe(6)
    expect(log.segments.map((s) => s.baseOffset)).toEqual([6])
    expect(log.append(makeBatch(1, { baseTimestamp: 10_000 }), { now: 10_000 }).baseOffset).toBe(6)
    await log.close()
  })

  it('deletes the oldest segments while the log exceeds retention.bytes', () => {
    const size = makeBatch(1).length
    const log = openLog(tempDir(), { segmentBytes: size * 2, retentionBytes: size * 3 })
    for (let i = 0; i < 7; i++) log.append(makeBatch(1))
    // Segments of 2, 2, 2, 1 batches: dropping the first leaves 5 > 3 batches, the second 3.
    expect(log.deleteOldSegments()).toBe(2)
    expect(log.logStartOffset).toBe(4)
    expect(log.size).toBe(size * 3)
  })

  it('DeleteRecords moves the log start offset and drops segments wholly below it', async () => {
    const size = makeBatch(2).length
    const log = openLog(tempDir(), { segmentBytes: size * 2 })
    for (let i = 0; i < 5; i++) log.append(makeBatch(2))
    expect(log.deleteRecordsBefore(5)).toBe(5)
    expect(log.segments.map((s) => s.baseOffset)).toEqual([4, 8])
    await expect(log.read(4, 100)).rejects.toBeInstanceOf(OffsetOutOfRangeError)
    // Reading from inside a batch returns the whole batch.
    expect(batchOffsets((await log.read(5, 1)).records)).toEqual([4])
    expect(log.deleteRecordsBefore(3)).toBe(5)
    expect(() => log.deleteRecordsBefore(11)).toThrow(OffsetOutOfRangeError)
    expect(log.deleteRecordsBefore(10)).toBe(10)
    expect(log.logEndOffset).toBe(10)
    expect(log.append(makeBatch(1)).baseOffset).toBe(10)
    await log.close()
  })

  it('lets a reader holding a segment finish when retention deletes it', async () => {
    const dir = tempDir()
    const size = makeBatch(10, { valueSize: 1000 }).length
    const log = openLog(dir, { segmentBytes: size, retentionMs: 1 })
    log.append(makeBatch(10, { valueSize: 1000, baseTimestamp: 0 }), { now: 0 })
    log.append(makeBatch(10, { valueSize: 1000, baseTimestamp: 0 }), { now: 0 })
    const old = log.segments[0]!
    const pending = log.read(0, 1 << 20)
    expect(log.deleteOldSegments(1_000_000)).toBe(2)
    expect(existsSync(old.logPath)).toBe(false)
    const got = await pending
    expect(got.records.length).toBe(size)
    expect(validateRecordBatch(got.records).recordCount).toBe(10)
    // The descriptor closes once the reader (and the flush that the roll started) is done.
    await log.flush()
    expect(() => fstatSync(old.fd)).toThrow()
    await log.close()
  })
})
