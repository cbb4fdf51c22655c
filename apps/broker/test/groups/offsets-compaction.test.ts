import { mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { OFFSETS_DIR, OFFSETS_FILE, type OffsetCommit, OffsetsStore, type OffsetsStoreOptions } from '../../src/groups/offsets-store.js'
import { silentLogger } from '../../src/logger.js'
import { tempDir } from '../helpers/tmp.js'

const stores: OffsetsStore[] = []
afterEach(async () => {
  for (const s of stores.splice(0)) await s.close().catch(() => {})
})

function open(dir: string, opts: OffsetsStoreOptions = {}): OffsetsStore {
  const s = OffsetsStore.open(dir, silentLogger, opts)
  stores.push(s)
  return s
}

const fileOf = (dir: string) => join(dir, OFFSETS_DIR, OFFSETS_FILE)

/** What a broker killed with -9 right now would load: a fresh store over a copy of the bytes on disk. */
function afterKill(dir: string): OffsetsStore {
  const copy = tempDir()
  mkdirSync(join(copy, OFFSETS_DIR))
  writeFileSync(fileOf(copy), readFileSync(fileOf(dir)))
  return open(copy)
}

const c = (topic: string, partition: number, offset: bigint, metadata = ''): OffsetCommit => ({
  topic,
  partition,
  offset,
  leaderEpoch: 0,
  metadata,
  commitTimestamp: 1_700_000_000_000,
  expireTimestamp: -1,
})

describe('OffsetsStore compaction keeps what was acknowledged', () => {
  it('the commit whose append triggers the rewrite is in the rewritten file (default thresholds)', async () => {
    const dir = tempDir()
    const s = open(dir)
    const meta = 'm'.repeat(4000)
    let last = statSync(fileOf(dir)).size
    let compactedAt = -1
    // The default threshold is a 16 MiB file holding 4x its live data: ~4,100 commits of 4 KB.
    for (let i = 0; i < 6000 && compactedAt < 0; i++) {
      s.commit('g', [c('t', 0, BigInt(i), meta)])
      await s.settled()
      const size = statSync(fileOf(dir)).size
      if (size < last) compactedAt = i
      last = size
    }
    expect(compactedAt).toBeGreaterThan(0)
    expect(afterKill(dir).get('g', 't', 0)?.offset).toBe(BigInt(compactedAt))
  })
})

const COMPACT_MIN_BYTES = 16 * 1024 * 1024
/** An offset record's size: 8 header bytes, type, then group, topic (int16-prefixed), partition, offset, epoch, metadata, two timestamps. */
const offsetRecordBytes = (group: string, topic: string, metadata: number) => 8 + 1 + 2 + group.length + 2 + topic.length + 4 + 8 + 4 + 2 + metadata + 8 + 8

/** Overwrites g/t-0 until the file is `bytes` long exactly (no compaction is due before it passes 16 MiB). */
function fillTo(s: OffsetsStore, dir: string, bytes: number): void {
  const big = offsetRecordBytes('g', 't', 4000)
  let size = statSync(fileOf(dir)).size
  while (bytes - size >= big + offsetRecordBytes('g', 't', 0)) {
    s.commit('g', [c('t', 0, 1n, 'm'.repeat(4000))])
    size += big
  }
  s.commit('g', [c('t', 0, 2n, 'm'.repeat(bytes - size - offsetRecordBytes('g', 't', 0)))])
  expect(statSync(fileOf(dir)).size).toBe(bytes)
}

describe('the write that crosses the compaction threshold (default thresholds)', () => {
  it('an offset delete stays deleted', async () => {
    const dir = tempDir()
    const s = open(dir)
    s.commit('g', [c('t', 1, 5n)])
    // The 19-byte tombstone is the append that takes the file past 16 MiB.
    fillTo(s, dir, COMPACT_MIN_BYTES - 10)
    expect(s.deleteOffsets('g', [{ topic: 't', partition: 1 }])).toBe(1)
    await s.settled()
    expect(statSync(fileOf(dir)).size).toBeLessThan(1024 * 1024)
    expect(afterKill(dir).get('g', 't', 1)).toBeUndefined()
  })

  it('a deleted group stays deleted, with its offsets', async () => {
    const dir = tempDir()
    const s = open(dir)
    s.commit('gone', [c('t', 0, 5n)])
    s.storeGroup('gone', { protocolType: 'consumer', generationId: 4, protocolName: 'range', leaderId: null, stateTimestamp: 0, members: [] })
    fillTo(s, dir, COMPACT_MIN_BYTES - 5)
    s.deleteGroup('gone')
    await s.settled()
    expect(statSync(fileOf(dir)).size).toBeLessThan(1024 * 1024)
    const reloaded = afterKill(dir)
    expect(reloaded.get('gone', 't', 0)).toBeUndefined()
    expect(reloaded.storedGroups().has('gone')).toBe(false)
  })
})

/** Every offset and group the store holds, for comparing a live store with one reloaded from disk. */
function state(s: OffsetsStore) {
  const out: Record<string, string> = {}
  for (const g of s.groupIds()) for (const [t, parts] of s.groupOffsets(g)) for (const [p, o] of parts) out[`${g}/${t}/${p}`] = `${o.offset}`
  for (const [g, v] of s.storedGroups()) out[`group ${g}`] = `${v.generationId}`
  return out
}

const generationOf = (s: OffsetsStore) => (s as unknown as { fdGeneration: number }).fdGeneration

describe('a background compaction under a steady stream of writes', () => {
  for (const flushMessages of [Infinity, 1]) {
    it(`keeps every write that arrives while it runs (flush.messages=${flushMessages})`, async () => {
      const dir = tempDir()
      const s = open(dir, { compactMinBytes: 64 * 1024, snapshotPieceBytes: 4096, flushMessages })
      const meta = 'x'.repeat(200)
      // Live data of ~200 KB, then overwrites until the file is 4x that: the rewrite starts.
      for (let p = 0; p < 1000; p++) s.commit('g', [c('t', p, 0n, meta)])
      s.storeGroup('doomed', { protocolType: 'consumer', generationId: 1, protocolName: 'range', leaderId: null, stateTimestamp: 0, members: [] })
      s.commit('doomed', [c('t', 0, 1n)])
      let i = 0
      while ((s as unknown as { compaction: unknown }).compaction === null) s.commit('g', [c('t', i++ % 1000, BigInt(i), meta)])
      // Writes on every turn of the event loop until the swap: the copy of the tail never finds it empty.
      let stop = false
      let writes = 0
      const pump = (async () => {
        while (!stop) {
          const n = writes++
          s.commit('g', [c('u', n % 50, BigInt(n))])
          if (n % 7 === 3) s.deleteOffsets('g', [{ topic: 't', partition: n % 1000 }])
          if (n === 2) s.deleteGroup('doomed')
          await s.durable()
          await new Promise((resolve) => setImmediate(resolve))
        }
      })()
      await s.settled()
      stop = true
      await pump
      expect(generationOf(s)).toBe(1)
      expect(writes).toBeGreaterThan(3)
      const reloaded = afterKill(dir)
      expect(state(reloaded)).toEqual(state(s))
      expect(reloaded.get('doomed', 't', 0)).toBeUndefined()
      expect(reloaded.storedGroups().has('doomed')).toBe(false)
      // The new file takes appends as the old one did.
      s.commit('g', [c('v', 0, 77n)])
      expect(afterKill(dir).get('g', 'v', 0)?.offset).toBe(77n)
    })
  }
})

describe('a compaction that fails', () => {
  it('leaves the old file taking appends, loses nothing, and is tried again after more growth', async () => {
    const dir = tempDir()
    const logged: string[] = []
    const logger = { ...silentLogger, error: (m: string) => void logged.push(m) }
    const s = OffsetsStore.open(dir, logger, { compactMinBytes: 16 * 1024 })
    stores.push(s)
    // The temp file cannot be created: every rewrite fails at its first step.
    mkdirSync(`${fileOf(dir)}.tmp`)
    let i = 0
    while (logged.length === 0 && i < 10_000) {
      s.commit('g', [c('t', i % 10, BigInt(i), 'y'.repeat(100))])
      i++
      await s.settled()
    }
    expect(logged[0]).toMatch(/compaction failed: .*EISDIR/)
    for (let k = 0; k < 20; k++) s.commit('g', [c('u', k, BigInt(k))])
    const expected = state(s)
    expect(state(afterKill(dir))).toEqual(expected)
    expect(generationOf(s)).toBe(0)
    // Once the obstacle is gone, the next threshold rewrites the file.
    rmSync(`${fileOf(dir)}.tmp`, { recursive: true })
    for (let k = 0; generationOf(s) === 0 && k < 10_000; k++) {
      s.commit('g', [c('t', k % 10, BigInt(k), 'y'.repeat(100))])
      await s.settled()
    }
    expect(generationOf(s)).toBe(1)
    expect(state(afterKill(dir))).toEqual(state(s))
  })
})
