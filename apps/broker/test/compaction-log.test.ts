import { describe, expect, it } from 'vitest'
import { PartitionLog } from '../src/log/index.js'
import { COMPACT, cleanOnce, openCompacted, put, readAll } from './compaction-fixtures.js'
import { planCleaning, isCleanable } from '../src/log/compaction/clean-log.js'
import { tempDir } from './helpers/tmp.js'

const latest = (seen: { offset: number; key: string | null; value: string | null }[]) => seen.map((s) => `${s.offset}:${s.key}=${s.value}`)

describe('log compaction over a PartitionLog', () => {
  it('keeps the latest record of every key, never renumbers, and leaves the active segment alone', async () => {
    const dir = tempDir()
    const log = openCompacted(dir)
    put(log, [['a', '1'], ['b', '1'], ['a', '2']]) // 0..2
    log.roll()
    put(log, [['c', '1'], ['b', '2']]) // 3..4
    log.roll()
    put(log, [['a', '3']]) // 5, active
    const before = log.logEndOffset
    const r = await cleanOnce(log)
    expect(r?.endOffset).toBe(5)
    expect(latest(await readAll(log))).toEqual(['2:a=2', '3:c=1', '4:b=2', '5:a=3'])
    expect(log.logEndOffset).toBe(before)
    expect(log.logStartOffset).toBe(0)
    // The next pass maps only the new dirty section: a=3 is in the active segment, so nothing moves yet.
    log.roll()
    put(log, [['z', '1']])
    await cleanOnce(log, r!.endOffset)
    expect(latest(await readAll(log))).toEqual(['3:c=1', '4:b=2', '5:a=3', '6:z=1'])
    // A fetch at a removed offset returns the next batch that is still there.
    const at0 = await log.read(0, 1 << 20)
    expect(Number(at0.records.readBigInt64BE(0))).toBe(3)
    await log.close()
    // Reopened (clean and after an unclean stop), the gaps are accepted and nothing is re-numbered or dropped.
    for (const clean of [true, false]) {
      const again = PartitionLog.open({ dir: log.dir, topic: 'c', partition: 0, config: COMPACT, clean, recoveryPoint: 0 })
      expect(again.recovery.droppedSegments).toBe(0)
      expect(again.recovery.truncatedBytes).toBe(0)
      expect(latest(await readAll(again))).toEqual(['3:c=1', '4:b=2', '5:a=3', '6:z=1'])
      await again.close()
    }
  })

  it('keeps tombstones until delete.retention.ms after the cleaning that first kept them (KIP-534), then removes them', async () => {
    const log = openCompacted(tempDir(), { deleteRetentionMs: 1000 })
    const t0 = Date.now()
    put(log, [['a', '1'], ['b', '1']])
    put(log, [['a', null]])
    log.roll()
    put(log, [['x', '1']])
    await cleanOnce(log, 0, { now: t0 })
    expect(latest(await readAll(log))).toEqual(['1:b=1', '2:a=null', '3:x=1'])
    // Before the horizon another pass keeps it.
    await cleanOnce(log, 0, { now: t0 + 999 })
    expect(latest(await readAll(log))).toEqual(['1:b=1', '2:a=null', '3:x=1'])
    await cleanOnce(log, 0, { now: t0 + 1001 })
    expect(latest(await readAll(log))).toEqual(['1:b=1', '3:x=1'])
    await log.close()
  })

  it('measures the dirty ratio and honours min.cleanable.dirty.ratio and min.compaction.lag.ms', () => {
    const log = openCompacted(tempDir(), { minCleanableDirtyRatio: 0.5, minCompactionLagMs: 60_000 })
    const now = Date.now()
    put(log, [['a', '1']], { baseTimestamp: now - 120_000 })
    log.roll()
    put(log, [['a', '2']], { baseTimestamp: now - 1000 })
    log.roll()
    put(log, [['b', '1']])
    const plan = planCleaning(log, 0, now)
    // Only the first segment is old enough; the second holds a record younger than the lag.
    expect(plan.dirty.map((s) => s.baseOffset)).toEqual([0])
    expect(plan.ratio).toBe(1)
    expect(isCleanable(plan, log)).toBe(true)
    // Checkpointed past the first segment, nothing is dirty enough yet.
    const later = planCleaning(log, 1, now)
    expect(later.dirty).toEqual([])
    expect(isCleanable(later, log)).toBe(false)
    const notCompacted = openCompacted(tempDir(), { cleanupCompact: false })
    put(notCompacted, [['a', '1']])
    notCompacted.roll()
    put(notCompacted, [['a', '1']])
    expect(isCleanable(planCleaning(notCompacted, 0, now), notCompacted)).toBe(false)
  })

  it('removes records without a key, and keeps compressed batches compressed', async () => {
    const log = openCompacted(tempDir())
    put(log, [['k', '1'], [null, 'no key'], ['k', '2'], ['j', '1']], { compression: 'gzip' })
    log.roll()
    put(log, [['j', '2']])
    log.roll()
    put(log, [['active', '1']])
    await cleanOnce(log)
    expect(latest(await readAll(log))).toEqual(['2:k=2', '4:j=2', '5:active=1'])
    const first = (await log.read(0, 1 << 20)).records
    expect(first.readInt16BE(21) & 7).toBe(1)
    await log.close()
  })
})

describe('compaction and the log start offset', () => {
  it('an emptied first segment keeps its base offset as the log start, through retention and a restart', async () => {
    const dir = tempDir()
    // Segments too large to share a cleaned group (segment.bytes bounds a group).
    const log = openCompacted(dir, { segmentBytes: 100 })
    put(log, [['a', '1'], ['b', '1']])
    log.roll()
    put(log, [['a', '2'], ['b', '2']])
    log.roll()
    put(log, [['z', '1']])
    await cleanOnce(log)
    expect(log.segments[0]!.isEmpty).toBe(true)
    expect(log.deleteOldSegments()).toBe(0)
    expect(log.logStartOffset).toBe(0)
    expect((await readAll(log)).map((r) => r.offset)).toEqual([2, 3, 4])
    await log.close()
    const again = PartitionLog.open({ dir: log.dir, topic: 'c', partition: 0, config: { ...COMPACT, segmentBytes: 100 }, clean: true })
    expect(again.logStartOffset).toBe(0)
    expect(again.segments.map((s) => s.baseOffset)).toEqual([0, 2, 4])
    await again.close()
  })
})
