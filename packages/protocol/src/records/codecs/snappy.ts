import { CompressionError, DecompressionLimitError } from '../../errors/base.js'
import { snappyCompressRaw } from './snappy-compress.js'

// Snappy as Kafka carries it. Producers may write either a raw snappy block
// (kafkajs, librdkafka) or the xerial framing of snappy-java's
// SnappyOutputStream (the Java client): an 8-byte magic, two int32 versions,
// then int32-length-prefixed raw blocks. We write raw and read both.
//
// Encoding is snappy-compress.ts (about 2x snappyjs on record batches).
// Decoding is our own: each block's declared length is checked against the cap
// and against what the block could possibly expand to before anything is
// allocated, and every tag is bounds-checked, so hostile input cannot make us
// allocate, loop or read out of range.

const XERIAL_MAGIC = [0x82, 0x53, 0x4e, 0x41, 0x50, 0x50, 0x59, 0x00]
const XERIAL_HEADER = 16
/** The largest expansion of any snappy element: a 3-byte copy producing 64 bytes. */
const MAX_EXPANSION = 22

export function snappyCompress(data: Uint8Array): Uint8Array {
  return snappyCompressRaw(data)
}

export function isXerialFramed(src: Uint8Array): boolean {
  if (src.length < XERIAL_HEADER) return false
  for (let i = 0; i < 8; i++) if (src[i] !== XERIAL_MAGIC[i]) return false
  return true
}

export function snappyDecompress(src: Uint8Array, max: number): Uint8Array {
  if (!isXerialFramed(src)) {
    const { length, start } = rawHeader(src, 0, src.length, max)
    const out = Buffer.allocUnsafe(length)
    snappyDecodeRaw(src, start, src.length, out, 0, length)
    return out
  }
  // Pass 1: sizes of every block, from their own headers, checked before allocating.
  let pos = XERIAL_HEADER
  let total = 0
  const n = src.length
  while (pos < n) {
    if (n - pos < 4) throw new CompressionError('snappy: truncated xerial block length')
    const size = ((src[pos]! << 24) | (src[pos + 1]! << 16) | (src[pos + 2]! << 8) | src[pos + 3]!) >>> 0
    pos += 4
    if (size > n - pos) throw new CompressionError('snappy: truncated xerial block')
    total += rawHeader(src, pos, pos + size, max - total).length
    pos += size
  }
  const out = Buffer.allocUnsafe(total)
  pos = XERIAL_HEADER
  let op = 0
  while (pos < n) {
    const size = ((src[pos]! << 24) | (src[pos + 1]! << 16) | (src[pos + 2]! << 8) | src[pos + 3]!) >>> 0
    pos += 4
    const { length, start } = rawHeader(src, pos, pos + size, max)
    snappyDecodeRaw(src, start, pos + size, out, op, op + length)
    op += length
    pos += size
  }
  return out
}

/** A raw block's declared uncompressed length (a uvarint), checked against the cap and the block's size. */
function rawHeader(src: Uint8Array, pos: number, end: number, max: number): { length: number; start: number } {
  let length = 0
  let shift = 0
  for (;;) {
    if (pos >= end) throw new CompressionError('snappy: truncated length header')
    const b = src[pos++]!
    if (shift === 28 && b > 0x0f) throw new CompressionError('snappy: length header is longer than 32 bits')
    length += (b & 0x7f) * 2 ** shift
    if (b < 0x80) break
    shift += 7
    if (shift > 28) throw new CompressionError('snappy: length header is longer than 5 bytes')
  }
  if (length > max) throw new DecompressionLimitError('snappy', max)
  if (length > (end - pos) * MAX_EXPANSION) {
    throw new CompressionError(`snappy: a ${end - pos}-byte block cannot hold ${length} bytes`)
  }
  return { length, start: pos }
}

/** Decodes the raw snappy elements in `src[ip, end)` into exactly `dst[op, oend)`. */
function snappyDecodeRaw(src: Uint8Array, ip: number, end: number, dst: Uint8Array, op: number, oend: number): void {
  const base = op
  while (ip < end) {
    const tag = src[ip++]!
    const kind = tag & 3
    if (kind === 0) {
      let len = (tag >>> 2) + 1
      if (len > 60) {
        const extra = len - 60
        if (end - ip < extra) throw new CompressionError('snappy: truncated literal length')
        len = 0
        for (let k = extra - 1; k >= 0; k--) len = len * 256 + src[ip + k]!
        len += 1
        ip += extra
      }
      if (len > end - ip) throw new CompressionError('snappy: literal runs past the input')
      if (len > oend - op) throw new CompressionError('snappy: output longer than its declared length')
      if (len < 32) {
        for (let k = 0; k < len; k++) dst[op + k] = src[ip + k]!
      } else {
        dst.set(src.subarray(ip, ip + len), op)
      }
      ip += len
      op += len
      continue
    }
    let len: number
    let offset: number
    if (kind === 1) {
      if (ip >= end) throw new CompressionError('snappy: truncated copy')
      len = ((tag >>> 2) & 7) + 4
      offset = ((tag >>> 5) << 8) | src[ip++]!
    } else if (kind === 2) {
      if (end - ip < 2) throw new CompressionError('snappy: truncated copy')
      len = (tag >>> 2) + 1
      offset = src[ip]! | (src[ip + 1]! << 8)
      ip += 2
    } else {
      if (end - ip < 4) throw new CompressionError('snappy: truncated copy')
      len = (tag >>> 2) + 1
      offset = (src[ip]! | (src[ip + 1]! << 8) | (src[ip + 2]! << 16) | (src[ip + 3]! << 24)) >>> 0
      ip += 4
    }
    if (offset === 0 || offset > op - base) throw new CompressionError(`snappy: copy offset ${offset} out of range`)
    if (len > oend - op) throw new CompressionError('snappy: output longer than its declared length')
    let mp = op - offset
    const stop = op + len
    while (op < stop) dst[op++] = dst[mp++]!
  }
  if (op !== oend) throw new CompressionError(`snappy: output is ${op - base} bytes, declared ${oend - base}`)
}
