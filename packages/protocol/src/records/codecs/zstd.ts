import { Decompress } from 'fzstd'
import type * as Zlib from 'node:zlib'
import { CompressionError, DecompressionLimitError } from '../../errors/base.js'
import type { CompressionCodec } from '../compression.js'
import { zstdCompress } from './zstd-compress.js'

// zstd (KIP-110). Decoding is pure JS (fzstd) so every consumer can read topics
// that a broker or producer compressed with zstd; see prepareFrames for how its
// memory is kept in proportion to the input. Encoding uses node:zlib's native
// zstd where it exists (Node >= 22.15: faster, better ratio) and our own
// compressor (zstd-compress.ts) elsewhere, so producers on Node 20 write zstd too.

const FRAME_MAGIC = 0xfd2fb528
const MAX_BLOCK = 128 * 1024

const u32le = (b: Uint8Array, i: number) => (b[i]! | (b[i + 1]! << 8) | (b[i + 2]! << 16) | (b[i + 3]! << 24)) >>> 0

/** The smallest window descriptor byte whose window holds at least `n` bytes. */
function windowDescriptorFor(n: number): { byte: number; size: number } {
  for (let e = 0; e < 32; e++) {
    const base = 2 ** (10 + e)
    for (let m = 0; m < 8; m++) {
      const size = base + (base / 8) * m
      if (size >= n) return { byte: (e << 3) | m, size }
    }
  }
  return { byte: 0xff, size: Infinity }
}

/**
 * Walks frame and block headers before fzstd sees them. fzstd allocates each
 * frame's whole declared window up front (a 10-byte header can ask for 2 GiB),
 * while a frame's back-references can never reach further than the output it
 * has produced. So where the declared window is larger than everything the
 * frame's blocks can produce, the window descriptor is rewritten (on a copy)
 * to that size: same output, and memory in proportion to the input (and never
 * more than the cap and one block). Declared sizes over the cap are refused
 * before anything is allocated; the output is counted as it is produced.
 */
function prepareFrames(src: Uint8Array, max: number): Uint8Array {
  let pos = 0
  let out = src
  let declared = 0
  const n = src.length
  if (n === 0) throw new CompressionError('zstd: empty input')
  while (pos < n) {
    if (n - pos < 8) throw new CompressionError('zstd: truncated frame')
    const magic = u32le(src, pos)
    if ((magic & 0xfffffff0) === 0x184d2a50) {
      // Skippable frame (metadata); nothing is decoded from it.
      pos += 8 + u32le(src, pos + 4)
      if (pos > n) throw new CompressionError('zstd: truncated skippable frame')
      continue
    }
    if (magic !== FRAME_MAGIC) throw new CompressionError('zstd: bad frame magic')
    const fhd = src[pos + 4]!
    const singleSegment = (fhd >>> 5) & 1
    const fcsFlag = fhd >>> 6
    if (fhd & 0x08) throw new CompressionError('zstd: reserved bit set in frame header')
    if ((fhd & 3) !== 0) throw new CompressionError('zstd: frames with a dictionary are not supported')
    let p = pos + 5
    const wdAt = p
    let window = 0
    if (!singleSegment) {
      const wd = src[p++]!
      const base = 2 ** (10 + (wd >>> 3))
      window = base + (base / 8) * (wd & 7)
    }
    const fcsBytes = fcsFlag === 0 ? singleSegment : 1 << fcsFlag
    if (n - p < fcsBytes + 3) throw new CompressionError('zstd: truncated frame header')
    let fcs = -1
    if (fcsBytes > 0) {
      fcs = 0
      for (let k = fcsBytes - 1; k >= 0; k--) fcs = fcs * 256 + src[p + k]!
      if (fcsBytes === 2) fcs += 256
      p += fcsBytes
    }
    if (singleSegment) window = fcs
    if (fcs > max) throw new DecompressionLimitError('zstd', max)
    const blockMax = Math.min(MAX_BLOCK, Math.max(window, 1))
    // The most this frame's blocks can produce.
    let bound = 0
    for (;;) {
      if (n - p < 3) throw new CompressionError('zstd: truncated block header')
      const bh = src[p]! | (src[p + 1]! << 8) | (src[p + 2]! << 16)
      p += 3
      const type = (bh >>> 1) & 3
      const size = bh >>> 3
      if (type === 3) throw new CompressionError('zstd: reserved block type')
      if (size > blockMax) throw new CompressionError(`zstd: block of ${size} bytes exceeds ${blockMax}`)
      bound += type === 2 ? blockMax : size
      p += type === 1 ? 1 : size
      if (p > n) throw new CompressionError('zstd: truncated block')
      if (bh & 1) break
    }
    if (fcs > bound) throw new CompressionError(`zstd: frame declares ${fcs} bytes but its blocks hold at most ${bound}`)
    p += ((fhd >>> 2) & 1) * 4
    if (p > n) throw new CompressionError('zstd: truncated checksum')
    if (fcs > 0) {
      declared += fcs
      if (declared > max) throw new DecompressionLimitError('zstd', max)
    }
    if (!singleSegment) {
      // Past the cap plus one block the output is refused anyway (by the caller's
      // counting), so no back-reference that matters can reach further than that.
      const need = windowDescriptorFor(Math.max(1, Math.min(bound, fcs >= 0 ? fcs : bound, max + MAX_BLOCK)))
      if (need.size < window) {
        if (out === src) out = Uint8Array.from(src)
        out[wdAt] = need.byte
      }
    }
    pos = p
  }
  return out
}

export function zstdDecompress(src: Uint8Array, max: number): Uint8Array {
  src = prepareFrames(src, max)
  const chunks: Uint8Array[] = []
  let total = 0
  const d = new Decompress((chunk) => {
    total += chunk.length
    if (total > max) throw new DecompressionLimitError('zstd', max)
    if (chunk.length > 0) chunks.push(chunk)
  })
  try {
    d.push(src, true)
  } catch (e) {
    if (e instanceof DecompressionLimitError) throw e
    throw new CompressionError(`zstd: ${(e as Error).message}`, { cause: e })
  }
  return chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, total)
}

export function zstdCodec(zlib: typeof Zlib | undefined): CompressionCodec {
  const native = zlib as (typeof Zlib & { zstdCompressSync?: (d: Uint8Array) => Buffer }) | undefined
  return {
    compress(data) {
      return native?.zstdCompressSync !== undefined ? native.zstdCompressSync(data) : zstdCompress(data)
    },
    decompress: zstdDecompress,
  }
}
