// MD5 (RFC 1321) of a byte range into four 32-bit words, without allocating:
// the cleaner hashes every key it reads twice per pass, and node:crypto's
// per-call cost (about 2 us) was most of a pass's time. Kafka's
// SkimpyOffsetMap keys its map by the MD5 of the key; so does ours.

const K = new Int32Array(64)
for (let i = 0; i < 64; i++) K[i] = Math.floor(Math.abs(Math.sin(i + 1)) * 2 ** 32) | 0
const S = new Uint8Array([7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, 5, 9, 14, 20, 5, 9, 14, 20, 5, 9, 14, 20, 5, 9, 14, 20, 4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23, 6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21])
const G = new Uint8Array(64)
for (let i = 0; i < 64; i++) G[i] = i < 16 ? i : i < 32 ? (5 * i + 1) % 16 : i < 48 ? (3 * i + 5) % 16 : (7 * i) % 16

const M = new Int32Array(16)
const TAIL = new Uint8Array(128)

function block(h: Int32Array, m: Int32Array): void {
  let a = h[0]!
  let b = h[1]!
  let c = h[2]!
  let d = h[3]!
  let f: number
  let s: number
  // The four rounds as four loops: no per-step branch on the round.
  for (let i = 0; i < 16; i++) {
    f = (((b & c) | (~b & d)) + a + K[i]! + m[i]!) | 0
    a = d
    d = c
    c = b
    s = S[i]!
    b = (b + ((f << s) | (f >>> (32 - s)))) | 0
  }
  for (let i = 16; i < 32; i++) {
    f = (((d & b) | (~d & c)) + a + K[i]! + m[G[i]!]!) | 0
    a = d
    d = c
    c = b
    s = S[i]!
    b = (b + ((f << s) | (f >>> (32 - s)))) | 0
  }
  for (let i = 32; i < 48; i++) {
    f = ((b ^ c ^ d) + a + K[i]! + m[G[i]!]!) | 0
    a = d
    d = c
    c = b
    s = S[i]!
    b = (b + ((f << s) | (f >>> (32 - s)))) | 0
  }
  for (let i = 48; i < 64; i++) {
    f = ((c ^ (b | ~d)) + a + K[i]! + m[G[i]!]!) | 0
    a = d
    d = c
    c = b
    s = S[i]!
    b = (b + ((f << s) | (f >>> (32 - s)))) | 0
  }
  h[0] = (h[0]! + a) | 0
  h[1] = (h[1]! + b) | 0
  h[2] = (h[2]! + c) | 0
  h[3] = (h[3]! + d) | 0
}

function loadWords(src: Uint8Array, at: number): void {
  for (let w = 0; w < 16; w++, at += 4) M[w] = src[at]! | (src[at + 1]! << 8) | (src[at + 2]! << 16) | (src[at + 3]! << 24)
}

/** The MD5 of data[start, end) into out[0..3] (the digest's bytes, little-endian words). */
export function md5Into(data: Uint8Array, start: number, end: number, out: Int32Array): void {
  out[0] = 0x67452301
  out[1] = 0xefcdab89 | 0
  out[2] = 0x98badcfe | 0
  out[3] = 0x10325476
  const len = end - start
  let p = start
  for (; p + 64 <= end; p += 64) {
    loadWords(data, p)
    block(out, M)
  }
  const rest = end - p
  const tailLen = rest < 56 ? 64 : 128
  TAIL.fill(0, 0, tailLen)
  for (let i = 0; i < rest; i++) TAIL[i] = data[p + i]!
  TAIL[rest] = 0x80
  const bits = len * 8
  TAIL[tailLen - 8] = bits & 0xff
  TAIL[tailLen - 7] = (bits >>> 8) & 0xff
  TAIL[tailLen - 6] = (bits >>> 16) & 0xff
  TAIL[tailLen - 5] = (bits >>> 24) & 0xff
  const high = Math.floor(bits / 2 ** 32)
  TAIL[tailLen - 4] = high & 0xff
  TAIL[tailLen - 3] = (high >>> 8) & 0xff
  TAIL[tailLen - 2] = (high >>> 16) & 0xff
  TAIL[tailLen - 1] = (high >>> 24) & 0xff
  for (let q = 0; q < tailLen; q += 64) {
    loadWords(TAIL, q)
    block(out, M)
  }
}
