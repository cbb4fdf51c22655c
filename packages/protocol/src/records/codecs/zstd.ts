import { Decompress } from 'fzstd'
import type * as Zlib from 'node:zlib'
import { CompressionError, DecompressionLimitError } from '../../errors/base.js'
import type { CompressionCodec } from '../compression.js'

// zstd (KIP-110). Decoding is pure JS (fzstd) so every consumer can read topics
// that a broker or producer compressed with zstd. fzstd sizes its window buffer
// from the frame header, so the frames are walked first and a window larger
// than the cap is refused before fzstd allocates it. Encoding needs node:zlib's
// zstd (Node >= 22.15); elsewhere register a codec of your own.

const FRAME_MAGIC = 0xfd2fb528
const MAX_BLOCK = 128 * 1024

const u32le = (b: Uint8Array, i: number) => (b[i]! | (b[i + 1]! << 8) | (b[i + 2]! << 16) | (b[i + 3]! << 24)) >>> 0

/** Walks frame and block headers; returns what fzstd will allocate for windows in total. */
function checkFrames(src: Uint8Array, max: number): void {
  let pos = 0
  let windows = 0
  const n = src.length
  if (n === 0) throw new CompressionError('zstd: empty input')
  while (pos < n) {
    if (n - pos < 8) throw new CompressionError('zstd: truncated frame')
    const magic = u32le(src, pos)
    if ((magic & 0xfffffff0) === 0x184d2a50) {
      // Skippable frame (used for metadata); its size is counted against the input only.
      pos += 8 + u32le(src, pos + 4)
      if (pos > n) throw new CompressionError('zstd: truncated skippable frame')
      continue
    }
    if (magic !== FRAME_MAGIC) throw new CompressionError('zstd: bad frame magic')
    const fhd = src[pos + 4]!
    const singleSegment = (fhd >>> 5) & 1
    const fcsFlag = fhd >>> 6
    const dictFlag = fhd & 3
    if (fhd & 0x08) throw new CompressionError('zstd: reserved bit set in frame header')
    if (dictFlag !== 0) throw new CompressionError('zstd: frames with a dictionary are not supported')
    let p = pos + 5
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
    if (fcs > max || window > max) throw new DecompressionLimitError('zstd', max)
    // fzstd holds one window per frame; a stream of many frames each declaring a
    // large window would make it allocate over and over.
    windows += window
    if (windows > 2 * max + MAX_BLOCK) throw new DecompressionLimitError('zstd', max)
    const checksum = (fhd >>> 2) & 1
    const blockMax = Math.min(MAX_BLOCK, Math.max(window, 1))
    for (;;) {
      if (n - p < 3) throw new CompressionError('zstd: truncated block header')
      const bh = src[p]! | (src[p + 1]! << 8) | (src[p + 2]! << 16)
      p += 3
      const type = (bh >>> 1) & 3
      const size = bh >>> 3
      if (type === 3) throw new CompressionError('zstd: reserved block type')
      if (size > blockMax) throw new CompressionError(`zstd: block of ${size} bytes exceeds ${blockMax}`)
      p += type === 1 ? 1 : size
      if (p > n) throw new CompressionError('zstd: truncated block')
      if (bh & 1) break
    }
    p += checksum * 4
    if (p > n) throw new CompressionError('zstd: truncated checksum')
    pos = p
  }
}

export function zstdDecompress(src: Uint8Array, max: number): Uint8Array {
  checkFrames(src, max)
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
      if (native?.zstdCompressSync === undefined) {
        throw new CompressionError('zstd compression needs node:zlib with zstd (Node >= 22.15); register a zstd codec to produce it here')
      }
      return native.zstdCompressSync(data)
    },
    decompress: zstdDecompress,
  }
}
