// A raw snappy compressor, written from the format description (google/snappy
// format_description.txt): a uvarint of the uncompressed length, then elements
// (literals; copies with a 1-byte offset and length 4..11, or a 2-byte offset
// and length 1..64). Input is cut into independent 64 KiB blocks, so every
// offset fits two bytes; matches are found through a hash table of 4-byte
// sequences, skipping ahead faster the longer no match turns up, as the
// reference compressor does (incompressible data costs little).
//
// Why not snappyjs: its hash multiplies in floating point, copies literals a
// byte at a time and extends matches a byte at a time; this one uses
// Math.imul, bulk literal copies and 4-byte compares.

const BLOCK_SIZE = 1 << 16
const MAX_TABLE_BITS = 14
/** Below this, a block is one literal: there is no room for a match worth finding. */
const MIN_BLOCK = 16
/** Keeps 4-byte loads at the match search inside the block. */
const INPUT_MARGIN = 15
const HASH_MUL = 0x1e35a7bd

// Offsets within the current block, plus one, so that 0 means "empty" without resetting a
// table per call beyond its used size.
const table = new Int32Array(1 << MAX_TABLE_BITS)

/** snappy's MaxCompressedLength: the worst case for any input of `n` bytes, header included. */
export function snappyMaxCompressedLength(n: number): number {
  return 32 + n + Math.floor(n / 6)
}

/** Compresses `src` into one raw snappy block (what kafkajs and librdkafka write, and Kafka reads). */
export function snappyCompressRaw(src: Uint8Array): Buffer {
  const n = src.length
  const out = Buffer.allocUnsafe(snappyMaxCompressedLength(n))
  let op = 0
  let v = n
  while (v >= 0x80) {
    out[op++] = (v & 0x7f) | 0x80
    v >>>= 7
  }
  out[op++] = v
  for (let start = 0; start < n; start += BLOCK_SIZE) {
    const end = Math.min(n, start + BLOCK_SIZE)
    op = compressBlock(src, start, end, out, op)
  }
  return out.subarray(0, op)
}

function load32(a: Uint8Array, p: number): number {
  return a[p]! | (a[p + 1]! << 8) | (a[p + 2]! << 16) | (a[p + 3]! << 24)
}

function compressBlock(src: Uint8Array, start: number, end: number, out: Buffer, op: number): number {
  const len = end - start
  if (len < MIN_BLOCK) return emitLiteral(src, start, len, out, op)
  let bits = 8
  while (bits < MAX_TABLE_BITS && 1 << bits < len) bits++
  const shift = 32 - bits
  table.fill(0, 0, 1 << bits)
  const limit = end - INPUT_MARGIN
  let nextEmit = start
  let ip = start + 1
  search: for (;;) {
    let skip = 32
    let candidate: number
    let cur: number
    for (;;) {
      if (ip > limit) break search
      cur = load32(src, ip)
      const h = Math.imul(cur, HASH_MUL) >>> shift
      candidate = table[h]! - 1 + start
      table[h] = ip - start + 1
      if (candidate >= start && load32(src, candidate) === cur) break
      ip += skip++ >>> 5
    }
    if (ip > nextEmit) op = emitLiteral(src, nextEmit, ip - nextEmit, out, op)
    let m = 4
    while (ip + m + 4 <= end && load32(src, ip + m) === load32(src, candidate + m)) m += 4
    while (ip + m < end && src[ip + m] === src[candidate + m]) m++
    op = emitCopy(ip - candidate, m, out, op)
    ip += m
    nextEmit = ip
    if (ip > limit) break
    // The position before the next search, so a run that continues the match is found at once.
    table[Math.imul(load32(src, ip - 1), HASH_MUL) >>> shift] = ip - 1 - start + 1
  }
  if (nextEmit < end) op = emitLiteral(src, nextEmit, end - nextEmit, out, op)
  return op
}

function emitLiteral(src: Uint8Array, from: number, len: number, out: Buffer, op: number): number {
  const n = len - 1
  if (n < 60) {
    out[op++] = n << 2
  } else if (n < 0x100) {
    out[op++] = 60 << 2
    out[op++] = n
  } else {
    // A block is at most 64 KiB, so two length bytes always suffice.
    out[op++] = 61 << 2
    out[op++] = n & 0xff
    out[op++] = n >>> 8
  }
  if (len < 24) {
    for (let k = 0; k < len; k++) out[op + k] = src[from + k]!
  } else {
    out.set(src.subarray(from, from + len), op)
  }
  return op + len
}

function emitCopy(offset: number, len: number, out: Buffer, op: number): number {
  // Copy-2 elements carry at most 64 bytes; leave at least 4 for the last so it can be a copy-1.
  while (len >= 68) {
    op = emitCopy2(offset, 64, out, op)
    len -= 64
  }
  if (len > 64) {
    op = emitCopy2(offset, 60, out, op)
    len -= 60
  }
  if (len < 12 && offset < 2048) {
    out[op] = 1 | ((len - 4) << 2) | ((offset >>> 8) << 5)
    out[op + 1] = offset & 0xff
    return op + 2
  }
  return emitCopy2(offset, len, out, op)
}

function emitCopy2(offset: number, len: number, out: Buffer, op: number): number {
  out[op] = 2 | ((len - 1) << 2)
  out[op + 1] = offset & 0xff
  out[op + 2] = offset >>> 8
  return op + 3
}
