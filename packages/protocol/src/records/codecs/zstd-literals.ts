import { BitWriter, buildFseTable, normalizeCounts, writeFseDescription } from './zstd-fse.js'

// The Literals_Section of a compressed block (RFC 8878 section 3.1.1.3.1):
// Huffman-coded when that is smaller, else RLE or raw. Huffman weights go in the
// direct 4-bit form when every symbol is below 129, else FSE-compressed (record
// batches carry varint bytes above 128, so both forms are needed).

const MAX_HUF_BITS = 11
const WEIGHTS_LOG = 6
/** Below this many literals a Huffman table costs more than it saves. */
const MIN_HUFFMAN_LITERALS = 32

// Scratch for one call at a time (compression is synchronous).
const freq = new Uint32Array(256)
const lens = new Uint8Array(256)
const codes = new Uint16Array(256)
const weights = new Uint8Array(256)
const sortKeys = new Float64Array(256)
const nodeWeight = new Float64Array(512)
const nodeParent = new Int32Array(512)
const nodeDepth = new Uint8Array(512)
const leafSymbol = new Uint8Array(256)

/** Writes the literals section for `lits[0, n)` at `pos`; returns the position after it. */
export function writeLiterals(lits: Uint8Array, n: number, out: Uint8Array, pos: number, huffman: boolean): number {
  if (n > 1 && allSame(lits, n)) {
    pos = rawHeader(out, pos, 1, n)
    out[pos] = lits[0]!
    return pos + 1
  }
  if (huffman && n >= MIN_HUFFMAN_LITERALS) {
    const end = writeHuffman(lits, n, out, pos)
    if (end > 0) return end
  }
  pos = rawHeader(out, pos, 0, n)
  out.set(n === lits.length ? lits : lits.subarray(0, n), pos)
  return pos + n
}

function allSame(lits: Uint8Array, n: number): boolean {
  const b = lits[0]
  for (let i = 1; i < n; i++) if (lits[i] !== b) return false
  return true
}

/** Raw_Literals_Block (0) or RLE_Literals_Block (1) header. */
function rawHeader(out: Uint8Array, pos: number, type: number, n: number): number {
  if (n < 32) {
    out[pos] = type | (n << 3)
    return pos + 1
  }
  if (n < 4096) {
    out[pos] = type | 4 | ((n & 15) << 4)
    out[pos + 1] = n >>> 4
    return pos + 2
  }
  out[pos] = type | 12 | ((n & 15) << 4)
  out[pos + 1] = n >>> 4
  out[pos + 2] = n >>> 12
  return pos + 3
}

/** A Compressed_Literals_Block, or -1 when it would not be smaller than the raw one. */
function writeHuffman(lits: Uint8Array, n: number, out: Uint8Array, pos: number): number {
  const count = freq
  count.fill(0)
  for (let i = 0; i < n; i++) count[lits[i]!]++
  const maxBits = buildLengths()
  let last = 255
  while (freq[last] === 0) last--
  let bits = 0
  for (let s = 0; s <= last; s++) bits += freq[s]! * lens[s]!
  const streams = n <= 1023 ? 1 : 4
  const headerSize = n <= 1023 ? 3 : n <= 16383 ? 4 : 5
  // Each stream ends with a 1 bit and padding; four streams need a jump table.
  const streamBytes = Math.ceil(bits / 8) + streams + (streams === 4 ? 6 : 0)
  const rawSize = n + (n < 32 ? 1 : n < 4096 ? 2 : 3)
  const smallestTree = last <= 128 ? 1 + Math.ceil(last / 2) : 2
  if (headerSize + smallestTree + streamBytes >= rawSize) return -1

  for (let s = 0; s <= last; s++) weights[s] = lens[s] === 0 ? 0 : maxBits + 1 - lens[s]!
  // Canonical codes: by weight, then symbol; the lightest (longest) get the lowest values.
  const start = new Uint32Array(MAX_HUF_BITS + 2)
  for (let s = 0; s <= last; s++) if (weights[s]! > 0) start[weights[s]! + 1]! += 1 << (weights[s]! - 1)
  for (let w = 2; w <= maxBits + 1; w++) start[w]! += start[w - 1]!
  for (let s = 0; s <= last; s++) {
    const w = weights[s]!
    if (w > 0) {
      codes[s] = start[w]! >>> (w - 1)
      start[w]! += 1 << (w - 1)
    }
  }

  const treeAt = pos + headerSize
  const treeEnd = writeWeights(last, out, treeAt)
  if (treeEnd < 0) return -1
  if (treeEnd - pos + streamBytes >= rawSize) return -1
  let p = treeEnd
  if (streams === 1) {
    p = writeStream(lits, 0, n, out, p)
  } else {
    const seg = (n + 3) >>> 2
    const jump = p
    p += 6
    for (let k = 0; k < 4; k++) {
      const from = k * seg
      const begin = p
      p = writeStream(lits, from, Math.min(n, from + seg), out, p)
      if (k < 3) {
        out[jump + 2 * k] = p - begin
        out[jump + 2 * k + 1] = (p - begin) >>> 8
      }
    }
  }
  const comp = p - treeAt
  if (p - pos >= rawSize) return -1
  if (streams === 1) {
    const v = 2 | (n << 4) | (comp << 14)
    out[pos] = v
    out[pos + 1] = v >>> 8
    out[pos + 2] = v >>> 16
  } else if (headerSize === 4) {
    const v = 2 | (2 << 2) | (n << 4) | (comp << 18)
    out[pos] = v
    out[pos + 1] = v >>> 8
    out[pos + 2] = v >>> 16
    out[pos + 3] = v >>> 24
  } else {
    out[pos] = 2 | (3 << 2) | ((n & 15) << 4)
    out[pos + 1] = n >>> 4
    out[pos + 2] = ((n >>> 12) & 63) | ((comp & 3) << 6)
    out[pos + 3] = comp >>> 2
    out[pos + 4] = comp >>> 10
  }
  return p
}

/**
 * Huffman code lengths for `freq` into `lens`, at most 11 bits; returns the
 * longest. Over-long codes (only from very skewed counts) are cured by
 * flattening the counts and building again.
 */
function buildLengths(): number {
  for (let shift = 0; ; shift++) {
    let k = 0
    for (let s = 0; s < 256; s++) {
      if (freq[s]! > 0) sortKeys[k++] = ((freq[s]! >>> shift) | 1) * 256 + s
    }
    const keys = sortKeys.subarray(0, k).sort()
    for (let i = 0; i < k; i++) {
      const key = keys[i]!
      leafSymbol[i] = key % 256
      nodeWeight[i] = Math.floor(key / 256)
    }
    // Two queues: leaves in order, and internal nodes, which are made in
    // non-decreasing weight order.
    let leaf = 0
    let inner = k
    for (let node = k; node < 2 * k - 1; node++) {
      for (let j = 0; j < 2; j++) {
        const child = leaf < k && (inner >= node || nodeWeight[leaf]! <= nodeWeight[inner]!) ? leaf++ : inner++
        nodeParent[child] = node
        nodeWeight[node] = j === 0 ? nodeWeight[child]! : nodeWeight[node]! + nodeWeight[child]!
      }
    }
    nodeDepth[2 * k - 2] = 0
    let max = 0
    for (let node = 2 * k - 3; node >= 0; node--) {
      const d = nodeDepth[nodeParent[node]!]! + 1
      nodeDepth[node] = d
      if (node < k && d > max) max = d
    }
    if (max > MAX_HUF_BITS) continue
    lens.fill(0)
    for (let i = 0; i < k; i++) lens[leafSymbol[i]!] = nodeDepth[i]!
    return max
  }
}

/**
 * The Huffman_Tree_Description: weights of symbols 0..last-1 (the last one's is
 * implied). Returns the position after it, or -1 when it cannot be written.
 */
function writeWeights(last: number, out: Uint8Array, pos: number): number {
  if (last <= 128) {
    out[pos++] = 127 + last
    for (let s = 0; s < last; s += 2) out[pos++] = (weights[s]! << 4) | (s + 1 < last ? weights[s + 1]! : 0)
    return pos
  }
  return writeFseWeights(last, out, pos)
}

/**
 * Weights FSE-compressed (section 4.2.1.2): a table description, then one
 * stream where two states take turns, the first decoding the even-indexed
 * weights. The decoder stops when the bits run out, so the stream must end
 * exactly after the last update; the state of the second-to-last weight is the
 * first of its symbol, which always reads at least one bit and so ends it.
 */
function writeFseWeights(count: number, out: Uint8Array, pos: number): number {
  const hist = new Uint32Array(MAX_HUF_BITS + 1)
  for (let s = 0; s < count; s++) hist[weights[s]!]++
  let maxW = MAX_HUF_BITS
  while (hist[maxW] === 0) maxW--
  let distinct = 0
  for (let w = 0; w <= maxW; w++) if (hist[w]! > 0) distinct++
  if (distinct < 2) return -1
  const norm = normalizeCounts(hist, maxW, count, WEIGHTS_LOG)
  const start = pos
  const w = new BitWriter(out, pos + 1)
  writeFseDescription(w, norm, WEIGHTS_LOG)
  const table = buildFseTable(norm, WEIGHTS_LOG)
  // The states that decode the last two weights; the rest follow backwards.
  const lastIsEven = (count - 1) % 2 === 0
  let even = table.first[weights[lastIsEven ? count - 1 : count - 2]!]!
  let odd = table.first[weights[lastIsEven ? count - 2 : count - 1]!]!
  for (let i = count - 3; i >= 0; i--) {
    const sym = weights[i]!
    const next = i % 2 === 0 ? even : odd
    const state = table.stateFor[(sym << WEIGHTS_LOG) + next]!
    w.add(next - table.base[state]!, table.nbBits[state]!)
    if (i % 2 === 0) even = state
    else odd = state
  }
  w.add(odd, WEIGHTS_LOG)
  w.add(even, WEIGHTS_LOG)
  const end = w.close()
  if (end - start - 1 > 127) return -1
  out[start] = end - start - 1
  return end
}

/** One Huffman-coded stream of `lits[from, to)`, written last symbol first (it is read backwards). */
function writeStream(lits: Uint8Array, from: number, to: number, out: Uint8Array, p: number): number {
  // Module scratch into locals: bundlers turn module constants into mutable variables, read again on every use.
  const codeOf = codes
  const lenOf = lens
  let acc = 0
  let nb = 0
  for (let i = to - 1; i >= from; i--) {
    const s = lits[i]!
    acc |= codeOf[s]! << nb
    nb += lenOf[s]!
    if (nb >= 16) {
      out[p++] = acc
      out[p++] = acc >>> 8
      acc >>>= 16
      nb -= 16
    }
  }
  acc |= 1 << nb
  nb++
  for (; nb > 0; nb -= 8) {
    out[p++] = acc
    acc >>>= 8
  }
  return p
}
