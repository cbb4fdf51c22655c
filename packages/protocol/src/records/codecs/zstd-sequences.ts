import {
  BitWriter,
  buildFseTable,
  entropyBits,
  LL_DEFAULT,
  LL_TABLE,
  ML_DEFAULT,
  ML_TABLE,
  normalizeCounts,
  OF_DEFAULT,
  OF_TABLE,
  writeFseDescription,
  type FseTable,
} from './zstd-fse.js'

// The Sequences_Section of a compressed block (RFC 8878 section 3.1.1.3.2).
// Each of the three code streams (literal lengths, offsets, match lengths) uses
// whichever costs fewer bits: the predefined distribution (Predefined_Mode, no
// description), one fitted to this block (FSE_Compressed_Mode, described in a
// few bytes), or RLE_Mode when a single code occurs.

// Literals_Length_Code and Match_Length_Code baselines and extra bits (3.1.1.3.2.1.1).
const LL_BASE = Int32Array.from([
  0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 18, 20, 22, 24, 28, 32, 40, 48, 64, 128, 256, 512, 1024, 2048, 4096, 8192,
  16384, 32768, 65536,
])
const LL_BITS = Uint8Array.from([
  0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 3, 3, 4, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16,
])
const ML_BASE = Int32Array.from([
  3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 37, 39, 41,
  43, 47, 51, 59, 67, 83, 99, 131, 259, 515, 1027, 2051, 4099, 8195, 16387, 32771, 65539,
])
const ML_BITS = Uint8Array.from([
  0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 3, 3, 4, 4, 5, 7, 8, 9,
  10, 11, 12, 13, 14, 15, 16,
])

/** Code of each value below `limit` (values above follow a power-of-two pattern). */
function codesBelow(base: Int32Array, bits: Uint8Array, first: number, limit: number): Uint8Array {
  const codes = new Uint8Array(limit)
  for (let c = 0; c < base.length; c++) {
    for (let v = base[c]!; v < base[c]! + (1 << bits[c]!) && v - first < limit; v++) codes[v - first] = c
  }
  return codes
}
/** Literals_Length_Code of runs below 64; a longer run `ll` has code 50 - clz32(ll). */
export const LL_CODE = codesBelow(LL_BASE, LL_BITS, 0, 64)
/** Match_Length_Code of lengths 3..130 at [length - 3]; a longer `ml` has code 67 - clz32(ml - 3). */
export const ML_CODE = codesBelow(ML_BASE, ML_BITS, 3, 128)

/** Largest accuracy logs a table description may use (section 3.1.1.3.2.1). */
const LL_MAX_LOG = 9
const ML_MAX_LOG = 9
const OF_MAX_LOG = 8
const OF_MAX_CODE = 31

/**
 * One block's sequences: `ll` literals then `ml` bytes copied, the offset given
 * as its Offset_Value (1-3 name repeat offsets, anything larger is offset + 3),
 * with their codes and how often each code occurs. The match finder fills it
 * (codes included, so the sequences are read once more only to be written).
 */
export class Sequences {
  count = 0
  readonly ll: Int32Array
  readonly ml: Int32Array
  readonly of: Int32Array
  readonly llCode: Uint8Array
  readonly mlCode: Uint8Array
  readonly ofCode: Uint8Array
  readonly llHist = new Int32Array(LL_BASE.length)
  readonly mlHist = new Int32Array(ML_BASE.length)
  readonly ofHist = new Int32Array(OF_MAX_CODE + 1)

  constructor(readonly capacity: number) {
    this.ll = new Int32Array(capacity)
    this.ml = new Int32Array(capacity)
    this.of = new Int32Array(capacity)
    this.llCode = new Uint8Array(capacity)
    this.mlCode = new Uint8Array(capacity)
    this.ofCode = new Uint8Array(capacity)
  }

  reset(): void {
    this.count = 0
    this.llHist.fill(0)
    this.mlHist.fill(0)
    this.ofHist.fill(0)
  }
}

/** Writes the Sequences_Section at `pos`; returns the position after it. */
export function writeSequences(seqs: Sequences, out: Uint8Array, pos: number): number {
  const n = seqs.count
  if (n < 128) {
    out[pos++] = n
  } else if (n < 0x7f00) {
    out[pos++] = (n >>> 8) + 128
    out[pos++] = n & 255
  } else {
    out[pos++] = 255
    out[pos++] = (n - 0x7f00) & 255
    out[pos++] = (n - 0x7f00) >>> 8
  }
  if (n === 0) return pos
  const { llHist, mlHist, ofHist } = seqs
  const modesAt = pos++
  const llPick = pickTable(llHist, n, LL_TABLE, LL_DEFAULT, LL_MAX_LOG, out, pos)
  const ofPick = pickTable(ofHist, n, OF_TABLE, OF_DEFAULT, OF_MAX_LOG, out, llPick.end)
  const mlPick = pickTable(mlHist, n, ML_TABLE, ML_DEFAULT, ML_MAX_LOG, out, ofPick.end)
  out[modesAt] = (llPick.mode << 6) | (ofPick.mode << 4) | (mlPick.mode << 2)
  return writeBitstream(seqs, out, mlPick.end, llPick.table, mlPick.table, ofPick.table)
}

interface Pick {
  /** Compression_Mode: 0 predefined, 1 RLE, 2 FSE-compressed. */
  mode: number
  table: FseTable
  end: number
}

/** Chooses a code stream's mode and writes its table description (if any) at `pos`. */
function pickTable(
  hist: Int32Array,
  n: number,
  predefined: FseTable,
  defaults: readonly number[],
  maxLog: number,
  out: Uint8Array,
  pos: number,
): Pick {
  let max = hist.length - 1
  while (hist[max] === 0) max--
  let distinct = 0
  for (let s = 0; s <= max; s++) if (hist[s]! > 0) distinct++
  if (distinct === 1) {
    out[pos] = max
    const norm = new Int16Array(max + 1)
    norm[max] = 1
    return { mode: 1, table: buildFseTable(norm, 0), end: pos + 1 }
  }
  const predefinedBits = max < defaults.length ? entropyBits(hist, defaults, max, predefined.log) : Infinity
  const log = tableLog(n, max, maxLog)
  const norm = normalizeCounts(hist, max, n, log)
  const w = new BitWriter(out, pos)
  writeFseDescription(w, norm, log)
  if ((w.pos - pos) * 8 + entropyBits(hist, norm, max, log) < predefinedBits) {
    return { mode: 2, table: buildFseTable(norm, log), end: w.pos }
  }
  return { mode: 0, table: predefined, end: pos }
}

/** An accuracy log that fits the number of sequences and symbols (at least 5, at most the format's limit). */
function tableLog(n: number, maxSymbol: number, maxLog: number): number {
  const fit = 31 - Math.clz32(n - 1) - 2
  const minimum = Math.min(31 - Math.clz32(n) + 1, 31 - Math.clz32(maxSymbol) + 2)
  return Math.min(maxLog, Math.max(fit, minimum, 5))
}

function writeBitstream(seqs: Sequences, out: Uint8Array, pos: number, llTable: FseTable, mlTable: FseTable, ofTable: FseTable): number {
  const { ll, ml, of, count: n, llCode: llCodes, mlCode: mlCodes, ofCode: ofCodes } = seqs
  // Module constants into locals: bundlers turn them into mutable variables, read again on every use.
  const llBaseOf = LL_BASE
  const llBitsOf = LL_BITS
  const mlBaseOf = ML_BASE
  const mlBitsOf = ML_BITS
  const llNb = llTable.nbBits
  const llBase = llTable.base
  const llFor = llTable.stateFor
  const mlNb = mlTable.nbBits
  const mlBase = mlTable.base
  const mlFor = mlTable.stateFor
  const ofNb = ofTable.nbBits
  const ofBase = ofTable.base
  const ofFor = ofTable.stateFor
  const llLog = llTable.log
  const mlLog = mlTable.log
  const ofLog = ofTable.log
  // The decoder reads this stream backwards: initial states, then per sequence
  // its offset, match and literal extra bits, then the state updates (literal
  // length, match length, offset) leading to the next sequence. So the last
  // sequence is written first, and every field in reverse order. The bit
  // accumulator lives in locals (an int32 never holding more than 32 bits):
  // this loop is one of the encoder's hottest.
  let acc = 0
  let bits = 0
  let flushed = 0
  let p = pos
  let i = n - 1
  let llc = llCodes[i]!
  let mlc = mlCodes[i]!
  let ofc = ofCodes[i]!
  let llState = llTable.first[llc]!
  let mlState = mlTable.first[mlc]!
  let ofState = ofTable.first[ofc]!
  for (;;) {
    acc |= (ll[i]! - llBaseOf[llc]!) << bits
    bits += llBitsOf[llc]!
    flushed = bits >>> 3
    out[p] = acc
    out[p + 1] = acc >> 8
    out[p + 2] = acc >> 16
    p += flushed
    acc >>= flushed << 3
    bits &= 7
    acc |= (ml[i]! - mlBaseOf[mlc]!) << bits
    bits += mlBitsOf[mlc]!
    flushed = bits >>> 3
    out[p] = acc
    out[p + 1] = acc >> 8
    out[p + 2] = acc >> 16
    p += flushed
    acc >>= flushed << 3
    bits &= 7
    acc |= (of[i]! - (1 << ofc)) << bits
    bits += ofc
    flushed = bits >>> 3
    out[p] = acc
    out[p + 1] = acc >> 8
    out[p + 2] = acc >> 16
    p += flushed
    acc >>= flushed << 3
    bits &= 7
    if (--i < 0) break
    llc = llCodes[i]!
    mlc = mlCodes[i]!
    ofc = ofCodes[i]!
    let state = ofFor[(ofc << ofLog) + ofState]!
    acc |= (ofState - ofBase[state]!) << bits
    bits += ofNb[state]!
    ofState = state
    state = mlFor[(mlc << mlLog) + mlState]!
    acc |= (mlState - mlBase[state]!) << bits
    bits += mlNb[state]!
    mlState = state
    flushed = bits >>> 3
    out[p] = acc
    out[p + 1] = acc >> 8
    out[p + 2] = acc >> 16
    p += flushed
    acc >>= flushed << 3
    bits &= 7
    state = llFor[(llc << llLog) + llState]!
    acc |= (llState - llBase[state]!) << bits
    bits += llNb[state]!
    llState = state
    flushed = bits >>> 3
    out[p] = acc
    out[p + 1] = acc >> 8
    out[p + 2] = acc >> 16
    p += flushed
    acc >>= flushed << 3
    bits &= 7
  }
  // The initial states, read first, and the end mark.
  acc |= mlState << bits
  bits += mlLog
  acc |= ofState << bits
  bits += ofLog
  flushed = bits >>> 3
  out[p] = acc
  out[p + 1] = acc >> 8
  out[p + 2] = acc >> 16
  p += flushed
  acc >>= flushed << 3
  bits &= 7
  acc |= ((1 << llLog) | llState) << bits
  bits += llLog + 1
  for (; bits > 0; bits -= 8) {
    out[p++] = acc
    acc >>= 8
  }
  return p
}
