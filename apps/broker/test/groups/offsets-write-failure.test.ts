import * as fs from 'node:fs'
import { join } from 'node:path'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { OFFSETS_DIR, OFFSETS_FILE, OffsetsStore } from '../../src/groups/offsets-store.js'
import { silentLogger } from '../../src/logger.js'
import { tempDir } from '../helpers/tmp.js'

// A disk that fills up halfway through an append: the store must not leave a torn record in the
// middle of the file, where the next load would stop and drop every later commit.

const faults = vi.hoisted(() => ({ tearNext: false, failTruncate: false }))
vi.mock('node:fs', async (importOriginal) => {
  const real = await importOriginal<typeof import('node:fs')>()
  const writeSync = ((fd: number, buf: Buffer, offset: number, length: number) => {
    if (!faults.tearNext) return real.writeSync(fd, buf, offset, length)
    if (offset === 0 && length > 1) return real.writeSync(fd, buf, 0, Math.floor(length / 2))
    faults.tearNext = false
    throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' })
  }) as typeof real.writeSync
  const ftruncateSync = ((fd: number, len?: number) => {
    if (faults.failTruncate) throw Object.assign(new Error('EIO: i/o error, ftruncate'), { code: 'EIO' })
    return real.ftruncateSync(fd, len)
  }) as typeof real.ftruncateSync
  return { ...real, default: { ...real, writeSync, ftruncateSync }, writeSync, ftruncateSync }
})

const stores: OffsetsStore[] = []
afterEach(async () => {
  faults.tearNext = false
  faults.failTruncate = false
  for (const s of stores.splice(0)) await s.close().catch(() => {})
})

const c = (partition: number, offset: bigint) => ({ topic: 't', partition, offset, leaderEpoch: 0, metadata: 'meta', commitTimestamp: 1, expireTimestamp: -1 })

function reloadFromDisk(dir: string): OffsetsStore {
  const copy = tempDir()
  fs.mkdirSync(join(copy, OFFSETS_DIR))
  fs.writeFileSync(join(copy, OFFSETS_DIR, OFFSETS_FILE), fs.readFileSync(join(dir, OFFSETS_DIR, OFFSETS_FILE)))
  const s = OffsetsStore.open(copy, silentLogger)
  stores.push(s)
  return s
}

describe('an append that fails halfway', () => {
  it('is cut off, changes nothing, and the commits after it survive a restart', () => {
    const dir = tempDir()
    const s = OffsetsStore.open(dir, silentLogger)
    stores.push(s)
    s.commit('g', [c(0, 1n)])
    faults.tearNext = true
    expect(() => s.commit('g', [c(1, 2n)])).toThrow(/ENOSPC/)
    expect(s.get('g', 't', 1)).toBeUndefined()
    s.commit('g', [c(2, 3n)])
    const t = reloadFromDisk(dir)
    expect([t.get('g', 't', 0)?.offset, t.get('g', 't', 1), t.get('g', 't', 2)?.offset]).toEqual([1n, undefined, 3n])
  })

  it('refuses further appends when the torn bytes cannot be removed', () => {
    const dir = tempDir()
    const s = OffsetsStore.open(dir, silentLogger)
    stores.push(s)
    s.commit('g', [c(0, 1n)])
    faults.tearNext = true
    faults.failTruncate = true
    expect(() => s.commit('g', [c(1, 2n)])).toThrow(/ENOSPC/)
    faults.failTruncate = false
    expect(() => s.commit('g', [c(2, 3n)])).toThrow(/takes no more writes until a restart: a torn write could not be cut off \(EIO/)
    expect(s.get('g', 't', 2)).toBeUndefined()
    expect(reloadFromDisk(dir).get('g', 't', 0)?.offset).toBe(1n)
  })
})
