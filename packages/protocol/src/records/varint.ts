import { DecodeError } from '../errors/base.js'

// Varint helpers for the record hot loops. They work on a plain Uint8Array and
// a position passed in and out through `cursor.pos`, so decoding a record makes
// no allocation for its varints and the one-byte case stays inline-able.

export const cursor = { pos: 0 }

/** A zigzag varint (int32) at cursor.pos, not reading at or past `end`. */
export function readVarint(b: Uint8Array, end: number): number {
  let p = cursor.pos
  if (p >= end) throw new DecodeError('truncated varint', p, 1, 0)
  let x = b[p++]!
  if (x < 0x80) {
    cursor.pos = p
    return (x >>> 1) ^ -(x & 1)
  }
  x &= 0x7f
  for (let shift = 7; ; shift += 7) {
    if (p >= end) throw new DecodeError('truncated varint', p, 1, 0)
    const c = b[p++]!
    if (shift === 28) {
      if (c > 0x0f) throw new DecodeError('varint is longer than 32 bits', cursor.pos)
      x |= c << 28
      break
    }
    x |= (c & 0x7f) << shift
    if (c < 0x80) break
  }
  cursor.pos = p
  return (x >>> 1) ^ -(x & 1)
}

/**
 * A zigzag varlong at cursor.pos, as a number. Record timestamp deltas are
 * varlongs but any real one is far below 2^53; beyond that we refuse rather
 * than lose precision.
 */
export function readVarlongNumber(b: Uint8Array, end: number): number {
  let p = cursor.pos
  if (p >= end) throw new DecodeError('truncated varlong', p, 1, 0)
  const first = b[p++]!
  if (first < 0x80) {
    cursor.pos = p
    return (first >>> 1) ^ -(first & 1)
  }
  let z = first & 0x7f
  let mul = 128
  for (let i = 1; ; i++) {
    if (p >= end) throw new DecodeError('truncated varlong', p, 1, 0)
    const c = b[p++]!
    z += (c & 0x7f) * mul
    if (c < 0x80) break
    if (i === 7) throw new DecodeError('timestamp delta varlong beyond 2^53', cursor.pos)
    mul *= 128
  }
  if (z > Number.MAX_SAFE_INTEGER) throw new DecodeError('timestamp delta varlong beyond 2^53', cursor.pos)
  cursor.pos = p
  // zigzag decode without 32-bit operators
  return z % 2 === 0 ? z / 2 : -(z + 1) / 2
}

/** Bytes of a zigzag varint of an int32. */
export function varintSize(v: number): number {
  let z = ((v << 1) ^ (v >> 31)) >>> 0
  let n = 1
  while (z > 0x7f) {
    n++
    z >>>= 7
  }
  return n
}

/** Bytes of a zigzag varlong of a safe integer. */
export function varlongSize(v: number): number {
  if (v >= -0x40000000 && v < 0x40000000) return varintSize(v)
  let z = v >= 0 ? v * 2 : -v * 2 - 1
  let n = 1
  while (z >= 128) {
    n++
    z = Math.floor(z / 128)
  }
  return n
}

export function writeVarint(b: Uint8Array, p: number, v: number): number {
  let z = ((v << 1) ^ (v >> 31)) >>> 0
  while (z > 0x7f) {
    b[p++] = (z & 0x7f) | 0x80
    z >>>= 7
  }
  b[p++] = z
  return p
}

export function writeVarlong(b: Uint8Array, p: number, v: number): number {
  if (v >= -0x40000000 && v < 0x40000000) return writeVarint(b, p, v)
  let z = v >= 0 ? v * 2 : -v * 2 - 1
  while (z >= 128) {
    b[p++] = (z % 128) | 0x80
    z = Math.floor(z / 128)
  }
  b[p++] = z
  return p
}
