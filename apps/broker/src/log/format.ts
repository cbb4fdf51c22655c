import { LOG_OVERHEAD, RECORD_BATCH_OVERHEAD, crc32c } from '@tidelog/protocol'

// File layout of a partition directory, as Kafka lays it out: segments named by
// their base offset, zero-padded to 20 digits so that names sort as offsets do.
export const LOG_SUFFIX = '.log'
export const INDEX_SUFFIX = '.index'
export const TIME_INDEX_SUFFIX = '.timeindex'

/** Offset index entry: relative offset int32 + file position int32. */
export const OFFSET_INDEX_ENTRY = 8
/** Time index entry: timestamp int64 + relative offset int32. */
export const TIME_INDEX_ENTRY = 12

/** Kafka's index.interval.bytes default: one index entry per 4 KiB of log. */
export const DEFAULT_INDEX_INTERVAL_BYTES = 4096

// Positions inside a magic-2 batch header (KIP-98) that the log reads directly,
// to walk segments without materialising a header object per batch.
export const BATCH_LENGTH_AT = 8
export const CRC_AT = 17
export const ATTRIBUTES_AT = 21
export const LAST_OFFSET_DELTA_AT = 23
export const MAX_TIMESTAMP_AT = 35
export const PRODUCER_ID_AT = 43
export const PRODUCER_EPOCH_AT = 51
export const BASE_SEQUENCE_AT = 53
/** attributes bit 3: the batch's timestamps are LogAppendTime. */
export const TIMESTAMP_TYPE_BIT = 0x08
/** Enough of a batch header to know its size, offsets and largest timestamp. */
export const WALK_HEADER_BYTES = MAX_TIMESTAMP_AT + 8

export function segmentFileName(baseOffset: number, suffix: string): string {
  return String(baseOffset).padStart(20, '0') + suffix
}

/** Base offset of a segment file name, or -1 if the name is not one. */
export function parseSegmentFileName(name: string, suffix: string): number {
  if (!name.endsWith(suffix)) return -1
  const digits = name.slice(0, -suffix.length)
  if (!/^\d{20}$/.test(digits)) return -1
  const n = Number(digits)
  return Number.isSafeInteger(n) ? n : -1
}

export function partitionDirName(topic: string, partition: number): string {
  return `${topic}-${partition}`
}

/**
 * Splits `<topic>-<partition>` at the last dash (topic names may contain dashes),
 * or returns undefined for names that are not partition directories.
 */
export function parsePartitionDirName(name: string): { topic: string; partition: number } | undefined {
  const dash = name.lastIndexOf('-')
  if (dash <= 0) return undefined
  const p = name.slice(dash + 1)
  if (!/^\d{1,9}$/.test(p)) return undefined
  return { topic: name.slice(0, dash), partition: Number(p) }
}

/** An int64 read as a number; offsets and timestamps stay far below 2^53. */
export function readInt64(buf: Buffer, at: number): number {
  return buf.readInt32BE(at) * 4294967296 + buf.readUInt32BE(at + 4)
}

/** Cuts a read at the end of its last whole batch. */
export function wholeBatches(bytes: Buffer): Buffer {
  let p = 0
  while (bytes.length - p >= LOG_OVERHEAD) {
    const size = LOG_OVERHEAD + bytes.readInt32BE(p + BATCH_LENGTH_AT)
    if (size < RECORD_BATCH_OVERHEAD || size > bytes.length - p) break
    p += size
  }
  return p === bytes.length ? bytes : bytes.subarray(0, p)
}

/** Rewrites a batch to LogAppendTime at `now` and recomputes its CRC (which covers both fields). */
export function stampLogAppendTime(buf: Buffer, at: number, size: number, now: number): void {
  buf.writeInt16BE(buf.readInt16BE(at + ATTRIBUTES_AT) | TIMESTAMP_TYPE_BIT, at + ATTRIBUTES_AT)
  buf.writeBigInt64BE(BigInt(now), at + MAX_TIMESTAMP_AT)
  buf.writeUInt32BE(crc32c(buf, at + ATTRIBUTES_AT, at + size), at + CRC_AT)
}
