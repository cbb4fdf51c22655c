import { CompressionError, DecompressionLimitError } from '../../errors/base.js'

// The LZ4 block format: sequences of [token][literal length+][literals][offset
// LE16][match length+]. The compressor is the classic greedy single-probe hash
// search; blocks are at most 64 KiB (what Kafka writes), so positions fit 16 bits.

const MIN_MATCH = 4
/** The last match must start at least 12 bytes before the end of the block... */
const MF_LIMIT = 12
/** ...and the last 5 bytes are always literals. */
const LAST_LITERALS = 5
const HASH_LOG = 14
const TABLE = new Int32Array(1 << HASH_LOG)

const hash4 = (x: number) => Math.imul(x, 2654435761) >>> (32 - HASH_LOG)
const read32 = (b: Uint8Array, i: number) => b[i]! | (b[i + 1]! << 8) | (b[i + 2]! << 16) | (b[i + 3]! << 24)

/** Worst-case compressed size of `n` input bytes. */
export function lz4BlockBound(n: number): number {
  return n + ((n / 255) | 0) + 16
}

function writeLength(dst: Uint8Array, op: number, len: number): number {
  while (len >= 255) {
    dst[op++] = 255
    len -= 255
  }
  dst[op++] = len
  return op
}

/**
 * Compresses `src[start, end)` (at most 64 KiB) into `dst` at `op`; returns the
 * new write position. `dst` must have lz4BlockBound(end - start) bytes free.
 */
export function lz4CompressBlock(src: Uint8Array, start: number, end: number, dst: Uint8Array, op: number): number {
  let anchor = start
  const n = end - start
  // Local alias: a bundled module constant becomes a `var`, re-checked on every access.
  const table = TABLE
  if (n >= MF_LIMIT + 1) {
    table.fill(-1)
    const matchLimit = end - LAST_LITERALS
    const mflimit = end - MF_LIMIT
    let ip = start
    let step = 1 << 6 // skip faster through incompressible data, as the reference does
    while (ip < mflimit) {
      const seq = read32(src, ip)
      const h = hash4(seq)
      const ref = table[h]!
      table[h] = ip
      if (ref < 0 || ip - ref > 0xffff || read32(src, ref) !== seq) {
        ip += step++ >> 6
        continue
      }
      step = 1 << 6
      // Extend the match backwards over literals that also match.
      let mp = ref
      while (ip > anchor && mp > start && src[ip - 1] === src[mp - 1]) {
        ip--
        mp--
      }
      let me = ip + MIN_MATCH
      let rp = mp + MIN_MATCH
      while (me < matchLimit && src[me] === src[rp]) {
        me++
        rp++
      }
      const litLen = ip - anchor
      const matchLen = me - ip - MIN_MATCH
      const tokenAt = op++
      dst[tokenAt] = ((litLen >= 15 ? 15 : litLen) << 4) | (matchLen >= 15 ? 15 : matchLen)
      if (litLen >= 15) op = writeLength(dst, op, litLen - 15)
      if (litLen > 0) {
        dst.set(src.subarray(anchor, ip), op)
        op += litLen
      }
      const offset = ip - mp
      dst[op++] = offset
      dst[op++] = offset >>> 8
      if (matchLen >= 15) op = writeLength(dst, op, matchLen - 15)
      ip = me
      anchor = ip
      if (ip < mflimit) table[hash4(read32(src, ip - 2))] = ip - 2
    }
  }
  const litLen = end - anchor
  dst[op++] = (litLen >= 15 ? 15 : litLen) << 4
  if (litLen >= 15) op = writeLength(dst, op, litLen - 15)
  dst.set(src.subarray(anchor, end), op)
  return op + litLen
}

/**
 * Decompresses the block `src[start, end)` into `dst` from `op`, never writing
 * at or past `limit`. Back-references may reach down to `floor` (the block's own
 * start for independent blocks). Returns the new write position. Throws
 * CompressionError on malformed input and DecompressionLimitError (with
 * `capBytes`) when the output would pass `limit`.
 */
export function lz4DecompressBlock(
  src: Uint8Array,
  start: number,
  end: number,
  dst: Uint8Array,
  op: number,
  limit: number,
  floor: number,
  capBytes: number,
): number {
  let ip = start
  if (start === end) throw new CompressionError('lz4: empty block')
  for (;;) {
    const token = src[ip++]!
    let litLen = token >>> 4
    if (litLen === 15) {
      let b: number
      do {
        if (ip >= end) throw new CompressionError('lz4: truncated literal length')
        b = src[ip++]!
        litLen += b
      } while (b === 255)
    }
    if (litLen > end - ip) throw new CompressionError('lz4: literals run past the block')
    if (litLen > limit - op) throw new DecompressionLimitError('lz4', capBytes)
    if (litLen < 32) {
      for (let k = 0; k < litLen; k++) dst[op + k] = src[ip + k]!
    } else {
      dst.set(src.subarray(ip, ip + litLen), op)
    }
    ip += litLen
    op += litLen
    if (ip === end) return op // the last sequence has literals only
    if (end - ip < 2) throw new CompressionError('lz4: truncated match offset')
    const offset = src[ip]! | (src[ip + 1]! << 8)
    ip += 2
    if (offset === 0 || offset > op - floor) throw new CompressionError(`lz4: match offset ${offset} out of range`)
    let matchLen = (token & 15) + MIN_MATCH
    if ((token & 15) === 15) {
      let b: number
      do {
        if (ip >= end) throw new CompressionError('lz4: truncated match length')
        b = src[ip++]!
        matchLen += b
      } while (b === 255)
    }
    if (matchLen > limit - op) throw new DecompressionLimitError('lz4', capBytes)
    let mp = op - offset
    if (offset >= matchLen && matchLen >= 32) {
      dst.copyWithin(op, mp, mp + matchLen)
      op += matchLen
    } else {
      const stop = op + matchLen
      while (op < stop) dst[op++] = dst[mp++]!
    }
    if (ip >= end) throw new CompressionError('lz4: block ends with a match')
  }
}
