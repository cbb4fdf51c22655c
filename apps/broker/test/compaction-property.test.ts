import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { PartitionLog } from '../src/log/index.js'
import { cleanOnce, openCompacted, put, readAll } from './compaction-fixtures.js'
import { tempDir } from './helpers/tmp.js'

// Random writes and deletes, the cleaner run at random points (and a restart
// now and then): the cleaned log's last value per key matches a model's, and
// every offset read back is increasing and holds what was written there.

type Op = { kind: 'put'; key: number; value: number | null; batch: number } | { kind: 'roll' } | { kind: 'clean'; late: boolean } | { kind: 'reopen' }

const op: fc.Arbitrary<Op> = fc.oneof(
  { weight: 8, arbitrary: fc.record({ kind: fc.constant('put' as const), key: fc.integer({ min: 0, max: 7 }), value: fc.option(fc.integer({ min: 0, max: 999 }), { freq: 4 }), batch: fc.integer({ min: 1, max: 3 }) }) },
  { weight: 2, arbitrary: fc.constant({ kind: 'roll' as const }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('clean' as const), late: fc.boolean() }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'reopen' as const }) },
)

describe('compaction property', () => {
  it('keeps the model\'s last value of every key and every surviving offset as written', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 5, maxLength: 60 }), async (ops) => {
        const dir = tempDir()
        const retention = 1000
        let log = openCompacted(dir, { deleteRetentionMs: retention })
        const written = new Map<number, string>()
        const model = new Map<string, string | null>()
        let now = Date.now()
        let cleanedAt = -1
        try {
          for (const o of ops) {
            if (o.kind === 'put') {
              const recs: [string, string | null][] = Array.from({ length: o.batch }, (_, i) => [`k${(o.key + i) % 8}`, o.value === null ? null : `v${o.value}-${i}`])
              const base = put(log, recs)
              recs.forEach(([k, v], i) => {
                written.set(base + i, `${k}=${v}`)
                model.set(k, v)
              })
            } else if (o.kind === 'roll') {
              log.roll()
            } else if (o.kind === 'clean') {
              // A late pass runs past every delete horizon stamped so far.
              now += o.late ? retention + 1 : 1
              await cleanOnce(log, 0, { now })
              cleanedAt = log.active.baseOffset
            } else {
              await log.close()
              log = PartitionLog.open({ dir: log.dir, topic: 'c', partition: 0, config: log.config, clean: false, recoveryPoint: 0 })
            }
          }
          const seen = await readAll(log)
          const offsets = seen.map((s) => s.offset)
          for (let i = 1; i < offsets.length; i++) expect(offsets[i]).toBeGreaterThan(offsets[i - 1]!)
          for (const s of seen) expect(`${s.key}=${s.value}`).toBe(written.get(s.offset))
          // The last record of a key in the log is the model's last write, or, for a deleted key, absent.
          const last = new Map<string, string | null>()
          for (const s of seen) last.set(s.key!, s.value)
          for (const [k, v] of model) {
            if (v === null) expect(last.get(k) ?? null).toBeNull()
            else expect(last.get(k)).toBe(v)
          }
          // Below the active segment at the last pass, no key appears twice.
          const cleaned = seen.filter((s) => s.offset < cleanedAt).map((s) => s.key)
          expect(new Set(cleaned).size).toBe(cleaned.length)
          expect(log.logEndOffset).toBe(written.size)
        } finally {
          await log.close()
        }
      }),
      { numRuns: 30, seed: 12 },
    )
  })
})
