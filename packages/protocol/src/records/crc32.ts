// CRC-32 (IEEE 802.3, reflected 0xEDB88320): the checksum of legacy magic 0/1
// messages. Only old topics carry those, so a byte-at-a-time table is enough.
const T = new Int32Array(256)
for (let n = 0; n < 256; n++) {
  let c = n
  for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0xedb88320 : c >>> 1
  T[n] = c
}

/** CRC-32 of `buf[start, end)`, unsigned. */
export function crc32(buf: Uint8Array, start = 0, end = buf.length): number {
  let crc = -1
  for (let i = start; i < end; i++) crc = T[(crc ^ buf[i]!) & 0xff]! ^ (crc >>> 8)
  return ~crc >>> 0
}
