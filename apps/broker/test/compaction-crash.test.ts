import { cpSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { PartitionLog } from '../src/log/index.js'
import { COMPACT, cleanOnce, openCompacted, put, readAll, type Seen } from './compaction-fixtures.js'
import { tempDir } from './helpers/tmp.js'

// A cleaner stopped at every step of every segment swap (a fault injected
// after the step, as a kill -9 there would leave the files): the next start
// finds every record the log had before, or its compacted form, never less.

const CONFIG = { ...COMPACT, segmentBytes: 400 }

/** Three groups of segments to clean (segment.bytes bounds a group), plus the active one. */
function build(dir: string): PartitionLog {
  const log = openCompacted(dir, CONFIG)
  for (let i = 0; i < 8; i++) {
    put(log, [[`k${i % 4}`, `v${i}`], [`u${i}`, `w${i}`], [`k${(i + 1) % 4}`, `x${i}`]])
    log.roll()
  }
  put(log, [['active', '1']])
  return log
}

const key = (s: Seen) => `${s.offset}:${s.key}=${s.value}`

function reopen(dir: string): PartitionLog {
  return PartitionLog.open({ dir: join(dir, 'c-0'), topic: 'c', partition: 0, config: CONFIG, clean: false, recoveryPoint: 0 })
}

describe('crash-safe segment swap', () => {
  it('after a stop at any step of any swap, the log holds its old records or their compacted form', async () => {
    // The reference: the same log cleaned without a fault.
    const refDir = tempDir()
    const ref = build(refDir)
    const before = (await readAll(ref)).map(key)
    let steps = 0
    const done = await cleanOnce(ref, 0, { fault: () => void steps++ })
    expect(done?.segmentsCleaned).toBe(8)
    const compacted = (await readAll(ref)).map(key)
    expect(compacted.length).toBeLessThan(before.length)
    expect(steps).toBeGreaterThanOrEqual(8) // at least two groups, four steps each
    await ref.close()

    const states = new Set<string>()
    for (let stopAt = 1; stopAt <= steps; stopAt++) {
      const dir = tempDir()
      const log = build(dir)
      let n = 0
      let stoppedAt = ''
      await expect(
        cleanOnce(log, 0, {
          fault: (step, base) => {
            if (++n === stopAt) {
              stoppedAt = `${step}@${base}`
              throw new Error(`killed after ${stoppedAt}`)
            }
          },
        }),
      ).rejects.toThrow(/killed after/)
      // What a kill leaves: the files as they are; the process' state is gone. Replaced files
      // renamed aside (*.deleted) are being removed in the background and a start removes them
      // anyway: they are not copied (one could vanish mid-copy).
      const snapshot = tempDir()
      cpSync(join(dir, 'c-0'), join(snapshot, 'c-0'), { recursive: true, filter: (src) => !src.endsWith('.deleted') })
      log.discard()

      const again = reopen(snapshot)
      const seen = (await readAll(again)).map(key)
      states.add(seen.join(','))
      // Never less than the compacted form, never anything that was not there, offsets in order.
      for (const r of compacted) expect(seen, `stopped after ${stoppedAt}`).toContain(r)
      for (const r of seen) expect(before, `stopped after ${stoppedAt}`).toContain(r)
      const offsets = seen.map((s) => Number(s.split(':')[0]))
      expect(offsets).toEqual([...offsets].sort((a, b) => a - b))
      expect(new Set(offsets).size).toBe(offsets.length)
      expect(again.logEndOffset).toBe(25)
      expect(readdirSync(join(snapshot, 'c-0')).filter((f) => f.endsWith('.swap') || f.endsWith('.cleaned'))).toEqual([])
      // Cleaning again from the start reaches exactly the compacted form.
      await cleanOnce(again, 0)
      expect((await readAll(again)).map(key), `stopped after ${stoppedAt}`).toEqual(compacted)
      await again.close()
    }
    // The stops covered the old log, the compacted one, and partly swapped ones between.
    expect(states.has(before.join(','))).toBe(true)
    expect(states.has(compacted.join(','))).toBe(true)
    expect(states.size).toBeGreaterThan(2)
  })
})
