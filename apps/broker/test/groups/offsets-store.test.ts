import { mkdirSync, readFileSync, statSync, truncateSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import fc from 'fast-check'
import { afterEach, describe, expect, it } from 'vitest'
import { OFFSETS_DIR, OFFSETS_FILE, type OffsetCommit, OffsetsStore, type StoredGroup } from '../../src/groups/offsets-store.js'
import { type Logger, silentLogger } from '../../src/logger.js'
import { tempDir } from '../helpers/tmp.js'

const stores: OffsetsStore[] = []
afterEach(async () => {
  for (const s of stores.splice(0)) await s.close().catch(() => {})
})

function open(dir: string, logger: Logger = silentLogger, opts = {}): OffsetsStore {
  const s = OffsetsStore.open(dir, logger, opts)
  stores.push(s)
  return s
}

async function reopen(s: OffsetsStore, dir: string, logger?: Logger): Promise<OffsetsStore> {
  await s.close()
  return open(dir, logger)
}

const fileOf = (dir: string) => join(dir, OFFSETS_DIR, OFFSETS_FILE)

const c = (topic: string, partition: number, offset: bigint, metadata = ''): OffsetCommit => ({
  topic,
  partition,
  offset,
  leaderEpoch: 2,
  metadata,
  commitTimestamp: 1_700_000_000_000,
  expireTimestamp: -1,
})

const group: StoredGroup = {
  protocolType: 'consumer',
  generationId: 7,
  protocolName: 'range',
  leaderId: 'm1',
  stateTimestamp: 1_700_000_000_123,
  members: [
    { memberId: 'm1', groupInstanceId: null, clientId: 'c1', clientHost: '/127.0.0.1', rebalanceTimeoutMs: 60_000, sessionTimeoutMs: 45_000, subscription: Buffer.from([0, 1, 2]), assignment: Buffer.from([9]) },
    { memberId: 'm2', groupInstanceId: 'pod-2', clientId: 'c2', clientHost: '/::1', rebalanceTimeoutMs: 1, sessionTimeoutMs: 2, subscription: Buffer.alloc(0), assignment: Buffer.alloc(0) },
  ],
}

/** Every committed offset, flattened, for comparisons. */
function dump(s: OffsetsStore) {
  const out: Record<string, unknown> = {}
  for (const g of s.groupIds().sort()) {
    for (const [t, parts] of s.groupOffsets(g)) for (const [p, o] of parts) out[`${g}/${t}/${p}`] = o
  }
  return out
}

function recordingLogger(): Logger & { lines: string[] } {
  const lines: string[] = []
  const push = (m: string) => void lines.push(m)
  return { level: 'debug', lines, error: push, warn: push, info: push, debug: push, enabled: () => true }
}

describe('OffsetsStore', () => {
  it('keeps commits, tombstones and group metadata across a reopen, offsets as exact int64', async () => {
    const dir = tempDir()
    let s = open(dir)
    s.commit('g1', [c('t', 0, 5n, 'hello'), c('t', 1, 2n ** 62n), c('u', 0, 1n)])
    s.commit('g1', [c('t', 0, 6n, 'ünïcödé')])
    s.commit('g2', [c('t', 0, -1n)])
    expect(s.deleteOffsets('g1', [{ topic: 'u', partition: 0 }, { topic: 'nope', partition: 3 }])).toBe(1)
    s.storeGroup('g1', group)
    const before = dump(s)
    s = await reopen(s, dir)
    expect(dump(s)).toEqual(before)
    expect(s.get('g1', 't', 0)).toMatchObject({ offset: 6n, metadata: 'ünïcödé', leaderEpoch: 2 })
    expect(s.get('g1', 't', 1)!.offset).toBe(2n ** 62n)
    expect(s.get('g1', 'u', 0)).toBeUndefined()
    const g = s.storedGroups().get('g1')!
    expect({ ...g, members: g.members.map((m) => ({ ...m, subscription: [...m.subscription], assignment: [...m.assignment] })) }).toEqual({
      ...group,
      members: group.members.map((m) => ({ ...m, subscription: [...m.subscription], assignment: [...m.assignment] })),
    })
    s.deleteGroup('g1')
    s = await reopen(s, dir)
    expect(s.groupIds()).toEqual(['g2'])
    expect(s.storedGroups().size).toBe(0)
  })

  it('survives a crash: appends are in the file before the call returns', async () => {
    const dir = tempDir()
    const s = open(dir)
    s.commit('g', [c('t', 0, 10n)])
    // Another process reading the file now (as after kill -9) sees the commit.
    const copy = tempDir()
    mkdirSync(join(copy, OFFSETS_DIR))
    writeFileSync(fileOf(copy), readFileSync(fileOf(dir)))
    expect(open(copy).get('g', 't', 0)!.offset).toBe(10n)
  })

  it('keeps every whole record before a torn tail and drops the rest', async () => {
    const dir = tempDir()
    let s = open(dir)
    for (let i = 0; i < 10; i++) s.commit('g', [c('t', i, BigInt(i))])
    await s.close()
    const size = statSync(fileOf(dir)).size
    truncateSync(fileOf(dir), size - 3)
    const log = recordingLogger()
    s = open(dir, log)
    expect(Object.keys(dump(s))).toHaveLength(9)
    expect(log.lines.some((l) => /truncated record|record length/.test(l) && /keeping the 9 record/.test(l))).toBe(true)
    // The file was rewritten without the damage: appends go on from a clean end.
    s.commit('g', [c('t', 42, 42n)])
    s = await reopen(s, dir)
    expect(Object.keys(dump(s))).toHaveLength(10)
  })

  it('stops at a record whose CRC does not match', async () => {
    const dir = tempDir()
    let s = open(dir)
    s.commit('g', [c('t', 0, 1n)])
    s.commit('g', [c('t', 1, 2n)])
    s.commit('g', [c('t', 2, 3n)])
    await s.close()
    const bytes = readFileSync(fileOf(dir))
    // Flip a byte in the second record's payload (header 8 bytes; records are the same size).
    const recordSize = (bytes.length - 8) / 3
    bytes[8 + recordSize + 20]! ^= 0xff
    writeFileSync(fileOf(dir), bytes)
    const log = recordingLogger()
    s = open(dir, log)
    expect(Object.keys(dump(s))).toEqual(['g/t/0'])
    expect(log.lines.some((l) => l.includes('CRC mismatch'))).toBe(true)
  })

  it('refuses a file it did not write rather than truncating it', () => {
    const dir = tempDir()
    open(dir)
    writeFileSync(fileOf(dir), 'not ours at all')
    expect(() => OffsetsStore.open(dir, silentLogger)).toThrow(/not a tidelog offsets file/)
    const versioned = Buffer.alloc(8)
    versioned.writeUInt32BE(0x544c434f)
    versioned.writeInt32BE(99, 4)
    writeFileSync(fileOf(dir), versioned)
    expect(() => OffsetsStore.open(dir, silentLogger)).toThrow(/format version 99/)
  })

  it('compacts to the live state on open and close', async () => {
    const dir = tempDir()
    let s = open(dir)
    for (let i = 0; i < 500; i++) s.commit('g', [c('t', 0, BigInt(i), 'x'.repeat(50))])
    const grown = statSync(fileOf(dir)).size
    await s.close()
    const compacted = statSync(fileOf(dir)).size
    expect(compacted).toBeLessThan(grown / 100)
    s = open(dir)
    expect(s.get('g', 't', 0)!.offset).toBe(499n)
  })

  it('fsyncs before a commit counts as durable when flush.messages asks for it', async () => {
    const dir = tempDir()
    const s = open(dir, silentLogger, { flushMessages: 2 })
    s.commit('g', [c('t', 0, 1n)])
    const internal = s as unknown as { unflushed: number }
    expect(internal.unflushed).toBe(1)
    await s.durable()
    expect(internal.unflushed).toBe(1)
    s.commit('g', [c('t', 1, 1n)])
    await s.durable()
    expect(internal.unflushed).toBe(0)
  })

  it('never fails to open over arbitrary damage after the header, and keeps a prefix of the history', async () => {
    const dir = tempDir()
    let s = open(dir)
    const history: Record<string, unknown>[] = [{}]
    for (let i = 0; i < 20; i++) {
      if (i % 5 === 4) s.deleteOffsets('g', [{ topic: 't', partition: i - 1 }])
      else s.commit(i % 2 === 0 ? 'g' : 'h', [c('t', i, BigInt(i * 1000), `m${i}`)])
      history.push(dump(s))
    }
    // The raw journal, before close compacts it.
    const raw = readFileSync(fileOf(dir))
    await s.close()
    const prefixes = history.map((h) => JSON.stringify(h, (_, v) => (typeof v === 'bigint' ? v.toString() : v)))
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 8, max: raw.length }),
        fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { maxLength: 4 }),
        fc.uint8Array({ maxLength: 40 }),
        async (cut, flips, garbage) => {
          const bytes = Buffer.from(raw.subarray(0, cut))
          for (const [at, v] of flips) if (bytes.length > 8) bytes[8 + (at % (bytes.length - 8))] = v
          writeFileSync(fileOf(dir), Buffer.concat([bytes, garbage]))
          const t = OffsetsStore.open(dir, silentLogger)
          try {
            const state = JSON.stringify(dump(t), (_, v) => (typeof v === 'bigint' ? v.toString() : v))
            // A flipped byte that still passes the CRC is astronomically unlikely: the state is one the history went through.
            expect(prefixes).toContain(state)
          } finally {
            await t.close()
          }
        },
      ),
      { numRuns: 200 },
    )
  })
})

describe('OffsetsStore on disk', () => {
  it('lives in <dataDir>/__consumer_offsets/offsets.log', () => {
    const dir = tempDir()
    const s = open(dir)
    s.commit('g', [c('t', 0, 1n)])
    expect(statSync(fileOf(dir)).isFile()).toBe(true)
  })
})
