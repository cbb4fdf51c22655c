import type { Prng } from './prng.js'

/** Where a generated encoding holds a length or count, so mutations can aim at it. */
export interface LengthField {
  offset: number
  kind: 'int16' | 'int32' | 'uvarint'
  /** Bytes the field occupies. */
  size: number
}

/** A valid encoding to mutate, with its length fields located. */
export interface Seed {
  bytes: Buffer
  lengths: readonly LengthField[]
}

const INT16S = [0, 1, -1, -2, 0x7fff, -0x8000, 0x7ffe, 0x100, 0xff]
const INT32S = [0, 1, -1, -2, 0x7fffffff, -0x80000000, 0x7ffffffe, 0xffff, 0x10000, 0x1000000, 0x40000000]
// Unsigned varints: 0 (null in compact form), 1 (empty), the largest 32-bit value,
// one over 2^31, an over-long 6-byte run, and a run with no terminator.
const UVARINTS: readonly number[][] = [
  [0x00],
  [0x01],
  [0xff, 0xff, 0xff, 0xff, 0x0f],
  [0x81, 0x80, 0x80, 0x80, 0x08],
  [0xff, 0xff, 0xff, 0xff, 0x07],
  [0x80, 0x80, 0x80, 0x80, 0x80, 0x00],
  [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff],
  [0x80],
]
const BYTES = [0x00, 0x01, 0x7f, 0x80, 0xff, 0xfe]

function uvarint(v: number): number[] {
  const out: number[] = []
  v >>>= 0
  while (v >= 0x80) {
    out.push((v & 0x7f) | 0x80)
    v >>>= 7
  }
  out.push(v)
  return out
}

function splice(buf: Buffer, at: number, remove: number, insert: ArrayLike<number>): Buffer {
  const out = Buffer.allocUnsafe(buf.length - remove + insert.length)
  buf.copy(out, 0, 0, at)
  out.set(insert as ArrayLike<number>, at)
  buf.copy(out, at + insert.length, at + remove)
  return out
}

/** Replaces one known length field with a hostile value. */
export function hostileLength(rng: Prng, seed: Seed): Buffer {
  const f = rng.pick(seed.lengths)
  const buf = Buffer.from(seed.bytes)
  const left = buf.length - f.offset - f.size
  switch (f.kind) {
    case 'int16': {
      const v = rng.chance(0.25) ? Math.min(0x7fff, left + rng.range(1, 4)) : rng.pick(INT16S)
      buf.writeInt16BE(v, f.offset)
      return buf
    }
    case 'int32': {
      const v = rng.chance(0.25) ? left + rng.range(1, 4) : rng.pick(INT32S)
      buf.writeInt32BE(v | 0, f.offset)
      return buf
    }
    case 'uvarint': {
      const v = rng.chance(0.25) ? uvarint(left + rng.range(2, 5)) : rng.pick(UVARINTS)
      return splice(buf, f.offset, f.size, v)
    }
  }
}

/** One random structural or bit-level change. */
export function mutateOnce(rng: Prng, buf: Buffer): Buffer {
  const n = buf.length
  switch (rng.int(10)) {
    case 0: {
      if (n === 0) return rng.bytes(rng.size(8))
      const out = Buffer.from(buf)
      for (let k = rng.range(1, 4); k > 0; k--) out[rng.int(n)] ^= 1 << rng.int(8)
      return out
    }
    case 1: {
      if (n === 0) return Buffer.from([rng.pick(BYTES)])
      const out = Buffer.from(buf)
      out[rng.int(n)] = rng.chance(0.5) ? rng.pick(BYTES) : rng.u32() & 0xff
      return out
    }
    case 2:
      return buf.subarray(0, rng.int(n + 1))
    case 3:
      return Buffer.concat([buf, rng.bytes(rng.size(64))])
    case 4: {
      if (n < 2) return buf
      const out = Buffer.from(buf)
      out.writeInt16BE(rng.pick(INT16S), rng.int(n - 1))
      return out
    }
    case 5: {
      if (n < 4) return buf
      const out = Buffer.from(buf)
      out.writeInt32BE(rng.pick(INT32S) | 0, rng.int(n - 3))
      return out
    }
    case 6: {
      const at = rng.int(n + 1)
      return splice(buf, at, 0, rng.chance(0.5) ? rng.pick(UVARINTS) : rng.bytes(rng.size(16)))
    }
    case 7: {
      if (n === 0) return buf
      const at = rng.int(n)
      return splice(buf, at, rng.range(1, Math.min(16, n - at)), [])
    }
    case 8: {
      if (n === 0) return buf
      const at = rng.int(n)
      const len = rng.range(1, Math.min(32, n - at))
      return splice(buf, rng.int(n + 1), 0, buf.subarray(at, at + len))
    }
    default: {
      // A run of 0xff or 0x00: turns nearby lengths into -1 or zero, counts into huge.
      if (n === 0) return buf
      const out = Buffer.from(buf)
      const at = rng.int(n)
      out.fill(rng.chance(0.5) ? 0xff : 0x00, at, Math.min(n, at + rng.range(1, 8)))
      return out
    }
  }
}

/**
 * A hostile input derived from a valid one: sometimes a targeted length splice,
 * then one to four random changes (or none, so the valid shape is kept often).
 */
export function mutate(rng: Prng, seed: Seed): Buffer {
  let buf = seed.lengths.length > 0 && rng.chance(0.4) ? hostileLength(rng, seed) : seed.bytes
  const k = buf === seed.bytes ? rng.range(1, 4) : rng.int(3)
  for (let i = 0; i < k; i++) buf = mutateOnce(rng, buf)
  return buf
}
