import { existsSync, openSync, closeSync, readFileSync, writeSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { LogManager } from '../src/log/index.js'
import { CLEANER_CHECKPOINT } from '../src/log/cleaner.js'
import { cleanLog, isCleanable, planCleaning } from '../src/log/compaction/clean-log.js'
import { COMPACT, openCompacted, put, readAll, type Seen } from './compaction-fixtures.js'
import { tempDir } from './helpers/tmp.js'

describe('readers, indexes and the cleaner checkpoint while compacting', () => {
  it('fetches during a cleaning see consistent data: offsets in order, each as written, the latest of every key', async () => {
    const log = openCompacted(tempDir(), { segmentBytes: 32 * 1024 })
    const written = new Map<number, string>()
    const latest = new Map<string, string>()
    const value = 'v'.repeat(200)
    for (let i = 0; i < 2000; i++) {
      const k = `k${i % 150}`
      const v = `${i}-${value}`
      written.set(put(log, [[k, v]]), `${k}=${v}`)
      latest.set(k, v)
    }
    log.roll()
    put(log, [['active', 'x']])
    const cleaning = cleanLog(log, planCleaning(log, 0, Date.now()))
    let done = false
    void cleaning.finally(() => (done = true))
    let reads = 0
    const check = (seen: Seen[]): void => {
      for (let i = 1; i < seen.length; i++) expect(seen[i]!.offset).toBeGreaterThan(seen[i - 1]!.offset)
      for (const s of seen.slice(0, -1)) expect(`${s.key}=${s.value}`).toBe(written.get(s.offset))
      const last = new Map(seen.map((s) => [s.key, s.value]))
      for (const [k, v] of latest) expect(last.get(k)).toBe(v)
    }
    while (!done) {
      check(await readAll(log))
      reads++
    }
    const result = await cleaning
    expect(result?.segmentsCleaned).toBeGreaterThan(10)
    expect(reads).toBeGreaterThan(0)
    const after = await readAll(log)
    check(after)
    expect(after.length).toBe(151)
    // The time index was rebuilt for the cleaned segments: a lookup by time finds the first kept record at or after it.
    const first = await log.findBatchByTimestamp(0)
    expect(first?.baseOffset).toBe(after[0]!.offset)
    await log.close()
  })

  it('max.compaction.lag.ms makes a log cleanable whatever its dirty ratio (KIP-354)', () => {
    const now = Date.now()
    const log = openCompacted(tempDir(), { minCleanableDirtyRatio: 0.99, maxCompactionLagMs: 60_000 })
    put(log, [['a', '1']], { baseTimestamp: now - 120_000 })
    log.roll()
    put(log, [['a', '2']])
    log.roll()
    put(log, [['z', 'active']])
    // Checkpointed past the first segment: half the log is dirty, under the 0.99 ratio, but overdue.
    const plan = planCleaning(log, 1, now)
    expect(plan.ratio).toBeLessThan(0.99)
    expect(plan.needNow).toBe(false)
    const overdue = planCleaning(log, 0, now)
    expect(overdue.needNow).toBe(true)
    expect(isCleanable(overdue, log)).toBe(true)
    log.config = { ...log.config, maxCompactionLagMs: Infinity }
    expect(isCleanable(planCleaning(log, 0, now), log)).toBe(true) // ratio 1 > 0.99
    expect(isCleanable(plan, log)).toBe(false)
  })

  it('the LogManager runs the cleaner beside retention and keeps its checkpoint across a restart', async () => {
    const dataDir = tempDir()
    const mgr = LogManager.open({ dataDir, cleanerEnable: false })
    const log = mgr.getOrCreate('t', 0, COMPACT)
    put(log, [['a', '1'], ['a', '2']])
    log.roll()
    put(log, [['b', '1']])
    const passes = await mgr.cleaner.cleanAll()
    expect(passes.map((p) => [p.topic, p.partition, p.endOffset])).toEqual([['t', 0, 2]])
    expect(readFileSync(join(dataDir, CLEANER_CHECKPOINT), 'utf8')).toContain('t 0 2')
    expect((await readAll(log)).map((r) => r.offset)).toEqual([1, 2])
    await mgr.close()
    const again = LogManager.open({ dataDir, cleanerEnable: false })
    const reopened = again.getOrCreate('t', 0, COMPACT)
    expect(again.cleaner.firstDirtyOffset(reopened)).toBe(2)
    // Nothing is dirty past the checkpoint: no pass.
    expect(await again.cleaner.cleanAll()).toEqual([])
    await again.close()
    expect(existsSync(join(dataDir, CLEANER_CHECKPOINT))).toBe(true)
    // A topic deleted and created again under the same name is dirty from its start.
    const third = LogManager.open({ dataDir, cleanerEnable: false })
    third.deletePartition('t', 0)
    const fresh = third.getOrCreate('t', 0, COMPACT)
    expect(third.cleaner.firstDirtyOffset(fresh)).toBe(0)
    await third.close()
  })

  it('a log whose batches cannot be read is marked uncleanable and the others are still cleaned', async () => {
    const mgr = LogManager.open({ dataDir: tempDir(), cleanerEnable: false })
    const bad = mgr.getOrCreate('bad', 0, COMPACT)
    const good = mgr.getOrCreate('good', 0, COMPACT)
    for (const log of [bad, good]) {
      put(log, [['a', '1'], ['a', '2']])
      log.roll()
      put(log, [['b', '1']])
    }
    // Garbage where the first batch's records are (its header, and so the log's walk, stays sound).
    const fd = openSync(bad.segments[0]!.logPath, 'r+')
    writeSync(fd, Buffer.alloc(12, 0xff), 0, 12, 61)
    closeSync(fd)
    const passes = await mgr.cleaner.cleanAll()
    expect(passes.map((p) => p.topic)).toEqual(['good'])
    expect([...mgr.cleaner.uncleanable]).toEqual(['bad-0'])
    expect((await readAll(good)).map((r) => r.offset)).toEqual([1, 2])
    // The bad log is left as it was, and still takes writes.
    expect(bad.append(Buffer.from(bad.segments[1]!.readSync(0, bad.segments[1]!.size))).count).toBe(1)
    await mgr.close()
  })

  it('a partition deleted while it is being cleaned ends the pass; the data directory stays online', async () => {
    const errors: string[] = []
    const logger = { error: (m: string) => errors.push(m), warn: (m: string) => errors.push(m), info: () => {}, debug: () => {} }
    const mgr = LogManager.open({ dataDir: tempDir(), cleanerEnable: false, logger: logger as never })
    const log = mgr.getOrCreate('gone', 0, { ...COMPACT, segmentBytes: 16 * 1024 })
    const value = 'x'.repeat(300)
    for (let i = 0; i < 1500; i++) put(log, [[`k${i % 50}`, `${i}${value}`]])
    log.roll()
    put(log, [['active', '1']])
    // The flushes and snapshots the rolls started may still be running: the deletion races them too.
    const pass = mgr.cleaner.cleanOnce()
    // Deleted once the cleaner has swapped in at least one group, so the pass is mid-way.
    while (!log.segments.some((s) => s.baseOffset === 0 && s.size < 16 * 1024 - 400)) await new Promise((r) => setImmediate(r))
    expect(mgr.deletePartition('gone', 0)).toBe(true)
    expect(await pass).toBeUndefined()
    await mgr.backgroundDone()
    await new Promise((r) => setTimeout(r, 50))
    expect({ offline: mgr.offline, errors }).toEqual({ offline: false, errors: [] })
    expect(mgr.cleaner.uncleanable.size).toBe(0)
    // The manager still takes new partitions and writes.
    put(mgr.getOrCreate('next', 0, COMPACT), [['a', '1']])
    await mgr.close()
  })
})
