import { appendFileSync, existsSync, readFileSync, statSync, truncateSync, unlinkSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { validateRecordBatch } from '@tidelog/protocol'
import { describe, expect, it } from 'vitest'
import { PartitionLog, segmentFileName } from '../../src/log/index.js'
import { batchOffsets, makeBatch } from '../helpers/batches.js'
import { tempDir } from '../helpers/tmp.js'

const BATCH = makeBatch(2, { valueSize: 40 }).length

/** A closed log of `batches` 2-record batches, 3 batches per segment. */
async function build(batches: number) {
  const root = tempDir()
  const dir = join(root, 't-0')
  const log = PartitionLog.open({ dir, topic: 't', partition: 0, config: { segmentBytes: BATCH * 3, indexIntervalBytes: 64 }, clean: true })
  for (let i = 0; i < batches; i++) log.append(makeBatch(2, { valueSize: 40 }))
  const bases = log.segments.map((s) => s.baseOffset)
  const leo = log.logEndOffset
  await log.close()
  const open = (opts: { clean?: boolean; recoveryPoint?: number } = {}) =>
    PartitionLog.open({ dir, topic: 't', partition: 0, config: { segmentBytes: BATCH * 3, indexIntervalBytes: 64 }, clean: false, ...opts })
  return { dir, bases, leo, open, file: (base: number, ext = '.log') => join(dir, segmentFileName(base, ext)) }
}

async function readAll(log: PartitionLog): Promise<number[]> {
  const offsets: number[] = []
  let next = log.logStartOffset
  while (next < log.logEndOffset) {
    const r = await log.read(next, 1 << 20)
    for (let p = 0; p < r.records.length; ) {
      const h = validateRecordBatch(r.records, p)
      offsets.push(Number(h.baseOffset))
      p += 12 + h.batchLength
    }
    next = offsets[offsets.length - 1]! + 2
  }
  return offsets
}

describe('recovery after an unclean stop', () => {
  it('truncates a cut active segment and garbage appended to an older one, keeps the rest, and takes new writes', async () => {
    const b = await build(8) // segments at 0, 6, 12 (active: 2 batches)
    expect(b.bases).toEqual([0, 6, 12])
    truncateSync(b.file(12), statSync(b.file(12)).size - 10)
    appendFileSync(b.file(0), Buffer.from('this is not a record batch, just garbage bytes'))
    const log = b.open({ recoveryPoint: 12 })
    expect(log.recovery.truncatedBytes).toBe(BATCH - 10 + 46)
    expect(log.recovery.droppedSegments).toBe(0)
    expect(log.segments.map((s) => s.baseOffset)).toEqual([0, 6, 12])
    expect(statSync(b.file(0)).size).toBe(BATCH * 3)
    expect(log.logEndOffset).toBe(14)
    expect(await readAll(log)).toEqual([0, 2, 4, 6, 8, 10, 12])
    expect(log.append(makeBatch(2)).baseOffset).toBe(14)
    expect(await readAll(log)).toEqual([0, 2, 4, 6, 8, 10, 12, 14])
    await log.close()
    // And the result survives a clean restart untouched.
    const again = b.open({ clean: true })
    expect(again.recovery.recoveredSegments).toBe(0)
    expect(again.logEndOffset).toBe(16)
    await again.close()
  })

  it('truncates at the first batch whose CRC fails and drops the segments that no longer follow', async () => {
    const b = await build(9) // 0, 6, 12
    const f = b.file(6)
    const bytes = readFileSync(f)
    bytes[BATCH + 70] ^= 0xff // inside the second batch's records
    writeFileSync(f, bytes)
    const log = b.open({ recoveryPoint: 0 })
    expect(log.recovery.truncatedBytes).toBe(BATCH * 2)
    expect(log.recovery.droppedSegments).toBe(1)
    expect(log.segments.map((s) => s.baseOffset)).toEqual([0, 6])
    expect(existsSync(b.file(12))).toBe(false)
    expect(log.logEndOffset).toBe(8)
    expect(await readAll(log)).toEqual([0, 2, 4, 6])
    expect(log.append(makeBatch(2)).baseOffset).toBe(8)
    await log.close()
  })

  it('cuts off an impossible length (2^31-1) and a zero-filled tail without allocating for them', async () => {
    const b = await build(4) // 0, 6 (1 batch)
    const huge = Buffer.alloc(61)
    huge.writeInt32BE(0x7fffffff, 8)
    appendFileSync(b.file(6), huge)
    appendFileSync(b.file(0), Buffer.alloc(4096))
    const log = b.open({ recoveryPoint: 0 })
    expect(log.recovery.truncatedBytes).toBe(61 + 4096)
    expect(log.logEndOffset).toBe(8)
    expect(await readAll(log)).toEqual([0, 2, 4, 6])
    await log.close()
  })

  it('re-reads only the segments past the recovery point', async () => {
    const b = await build(9)
    const log = b.open({ recoveryPoint: 12 })
    expect(log.recovery.recoveredSegments).toBe(1)
    expect(log.logEndOffset).toBe(18)
    await log.close()
  })

  it('rebuilds missing or damaged indexes', async () => {
    const b = await build(9)
    unlinkSync(b.file(0, '.index'))
    writeFileSync(b.file(6, '.index'), Buffer.from([0, 0, 0, 9, 0, 0, 0, 1, 0, 0, 0, 3, 0, 0, 0, 0]))
    writeFileSync(b.file(12, '.timeindex'), Buffer.alloc(5))
    const log = b.open({ clean: true })
    expect(log.recovery.recoveredSegments).toBe(3)
    expect(log.recovery.truncatedBytes).toBe(0)
    for (let o = 0; o < 18; o++) {
      expect(batchOffsets((await log.read(o, 1)).records)).toEqual([o - (o % 2)])
    }
    await log.close()
    expect(readFileSync(b.file(0, '.index')).length % 8).toBe(0)
  })

  it('recovers an empty segment file left by a roll', async () => {
    const b = await build(6) // two full segments, 0 and 6; then an empty 12 as if a roll was cut short
    writeFileSync(b.file(12), Buffer.alloc(0))
    const log = b.open({ recoveryPoint: 0 })
    expect(log.logEndOffset).toBe(12)
    expect(log.append(makeBatch(2)).baseOffset).toBe(12)
    await log.close()
  })
})
