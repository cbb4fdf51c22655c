// Entropy-coding pieces of the zstd encoder (RFC 8878): the bit writer every
// zstd bitstream uses, and FSE tables built exactly as the decoder builds them
// (section 4.1.1), inverted so that encoding is one table lookup per symbol.

/**
 * Writes bits little-endian, low bits first, as every zstd bitstream is laid
 * out. Backward-read streams (FSE and Huffman, read from their last byte) end
 * with `close()`; forward-read ones (FSE table descriptions) with `align()`.
 * A single `add` may carry at most 25 bits.
 */
export class BitWriter {
  pos: number
  private acc = 0
  private n = 0

  constructor(readonly buf: Uint8Array, pos: number) {
    this.pos = pos
  }

  add(value: number, bits: number): void {
    this.acc |= value << this.n
    this.n += bits
    while (this.n >= 8) {
      this.buf[this.pos++] = this.acc
      this.acc >>>= 8
      this.n -= 8
    }
  }

  /** Ends a backward-read stream: the decoder finds its start by the highest 1 bit of the last byte. */
  close(): number {
    this.add(1, 1)
    return this.align()
  }

  /** Pads the last byte with zeros. */
  align(): number {
    if (this.n > 0) this.buf[this.pos++] = this.acc
    this.acc = 0
    this.n = 0
    return this.pos
  }
}

/**
 * An FSE table for encoding. The decoder, in state `t`, emits `symbol[t]` and
 * moves to `base[t] + (nbBits[t] bits)`; the states of one symbol split the
 * whole state range between them. So the encoder, which runs backwards and knows
 * the state the decoder must reach next, picks the unique state of the symbol
 * whose range holds it (`stateFor`) and writes the difference.
 */
export interface FseTable {
  log: number
  nbBits: Uint8Array
  base: Uint16Array
  /** `stateFor[(symbol << log) + nextState]`: the state that decodes `symbol` and then reaches `nextState`. */
  stateFor: Uint16Array
  /** Per symbol, its lowest state: the one that reads the most bits when left (so never 0 unless the symbol has every state). */
  first: Int16Array
}

/**
 * Builds the table for a normalized distribution (probabilities summing to
 * 1 << log, -1 meaning "less than 1"), spreading symbols over states as RFC 8878
 * section 4.1.1 prescribes, so the decoder's table and ours are the same.
 */
export function buildFseTable(norm: ArrayLike<number>, log: number): FseTable {
  const size = 1 << log
  const count = norm.length
  const symbol = new Uint8Array(size)
  const next = new Uint16Array(count)
  let high = size - 1
  for (let s = 0; s < count; s++) {
    if (norm[s] === -1) {
      symbol[high--] = s
      next[s] = 1
    } else {
      next[s] = norm[s]!
    }
  }
  const step = (size >>> 1) + (size >>> 3) + 3
  const mask = size - 1
  let position = 0
  for (let s = 0; s < count; s++) {
    for (let i = 0; i < norm[s]!; i++) {
      symbol[position] = s
      do position = (position + step) & mask
      while (position > high)
    }
  }
  const nbBits = new Uint8Array(size)
  const base = new Uint16Array(size)
  const stateFor = new Uint16Array(count << log)
  const first = new Int16Array(count).fill(-1)
  for (let state = 0; state < size; state++) {
    const s = symbol[state]!
    const c = next[s]++
    const nb = log - (31 - Math.clz32(c))
    const b = (c << nb) - size
    nbBits[state] = nb
    base[state] = b
    if (first[s] === -1) first[s] = state
    for (let t = (s << log) + b, to = t + (1 << nb); t < to; t++) stateFor[t] = state
  }
  return { log, nbBits, base, stateFor, first }
}

/**
 * Scales counts to a distribution summing to 1 << log (every present symbol
 * keeps at least 1), for a table description. Rounding errors go to or come
 * from the most frequent symbols.
 */
export function normalizeCounts(hist: ArrayLike<number>, maxSymbol: number, total: number, log: number): Int16Array {
  const size = 1 << log
  const norm = new Int16Array(maxSymbol + 1)
  let sum = 0
  for (let s = 0; s <= maxSymbol; s++) {
    if (hist[s]! > 0) sum += norm[s] = Math.max(1, Math.round((hist[s]! * size) / total))
  }
  while (sum !== size) {
    const down = sum > size
    let pick = -1
    for (let s = 0; s <= maxSymbol; s++) {
      if (down ? norm[s]! > 1 && (pick < 0 || norm[s]! > norm[pick]!) : hist[s]! > 0 && (pick < 0 || hist[s]! > hist[pick]!)) pick = s
    }
    const step = down ? Math.max(-(sum - size), 1 - norm[pick]!) : size - sum
    norm[pick]! += step
    sum += step
  }
  return norm
}

/**
 * Writes an FSE_Table_Description (RFC 8878 section 4.1.1): the accuracy log,
 * then each probability + 1 in as few bits as the points still unassigned
 * allow, zero probabilities followed by 2-bit counts of further zeros.
 */
export function writeFseDescription(w: BitWriter, norm: Int16Array, log: number): void {
  w.add(log - 5, 4)
  let remaining = 1 << log
  const last = norm.length - 1
  for (let s = 0; s <= last; s++) {
    const value = norm[s]! + 1
    const maxValue = remaining + 1
    const nbits = 32 - Math.clz32(maxValue)
    // Values below `small` take one bit less.
    const small = (1 << nbits) - 1 - maxValue
    if (value < small) w.add(value, nbits - 1)
    else if (value < 1 << (nbits - 1)) w.add(value, nbits)
    else w.add(value + small, nbits)
    remaining -= norm[s]!
    if (norm[s] === 0) {
      let zeros = 0
      while (s + 1 + zeros < last && norm[s + 1 + zeros] === 0) zeros++
      s += zeros
      for (; zeros >= 3; zeros -= 3) w.add(3, 2)
      w.add(zeros, 2)
    }
  }
  w.align()
}

/** Bits needed by `counts` under `norm` (a symbol with probability p of 2^log costs log - log2(p)). */
export function entropyBits(counts: ArrayLike<number>, norm: ArrayLike<number>, maxSymbol: number, log: number): number {
  let bits = 0
  for (let s = 0; s <= maxSymbol; s++) {
    const c = counts[s]!
    if (c === 0) continue
    const p = norm[s]!
    if (p === 0) return Infinity
    bits += c * (p < 0 ? log : log - Math.log2(p))
  }
  return bits
}

// The predefined distributions (RFC 8878 section 3.1.1.3.2.2), used in
// Predefined_Mode so blocks carry no table descriptions.
export const LL_DEFAULT: readonly number[] = [
  4, 3, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 2, 3, 2, 1, 1, 1, 1, 1, -1, -1, -1, -1,
]
export const ML_DEFAULT: readonly number[] = [
  1, 4, 3, 2, 2, 2, 2, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
  -1, -1, -1, -1, -1, -1, -1,
]
export const OF_DEFAULT: readonly number[] = [1, 1, 1, 1, 1, 1, 2, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, -1, -1, -1, -1, -1]

export const LL_TABLE = buildFseTable(LL_DEFAULT, 6)
export const ML_TABLE = buildFseTable(ML_DEFAULT, 6)
export const OF_TABLE = buildFseTable(OF_DEFAULT, 5)
