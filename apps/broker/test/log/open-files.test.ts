import { existsSync, readdirSync } from 'node:fs'
import { decodeRecordBatches } from '@tidelog/protocol'
import { describe, expect, it } from 'vitest'
import { LogManager } from '../../src/log/index.js'
import { makeBatch } from '../helpers/batches.js'
import { faultyFs } from '../helpers/faulty-fs.js'
import { tempDir } from '../helpers/tmp.js'

function values(records: Buffer): string[] {
  const out: string[] = []
  for (const b of decodeRecordBatches(records)) for (const r of b) out.push(r.value!.toString())
  return out
}

const PARTITIONS = 10_000
const CAP = 100

/** Descriptors this process holds (Linux); undefined elsewhere. */
function openFds(): number | undefined {
  try {
    return readdirSync('/proc/self/fd').length
  } catch {
    return undefined
  }
}

describe('--max-open-files', () => {
  it('open file descriptors stay at or under the cap with 10,000 partitions', async () => {
    // 10,000 partitions make 30,000 fsyncs at a clean close; this test is about descriptors.
    const fs = faultyFs({ skipFsync: true })
    // Memory-backed where there is one: 40,000 files are about descriptors here, not the disk.
    const dataDir = tempDir('tidelog-fds-', existsSync('/dev/shm') ? '/dev/shm' : undefined)
    const before = openFds()
    const mgr = LogManager.open({ dataDir, fs, maxOpenFiles: CAP })
    const value = (p: number) => `value-of-${p}`
    for (let p = 0; p < PARTITIONS; p++) mgr.getOrCreate('wide', p).append(makeBatch([{ value: value(p) }]))
    expect(mgr.files.size).toBeLessThanOrEqual(CAP)
    // Index files and directory fsyncs open one descriptor at a time, briefly.
    expect(fs.peakOpen).toBeLessThanOrEqual(CAP + 2)
    if (before !== undefined) expect(openFds()! - before).toBeLessThanOrEqual(CAP + 2)

    // Every partition still reads back (its file reopened on demand), appends, and fsyncs.
    for (let p = PARTITIONS - 1; p >= 0; p -= 97) {
      const log = mgr.get('wide', p)!
      const r = await log.read(0, 1 << 16)
      expect(values(r.records)).toEqual([value(p)])
      expect(log.append(makeBatch(1)).baseOffset).toBe(1)
      await log.flush()
      expect(log.recoveryPoint).toBe(2)
    }
    expect(mgr.files.size).toBeLessThanOrEqual(CAP)
    await mgr.close()
    expect(fs.openFds.size).toBe(0)
  }, 60_000)

  it('keeps to the cap while a restart opens every segment', async () => {
    const fs = faultyFs({ skipFsync: true })
    const dataDir = tempDir()
    const mgr = LogManager.open({ dataDir, fs, maxOpenFiles: 16 })
    for (let p = 0; p < 200; p++) mgr.getOrCreate('many', p).append(makeBatch([{ value: `v${p}` }]))
    await mgr.close()
    const again = LogManager.open({ dataDir, fs, maxOpenFiles: 16 })
    expect(again.files.size).toBeLessThanOrEqual(16)
    expect(fs.openFds.size).toBeLessThanOrEqual(16)
    expect(values((await again.get('many', 123)!.read(0, 1 << 16)).records)).toEqual(['v123'])
    await again.close()
  })

  it('never closes a descriptor a read is using', async () => {
    const dataDir = tempDir()
    const mgr = LogManager.open({ dataDir, maxOpenFiles: 16 })
    for (let p = 0; p < 40; p++) mgr.getOrCreate('busy', p).append(makeBatch([{ value: `v${p}` }]))
    // Reads of every partition at once: each holds its segment while in flight.
    const reads = await Promise.all(Array.from({ length: 40 }, (_, p) => mgr.get('busy', p)!.read(0, 1 << 16)))
    reads.forEach((r, p) => expect(values(r.records)).toEqual([`v${p}`]))
    expect(mgr.files.size).toBeLessThanOrEqual(16)
    await mgr.close()
  })
})
