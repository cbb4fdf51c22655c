/**
 * Writes records straight into a batch's bytes as send() takes them (Java's
 * MemoryRecordsBuilder): the batch never holds the caller's objects, so a Buffer the caller
 * reuses, or a record it edits after send(), cannot change what is written; and no per-record
 * object is kept. Magic-2 record layout: length, attributes, timestamp delta, offset delta,
 * key, value, headers (varints zigzag-encoded).
 *
 * One pass over the record: recordSize() has sized its parts already (and checked their
 * types), so nothing is measured before writing, headers are walked in place (no list of them
 * is built) and a short string is measured while it is copied. When a part comes out at
 * another size than recordSize() said (a short non-ASCII string), the record is written again
 * at the size it came out.
 */
import type { HeaderInput } from '@tidelog/protocol'
import { SerializationError } from './errors.js'
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

// UTF-8 of this many UTF-16 units is at most 63 bytes (3 per unit), whose zigzag length fits
// one varint byte: such a string is copied first and its length byte set after.
const ONE_BYTE_LENGTH_UNITS = 21
/** Lengths below this have a one-byte zigzag varint. */
const ONE_BYTE_LENGTH_BYTES = 64

/**
 * Writes `v` (a string as UTF-8, null as length -1) with its length varint; returns the end.
 * Past the buffer's end nothing is written but the end still counts every byte, so the
 * caller sees that the buffer was short.
 */
function writeBytes(b: Buffer, p: number, v: Bytes | null | undefined): number {
  if (v === null || v === undefined) {
    b[p] = 1 // zigzag(-1)
    return p + 1
  }
  if (typeof v !== 'string') {
    const len = v.length
    p = writeVarint(b, p, len)
    if (p + len > b.length) return p + len
    if (len < 48) for (let i = 0; i < len; i++) b[p + i] = v[i]!
    else b.set(v, p)
    return p + len
  }
  const n = v.length
  if (n <= ONE_BYTE_LENGTH_UNITS) {
    // ASCII (the usual header names and values) is copied as char codes while it is checked.
    let i = 0
    for (; i < n; i++) {
      const c = v.charCodeAt(i)
      if (c >= 0x80) break
      b[p + 1 + i] = c
    }
    let len = n
    if (i < n) {
      len = Buffer.byteLength(v, 'utf8')
      if (p + 1 + len <= b.length) b.write(v, p + 1, len, 'utf8')
    }
    b[p] = len << 1
    return p + 1 + len
  }
  if (n < ONE_BYTE_LENGTH_BYTES && p + 1 + 3 * n <= b.length) {
    // Room for any encoding of it: written by one call, which says how long it came out (a
    // traceparent, ids); two length bytes only when non-ASCII made it 64 bytes or more.
    const len = b.write(v, p + 1, 'utf8')
    if (len < ONE_BYTE_LENGTH_BYTES) {
      b[p] = len << 1
      return p + 1 + len
    }
    b.copyWithin(p + 2, p + 1, p + 1 + len)
    return writeVarint(b, p, len) + len
  }
  const len = Buffer.byteLength(v, 'utf8')
  p = writeVarint(b, p, len)
  if (p + len <= b.length) b.write(v, p, len, 'utf8')
  return p + len
}

type HeaderEntry = { key: string; value?: Bytes | null }

/** The headers section: a count, then name and value of each (object form: in key order, arrays repeating a name). */
function writeHeaders(b: Buffer, p: number, h: HeaderInput | null | undefined): number {
  if (h === undefined || h === null) {
    b[p] = 0
    return p + 1
  }
  // The count is known at the end: one byte is kept for it (fewer than 64 headers), more made room for after.
  const countAt = p
  p++
  let count = 0
  if (Array.isArray(h)) {
    const list = h as readonly HeaderEntry[]
    for (let i = 0; i < list.length; i++) {
      const e = list[i]!
      p = writeBytes(b, writeBytes(b, p, e.key), e.value)
    }
    count = list.length
  } else {
    const o = h as Record<string, Bytes | null | undefined | readonly (Bytes | null)[]>
    for (const key in o) {
      if (!Object.prototype.hasOwnProperty.call(o, key)) continue
      const v = o[key]
      if (v === undefined) continue
      if (Array.isArray(v)) {
        for (let i = 0; i < v.length; i++) p = writeBytes(b, writeBytes(b, p, key), (v as readonly (Bytes | null)[])[i])
        count += v.length
      } else {
        p = writeBytes(b, writeBytes(b, p, key), v as Bytes | null)
        count++
      }
    }
  }
  const extra = varintSize(count) - 1
  if (extra > 0 && p + extra <= b.length) b.copyWithin(countAt + 1 + extra, countAt + 1, p)
  writeVarint(b, countAt, count)
  return p + extra
}

/** Where records are written: a buffer and the end of what it holds, grown on demand. */
export interface RecordSink {
  buf: Buffer
  pos: number
}

// A second attempt has the exact size; more are needed only by a record whose getters answer
// differently each time, which is refused after a few.
const MAX_ATTEMPTS = 4

/**
 * Appends a record at `sink.pos`, growing `sink.buf` (doubling) when it lacks room.
 * `tsDelta` and `offsetDelta` are relative to the batch's first record; `partsBytes` is what
 * key, value and headers take with their length varints as recordSize() sized them.
 */
export function writeRecord(sink: RecordSink, r: RecordParts, tsDelta: number, offsetDelta: number, partsBytes: number): void {
  const fixed = 1 + varlongSize(tsDelta) + varintSize(offsetDelta)
  let body = fixed + partsBytes
  for (let attempt = 1; ; attempt++) {
    const start = sink.pos
    const lengthBytes = varintSize(body)
    const need = start + lengthBytes + body
    let buf = sink.buf
    if (need > buf.length) {
      const grown = Buffer.allocUnsafe(Math.max(need, buf.length * 2))
      buf.copy(grown, 0, 0, start)
      sink.buf = buf = grown
    }
    let p = start + lengthBytes
    buf[p++] = 0
    p = writeVarlong(buf, p, tsDelta)
    p = writeVarint(buf, p, offsetDelta)
    p = writeBytes(buf, p, r.key)
    p = writeBytes(buf, p, r.value)
    p = writeHeaders(buf, p, r.headers)
    const written = p - start - lengthBytes
    if (written === body) {
      writeVarint(buf, start, body)
      sink.pos = p
      return
    }
    if (attempt === MAX_ATTEMPTS) throw new SerializationError(`the record's key, value or headers changed size while it was written (${MAX_ATTEMPTS} times): getters that answer differently each time?`, 'value')
    body = written
  }
}
