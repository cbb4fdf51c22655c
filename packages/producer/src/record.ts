import type { HeaderInput } from '@tidelog/protocol'
import { InvalidRecordError, SerializationError } from './errors.js'

/** Keys, values and header values: strings are written as UTF-8. */
export type Bytes = string | Uint8Array

export interface ProducerRecord {
  topic: string
  /** Records with a key go to the key's partition (murmur2, as the Java client); null or absent: no key. */
  key?: Bytes | null
  /** null is a tombstone on compacted topics. */
  value: Bytes | null
  /** `{ name: value }` (an array value repeats the header) or `[{ key, value }]`. */
  headers?: HeaderInput
  /** Overrides the partitioner. */
  partition?: number
  /** CreateTime in ms since the epoch; default: when send() was called. */
  timestamp?: number | bigint | Date
}

/** Where a record was written. */
export interface RecordMetadata {
  topic: string
  partition: number
  /**
   * The record's offset; -1n when it is not known: with acks=0, and for a retry the broker
   * recognised as already written but no longer remembers the offset of
   * (DUPLICATE_SEQUENCE_NUMBER).
   */
  offset: bigint
  /** The record's timestamp (CreateTime), or the broker's LogAppendTime on topics configured so. */
  timestamp: number
}

// A record's framing besides key, value and headers: its length varint, attributes, the
// timestamp and offset deltas. Each varint is 1-3 bytes for any batch we build; this is the
// typical total, used only to fill batches and account memory. The rest of recordSize() is
// the record writer's first guess at the parts' size (it does not measure them again).
export const RECORD_FRAMING = 7

function varintSize(n: number): number {
  // zigzag of a non-negative length is 2n
  const z = n * 2
  return z < 0x80 ? 1 : z < 0x4000 ? 2 : z < 0x200000 ? 3 : z < 0x10000000 ? 4 : 5
}

// Strings shorter than this are counted as their UTF-16 length, without reading them: exact
// for ASCII (header names, ids, most keys), under by at most 2 bytes a unit otherwise, which
// the record writer finds and corrects as it copies the string (measuring every short string
// here as well doubled the cost of a record with headers). Longer ones are measured.
const MEASURED_FROM = 64

/** What a key, value or header value takes with its length varint, or -1 when it is of no type the writer takes. */
function bytesSize(v: unknown): number {
  if (typeof v === 'string') {
    const n = v.length < MEASURED_FROM ? v.length : Buffer.byteLength(v, 'utf8')
    return varintSize(n) + n
  }
  if (v instanceof Uint8Array) return varintSize(v.length) + v.length
  if (v === null || v === undefined) return 1
  return -1
}

// The messages are built only when a part is bad: building them for every record (the header
// name quoted) cost more than sizing its headers.
function badType(what: string, v: unknown, field: string): SerializationError {
  return new SerializationError(`${what} must be a string, Uint8Array or null, got ${describe(v)}`, field)
}

function partSize(v: unknown, field: 'key' | 'value'): number {
  const n = bytesSize(v)
  if (n < 0) throw badType(field, v, field)
  return n
}

function headerValueSize(v: unknown, key: string): number {
  const n = bytesSize(v)
  if (n < 0) throw badType(`header ${JSON.stringify(key)}`, v, 'headers')
  return n
}

function headersSize(h: unknown): number {
  if (h === undefined || h === null) return 1
  if (typeof h !== 'object') throw new SerializationError(`headers must be an object or an array, got ${describe(h)}`, 'headers')
  let count = 0
  let size = 0
  if (Array.isArray(h)) {
    const list = h as unknown[]
    for (let i = 0; i < list.length; i++) {
      const e = list[i] as { key?: unknown; value?: unknown } | null | undefined
      const key = e?.key
      if (typeof key !== 'string') throw new SerializationError(`header keys must be strings, got ${describe(key)}`, 'headers')
      size += bytesSize(key) + headerValueSize(e!.value ?? null, key)
    }
    count = list.length
  } else {
    for (const key in h as Record<string, unknown>) {
      if (!Object.prototype.hasOwnProperty.call(h, key)) continue
      const v = (h as Record<string, unknown>)[key]
      if (v === undefined) continue
      const ks = bytesSize(key)
      if (Array.isArray(v)) {
        for (let i = 0; i < v.length; i++) size += ks + headerValueSize(v[i], key)
        count += v.length
      } else {
        size += ks + headerValueSize(v, key)
        count++
      }
    }
  }
  return varintSize(count) + size
}

/**
 * The record's size as written, to within a few bytes of framing (RECORD_FRAMING) and of
 * short non-ASCII strings (MEASURED_FROM), checking on the way that
 * every part has a type the encoder can write: a bad record must fail alone, at send(), not
 * take its batch down when the batch is encoded.
 */
export function recordSize(r: Pick<ProducerRecord, 'key' | 'value' | 'headers'>): number {
  return RECORD_FRAMING + partSize(r.key, 'key') + partSize(r.value, 'value') + headersSize(r.headers)
}

/** The record's explicit timestamp in ms, or -1 when it has none; throws on a bad one. */
export function explicitTimestamp(t: ProducerRecord['timestamp']): number {
  if (t === undefined || t === null) return -1
  let ms: number
  if (typeof t === 'number') ms = t
  else if (typeof t === 'bigint') ms = Number(t)
  else if (t instanceof Date) ms = t.getTime()
  else throw new SerializationError(`timestamp must be a number, bigint or Date, got ${describe(t)}`, 'timestamp')
  if (!Number.isSafeInteger(ms) || ms < 0) throw new SerializationError(`timestamp ${String(t)} is not a non-negative integer of milliseconds`, 'timestamp')
  return ms
}

/** What a wrong argument is, for error messages: `array`, `null` and class names say more than typeof. */
export function describe(v: unknown): string {
  if (v === null) return 'null'
  if (Array.isArray(v)) return 'an array'
  if (typeof v === 'object') {
    const name = (v as object).constructor?.name
    return name !== undefined && name !== 'Object' ? `a ${name}` : 'an object'
  }
  return typeof v === 'string' ? 'a string' : typeof v
}

// Options of other producers' send() calls that people pass to ours by habit: none of them is
// a record field, and ignoring them would write a record the caller did not mean.
const OTHER_APIS: Readonly<Record<string, string>> = {
  messages: "send() takes records, not kafkajs's { topic, messages }: pass messages.map((m) => ({ topic, ...m }))",
  topicMessages: "send() takes records, not kafkajs's sendBatch({ topicMessages }): pass an array of records",
  acks: "acks is a producer option (new Producer({ acks })), not a record field",
  timeout: 'timeout is not a record field: the producer has deliveryTimeoutMs and requestTimeoutMs options',
  compression: "compression is a producer option (new Producer({ compression })), not a record field",
}

/**
 * Why `r` is not a producer record, or undefined when its shape is one: an object with a topic,
 * a value (null for a tombstone, never absent: a missing value must not become one) and no
 * field records do not have. Types of key, value, headers and timestamp are checked by
 * recordSize() and explicitTimestamp(), which read them anyway.
 */
export function shapeError(r: unknown, where: string): InvalidRecordError | undefined {
  if (r === null || typeof r !== 'object' || Array.isArray(r)) {
    return new InvalidRecordError(`${where} must be an object { topic, value, key?, headers?, partition?, timestamp? }, got ${describe(r)}`)
  }
  const o = r as Record<string, unknown>
  for (const k in o) {
    switch (k) {
      case 'topic':
      case 'value':
      case 'key':
      case 'headers':
      case 'partition':
      case 'timestamp':
        continue
    }
    // An unknown field left undefined (a spread of optional values) carries nothing.
    if (o[k] === undefined) continue
    const hint = OTHER_APIS[k]
    return new InvalidRecordError(
      hint !== undefined ? `${where}: ${hint}` : `${where} has a field records do not have: ${JSON.stringify(k)} (record fields: topic, value, key, headers, partition, timestamp)`,
      k,
    )
  }
  if (typeof o.topic !== 'string' || o.topic === '') return new InvalidRecordError(`${where}: topic must be a non-empty string, got ${o.topic === '' ? 'an empty string' : describe(o.topic)}`, 'topic')
  if (o.value === undefined) return new InvalidRecordError(`${where} has no value: set value (null writes a tombstone)`, 'value')
  const p = o.partition
  if (p !== undefined && p !== null && typeof p !== 'number') return new InvalidRecordError(`${where}: partition must be a number, got ${describe(p)}`, 'partition')
  return undefined
}

/** A private copy of a Uint8Array (strings are immutable and kept as they are). */
function copyBytes<T>(v: T): T {
  if (!(v instanceof Uint8Array)) return v
  // allocUnsafe takes small buffers from Node's shared pool: no ArrayBuffer per record.
  const b = Buffer.allocUnsafe(v.length)
  b.set(v)
  return b as T
}

function copyHeaders(h: HeaderInput | undefined | null): HeaderInput | undefined {
  if (h === undefined || h === null) return undefined
  const out: { key: string; value: Bytes | null }[] = []
  if (Array.isArray(h)) {
    for (const e of h) out.push({ key: e.key, value: copyBytes(e.value ?? null) })
  } else {
    for (const key in h) {
      if (!Object.prototype.hasOwnProperty.call(h, key)) continue
      const v = h[key]
      if (v === undefined) continue
      if (Array.isArray(v)) for (const x of v) out.push({ key, value: copyBytes(x) })
      else out.push({ key, value: copyBytes(v) })
    }
  }
  return out.length === 0 ? undefined : out
}

/**
 * A copy, taken in send(), of a record that cannot be queued yet (its topic's metadata or
 * buffer room is not there): same fields, private bytes, the send() time as its timestamp when
 * it has none. It is checked and queued later like any record. A record that is malformed is
 * kept as it is: it fails when its turn comes, whatever is done to it meanwhile.
 */
export function snapshot(r: ProducerRecord, wallClock: number): ProducerRecord {
  if (shapeError(r, '') !== undefined) return r
  let timestamp: number
  try {
    recordSize(r)
    timestamp = explicitTimestamp(r.timestamp)
  } catch {
    return r
  }
  const out: ProducerRecord = {
    topic: r.topic,
    key: copyBytes(r.key ?? null),
    value: copyBytes(r.value),
    headers: copyHeaders(r.headers),
    timestamp: timestamp < 0 ? wallClock : timestamp,
  }
  if (r.partition !== undefined && r.partition !== null) out.partition = r.partition
  return out
}
