import { LOG_OVERHEAD, RECORD_BATCH_OVERHEAD, compress, crc32c, decompress } from '@tidelog/protocol'
import { ATTRIBUTES_AT, BATCH_LENGTH_AT, CRC_AT, LAST_OFFSET_DELTA_AT, readInt64 } from '../format.js'

// Raw access to the records of a stored batch, so the cleaner keeps every
// retained record byte for byte (offset and timestamp deltas stay relative to
// the batch's unchanged base offset) instead of decoding and re-encoding it.

const BASE_TIMESTAMP_AT = 27
const RECORDS_COUNT_AT = 57
/** KIP-534: baseTimestamp holds the batch's delete horizon. */
export const DELETE_HORIZON_BIT = 0x40
const COMPRESSION_MASK = 0x07

/** One record inside a batch's (decompressed) records section. */
export interface RawRecord {
  offset: number
  /** [start, end) of the whole record, length prefix included, in `data`. */
  start: number
  end: number
  /** The key's bytes are data[keyAt, keyAt + keyLen); keyLen is -1 for a null key. */
  keyAt: number
  keyLen: number
  /** false for a tombstone (null value). */
  hasValue: boolean
  timestamp: number
  /** Where the timestamp delta varlong starts and ends, for a rewrite with a new base timestamp. */
  tsAt: number
  tsEnd: number
}

export interface StoredBatch {
  /** The whole batch as stored. */
  bytes: Buffer
  baseOffset: number
  lastOffset: number
  attributes: number
  baseTimestamp: number
  producerId: number
  recordCount: number
  /** The delete horizon (KIP-534), or -1 when the batch carries none. */
  deleteHorizon: number
  isControl: boolean
  isTransactional: boolean
}

export function readStoredBatch(bytes: Buffer): StoredBatch {
  const attributes = bytes.readInt16BE(ATTRIBUTES_AT)
  const baseOffset = readInt64(bytes, 0)
  const baseTimestamp = readInt64(bytes, BASE_TIMESTAMP_AT)
  return {
    bytes,
    baseOffset,
    lastOffset: baseOffset + bytes.readInt32BE(LAST_OFFSET_DELTA_AT),
    attributes,
    baseTimestamp,
    producerId: readInt64(bytes, 43),
    recordCount: bytes.readInt32BE(RECORDS_COUNT_AT),
    deleteHorizon: (attributes & DELETE_HORIZON_BIT) !== 0 ? baseTimestamp : -1,
    isControl: (attributes & 0x20) !== 0,
    isTransactional: (attributes & 0x10) !== 0,
  }
}

/** The records section, inflated when the batch is compressed. */
export async function recordsSection(b: StoredBatch): Promise<Buffer> {
  const raw = b.bytes.subarray(RECORD_BATCH_OVERHEAD)
  const codec = b.attributes & COMPRESSION_MASK
  if (codec === 0) return raw
  const out = await decompress(codec, raw, 0x7fffffff)
  return Buffer.from(out.buffer, out.byteOffset, out.byteLength)
}

function readVarint(buf: Buffer, at: { p: number }): number {
  let x = 0
  let shift = 0
  for (;;) {
    const c = buf[at.p++]
    if (c === undefined) throw new RangeError('record ends inside a varint')
    if (shift < 28) x |= (c & 0x7f) << shift
    else x += (c & 0x7f) * 2 ** shift
    if (c < 0x80) break
    shift += 7
    if (shift > 63) throw new RangeError('varint too long')
  }
  // Zigzag: values here stay within 2^53.
  return x % 2 === 0 ? x / 2 : -(x + 1) / 2
}

function writeVarlong(out: number[], v: number): void {
  let z = v >= 0 ? v * 2 : -v * 2 - 1
  while (z >= 128) {
    out.push((z % 128) | 0x80)
    z = Math.floor(z / 128)
  }
  out.push(z)
}

/** Splits a records section into its records (count from the header). */
export function parseRecords(b: StoredBatch, data: Buffer): RawRecord[] {
  const out: RawRecord[] = []
  const at = { p: 0 }
  for (let i = 0; i < b.recordCount && at.p < data.length; i++) {
    const start = at.p
    const len = readVarint(data, at)
    const end = at.p + len
    at.p++ // attributes
    const tsAt = at.p
    const tsDelta = readVarint(data, at)
    const tsEnd = at.p
    const offsetDelta = readVarint(data, at)
    const keyLen = readVarint(data, at)
    const keyAt = at.p
    if (keyLen > 0) at.p += keyLen
    const valueLen = readVarint(data, at)
    out.push({ offset: b.baseOffset + offsetDelta, start, end, keyAt, keyLen, hasValue: valueLen >= 0, timestamp: b.baseTimestamp + tsDelta, tsAt, tsEnd })
    at.p = end
  }
  return out
}

/**
 * A new batch holding only `kept` of `b`'s records, with the same base offset,
 * last offset delta (Kafka keeps the original last offset, so the producer's
 * sequence bookkeeping still matches), producer fields and codec. With a delete
 * horizon, baseTimestamp becomes it and every record's timestamp delta is
 * rewritten against it, as KIP-534 lays the batch out.
 */
export async function rebuildBatch(b: StoredBatch, data: Buffer, kept: readonly RawRecord[], deleteHorizon: number): Promise<Buffer> {
  const horizon = deleteHorizon >= 0 ? deleteHorizon : b.deleteHorizon
  const base = horizon >= 0 ? horizon : b.baseTimestamp
  const parts: Buffer[] = []
  for (const r of kept) {
    if (base === b.baseTimestamp) {
      parts.push(data.subarray(r.start, r.end))
      continue
    }
    // Re-encode the record's length prefix and timestamp delta; the rest is copied.
    const ts: number[] = []
    writeVarlong(ts, r.timestamp - base)
    const at = { p: r.start }
    const oldLen = readVarint(data, at)
    const bodyLen = oldLen - (r.tsEnd - r.tsAt) + ts.length
    const len: number[] = []
    writeVarlong(len, bodyLen)
    parts.push(Buffer.from(len), data.subarray(at.p, r.tsAt), Buffer.from(ts), data.subarray(r.tsEnd, r.end))
  }
  let records: Buffer = Buffer.concat(parts)
  const codec = b.attributes & COMPRESSION_MASK
  if (codec !== 0 && kept.length > 0) {
    const c = await compress(codec, records)
    records = Buffer.from(c.buffer, c.byteOffset, c.byteLength)
  }
  const out = Buffer.allocUnsafe(RECORD_BATCH_OVERHEAD + records.length)
  b.bytes.copy(out, 0, 0, RECORD_BATCH_OVERHEAD)
  records.copy(out, RECORD_BATCH_OVERHEAD)
  out.writeInt32BE(out.length - LOG_OVERHEAD, BATCH_LENGTH_AT)
  let attributes = b.attributes
  if (horizon >= 0) attributes |= DELETE_HORIZON_BIT
  // An empty batch is written uncompressed, as Kafka writes its empty header.
  if (kept.length === 0) attributes &= ~COMPRESSION_MASK
  out.writeInt16BE(attributes, ATTRIBUTES_AT)
  out.writeBigInt64BE(BigInt(base), BASE_TIMESTAMP_AT)
  out.writeInt32BE(kept.length, RECORDS_COUNT_AT)
  out.writeUInt32BE(crc32c(out, ATTRIBUTES_AT, out.length), CRC_AT)
  return out
}
