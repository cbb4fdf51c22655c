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

// Mutations work in place in one scratch buffer: the input they return is a view
// that stays valid until the next call, which is all a fuzz loop needs, and the
// loop allocates almost nothing per input.
let scratch = Buffer.allocUnsafe(1 << 20)
let len = 0
const tmp = Buffer.allocUnsafe(64)

function load(src: Uint8Array): void {
  if (src.length + 4096 > scratch.length) scratch = Buffer.allocUnsafe(2 * (src.length + 4096))
  scratch.set(src, 0)
  len = src.length
}

/** Replaces `remove` bytes at `at` with `insert`. */
function splice(at: number, remove: number, insert: ArrayLike<number>): void {
  if (len - remove + insert.length + 64 > scratch.length) return
  scratch.copyWithin(at + insert.length, at + remove, len)
  scratch.set(insert as ArrayLike<number>, at)
  len += insert.length - remove
}

/** Opens a gap of `n` bytes at `at`. */
function gap(at: number, n: number): void {
  if (len + n + 64 > scratch.length) return
  scratch.copyWithin(at + n, at, len)
  len += n
}

function hostileInPlace(rng: Prng, seed: Seed): void {
  const f = rng.pick(seed.lengths)
  const left = len - f.offset - f.size
  switch (f.kind) {
    case 'int16':
      scratch.writeInt16BE(rng.chance(0.25) ? Math.min(0x7fff, left + rng.range(1, 4)) : rng.pick(INT16S), f.offset)
      return
    case 'int32':
      scratch.writeInt32BE((rng.chance(0.25) ? left + rng.range(1, 4) : rng.pick(INT32S)) | 0, f.offset)
      return
    case 'uvarint':
      splice(f.offset, f.size, rng.chance(0.25) ? uvarint(left + rng.range(2, 5)) : rng.pick(UVARINTS))
  }
}

/** Replaces one known length field with a hostile value (a view valid until the next mutation). */
export function hostileLength(rng: Prng, seed: Seed): Buffer {
  load(seed.bytes)
  hostileInPlace(rng, seed)
  return scratch.subarray(0, len)
}

function mutateInPlace(rng: Prng): void {
  const n = len
  switch (rng.int(10)) {
    case 0:
      if (n === 0) return splice(0, 0, [rng.pick(BYTES)])
      for (let k = rng.range(1, 4); k > 0; k--) scratch[rng.int(n)] ^= 1 << rng.int(8)
      return
    case 1:
      if (n === 0) return
      scratch[rng.int(n)] = rng.chance(0.5) ? rng.pick(BYTES) : rng.u32() & 0xff
      return
    case 2:
      len = rng.int(n + 1)
      return
    case 3: {
      const k = rng.size(64)
      gap(n, k)
      rng.fill(scratch, n, len)
      return
    }
    case 4:
      if (n >= 2) scratch.writeInt16BE(rng.pick(INT16S), rng.int(n - 1))
      return
    case 5:
      if (n >= 4) scratch.writeInt32BE(rng.pick(INT32S) | 0, rng.int(n - 3))
      return
    case 6: {
      const at = rng.int(n + 1)
      if (rng.chance(0.5)) return splice(at, 0, rng.pick(UVARINTS))
      const k = rng.size(16)
      gap(at, k)
      rng.fill(scratch, at, at + k)
      return
    }
    case 7: {
      if (n === 0) return
      const at = rng.int(n)
      return splice(at, rng.range(1, Math.min(16, n - at)), [])
    }
    case 8: {
      if (n === 0) return
      const at = rng.int(n)
      const k = rng.range(1, Math.min(32, n - at))
      scratch.copy(tmp, 0, at, at + k)
      return splice(rng.int(n + 1), 0, tmp.subarray(0, k))
    }
    default: {
      // A run of 0xff or 0x00: turns nearby lengths into -1 or zero, counts into huge.
      if (n === 0) return
      const at = rng.int(n)
      scratch.fill(rng.chance(0.5) ? 0xff : 0x00, at, Math.min(n, at + rng.range(1, 8)))
    }
  }
}

/** One random structural or bit-level change (a view valid until the next mutation). */
export function mutateOnce(rng: Prng, buf: Uint8Array): Buffer {
  load(buf)
  mutateInPlace(rng)
  return scratch.subarray(0, len)
}

/**
 * A hostile input derived from a valid one: sometimes a targeted length splice,
 * then one to four random changes (or none after a splice, so the valid shape
 * around it is kept often). The result is a view valid until the next mutation.
 */
export function mutate(rng: Prng, seed: Seed): Buffer {
  load(seed.bytes)
  const aimed = seed.lengths.length > 0 && rng.chance(0.4)
  if (aimed) hostileInPlace(rng, seed)
  for (let k = aimed ? rng.int(3) : rng.range(1, 4); k > 0; k--) mutateInPlace(rng)
  return scratch.subarray(0, len)
}
