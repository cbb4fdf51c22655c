import { mkdirSync, readdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { PartitionLog } from '../src/log/index.js'
import { COMPACT, cleanOnce, openCompacted, put, readAll } from './compaction-fixtures.js'
import { faultyFs } from './helpers/faulty-fs.js'
import { tempDir } from './helpers/tmp.js'
import { until } from './helpers/until.js'

// The emptied <base>.swap/ directory of each swap is renamed aside and removed in the libuv
// pool rather than by a recursive rmSync on the event loop; a start removes what a stop left.

const CONFIG = { ...COMPACT, segmentBytes: 400 }

function build(dir: string, fs = faultyFs()): PartitionLog {
  const log = openCompacted(dir, CONFIG, { fs })
  for (let i = 0; i < 8; i++) {
    put(log, [[`k${i % 4}`, `v${i}`], [`u${i}`, `w${i}`], [`k${(i + 1) % 4}`, `x${i}`]])
    log.roll()
  }
  put(log, [['active', '1']])
  return log
}

const cleanerLeftovers = (dir: string) => readdirSync(dir).filter((f) => /\.(swap|cleaned|deleted)$/.test(f) || f.includes('.swap.') || f.includes('.cleaned.'))

describe('swap directories leave off the event loop', () => {
  it('each swap directory is renamed aside, removed asynchronously, and the log reads its compacted form', async () => {
    const removed: string[] = []
    const fs = faultyFs({ beforeRm: (p) => void removed.push(p) })
    const dir = tempDir()
    const log = build(dir, fs)
    const partitionDir = join(dir, 'c-0')
    const done = await cleanOnce(log)
    expect(done?.segmentsCleaned).toBe(8)
    // No swap directory under its own name outlives the splice; the asynchronous removals took them.
    expect(readdirSync(partitionDir).filter((f) => f.endsWith('.swap'))).toEqual([])
    await until('the cleaner leftovers removed', async () => (cleanerLeftovers(partitionDir).length === 0 ? true : undefined))
    const swapDirsRemoved = removed.filter((p) => /\.swap\.\d+-\d+\.deleted$/.test(p))
    expect(swapDirsRemoved.length).toBeGreaterThanOrEqual(2) // one per group, at least two groups
    const seen = await readAll(log)
    expect(new Map(seen.filter((s) => s.key !== null).map((s) => [s.key, s.value])).get('k0')).toBe('x7')
    await log.close()
  })

  it('a start removes aside directories a stop left behind, and loads the log', async () => {
    const dir = tempDir()
    const log = build(dir)
    await cleanOnce(log)
    const before = await readAll(log)
    await log.close()
    const partitionDir = join(dir, 'c-0')
    // What a kill -9 between the rename aside and its removal leaves.
    for (const name of ['00000000000000000000.swap.4242-1.deleted', '00000000000000000003.cleaned.4242-2.deleted']) {
      mkdirSync(join(partitionDir, name))
      writeFileSync(join(partitionDir, name, 'manifest.json'), JSON.stringify({ base: 0, members: [0, 1], files: ['00000000000000000000.log'] }))
    }
    const reopened = PartitionLog.open({ dir: partitionDir, topic: 'c', partition: 0, config: CONFIG, clean: false, recoveryPoint: 0 })
    expect(cleanerLeftovers(partitionDir)).toEqual([])
    expect(await readAll(reopened)).toEqual(before)
    await reopened.close()
  })
})
