import { DecodeError } from '../errors/base.js'
import { int16BE, int32BE, int64BE, putInt32BE, putInt64BE } from './bytes.js'
import type { CompressionType } from './compression-type.js'
import { crc32c } from './crc32c.js'
import { CorruptRecordError, InvalidRecordError, RecordTooLargeError } from './errors.js'

// Field positions of the magic-2 batch header (KIP-98), relative to the batch start.
export const BASE_OFFSET_OFFSET = 0
export const BATCH_LENGTH_OFFSET = 8
export const PARTITION_LEADER_EPOCH_OFFSET = 12
export const MAGIC_OFFSET = 16
export const CRC_OFFSET = 17
export const ATTRIBUTES_OFFSET = 21
export const LAST_OFFSET_DELTA_OFFSET = 23
export const BASE_TIMESTAMP_OFFSET = 27
export const MAX_TIMESTAMP_OFFSET = 35
export const PRODUCER_ID_OFFSET = 43
export const PRODUCER_EPOCH_OFFSET = 51
export const BASE_SEQUENCE_OFFSET = 53
export const RECORDS_COUNT_OFFSET = 57
/** Size of the magic-2 header, up to the first record. */
export const RECORD_BATCH_OVERHEAD = 61
/** baseOffset + batchLength: the part of every batch (any magic) outside batchLength. */
export const LOG_OVERHEAD = 12

export const ATTR_COMPRESSION_MASK = 0x07
export const ATTR_TIMESTAMP_TYPE = 0x08
export const ATTR_TRANSACTIONAL = 0x10
export const ATTR_CONTROL = 0x20
/** KIP-534: the batch carries a delete horizon in baseTimestamp. */
export const ATTR_DELETE_HORIZON = 0x40

export interface RecordBatchHeader {
  baseOffset: bigint
  batchLength: number
  partitionLeaderEpoch: number
  magic: number
  /** As stored, unsigned. */
  crc: number
  attributes: number
  lastOffsetDelta: number
  baseTimestamp: bigint
  maxTimestamp: bigint
  producerId: bigint
  producerEpoch: number
  baseSequence: number
  recordCount: number
  compression: CompressionType
  /** 0 = CreateTime, 1 = LogAppendTime. */
  timestampType: 0 | 1
  isTransactional: boolean
  isControl: boolean
  hasDeleteHorizon: boolean
}

/**
 * Reads the 61-byte magic-2 header at `offset` without looking at the records or
 * checking anything but the length. Callers that need the batch to be sound use
 * validateRecordBatch.
 */
export function readBatchHeader(buf: Uint8Array, offset = 0): RecordBatchHeader {
  const available = buf.length - offset
  if (offset < 0 || available < RECORD_BATCH_OVERHEAD) {
    throw new DecodeError('truncated record batch header', offset, RECORD_BATCH_OVERHEAD, Math.max(0, available))
  }
  const attributes = int16BE(buf, offset + ATTRIBUTES_OFFSET)
  return {
    baseOffset: int64BE(buf, offset),
    batchLength: int32BE(buf, offset + BATCH_LENGTH_OFFSET),
    partitionLeaderEpoch: int32BE(buf, offset + PARTITION_LEADER_EPOCH_OFFSET),
    magic: (buf[offset + MAGIC_OFFSET]! << 24) >> 24,
    crc: int32BE(buf, offset + CRC_OFFSET) >>> 0,
    attributes,
    lastOffsetDelta: int32BE(buf, offset + LAST_OFFSET_DELTA_OFFSET),
    baseTimestamp: int64BE(buf, offset + BASE_TIMESTAMP_OFFSET),
    maxTimestamp: int64BE(buf, offset + MAX_TIMESTAMP_OFFSET),
    producerId: int64BE(buf, offset + PRODUCER_ID_OFFSET),
    producerEpoch: int16BE(buf, offset + PRODUCER_EPOCH_OFFSET),
    baseSequence: int32BE(buf, offset + BASE_SEQUENCE_OFFSET),
    recordCount: int32BE(buf, offset + RECORDS_COUNT_OFFSET),
    compression: (attributes & ATTR_COMPRESSION_MASK) as CompressionType,
    timestampType: attributes & ATTR_TIMESTAMP_TYPE ? 1 : 0,
    isTransactional: (attributes & ATTR_TRANSACTIONAL) !== 0,
    isControl: (attributes & ATTR_CONTROL) !== 0,
    hasDeleteHorizon: (attributes & ATTR_DELETE_HORIZON) !== 0,
  }
}

/** Size in bytes of the batch (or legacy message) at `offset`, or -1 if its length field is not all there. */
export function batchSizeAt(buf: Uint8Array, offset = 0): number {
  if (buf.length - offset < LOG_OVERHEAD) return -1
  return LOG_OVERHEAD + int32BE(buf, offset + BATCH_LENGTH_OFFSET)
}

/**
 * The checks Kafka makes before appending a produced batch (DefaultRecordBatch's
 * ensureValid plus LogValidator's batch checks): the length is sane and all
 * there, magic is 2, the CRC32C over attributes..end matches, the compression id
 * is known, and lastOffsetDelta + 1 equals a positive record count. The records
 * themselves are not decoded. Returns the header.
 */
export function validateRecordBatch(
  buf: Uint8Array,
  offset = 0,
  opts?: { maxBatchBytes?: number },
): RecordBatchHeader {
  const available = buf.length - offset
  if (offset < 0 || available < LOG_OVERHEAD) {
    throw new CorruptRecordError(`record batch is truncated: ${Math.max(0, available)} bytes`, offset)
  }
  const batchLength = int32BE(buf, offset + BATCH_LENGTH_OFFSET)
  if (batchLength < RECORD_BATCH_OVERHEAD - LOG_OVERHEAD) {
    throw new CorruptRecordError(
      `record batch length ${batchLength} is smaller than the minimum of ${RECORD_BATCH_OVERHEAD - LOG_OVERHEAD}`,
      offset,
    )
  }
  const size = LOG_OVERHEAD + batchLength
  const max = opts?.maxBatchBytes
  if (max !== undefined && size > max) throw new RecordTooLargeError(size, max, offset)
  if (size > available) {
    throw new CorruptRecordError(`record batch of ${size} bytes is truncated to ${available}`, offset)
  }
  const magic = buf[offset + MAGIC_OFFSET]!
  if (magic !== 2) throw new CorruptRecordError(`record batch has magic ${magic}, expected 2`, offset)
  const stored = int32BE(buf, offset + CRC_OFFSET) >>> 0
  const computed = crc32c(buf, offset + ATTRIBUTES_OFFSET, offset + size)
  if (stored !== computed) {
    throw new CorruptRecordError(
      `record batch CRC ${stored.toString(16)} does not match computed ${computed.toString(16)}`,
      offset,
    )
  }
  const h = readBatchHeader(buf, offset)
  if (h.compression > 4) throw new CorruptRecordError(`unknown compression type ${h.compression}`, offset)
  // Same order as Kafka's LogValidator: offset range first, then the count, then both together.
  if (h.lastOffsetDelta < 0) {
    throw new InvalidRecordError(`record batch has an invalid offset range (lastOffsetDelta ${h.lastOffsetDelta})`, offset)
  }
  if (h.recordCount <= 0) throw new InvalidRecordError(`record batch reports ${h.recordCount} records`, offset)
  if (h.lastOffsetDelta + 1 !== h.recordCount) {
    throw new InvalidRecordError(
      `record batch offset range (lastOffsetDelta ${h.lastOffsetDelta}) and record count ${h.recordCount} disagree`,
      offset,
    )
  }
  return h
}

/** Rewrites baseOffset in place; it sits before the CRC'd range, so the CRC stays valid. */
export function setBaseOffset(buf: Uint8Array, offset: number, baseOffset: bigint): void {
  if (offset < 0 || buf.length - offset < 8) throw new DecodeError('no room for baseOffset', offset, 8, buf.length - offset)
  putInt64BE(buf, offset + BASE_OFFSET_OFFSET, baseOffset)
}

/** Rewrites partitionLeaderEpoch in place; also outside the CRC'd range. */
export function setPartitionLeaderEpoch(buf: Uint8Array, offset: number, epoch: number): void {
  if (offset < 0 || buf.length - offset < 16) {
    throw new DecodeError('no room for partitionLeaderEpoch', offset + 12, 4, Math.max(0, buf.length - offset - 12))
  }
  putInt32BE(buf, offset + PARTITION_LEADER_EPOCH_OFFSET, epoch)
}

/**
 * Walks concatenated magic-2 batches (a log segment, a Fetch `records` field)
 * reading only their headers. A trailing partial batch is not yielded: brokers
 * cut fetch responses at max_bytes, mid-batch. A length too small to be a batch,
 * or a batch whose magic is not 2, throws CorruptRecordError. CRCs are not checked.
 */
export function* iterateBatches(
  buf: Uint8Array,
  start = 0,
  end = buf.length,
): Generator<{ offset: number; size: number; header: RecordBatchHeader }> {
  if (end > buf.length) end = buf.length
  let pos = start
  while (end - pos >= LOG_OVERHEAD) {
    const batchLength = int32BE(buf, pos + BATCH_LENGTH_OFFSET)
    if (batchLength < RECORD_BATCH_OVERHEAD - LOG_OVERHEAD) {
      throw new CorruptRecordError(`record batch length ${batchLength} is smaller than a batch header`, pos)
    }
    const size = LOG_OVERHEAD + batchLength
    if (size > end - pos) return
    const magic = buf[pos + MAGIC_OFFSET]!
    if (magic !== 2) throw new CorruptRecordError(`record batch has magic ${magic}, expected 2`, pos)
    yield { offset: pos, size, header: readBatchHeader(buf, pos) }
    pos += size
  }
}
