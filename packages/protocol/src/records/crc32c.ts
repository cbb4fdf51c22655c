/**
 * CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), the checksum of record
 * batches since magic 2 (KIP-98). Plain JS slicing-by-16: one table lookup per
 * byte but sixteen independent lookups per step, so the loop is bound by loads
 * rather than by the serial dependency of the byte-at-a-time form. The tables
 * (16 KiB) are built once, when the module loads.
 */
const POLY = 0x82f63b78
const T = new Int32Array(16 * 256)

for (let n = 0; n < 256; n++) {
  let c = n
  for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ POLY : c >>> 1
  T[n] = c
}
for (let n = 0; n < 256; n++) {
  let c = T[n]!
  for (let k = 1; k < 16; k++) {
    c = T[c & 0xff]! ^ (c >>> 8)
    T[k * 256 + n] = c
  }
}

/**
 * CRC-32C of `buf[start, end)`, unsigned. `seed` is a previous result to continue
 * from, so `crc32c(b, 0, b.length, crc32c(a))` equals the CRC of `a` followed by `b`.
 * Out-of-range bounds are clamped to the buffer.
 */
export function crc32c(buf: Uint8Array, start = 0, end = buf.length, seed = 0): number {
  if (end > buf.length) end = buf.length
  if (start < 0) start = 0
  let crc = ~seed
  let i = start
  const last16 = end - 16
  while (i <= last16) {
    const a = crc ^ (buf[i]! | (buf[i + 1]! << 8) | (buf[i + 2]! << 16) | (buf[i + 3]! << 24))
    crc =
      T[0xf00 + (a & 0xff)]! ^
      T[0xe00 + ((a >>> 8) & 0xff)]! ^
      T[0xd00 + ((a >>> 16) & 0xff)]! ^
      T[0xc00 + (a >>> 24)]! ^
      T[0xb00 + buf[i + 4]!]! ^
      T[0xa00 + buf[i + 5]!]! ^
      T[0x900 + buf[i + 6]!]! ^
      T[0x800 + buf[i + 7]!]! ^
      T[0x700 + buf[i + 8]!]! ^
      T[0x600 + buf[i + 9]!]! ^
      T[0x500 + buf[i + 10]!]! ^
      T[0x400 + buf[i + 11]!]! ^
      T[0x300 + buf[i + 12]!]! ^
      T[0x200 + buf[i + 13]!]! ^
      T[0x100 + buf[i + 14]!]! ^
      T[buf[i + 15]!]!
    i += 16
  }
  while (i < end) crc = T[(crc ^ buf[i++]!) & 0xff]! ^ (crc >>> 8)
  return ~crc >>> 0
}
