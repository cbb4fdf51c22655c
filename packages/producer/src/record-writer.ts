/**
 * Writes records straight into a batch's bytes as send() takes them (Java's
 * MemoryRecordsBuilder): the batch never holds the caller's objects, so a Buffer the caller
 * reuses, or a record it edits after send(), cannot change what is written; and no per-record
 * object is kept. Magic-2 record layout: length, attributes, timestamp delta, offset delta,
 * key, value, headers (varints zigzag-encoded).
 */
import type { HeaderInput } from '@tidelog/protocol'
import type { Bytes } from './record.js'

/** What a record is made of; its types were checked by recordSize(). */
export interface RecordParts {
  key?: Bytes | null
  value: Bytes | null
  headers?: HeaderInput | null
}

function varintSize(v: number): number {
  let z = ((v << 1) ^ (v >> 31)) >>> 0
  let n = 1
  while (z > 0x7f) {
    n++
    z >>>= 7
  }
  return n
}

function varlongSize(v: number): number {
  if (v >= -0x40000000 && v < 0x40000000) return varintSize(v)
  let z = v >= 0 ? v * 2 : -v * 2 - 1
  let n = 1
  while (z >= 128) {
    n++
    z = Math.floor(z / 128)
  }
  return n
}

function writeVarint(b: Buffer, p: number, v: number): number {
  let z = ((v << 1) ^ (v >> 31)) >>> 0
  while (z > 0x7f) {
    b[p++] = (z & 0x7f) | 0x80
    z >>>= 7
  }
  b[p++] = z
  return p
}

function writeVarlong(b: Buffer, p: number, v: number): number {
  if (v >= -0x40000000 && v < 0x40000000) return writeVarint(b, p, v)
  let z = v >= 0 ? v * 2 : -v * 2 - 1
  while (z >= 128) {
    b[p++] = (z % 128) | 0x80
    z = Math.floor(z / 128)
  }
  b[p++] = z
  return p
}

/** UTF-8 length; short ASCII strings (the common keys) without calling into C++. */
function byteLength(v: Bytes): number {
  if (typeof v !== 'string') return v.length
  const n = v.length
  if (n < 64) {
    let i = 0
    while (i < n && v.charCodeAt(i) < 0x80) i++
    if (i === n) return n
  }
  return Buffer.byteLength(v, 'utf8')
}

function writeBytes(b: Buffer, p: number, v: Bytes, len: number): number {
  if (typeof v === 'string') {
    // As many bytes as UTF-16 units means ASCII: char codes (short) or latin1, both ahead of UTF-8.
    if (len === v.length) {
      if (len < 24) for (let i = 0; i < len; i++) b[p + i] = v.charCodeAt(i)
      else b.write(v, p, len, 'latin1')
    } else if (len > 0) {
      b.write(v, p, len, 'utf8')
    }
  } else if (len < 48) {
    for (let i = 0; i < len; i++) b[p + i] = v[i]!
  } else {
    b.set(v, p)
  }
  return p + len
}

type HeaderList = { key: string; value: Bytes | null }[]

/** Headers as a list (object form flattened, arrays repeating a name), or undefined for none. */
function headerList(h: HeaderInput | null | undefined): HeaderList | undefined {
  if (h === undefined || h === null) return undefined
  if (Array.isArray(h)) return h.length === 0 ? undefined : (h as HeaderList)
  let out: HeaderList | undefined
  for (const key in h) {
    if (!Object.prototype.hasOwnProperty.call(h, key)) continue
    const v = h[key]
    if (v === undefined) continue
    out ??= []
    if (Array.isArray(v)) for (const x of v) out.push({ key, value: x })
    else out.push({ key, value: v })
  }
  return out
}

/** Where records are written: a buffer and the end of what it holds, grown on demand. */
export interface RecordSink {
  buf: Buffer
  pos: number
}

/**
 * Appends a record at `sink.pos`, growing `sink.buf` (doubling) when it lacks room.
 * `tsDelta` and `offsetDelta` are relative to the batch's first record.
 */
export function writeRecord(sink: RecordSink, r: RecordParts, tsDelta: number, offsetDelta: number): void {
  const key = r.key ?? null
  const value = r.value
  const keyLen = key === null ? -1 : byteLength(key)
  const valueLen = value === null ? -1 : byteLength(value)
  const headers = r.headers === undefined || r.headers === null ? undefined : headerList(r.headers)
  let body = 1 + varlongSize(tsDelta) + varintSize(offsetDelta)
  body += keyLen < 0 ? 1 : varintSize(keyLen) + keyLen
  body += valueLen < 0 ? 1 : varintSize(valueLen) + valueLen
  if (headers === undefined) {
    body += 1
  } else {
    body += varintSize(headers.length)
    for (const h of headers) {
      const kl = byteLength(h.key)
      body += varintSize(kl) + kl
      if (h.value === null || h.value === undefined) body += 1
      else {
        const vl = byteLength(h.value)
        body += varintSize(vl) + vl
      }
    }
  }
  let p = sink.pos
  let buf = sink.buf
  const need = p + varintSize(body) + body
  if (need > buf.length) {
    const grown = Buffer.allocUnsafe(Math.max(need, buf.length * 2))
    buf.copy(grown, 0, 0, p)
    sink.buf = buf = grown
  }
  p = writeVarint(buf, p, body)
  buf[p++] = 0
  p = writeVarlong(buf, p, tsDelta)
  p = writeVarint(buf, p, offsetDelta)
  if (keyLen < 0) buf[p++] = 1 // zigzag(-1): null
  else p = writeBytes(buf, writeVarint(buf, p, keyLen), key!, keyLen)
  if (valueLen < 0) buf[p++] = 1
  else p = writeBytes(buf, writeVarint(buf, p, valueLen), value!, valueLen)
  if (headers === undefined) {
    buf[p++] = 0
  } else {
    p = writeVarint(buf, p, headers.length)
    for (const h of headers) {
      const kl = byteLength(h.key)
      p = writeBytes(buf, writeVarint(buf, p, kl), h.key, kl)
      if (h.value === null || h.value === undefined) {
        buf[p++] = 1
      } else {
        const vl = byteLength(h.value)
        p = writeBytes(buf, writeVarint(buf, p, vl), h.value, vl)
      }
    }
  }
  sink.pos = p
}
