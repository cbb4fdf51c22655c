import { afterAll, describe, expect, it } from 'vitest'
import { DecodeError, Reader, Writer } from '@tidelog/protocol'
import { fuzz, iterations, watchdog } from './harness.js'
import { mutate, type LengthField } from './mutate.js'
import type { Prng } from './prng.js'

afterAll(() => watchdog.stop())

// Every primitive a generated decoder is built from. Each op returns nothing; the
// point is what they throw and how far they move.
const OPS: ReadonlyArray<(r: Reader) => unknown> = [
  (r) => r.int8(),
  (r) => r.uint8(),
  (r) => r.bool(),
  (r) => r.int16(),
  (r) => r.uint16(),
  (r) => r.int32(),
  (r) => r.uint32(),
  (r) => r.int64(),
  (r) => r.float64(),
  (r) => r.uvarint(),
  (r) => r.varint(),
  (r) => r.varlong(),
  (r) => r.uuid(),
  (r) => r.string(),
  (r) => r.nullableString(),
  (r) => r.compactString(),
  (r) => r.compactNullableString(),
  (r) => r.bytes(),
  (r) => r.nullableBytes(),
  (r) => r.compactBytes(),
  (r) => r.compactNullableBytes(),
  (r) => r.arrayLength(false),
  (r) => r.arrayLength(true),
  (r) => r.taggedFields(),
  (r) => r.taggedFields((tag, sub) => {
    if (tag % 2 === 1) return false
    sub.uvarint()
    return true
  }),
]

/** A valid little stream of primitives, with its length fields located for targeted mutation. */
function validStream(rng: Prng): { bytes: Buffer; lengths: LengthField[]; ops: number[] } {
  const w = new Writer(64)
  const lengths: LengthField[] = []
  const ops: number[] = []
  const str = () => 'k'.repeat(rng.size(40))
  for (let k = rng.range(1, 8); k > 0; k--) {
    const op = rng.int(9)
    ops.push(op)
    const at = w.pos
    switch (op) {
      case 0: w.int32(rng.u32() | 0); break
      case 1: w.varlong(BigInt.asIntN(64, BigInt(rng.u32()) << BigInt(rng.int(33)))); break
      case 2: w.string(str()); lengths.push({ offset: at, kind: 'int16', size: 2 }); break
      case 3: { const s = str(); w.compactString(s); lengths.push({ offset: at, kind: 'uvarint', size: w.pos - at - s.length }); break }
      case 4: w.bytes(rng.bytes(rng.size(40))); lengths.push({ offset: at, kind: 'int32', size: 4 }); break
      case 5: { const n = rng.size(10); w.arrayLength(n, false); for (let i = 0; i < n; i++) w.int8(i); lengths.push({ offset: at, kind: 'int32', size: 4 }); break }
      case 6: w.nullableString(rng.chance(0.3) ? null : str()); lengths.push({ offset: at, kind: 'int16', size: 2 }); break
      case 7: w.uuid('AAAAAAAAAAAAAAAAAAAAAA'); break
      default: w.taggedFields(rng.chance(0.5) ? undefined : [{ tag: 1, data: rng.bytes(rng.size(8)) }]); break
    }
  }
  return { bytes: Buffer.from(w.finish()), lengths, ops }
}

describe('fuzz: Reader primitives', () => {
  it('random op sequences over random and mutated bytes throw only DecodeError and stay in bounds', () => {
    let ops: number[] = []
    const stats = fuzz({
      name: 'reader/ops',
      iterations: iterations(100_000),
      input(rng) {
        const b = rng.chance(0.3) ? rng.bytes(rng.size(512)) : mutate(rng, validStream(rng))
        ops = []
        for (let k = rng.range(1, 24); k > 0; k--) ops.push(rng.int(OPS.length))
        return b
      },
      run(input) {
        const r = new Reader(input)
        for (const op of ops) {
          const before = r.pos
          OPS[op]!(r)
          if (r.pos < before || r.pos > r.end) throw new Error(`op ${op} moved the reader from ${before} to ${r.pos} (end ${r.end})`)
        }
      },
      allowed: (e) => e instanceof DecodeError,
    })
    expect(stats.decoded).toBeGreaterThan(1000)
    expect(stats.rejected).toBeGreaterThan(1000)
  })

  it('a DecodeError says where, and what was needed and available', () => {
    let checked = 0
    fuzz({
      name: 'reader/decode-error-fields',
      iterations: iterations(20_000),
      input: (rng) => rng.bytes(rng.size(64)),
      run(input) {
        const r = new Reader(input)
        try {
          for (;;) OPS[(input.length * 7 + r.pos) % OPS.length]!(r)
        } catch (e) {
          if (!(e instanceof DecodeError)) throw e
          if (!(e.offset >= 0 && e.offset <= input.length)) throw new Error(`offset ${e.offset} outside 0..${input.length}`)
          if (e.needed > 0 && !(e.available >= 0 && e.available < e.needed)) {
            throw new Error(`needed ${e.needed} but ${e.available} available`)
          }
          checked++
          throw e
        }
      },
      allowed: (e) => e instanceof DecodeError,
    })
    expect(checked).toBe(iterations(20_000))
  })
})
