import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { OFFSETS_DIR, OFFSETS_FILE, OffsetsStore, type OffsetsStoreOptions, type StoredGroup } from '../../src/groups/offsets-store.js'
import { silentLogger } from '../../src/logger.js'
import { tempDir } from '../helpers/tmp.js'

// Random interleavings of everything that writes to the offsets file, with compactions small enough
// to happen every few operations and kill -9 (a new store over a copy of the bytes on disk) at any
// point, including in the middle of a background compaction.

const GROUPS = ['a', 'b', 'c']
const TOPICS = ['x', 'y']

type Op =
  | { op: 'commit'; group: string; topic: string; partition: number; offset: number; pad: number }
  | { op: 'delete'; group: string; topic: string; partition: number }
  | { op: 'deleteGroup'; group: string }
  | { op: 'storeGroup'; group: string; generation: number; pad: number }
  | { op: 'tick'; ms: number }
  | { op: 'settle' }
  | { op: 'kill' }
  | { op: 'restart' }

const group = fc.constantFrom(...GROUPS)
const tp = { topic: fc.constantFrom(...TOPICS), partition: fc.integer({ min: 0, max: 1 }) }
const op: fc.Arbitrary<Op> = fc.oneof(
  { weight: 10, arbitrary: fc.record({ op: fc.constant('commit' as const), group, ...tp, offset: fc.nat(), pad: fc.integer({ min: 0, max: 400 }) }) },
  { weight: 3, arbitrary: fc.record({ op: fc.constant('delete' as const), group, ...tp }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('deleteGroup' as const), group }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('storeGroup' as const), group, generation: fc.nat(1000), pad: fc.integer({ min: 0, max: 600 }) }) },
  { weight: 6, arbitrary: fc.record({ op: fc.constant('tick' as const), ms: fc.integer({ min: 0, max: 2 }) }) },
  { weight: 1, arbitrary: fc.constant({ op: 'settle' as const }) },
  { weight: 1, arbitrary: fc.constant({ op: 'kill' as const }) },
  { weight: 1, arbitrary: fc.constant({ op: 'restart' as const }) },
)

const storeOpts: OffsetsStoreOptions = { compactMinBytes: 1024, snapshotPieceBytes: 256 }

function storedGroup(generation: number, pad: number): StoredGroup {
  return {
    protocolType: 'consumer',
    generationId: generation,
    protocolName: 'range',
    leaderId: 'm',
    stateTimestamp: 1,
    members: [{ memberId: 'm', groupInstanceId: null, clientId: 'c', clientHost: '/h', rebalanceTimeoutMs: 1, sessionTimeoutMs: 1, subscription: Buffer.alloc(pad, 1), assignment: Buffer.alloc(0) }],
  }
}

/** The store's whole state, comparable with the model. */
function stateOf(s: OffsetsStore) {
  const offsets: Record<string, string> = {}
  for (const g of s.groupIds()) for (const [t, parts] of s.groupOffsets(g)) for (const [p, o] of parts) offsets[`${g}/${t}/${p}`] = `${o.offset}:${o.metadata.length}`
  const groups: Record<string, string> = {}
  for (const [g, v] of s.storedGroups()) groups[g] = `${v.generationId}:${v.members[0]!.subscription.length}`
  return { offsets, groups }
}

const generationOf = (s: OffsetsStore) => (s as unknown as { fdGeneration: number }).fdGeneration
const tick = (ms: number) => new Promise<void>((resolve) => (ms === 0 ? setImmediate(resolve) : setTimeout(resolve, ms)))

describe('OffsetsStore under random histories', () => {
  it('never loses an acknowledged write nor brings back a deleted one, through compactions and kill -9', async () => {
    let compactions = 0
    let kills = 0
    let killsMidCompaction = 0
    let killsAfterSwap = 0
    // Background compactions, including those a kill interrupted (the old store finishes them as it closes).
    const retire = async (t: OffsetsStore) => {
      await t.close()
      compactions += generationOf(t) - 1
    }
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 50, maxLength: 250 }), async (ops) => {
        let dir = tempDir()
        let s = OffsetsStore.open(dir, silentLogger, storeOpts)
        const model = { offsets: {} as Record<string, string>, groups: {} as Record<string, string> }
        const check = (t: OffsetsStore) => expect(stateOf(t)).toEqual(model)
        try {
          for (const o of ops) {
            switch (o.op) {
              case 'commit': {
                const metadata = 'm'.repeat(o.pad)
                s.commit(o.group, [{ topic: o.topic, partition: o.partition, offset: BigInt(o.offset), leaderEpoch: 0, metadata, commitTimestamp: 1, expireTimestamp: -1 }])
                model.offsets[`${o.group}/${o.topic}/${o.partition}`] = `${o.offset}:${o.pad}`
                break
              }
              case 'delete': {
                const key = `${o.group}/${o.topic}/${o.partition}`
                expect(s.deleteOffsets(o.group, [{ topic: o.topic, partition: o.partition }])).toBe(key in model.offsets ? 1 : 0)
                delete model.offsets[key]
                break
              }
              case 'deleteGroup':
                s.deleteGroup(o.group)
                for (const k of Object.keys(model.offsets)) if (k.startsWith(`${o.group}/`)) delete model.offsets[k]
                delete model.groups[o.group]
                break
              case 'storeGroup':
                s.storeGroup(o.group, storedGroup(o.generation, o.pad))
                model.groups[o.group] = `${o.generation}:${o.pad}`
                break
              case 'tick':
                await tick(o.ms)
                break
              case 'settle':
                await s.settled()
                break
              case 'kill': {
                // The bytes on disk right now, whatever the background compaction is doing.
                const copy = tempDir()
                mkdirSync(join(copy, OFFSETS_DIR))
                writeFileSync(join(copy, OFFSETS_DIR, OFFSETS_FILE), readFileSync(join(dir, OFFSETS_DIR, OFFSETS_FILE)))
                if ((s as unknown as { compaction: unknown }).compaction !== null) killsMidCompaction++
                if (generationOf(s) > 0) killsAfterSwap++
                await retire(s)
                kills++
                dir = copy
                s = OffsetsStore.open(dir, silentLogger, storeOpts)
                check(s)
                break
              }
              case 'restart':
                await retire(s)
                s = OffsetsStore.open(dir, silentLogger, storeOpts)
                check(s)
                break
            }
            check(s)
          }
        } finally {
          await retire(s)
        }
        const reopened = OffsetsStore.open(dir, silentLogger, storeOpts)
        try {
          check(reopened)
        } finally {
          await reopened.close()
        }
      }),
      { numRuns: 100 },
    )
    // The property means something only if compactions (and kills during them) really happened.
    expect(compactions).toBeGreaterThan(40)
    expect(kills).toBeGreaterThan(100)
    expect(killsMidCompaction).toBeGreaterThan(10)
    expect(killsAfterSwap).toBeGreaterThan(10)
  })
})
