import { CompressionError, DecompressionLimitError } from '../../errors/base.js'
import { lz4BlockBound, lz4CompressBlock, lz4DecompressBlock } from './lz4-block.js'
import { xxhash32 } from './xxhash32.js'

// The LZ4 frame format as Kafka writes it (KafkaLZ4BlockOutputStream): magic,
// FLG = version 01 + independent blocks, BD = 64 KiB blocks, header checksum,
// then int32-LE-sized blocks (high bit = stored uncompressed) and a zero end mark.

const MAGIC = 0x184d2204
const FLG_VERSION_MASK = 0xc0
const FLG_VERSION = 0x40
const FLG_BLOCK_INDEPENDENCE = 0x20
const FLG_BLOCK_CHECKSUM = 0x10
const FLG_CONTENT_SIZE = 0x08
const FLG_CONTENT_CHECKSUM = 0x04
const FLG_RESERVED = 0x02
const FLG_DICT_ID = 0x01
const BLOCK_SIZE = 64 * 1024
const BD_64KB = 4 << 4
const UNCOMPRESSED = 0x80000000

const u32le = (b: Uint8Array, i: number) => (b[i]! | (b[i + 1]! << 8) | (b[i + 2]! << 16) | (b[i + 3]! << 24)) >>> 0
function put32le(b: Uint8Array, i: number, v: number): void {
  b[i] = v
  b[i + 1] = v >>> 8
  b[i + 2] = v >>> 16
  b[i + 3] = v >>> 24
}

/** An LZ4 frame of `data` as Kafka's producer writes it (no content checksum, no block checksums). */
export function lz4FrameCompress(data: Uint8Array): Uint8Array {
  const blocks = Math.max(1, Math.ceil(data.length / BLOCK_SIZE))
  const out = Buffer.allocUnsafe(7 + blocks * (4 + lz4BlockBound(BLOCK_SIZE)) + 4)
  put32le(out, 0, MAGIC)
  out[4] = FLG_VERSION | FLG_BLOCK_INDEPENDENCE
  out[5] = BD_64KB
  out[6] = (xxhash32(out, 4, 6) >>> 8) & 0xff
  let op = 7
  for (let s = 0; s < data.length; s += BLOCK_SIZE) {
    const e = Math.min(data.length, s + BLOCK_SIZE)
    const end = lz4CompressBlock(data, s, e, out, op + 4)
    const size = end - op - 4
    if (size >= e - s) {
      // Incompressible: store the block as is.
      put32le(out, op, (e - s) | UNCOMPRESSED)
      out.set(data.subarray(s, e), op + 4)
      op += 4 + e - s
    } else {
      put32le(out, op, size)
      op = end
    }
  }
  put32le(out, op, 0)
  return out.subarray(0, op + 4)
}

export interface Lz4DecodeOptions {
  /**
   * Kafka before 0.10 (message format v0) computed the header checksum over the
   * magic too (KAFKA-3160); accept that form for magic-0 message sets.
   */
  brokenHeaderChecksum?: boolean
}

/** Decodes one or more concatenated LZ4 frames, producing at most `max` bytes. */
export function lz4FrameDecompress(src: Uint8Array, max: number, opts?: Lz4DecodeOptions): Uint8Array {
  // Pass 1: walk the block headers, so the output is sized from what the input
  // can produce (a 64 KiB block cap per block) rather than grown or guessed.
  let bound = 0
  let pos = 0
  let declared = 0
  const n = src.length
  if (n === 0) throw new CompressionError('lz4: empty input')
  while (pos < n) {
    const h = readFrameHeader(src, pos, opts)
    if (h.contentSize >= 0) declared += h.contentSize
    pos = h.dataStart
    for (;;) {
      if (n - pos < 4) throw new CompressionError('lz4: truncated block size')
      const word = u32le(src, pos)
      pos += 4
      if (word === 0) break
      const size = word & 0x7fffffff
      if (size > h.blockMax) throw new CompressionError(`lz4: block of ${size} bytes exceeds the frame's ${h.blockMax}`)
      if (size === 0) throw new CompressionError('lz4: empty block')
      pos += size + (h.blockChecksum ? 4 : 0)
      if (pos > n) throw new CompressionError('lz4: truncated block')
      // A compressed byte expands to at most 255 bytes (a run of 255-valued length bytes).
      bound += word & UNCOMPRESSED ? size : Math.min(h.blockMax, size * 255)
    }
    if (h.contentChecksum) pos += 4
    if (pos > n) throw new CompressionError('lz4: truncated content checksum')
  }
  if (declared > max) throw new DecompressionLimitError('lz4', max)
  const out = Buffer.allocUnsafe(Math.min(bound, max))
  const limit = out.length
  // Pass 2: decode.
  let op = 0
  pos = 0
  while (pos < n) {
    const h = readFrameHeader(src, pos, opts)
    const frameStart = op
    pos = h.dataStart
    for (;;) {
      const word = u32le(src, pos)
      pos += 4
      if (word === 0) break
      const size = word & 0x7fffffff
      if (h.blockChecksum) {
        if (xxhash32(src, pos, pos + size) !== u32le(src, pos + size)) throw new CompressionError('lz4: block checksum mismatch')
      }
      if (word & UNCOMPRESSED) {
        if (size > limit - op) throw new DecompressionLimitError('lz4', max)
        out.set(src.subarray(pos, pos + size), op)
        op += size
      } else {
        const blockStart = op
        op = lz4DecompressBlock(src, pos, pos + size, out, op, limit, h.independent ? op : frameStart, max)
        if (op - blockStart > h.blockMax) throw new CompressionError('lz4: block decodes to more than its maximum size')
      }
      pos += size + (h.blockChecksum ? 4 : 0)
    }
    if (h.contentSize >= 0 && op - frameStart !== h.contentSize) {
      throw new CompressionError(`lz4: frame declares ${h.contentSize} bytes but holds ${op - frameStart}`)
    }
    if (h.contentChecksum) {
      if (xxhash32(out, frameStart, op) !== u32le(src, pos)) throw new CompressionError('lz4: content checksum mismatch')
      pos += 4
    }
  }
  return out.subarray(0, op)
}

interface FrameHeader {
  dataStart: number
  blockMax: number
  independent: boolean
  blockChecksum: boolean
  contentChecksum: boolean
  contentSize: number
}

function readFrameHeader(src: Uint8Array, at: number, opts?: Lz4DecodeOptions): FrameHeader {
  if (src.length - at < 7) throw new CompressionError('lz4: truncated frame header')
  if (u32le(src, at) !== MAGIC) throw new CompressionError('lz4: bad frame magic')
  const flg = src[at + 4]!
  const bd = src[at + 5]!
  if ((flg & FLG_VERSION_MASK) !== FLG_VERSION) throw new CompressionError('lz4: unsupported frame version')
  if (flg & FLG_RESERVED || bd & 0x8f) throw new CompressionError('lz4: reserved bits set in frame descriptor')
  if (flg & FLG_DICT_ID) throw new CompressionError('lz4: frames with a dictionary are not supported')
  const sizeCode = (bd >>> 4) & 7
  if (sizeCode < 4) throw new CompressionError(`lz4: invalid block size code ${sizeCode}`)
  let p = at + 6
  let contentSize = -1
  if (flg & FLG_CONTENT_SIZE) {
    if (src.length - p < 9) throw new CompressionError('lz4: truncated frame header')
    const hi = u32le(src, p + 4)
    // Anything past 2^53 is beyond any cap we could be given.
    contentSize = hi > 0x1fffff ? Number.MAX_SAFE_INTEGER : hi * 0x100000000 + u32le(src, p)
    p += 8
  }
  const hc = src[p]!
  const good = (xxhash32(src, at + 4, p) >>> 8) & 0xff
  const legacy = opts?.brokenHeaderChecksum === true && ((xxhash32(src, at, p) >>> 8) & 0xff) === hc
  if (hc !== good && !legacy) throw new CompressionError('lz4: frame header checksum mismatch')
  return {
    dataStart: p + 1,
    blockMax: 1 << (2 * sizeCode + 8),
    independent: (flg & FLG_BLOCK_INDEPENDENCE) !== 0,
    blockChecksum: (flg & FLG_BLOCK_CHECKSUM) !== 0,
    contentChecksum: (flg & FLG_CONTENT_CHECKSUM) !== 0,
    contentSize,
  }
}
