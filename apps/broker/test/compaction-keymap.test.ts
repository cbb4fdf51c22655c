import { createHash, randomBytes } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { LogManager } from '../src/log/index.js'
import { md5Into } from '../src/log/compaction/md5.js'
import { ENTRY_BYTES, OffsetMap } from '../src/log/compaction/offset-map.js'
import { cleanLog, planCleaning } from '../src/log/compaction/clean-log.js'
import { COMPACT, cleanOnce, openCompacted, put, readAll, type Seen } from './compaction-fixtures.js'
import { tempDir } from './helpers/tmp.js'

// The cleaner's key map is bounded by bytes as Kafka's SkimpyOffsetMap
// (log.cleaner.dedupe.buffer.size, 24 bytes a key, log.cleaner.io.buffer.load.factor),
// a pass whose map fills cleans only up to where the map reached, and
// log.cleaner.io.max.bytes.per.second caps the cleaner's I/O.

const row = (s: Seen) => `${s.offset}:${s.key}=${s.value}`

/** 300 keys written, then all updated, then every third deleted; one segment per 50 records. */
function fill(dir: string, name = 'c'): { mgr: LogManager; model: string[] } {
  const mgr = LogManager.open({ dataDir: dir, cleanerEnable: false, cleanerDedupeBufferSize: ENTRY_BYTES * 100 })
  const log = mgr.getOrCreate(name, 0, { ...COMPACT, deleteRetentionMs: 86_400_000 })
  const last = new Map<string, string>()
  let n = 0
  const write = (k: string, v: string | null): void => {
    const at = put(log, [[k, v]])
    last.set(k, `${at}:${k}=${v}`)
    if (++n % 50 === 0) log.roll()
  }
  for (let i = 0; i < 300; i++) write(`k${i}`, `a${i}`)
  for (let i = 0; i < 300; i++) write(`k${i}`, `b${i}`)
  for (let i = 0; i < 300; i += 3) write(`k${i}`, null)
  log.roll()
  put(log, [['active', '1']])
  return { mgr, model: [...last.values()].sort((a, b) => Number(a.split(':')[0]) - Number(b.split(':')[0])) }
}

describe('the key map bounded by bytes', () => {
  it("hashes keys with MD5, 24 bytes an entry, and counts as full at slots x load factor", () => {
    const out = new Int32Array(4)
    for (const n of [0, 1, 55, 56, 63, 64, 65, 200]) {
      const b = randomBytes(n)
      md5Into(b, 0, n, out)
      expect(Buffer.from(out.buffer).toString('hex')).toBe(createHash('md5').update(b).digest('hex'))
    }
    const map = new OffsetMap(ENTRY_BYTES * 1000, 0.9)
    expect([map.maxSlots, map.maxEntries]).toEqual([1000, 900])
    for (let i = 0; !map.isFull; i++) {
      const key = Buffer.from(`key-${i}`)
      map.put(key, 0, key.length, i)
    }
    expect(map.size).toBe(900)
    // Updating a key keeps one entry; the latest offset wins; an unknown key is not there.
    const k5 = Buffer.from('xxkey-5yy')
    map.put(k5, 2, 7, 10_000)
    expect(map.size).toBe(900)
    expect(map.get(Buffer.from('key-5'), 0, 5)).toBe(10_000)
    expect(map.get(Buffer.from('key-899'), 0, 7)).toBe(899)
    expect(map.get(Buffer.from('key-900'), 0, 7)).toBe(-1)
    expect(map.utilization).toBe(0.9)
  })

  it('a pass whose map fills cleans up to the offset it covered; the next passes go on from there to the compacted log', async () => {
    const { mgr, model } = fill(tempDir())
    const log = mgr.get('c', 0)!
    const end = log.active.baseOffset
    const first = await cleanOnce(log, 0, { dedupeBufferSize: ENTRY_BYTES * 100 })
    // 100 slots at 0.9: the map holds 90 keys, so the pass stops well before the dirty end.
    expect(first?.mapFull).toBe(true)
    expect(first!.endOffset).toBeGreaterThanOrEqual(90)
    expect(first!.endOffset).toBeLessThan(end)
    expect(first!.bufferUtilization).toBeCloseTo(0.9)
    // Nothing was lost: the latest of every key is still there.
    const latest = new Set(model)
    const seen = (await readAll(log)).map(row)
    for (const r of latest) expect(seen).toContain(r)
    // The LogManager's cleaner, with the same small buffer, continues from the checkpoint it keeps.
    const passes = await mgr.cleaner.cleanAll()
    expect(passes.length).toBeGreaterThan(5)
    expect(passes.slice(0, -1).every((p) => p.mapFull)).toBe(true)
    expect(passes[passes.length - 1]!.endOffset).toBe(end)
    // One more pass from the start with room for every key reaches the same compacted log.
    const compacted = (await readAll(log)).map(row)
    await cleanOnce(log, 0)
    expect((await readAll(log)).map(row)).toEqual(compacted)
    expect(compacted).toEqual([...model, `${end}:active=1`])
    await mgr.close()
  })

  it('log.cleaner.io.max.bytes.per.second caps what a pass reads and writes', async () => {
    const log = openCompacted(tempDir(), { segmentBytes: 256 * 1024 })
    const value = 'v'.repeat(1000)
    for (let i = 0; i < 1500; i++) put(log, [[`k${i % 100}`, `${i}${value}`]])
    log.roll()
    put(log, [['active', '1']])
    const rate = 2 * 1024 * 1024
    const started = performance.now()
    const r = await cleanOnce(log, 0, { maxBytesPerSecond: rate })
    const seconds = (performance.now() - started) / 1000
    const bytes = r!.bytesRead + r!.bytesWritten
    expect(bytes).toBeGreaterThan(3 * 1024 * 1024)
    // It cannot have gone faster than the cap (less the last unthrottled check interval).
    expect(seconds).toBeGreaterThan(bytes / rate - 0.4)
    expect((await readAll(log)).length).toBe(101)
    await log.close()
  })

  it('a pass whose segments DeleteRecords removed before the worker opened them is abandoned, not marked uncleanable', async () => {
    const mgr = LogManager.open({ dataDir: tempDir(), cleanerEnable: false })
    const log = mgr.getOrCreate('gone', 0, { ...COMPACT, cleanupDelete: true })
    for (let i = 0; i < 4; i++) {
      put(log, [[`k${i % 2}`, `${i}`]])
      log.roll()
    }
    put(log, [['active', '1']])
    const plan = planCleaning(log, 0, Date.now())
    expect(plan.dirty.length).toBe(4)
    // The first two segments go before the cleaning reads them.
    log.deleteRecordsBefore(2)
    expect(log.segments.includes(plan.dirty[0]!)).toBe(false)
    expect(await cleanLog(log, plan)).toBeUndefined()
    // The next pass plans again from what is there and cleans it.
    const passes = await mgr.cleaner.cleanAll()
    expect(passes.length).toBe(1)
    expect(mgr.cleaner.uncleanable.size).toBe(0)
    expect((await readAll(log)).map(row)).toEqual(['2:k0=2', '3:k1=3', '4:active=1'])
    await mgr.close()
  })
})
