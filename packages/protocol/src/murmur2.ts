// Kafka's default partitioner hash (Utils.murmur2 in the Java client): MurmurHash2,
// 32-bit, seed 0x9747b28c, over the key's UTF-8 bytes; partition =
// (hash & 0x7fffffff) % numPartitions. Written as a plain loop: the benchmark
// (apps/bench) measures it against the murmurhash package.

// The constants live inside the functions: a bundler turns module constants into
// `var`s, which the JIT then reloads on every use in the loop.

let scratch = Buffer.allocUnsafe(256)

function hashBytes(data: Uint8Array, length: number): number {
  const M = 0x5bd1e995
  let h = 0x9747b28c ^ length
  const end4 = length & ~3
  for (let i = 0; i < end4; i += 4) {
    let k = data[i]! | (data[i + 1]! << 8) | (data[i + 2]! << 16) | (data[i + 3]! << 24)
    k = Math.imul(k, M)
    k ^= k >>> 24
    k = Math.imul(k, M)
    h = Math.imul(h, M) ^ k
  }
  const tail = length & 3
  if (tail !== 0) {
    if (tail === 3) h ^= data[end4 + 2]! << 16
    if (tail >= 2) h ^= data[end4 + 1]! << 8
    h = Math.imul(h ^ data[end4]!, M)
  }
  h ^= h >>> 13
  h = Math.imul(h, M)
  return h ^ (h >>> 15)
}

/** Same as hashBytes over an all-ASCII string, reading its char codes (no encoding step). */
function hashAscii(s: string, length: number): number {
  const M = 0x5bd1e995
  let h = 0x9747b28c ^ length
  const end4 = length & ~3
  for (let i = 0; i < end4; i += 4) {
    let k = s.charCodeAt(i) | (s.charCodeAt(i + 1) << 8) | (s.charCodeAt(i + 2) << 16) | (s.charCodeAt(i + 3) << 24)
    k = Math.imul(k, M)
    k ^= k >>> 24
    k = Math.imul(k, M)
    h = Math.imul(h, M) ^ k
  }
  const tail = length & 3
  if (tail !== 0) {
    if (tail === 3) h ^= s.charCodeAt(end4 + 2) << 16
    if (tail >= 2) h ^= s.charCodeAt(end4 + 1) << 8
    h = Math.imul(h ^ s.charCodeAt(end4), M)
  }
  h ^= h >>> 13
  h = Math.imul(h, M)
  return h ^ (h >>> 15)
}

/** Kafka's murmur2 of a key (strings hash as their UTF-8 bytes). Signed int32, as Java returns it. */
export function murmur2(key: Uint8Array | string): number {
  if (typeof key !== 'string') return hashBytes(key, key.length)
  const n = key.length
  let ascii = true
  for (let i = 0; i < n; i++) {
    if (key.charCodeAt(i) > 0x7f) {
      ascii = false
      break
    }
  }
  if (ascii) return hashAscii(key, n)
  // UTF-8 takes at most 3 bytes per UTF-16 code unit.
  if (scratch.length < n * 3) scratch = Buffer.allocUnsafe(n * 3)
  return hashBytes(scratch, scratch.write(key, 0, 'utf8'))
}

/** The partition Kafka's default partitioner picks for a keyed record. */
export function murmur2Partition(key: Uint8Array | string, numPartitions: number): number {
  if (!(numPartitions > 0)) throw new RangeError(`numPartitions must be positive, got ${numPartitions}`)
  return (murmur2(key) & 0x7fffffff) % numPartitions
}
