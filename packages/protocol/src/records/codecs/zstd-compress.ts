import { CompressionError } from '../../errors/base.js'
import { writeLiterals } from './zstd-literals.js'
import { LL_CODE, ML_CODE, Sequences, writeSequences } from './zstd-sequences.js'

// A zstd compressor in plain TypeScript, written from RFC 8878, so producers on
// Node 20 (no zstd in node:zlib) can write KIP-110 zstd batches. One frame with
// the content size; blocks of up to 128 KiB, each compressed, RLE or raw,
// whichever is smallest. Matches come from hash tables of 4-byte (and, from
// level 3, 8-byte) prefixes, greedy or lazy by one position, reaching anywhere
// earlier in the frame up to an 8 MiB window; the most recent offset is tried
// first, since a repeat offset costs almost nothing. Each sequence code stream
// uses the predefined FSE table, one fitted to the block, or RLE, whichever is
// smallest (zstd-sequences.ts); literals are Huffman-coded when that is smaller
// (zstd-literals.ts). No content checksum: it is optional, and Kafka's batches
// carry their own CRC32C.

const MAGIC = 0xfd2fb528
const MAX_BLOCK = 128 * 1024
/**
 * The window: RFC 8878 recommends encoders not to need more than 8 MiB. Inputs
 * up to it are one segment (window = content size, so decoders allocate only
 * the output); larger ones declare this window.
 */
const WINDOW_LOG = 23
const WINDOW = 1 << WINDOW_LOG
const MIN_MATCH = 4
/** Hash tables hold positions + 1 as int32. */
const MAX_INPUT = 0x7ffffffe
/** Multipliers for hashing, as int32 (what Math.imul works in). */
const HASH_PRIME = 0x9e3779b1 | 0
const LONG_PRIME = 0x85ebca77 | 0
/**
 * The farthest a 4- or 5-byte match may reach back (unless it repeats a recent offset): a match
 * costs about 14 bits of codes plus log2(offset) extra bits, a literal about 6 bits.
 */
const FAR_4 = 1 << 10
const FAR_5 = 1 << 15
/** Blocks this small are stored raw: sequences would not pay for their headers. */
const MIN_COMPRESSED_BLOCK = 16

export const ZSTD_DEFAULT_LEVEL = 3

interface Params {
  hashLog: number
  /** Literal runs make the search step grow by one every 2^skipLog bytes: incompressible data costs little time. */
  skipLog: number
  /** A second table, of 8-byte prefixes (0: none): finds the longer of the matches a 4-byte prefix starts. */
  longHashLog: number
  /** Also try one position later and keep the longer match. */
  lazy: boolean
  /** Also enter a position near the start of each match into the hash table (better ratio, a little slower). */
  primeStart: boolean
  huffman: boolean
}

function paramsFor(level: number): Params {
  if (level === 0) level = ZSTD_DEFAULT_LEVEL
  if (level < 0) return { hashLog: 13, skipLog: 4, longHashLog: 0, lazy: false, primeStart: false, huffman: false }
  if (level <= 1) return { hashLog: 14, skipLog: 5, longHashLog: 0, lazy: false, primeStart: false, huffman: true }
  if (level === 2) return { hashLog: 14, skipLog: 6, longHashLog: 0, lazy: false, primeStart: true, huffman: true }
  if (level === 3) return { hashLog: 15, skipLog: 7, longHashLog: 15, lazy: false, primeStart: true, huffman: true }
  return { hashLog: 16, skipLog: 9, longHashLog: 16, lazy: true, primeStart: true, huffman: true }
}

/** Reused between calls (compression is synchronous), so small inputs allocate little. */
interface Scratch {
  hash: Int32Array
  seqs: Sequences
  lits: Uint8Array
  out: Uint8Array
}
let scratch: Scratch | undefined
const KEEP_OUT_BYTES = 4 * 1024 * 1024

function scratchFor(hashSize: number, blockSize: number, outSize: number): Scratch {
  const s = scratch
  const maxSeqs = (blockSize >>> 2) + 1
  const next: Scratch = {
    hash: s !== undefined && s.hash.length >= hashSize ? s.hash : new Int32Array(hashSize),
    seqs: s !== undefined && s.seqs.capacity >= maxSeqs ? s.seqs : new Sequences(maxSeqs),
    lits: s !== undefined && s.lits.length >= blockSize ? s.lits : new Uint8Array(blockSize),
    out: s !== undefined && s.out.length >= outSize ? s.out : new Uint8Array(outSize),
  }
  scratch = next.out.length <= KEEP_OUT_BYTES ? next : { ...next, out: new Uint8Array(0) }
  return next
}

/** Matcher state that lives across the blocks of one frame. */
interface MatchState {
  src: Uint8Array
  hash: Int32Array
  hashShift: number
  /** The 8-byte-prefix table; longShift 0 when there is none. */
  longHash: Int32Array
  longShift: number
  /** Offsets must be smaller than the window. */
  window: number
  skipLog: number
  lazy: boolean
  primeStart: boolean
  /** The decoder's repeat offsets (RFC 8878 section 3.1.2.5), kept in step with it. */
  rep0: number
  rep1: number
  rep2: number
  seqs: Sequences
  lits: Uint8Array
  litCount: number
}

/**
 * One zstd frame holding `data` (RFC 8878), decodable by any zstd decoder.
 * `level` trades speed for ratio like zstd's: 1-3 greedy (3 is the default, as
 * in Kafka's compression.zstd.level), 4 and up lazy, below 0 fastest without
 * Huffman literals.
 */
export function zstdCompress(data: Uint8Array, level: number = ZSTD_DEFAULT_LEVEL): Uint8Array {
  const n = data.length
  if (n > MAX_INPUT) throw new CompressionError(`zstd: this compressor takes at most ${MAX_INPUT} bytes at once, not ${n}`)
  const p = paramsFor(Math.trunc(level) || 0)
  const single = n <= WINDOW
  const blockMax = Math.min(MAX_BLOCK, single ? n : WINDOW)
  const blocks = Math.max(1, Math.ceil(n / MAX_BLOCK))
  const hashLog = Math.min(p.hashLog, Math.max(10, 32 - Math.clz32(n)))
  // Room for every block stored raw, plus one compressed attempt that came out
  // larger: a sequence takes at most about 9 bytes per 4 bytes it covers, and
  // its table descriptions a few hundred. (Past the end, stores into a typed
  // array are dropped, and such an attempt is replaced by a raw block anyway.)
  const outSize = 18 + n + 3 * blocks + Math.ceil((blockMax * 5) / 4) + 1024
  const longLog = p.longHashLog === 0 ? 0 : Math.min(p.longHashLog, Math.max(10, 32 - Math.clz32(n)))
  const tables = (1 << hashLog) + (longLog === 0 ? 0 : 1 << longLog)
  const s = scratchFor(tables, blockMax, outSize)
  const out = s.out
  s.hash.fill(0, 0, tables)
  const hash = s.hash.subarray(0, 1 << hashLog)

  let pos = writeFrameHeader(out, n, single)
  const m: MatchState = {
    src: data,
    hash,
    hashShift: 32 - hashLog,
    longHash: longLog === 0 ? hash : s.hash.subarray(1 << hashLog, tables),
    longShift: longLog === 0 ? 0 : 32 - longLog,
    window: single ? n : WINDOW,
    skipLog: p.skipLog,
    lazy: p.lazy,
    primeStart: p.primeStart,
    rep0: 1,
    rep1: 4,
    rep2: 8,
    seqs: s.seqs,
    lits: s.lits,
    litCount: 0,
  }
  for (let start = 0; ; ) {
    const end = Math.min(n, start + blockMax)
    const last = end === n ? 1 : 0
    const size = end - start
    if (size > 1 && isRun(data, start, end)) {
      putBlockHeader(out, pos, last, 1, size)
      out[pos + 3] = data[start]!
      pos += 4
    } else {
      let written = -1
      if (size >= MIN_COMPRESSED_BLOCK) {
        const reps = [m.rep0, m.rep1, m.rep2] as const
        findSequences(m, start, end)
        const q = writeSequences(m.seqs, out, writeLiterals(m.lits, m.litCount, out, pos + 3, p.huffman))
        written = q - pos - 3
        if (written >= size) {
          // Stored raw instead: the decoder's repeat offsets skip raw blocks.
          ;[m.rep0, m.rep1, m.rep2] = reps
          written = -1
        }
      }
      if (written >= 0) {
        putBlockHeader(out, pos, last, 2, written)
        pos += 3 + written
      } else {
        putBlockHeader(out, pos, last, 0, size)
        out.set(data.subarray(start, end), pos + 3)
        pos += 3 + size
      }
    }
    if (last) break
    start = end
  }
  return Buffer.from(out.subarray(0, pos))
}

/** Magic, Frame_Header_Descriptor, [Window_Descriptor], Frame_Content_Size. */
function writeFrameHeader(out: Uint8Array, n: number, single: boolean): number {
  out[0] = MAGIC & 0xff
  out[1] = (MAGIC >>> 8) & 0xff
  out[2] = (MAGIC >>> 16) & 0xff
  out[3] = MAGIC >>> 24
  // FCS_Field_Size 1 (flag 0, single segment only), 2 (value - 256), 4 or 8 bytes.
  const flag = single && n < 256 ? 0 : n < 65536 + 256 ? 1 : n < 2 ** 32 ? 2 : 3
  out[4] = (flag << 6) | (single ? 0x20 : 0)
  let pos = 5
  if (!single) out[pos++] = (WINDOW_LOG - 10) << 3
  let v = flag === 1 ? n - 256 : n
  const bytes = flag === 0 ? 1 : 1 << flag
  for (let i = 0; i < bytes; i++) {
    out[pos++] = v % 256
    v = Math.floor(v / 256)
  }
  return pos
}

function putBlockHeader(out: Uint8Array, pos: number, last: number, type: number, size: number): void {
  const v = last | (type << 1) | (size << 3)
  out[pos] = v
  out[pos + 1] = v >>> 8
  out[pos + 2] = v >>> 16
}

function isRun(b: Uint8Array, start: number, end: number): boolean {
  const first = b[start]
  for (let i = start + 1; i < end; i++) if (b[i] !== first) return false
  return true
}

/** Length of the common run of `b` from `a` and from the earlier `ref`, not past `end`; 4 bytes at a time while it can. */
function extend(view: DataView, b: Uint8Array, a: number, ref: number, end: number): number {
  const from = a
  while (a + 4 <= end && view.getInt32(a, true) === view.getInt32(ref, true)) {
    a += 4
    ref += 4
  }
  while (a < end && b[a] === b[ref]) {
    a++
    ref++
  }
  return a - from
}

/**
 * Parses `src[start, end)` into sequences (into m.seqs) and literals (into
 * m.lits), advancing the repeat offsets as the decoder will.
 */
function findSequences(m: MatchState, start: number, end: number): void {
  const { src, hash, hashShift, longHash, longShift, window, skipLog, lazy, primeStart, lits } = m
  // Module constants into locals: bundlers turn them into mutable variables, read again on every use.
  const prime = HASH_PRIME
  const longPrime = LONG_PRIME
  const minMatch = MIN_MATCH
  const far4 = FAR_4
  const far5 = FAR_5
  const llCodeOf = LL_CODE
  const mlCodeOf = ML_CODE
  const view = new DataView(src.buffer, src.byteOffset, src.byteLength)
  const seqs = m.seqs
  seqs.reset()
  const { ll: llOut, ml: mlOut, of: ofOut, llCode: llCodes, mlCode: mlCodes, ofCode: ofCodes, llHist, mlHist, ofHist } = seqs
  let rep0 = m.rep0
  let rep1 = m.rep1
  let rep2 = m.rep2
  let count = 0
  let litCount = 0
  let anchor = start
  let ip = start
  const limit = end - minMatch
  // Positions whose 4 bytes can be read (hash priming may look past this block).
  const readable = src.length - minMatch
  // Where a long (8-byte) candidate can still be checked inside the block.
  const longLimit = longShift === 0 ? -1 : end - 8
  while (ip <= limit) {
    const cur = view.getInt32(ip, true)
    const h = Math.imul(cur, prime) >>> hashShift
    // A candidate may be this very position (entered by a lazy look-ahead): only earlier ones count.
    let ref = hash[h]! - 1
    hash[h] = ip + 1
    let longRef = -1
    let hi = 0
    if (ip <= longLimit) {
      hi = view.getInt32(ip + 4, true)
      const hl = (Math.imul(cur, prime) ^ Math.imul(hi, longPrime)) >>> longShift
      longRef = longHash[hl]! - 1
      longHash[hl] = ip + 1
    }
    let matchStart = ip
    let len: number
    if (ip > anchor && ip >= rep0 && view.getInt32(ip - rep0, true) === cur) {
      ref = ip - rep0
      len = minMatch + extend(view, src, ip + minMatch, ref + minMatch, end)
    } else if (
      longRef >= 0 &&
      longRef < ip &&
      ip - longRef < window &&
      view.getInt32(longRef, true) === cur &&
      view.getInt32(longRef + 4, true) === hi
    ) {
      ref = longRef
      len = 8 + extend(view, src, ip + 8, ref + 8, end)
    } else if (ref >= 0 && ref < ip && ip - ref < window && view.getInt32(ref, true) === cur) {
      len = minMatch + extend(view, src, ip + minMatch, ref + minMatch, end)
      if (lazy && ip + 1 <= limit) {
        // One position later may start a longer match (worth the literal it costs).
        const next = view.getInt32(ip + 1, true)
        const h1 = Math.imul(next, prime) >>> hashShift
        const ref1 = hash[h1]! - 1
        hash[h1] = ip + 2
        if (ref1 >= 0 && ip + 1 - ref1 < window && view.getInt32(ref1, true) === next) {
          const len1 = minMatch + extend(view, src, ip + 1 + minMatch, ref1 + minMatch, end)
          if (len1 > len + 1) {
            matchStart = ip + 1
            ref = ref1
            len = len1
          }
        }
      }
    } else {
      ip += 1 + ((ip - anchor) >>> skipLog)
      continue
    }
    while (matchStart > anchor && ref > 0 && src[matchStart - 1] === src[ref - 1]) {
      matchStart--
      ref--
      len++
    }
    const offset = matchStart - ref
    if (len < minMatch + 2 && offset > (len === minMatch ? far4 : far5) && offset !== rep0 && offset !== rep1 && offset !== rep2) {
      // Too short for how far back it is: its offset's extra bits cost more than the bytes as literals.
      ip += 1 + ((ip - anchor) >>> skipLog)
      continue
    }
    const ll = matchStart - anchor
    if (ll < 32) {
      for (let i = anchor; i < matchStart; i++) lits[litCount++] = src[i]!
    } else {
      lits.set(src.subarray(anchor, matchStart), litCount)
      litCount += ll
    }
    // Offset_Value: a repeat code when the offset is one the decoder holds
    // (shifted by one when there are no literals), else offset + 3.
    let ov: number
    if (ll > 0 && offset === rep0) {
      ov = 1
    } else {
      if (ll > 0) ov = offset === rep1 ? 2 : offset === rep2 ? 3 : offset + 3
      else ov = offset === rep1 ? 1 : offset === rep2 ? 2 : offset === rep0 - 1 ? 3 : offset + 3
      // A repeat of the second slot swaps the first two; anything else shifts.
      if (offset !== rep1 || ov > 3) rep2 = rep1
      rep1 = rep0
      rep0 = offset
    }
    llOut[count] = ll
    mlOut[count] = len
    ofOut[count] = ov
    const llc = ll < 64 ? llCodeOf[ll]! : 50 - Math.clz32(ll)
    const mlc = len < 131 ? mlCodeOf[len - 3]! : 67 - Math.clz32(len - 3)
    const ofc = 31 - Math.clz32(ov)
    llCodes[count] = llc
    mlCodes[count] = mlc
    ofCodes[count] = ofc
    llHist[llc]++
    mlHist[mlc]++
    ofHist[ofc]++
    count++
    ip = matchStart + len
    anchor = ip
    // Prime the table inside the match, so the next search finds nearby repeats.
    if (ip - 2 <= readable) hash[Math.imul(view.getInt32(ip - 2, true), prime) >>> hashShift] = ip - 1
    if (primeStart && matchStart + 6 <= ip) hash[Math.imul(view.getInt32(matchStart + 2, true), prime) >>> hashShift] = matchStart + 3
  }
  if (end > anchor) {
    lits.set(src.subarray(anchor, end), litCount)
    litCount += end - anchor
  }
  seqs.count = count
  m.litCount = litCount
  m.rep0 = rep0
  m.rep1 = rep1
  m.rep2 = rep2
}
