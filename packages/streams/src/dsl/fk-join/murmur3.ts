/**
 * MurmurHash3 x64 128-bit with Kafka Streams' seed (org.apache.kafka.streams.state.internals
 * .Murmur3.hash128, DEFAULT_SEED 104729): the foreign-key join hashes the left value it sent a
 * subscription for, and drops a response whose hash no longer matches (KIP-213).
 */
const MASK = (1n << 64n) - 1n
const C1 = 0x87c37b91114253d5n
const C2 = 0x4cf5ad432745937fn
const SEED = 104729n

const mul = (a: bigint, b: bigint) => (a * b) & MASK
const rotl = (x: bigint, r: bigint) => ((x << r) | (x >> (64n - r))) & MASK

function fmix64(h: bigint): bigint {
  h ^= h >> 33n
  h = mul(h, 0xff51afd7ed558ccdn)
  h ^= h >> 33n
  h = mul(h, 0xc4ceb9fe1a85ec53n)
  h ^= h >> 33n
  return h
}

function readLong(data: Uint8Array, at: number, n: number): bigint {
  let k = 0n
  for (let i = n - 1; i >= 0; i--) k = (k << 8n) | BigInt(data[at + i]!)
  return k
}

/** The two 64-bit halves, as Java's long[2] (unsigned here; compare with hashEquals). */
export function murmur3Hash128(data: Uint8Array): [bigint, bigint] {
  let h1 = SEED
  let h2 = SEED
  const nblocks = data.length >> 4
  for (let i = 0; i < nblocks; i++) {
    let k1 = readLong(data, i * 16, 8)
    let k2 = readLong(data, i * 16 + 8, 8)
    k1 = mul(rotl(mul(k1, C1), 31n), C2)
    h1 ^= k1
    h1 = (mul(rotl(h1, 27n) + h2, 5n) + 0x52dce729n) & MASK
    k2 = mul(rotl(mul(k2, C2), 33n), C1)
    h2 ^= k2
    h2 = (mul(rotl(h2, 31n) + h1, 5n) + 0x38495ab5n) & MASK
  }
  const tail = nblocks << 4
  const rest = data.length - tail
  if (rest > 8) {
    const k2 = readLong(data, tail + 8, rest - 8)
    h2 ^= mul(rotl(mul(k2, C2), 33n), C1)
  }
  if (rest > 0) {
    const k1 = readLong(data, tail, Math.min(rest, 8))
    h1 ^= mul(rotl(mul(k1, C1), 31n), C2)
  }
  const len = BigInt(data.length)
  h1 ^= len
  h2 ^= len
  h1 = (h1 + h2) & MASK
  h2 = (h2 + h1) & MASK
  h1 = fmix64(h1)
  h2 = fmix64(h2)
  h1 = (h1 + h2) & MASK
  h2 = (h2 + h1) & MASK
  return [h1, h2]
}

export function hashEquals(a: readonly [bigint, bigint] | null, b: readonly [bigint, bigint] | null): boolean {
  if (a === null || b === null) return a === b
  return a[0] === b[0] && a[1] === b[1]
}
