import { DecodeError } from '../errors/base.js'
import { cursor, readVarint, readVarlongNumber } from './varint.js'

export interface RecordHeader {
  key: string
  value: Buffer | null
}

/**
 * One record as a consumer sees it. `key`, `value` and header values are views
 * into the batch's bytes (or its decompressed copy), not copies.
 */
export interface Record {
  offset: bigint
  timestamp: bigint
  key: Buffer | null
  value: Buffer | null
  headers: RecordHeader[]
  offsetDelta: number
  timestampDelta: number
  /** Record-level attributes; unused by Kafka so far, kept as read. */
  attributes: number
}

/** What every record of a batch shares. */
export interface RecordContext {
  baseOffset: bigint
  baseTimestamp: bigint
  /** Set for LogAppendTime batches: every record's timestamp is the batch's maxTimestamp. */
  logAppendTime: bigint | null
}

/** Records without headers share this (frozen) array. */
export const NO_HEADERS: RecordHeader[] = Object.freeze([]) as unknown as RecordHeader[]

/**
 * Decodes the record at cursor.pos in `b` (never reading at or past `end`) and
 * leaves cursor.pos after it. Checks, as Kafka's DefaultRecord.readFrom does,
 * that every length fits inside the record and that the fields use exactly the
 * record's declared size.
 */
export function readRecord(b: Buffer, end: number, ctx: RecordContext): Record {
  const start = cursor.pos
  const size = readVarint(b, end)
  const bodyStart = cursor.pos
  if (size <= 0 || size > end - bodyStart) {
    throw new DecodeError(`invalid record size ${size}`, start, Math.max(size, 0), end - bodyStart)
  }
  const rEnd = bodyStart + size
  const attributes = b[cursor.pos++]!
  const timestampDelta = readVarlongNumber(b, rEnd)
  const offsetDelta = readVarint(b, rEnd)

  let key: Buffer | null = null
  const keyLen = readVarint(b, rEnd)
  if (keyLen >= 0) {
    const p = cursor.pos
    if (keyLen > rEnd - p) throw new DecodeError('record key runs past the record', p, keyLen, rEnd - p)
    key = b.subarray(p, p + keyLen)
    cursor.pos = p + keyLen
  } else if (keyLen !== -1) {
    throw new DecodeError(`invalid record key length ${keyLen}`, cursor.pos)
  }

  let value: Buffer | null = null
  const valueLen = readVarint(b, rEnd)
  if (valueLen >= 0) {
    const p = cursor.pos
    if (valueLen > rEnd - p) throw new DecodeError('record value runs past the record', p, valueLen, rEnd - p)
    value = b.subarray(p, p + valueLen)
    cursor.pos = p + valueLen
  } else if (valueLen !== -1) {
    throw new DecodeError(`invalid record value length ${valueLen}`, cursor.pos)
  }

  const headerCount = readVarint(b, rEnd)
  let headers = NO_HEADERS
  if (headerCount !== 0) {
    // Each header takes at least two bytes (two one-byte lengths).
    if (headerCount < 0 || headerCount * 2 > rEnd - cursor.pos) {
      throw new DecodeError(`invalid record header count ${headerCount}`, cursor.pos)
    }
    headers = new Array<RecordHeader>(headerCount)
    for (let i = 0; i < headerCount; i++) headers[i] = readHeader(b, rEnd)
  }
  if (cursor.pos !== rEnd) {
    throw new DecodeError(`record declares ${size} bytes but its fields take ${cursor.pos - bodyStart}`, start)
  }
  const logAppendTime = ctx.logAppendTime
  return {
    offset: ctx.baseOffset + BigInt(offsetDelta),
    timestamp: logAppendTime ?? ctx.baseTimestamp + BigInt(timestampDelta),
    key,
    value,
    headers,
    offsetDelta,
    timestampDelta,
    attributes,
  }
}

function readHeader(b: Buffer, rEnd: number): RecordHeader {
  const keyLen = readVarint(b, rEnd)
  let p = cursor.pos
  if (keyLen < 0) throw new DecodeError(`invalid header key length ${keyLen}`, p)
  if (keyLen > rEnd - p) throw new DecodeError('header key runs past the record', p, keyLen, rEnd - p)
  const key = b.toString('utf8', p, p + keyLen)
  cursor.pos = p + keyLen
  const valueLen = readVarint(b, rEnd)
  p = cursor.pos
  if (valueLen < 0) {
    if (valueLen !== -1) throw new DecodeError(`invalid header value length ${valueLen}`, p)
    return { key, value: null }
  }
  if (valueLen > rEnd - p) throw new DecodeError('header value runs past the record', p, valueLen, rEnd - p)
  cursor.pos = p + valueLen
  return { key, value: b.subarray(p, p + valueLen) }
}
