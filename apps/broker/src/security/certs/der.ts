/**
 * A DER writer, as much of X.690 as X.509 certificates and PKCS #12 stores need. Every
 * function returns one complete element (tag, length, value), so structures nest by
 * passing elements to seq() / set() / explicit().
 */

function lengthBytes(n: number): Buffer {
  if (n < 0x80) return Buffer.from([n])
  const bytes: number[] = []
  for (let v = n; v > 0; v = Math.floor(v / 256)) bytes.unshift(v & 0xff)
  return Buffer.from([0x80 | bytes.length, ...bytes])
}

export function tlv(tag: number, value: Buffer): Buffer {
  return Buffer.concat([Buffer.from([tag]), lengthBytes(value.length), value])
}

export const seq = (...items: Buffer[]): Buffer => tlv(0x30, Buffer.concat(items))

/** SET OF: DER sorts the encoded elements (X.690 11.6), which Java's parser checks for attributes. */
export const set = (...items: Buffer[]): Buffer => tlv(0x31, Buffer.concat([...items].sort(Buffer.compare)))

export const nul = (): Buffer => Buffer.from([0x05, 0x00])

export const bool = (v: boolean): Buffer => tlv(0x01, Buffer.from([v ? 0xff : 0x00]))

/** A non-negative INTEGER from a number, bigint or its big-endian magnitude. */
export function int(v: number | bigint | Buffer): Buffer {
  let bytes: Buffer
  if (Buffer.isBuffer(v)) {
    bytes = v
  } else {
    let n = BigInt(v)
    if (n < 0n) throw new RangeError('negative INTEGER')
    const out: number[] = []
    do {
      out.unshift(Number(n & 0xffn))
      n >>= 8n
    } while (n > 0n)
    bytes = Buffer.from(out)
  }
  let start = 0
  while (start < bytes.length - 1 && bytes[start] === 0 && bytes[start + 1]! < 0x80) start++
  bytes = bytes.subarray(start)
  // A leading 1 bit would read as negative: prefix a zero byte.
  if (bytes.length === 0 || bytes[0]! >= 0x80) bytes = Buffer.concat([Buffer.from([0]), bytes])
  return tlv(0x02, bytes)
}

export function oid(dotted: string): Buffer {
  const parts = dotted.split('.').map((p) => Number(p))
  if (parts.length < 2 || parts.some((p) => !Number.isSafeInteger(p) || p < 0)) throw new RangeError(`bad object identifier ${dotted}`)
  const out = [parts[0]! * 40 + parts[1]!]
  for (const p of parts.slice(2)) {
    const chunk = [p & 0x7f]
    for (let v = Math.floor(p / 128); v > 0; v = Math.floor(v / 128)) chunk.unshift((v & 0x7f) | 0x80)
    out.push(...chunk)
  }
  return tlv(0x06, Buffer.from(out))
}

export const octets = (v: Buffer): Buffer => tlv(0x04, v)

/** BIT STRING with no unused bits (keys, signatures, key usage written whole bytes). */
export const bits = (v: Buffer, unused = 0): Buffer => tlv(0x03, Buffer.concat([Buffer.from([unused]), v]))

export const utf8 = (s: string): Buffer => tlv(0x0c, Buffer.from(s, 'utf8'))

/** BMPString (UTF-16BE), as PKCS #12 friendly names are written. */
export function bmp(s: string): Buffer {
  const b = Buffer.alloc(s.length * 2)
  for (let i = 0; i < s.length; i++) b.writeUInt16BE(s.charCodeAt(i), i * 2)
  return tlv(0x1e, b)
}

/** RFC 5280 4.1.2.5: UTCTime through 2049, GeneralizedTime from 2050. */
export function time(d: Date): Buffer {
  const iso = d.toISOString().replace(/[-:T]/g, '').slice(0, 14)
  return d.getUTCFullYear() < 2050 ? tlv(0x17, Buffer.from(`${iso.slice(2)}Z`)) : tlv(0x18, Buffer.from(`${iso}Z`))
}

/** [n] EXPLICIT: a constructed context-specific wrapper around one element. */
export const explicit = (n: number, inner: Buffer): Buffer => tlv(0xa0 | n, inner)

/** [n] IMPLICIT of a primitive type (GeneralName's dNSName, iPAddress). */
export const implicit = (n: number, value: Buffer): Buffer => tlv(0x80 | n, value)
