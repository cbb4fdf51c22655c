import {
  CorruptRecordError,
  DEFAULT_MAX_DECOMPRESSED_BYTES,
  DecompressionLimitError,
  ErrorCodes,
  InvalidRecordError,
  LOG_OVERHEAD,
  RECORD_BATCH_OVERHEAD,
  RecordTooLargeError,
  TidelogError,
  batchSizeAt,
  crc32c,
  decompress,
  validateRecordBatch,
  type RecordBatchHeader,
} from '@tidelog/protocol'
import { ATTRIBUTES_AT, CRC_AT, MAX_TIMESTAMP_AT, TIMESTAMP_TYPE_BIT, readInt64 } from './format.js'

/** What the broker checks a produced batch against (the topic's and broker's settings). */
export interface BatchRules {
  maxMessageBytes: number
  /** The topic's message.timestamp.type is LogAppendTime: the log stamps the batch itself. */
  logAppendTime: boolean
  /** message.timestamp.before.max.ms / after.max.ms (KIP-937); Infinity accepts any. */
  timestampBeforeMaxMs: number
  timestampAfterMaxMs: number
  now: number
  /**
   * Cap on a compressed batch's records once inflated. The default is the cap
   * the codec's own decoder applies, so nothing is stored that a tidelog
   * consumer with default settings could not read back.
   */
  maxDecompressedBytes?: number
  /** The topic is compacted: a record without a key is refused, as Kafka's LogValidator does (the partition, for the message). */
  compactedPartition?: string
}

/** One record's problem, as the Produce response's record_errors carry it (KIP-467). */
export interface RecordError {
  batchIndex: number
  batchIndexErrorMessage: string | null
}

/** A produced batch that may not be stored: the partition's error code, message and record errors. */
export class BatchRejectedError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly recordErrors: RecordError[] = [],
  ) {
    super(message)
    this.name = 'BatchRejectedError'
  }
}

const NO_TIMESTAMP = -1
const BASE_TIMESTAMP_AT = 27
// As many record errors as the response names in its message; the list itself carries them all.
const ERRORS_IN_MESSAGE = 3

/**
 * Checks a produced partition's records as Kafka does before appending
 * (ProduceRequest.validateRecords, UnifiedLog.analyzeAndValidateRecords and
 * LogValidator), throwing BatchRejectedError with Kafka's error code:
 *
 * - exactly one magic-2 batch with baseOffset 0, within max.message.bytes,
 *   whose CRC32C matches, that is no control batch (markers are the
 *   coordinator's), when idempotent has a sequence and when transactional a
 *   producer id (INVALID_RECORD, CORRUPT_MESSAGE, MESSAGE_TOO_LARGE);
 * - its records, walked header by header without copying (inflated first when
 *   compressed, under a cap): as many as the header says, each exactly its
 *   declared size, offset deltas 0, 1, 2, ... (INVALID_RECORD; Kafka rewrites a
 *   compressed batch whose inner offsets are off, this broker stores batches
 *   as sent and refuses it instead), compressed data that inflates
 *   (CORRUPT_MESSAGE) within the cap (MESSAGE_TOO_LARGE, which makes Java
 *   producers split the batch);
 * - CreateTime timestamps within message.timestamp.before/after.max.ms, and no
 *   LogAppendTime batch for a LogAppendTime topic (INVALID_TIMESTAMP, with one
 *   record error per record, as Kafka).
 *
 * A CreateTime batch whose maxTimestamp is not its largest record timestamp is
 * corrected in place and its CRC recomputed, as Kafka's in-place assignment
 * does, so the time index and retention see what the records say.
 */
export function validateProducedBatch(records: Buffer, rules: BatchRules): RecordBatchHeader {
  const size = batchSizeAt(records, 0)
  if (records.length < LOG_OVERHEAD || size < 0) throw new BatchRejectedError(ErrorCodes.CORRUPT_MESSAGE, 'records are truncated')
  if (size < records.length) {
    throw new BatchRejectedError(ErrorCodes.INVALID_RECORD, 'produce requests from version 3 on must contain exactly one record batch')
  }
  if (records.length > 16 && records[16] !== 2) {
    throw new BatchRejectedError(ErrorCodes.INVALID_RECORD, `produce requests from version 3 on must contain magic 2 batches, got magic ${records[16]}`)
  }
  if (records.readInt32BE(0) !== 0 || records.readInt32BE(4) !== 0) {
    throw new BatchRejectedError(ErrorCodes.INVALID_RECORD, 'the baseOffset of a produced record batch must be 0')
  }
  let h: RecordBatchHeader
  try {
    h = validateRecordBatch(records, 0, { maxBatchBytes: rules.maxMessageBytes })
  } catch (err) {
    if (err instanceof RecordTooLargeError) throw new BatchRejectedError(ErrorCodes.MESSAGE_TOO_LARGE, err.message)
    if (err instanceof CorruptRecordError) throw new BatchRejectedError(ErrorCodes.CORRUPT_MESSAGE, err.message)
    if (err instanceof InvalidRecordError) throw new BatchRejectedError(ErrorCodes.INVALID_RECORD, err.message)
    throw err
  }
  if (h.isControl) throw new BatchRejectedError(ErrorCodes.INVALID_RECORD, 'clients may not produce control batches')
  if (h.isTransactional && h.producerId < 0n) {
    throw new BatchRejectedError(ErrorCodes.INVALID_RECORD, 'a transactional record batch must carry a producer id')
  }
  if (h.producerId >= 0n && h.baseSequence < 0) {
    throw new BatchRejectedError(ErrorCodes.INVALID_RECORD, `invalid base sequence ${h.baseSequence} for producer ${h.producerId}`)
  }

  let data = records
  let start = RECORD_BATCH_OVERHEAD
  let end = size
  if (h.compression !== 0) {
    data = inflate(h.compression, records.subarray(RECORD_BATCH_OVERHEAD, size), rules.maxDecompressedBytes ?? DEFAULT_MAX_DECOMPRESSED_BYTES)
    start = 0
    end = data.length
  }
  const logAppendTimeBatch = (h.attributes & TIMESTAMP_TYPE_BIT) !== 0
  const maxTimestamp = walkRecords(data, start, end, h.recordCount, {
    baseTimestamp: readInt64(records, BASE_TIMESTAMP_AT),
    batchMaxTimestamp: readInt64(records, MAX_TIMESTAMP_AT),
    logAppendTimeBatch,
    rules,
  })
  if (!rules.logAppendTime && (logAppendTimeBatch || maxTimestamp !== readInt64(records, MAX_TIMESTAMP_AT))) {
    // Kafka's setMaxTimestamp(CreateTime, max): both fields sit inside the CRC.
    records.writeInt16BE(records.readInt16BE(ATTRIBUTES_AT) & ~TIMESTAMP_TYPE_BIT, ATTRIBUTES_AT)
    records.writeBigInt64BE(BigInt(maxTimestamp), MAX_TIMESTAMP_AT)
    records.writeUInt32BE(crc32c(records, ATTRIBUTES_AT, size), CRC_AT)
  }
  return h
}

function inflate(compression: number, body: Buffer, cap: number): Buffer {
  let out: Uint8Array | Promise<Uint8Array>
  try {
    out = decompress(compression, body, cap)
  } catch (err) {
    if (err instanceof DecompressionLimitError) {
      throw new BatchRejectedError(ErrorCodes.MESSAGE_TOO_LARGE, `compressed record batch inflates beyond ${cap} bytes`)
    }
    if (err instanceof TidelogError) throw new BatchRejectedError(ErrorCodes.CORRUPT_MESSAGE, `compressed records cannot be read: ${err.message}`)
    throw err
  }
  if (!(out instanceof Uint8Array)) {
    // The built-in codecs are synchronous; appends must stay in arrival order, so an
    // asynchronous one registered in this process cannot be waited for here.
    void out.catch(() => undefined)
    throw new BatchRejectedError(ErrorCodes.UNKNOWN_SERVER_ERROR, 'the broker cannot validate records with an asynchronous decompression codec')
  }
  return Buffer.isBuffer(out) ? out : Buffer.from(out.buffer, out.byteOffset, out.byteLength)
}

interface WalkContext {
  baseTimestamp: number
  batchMaxTimestamp: number
  logAppendTimeBatch: boolean
  rules: BatchRules
}

// The walker's read position: module-local and never re-entered (the walk is synchronous).
let pos = 0

function invalid(message: string): BatchRejectedError {
  return new BatchRejectedError(ErrorCodes.INVALID_RECORD, message)
}

function varint(b: Buffer, end: number): number {
  // Record lengths and deltas are mostly one byte: decode those inline.
  if (pos < end) {
    const c = b[pos]!
    if (c < 0x80) {
      pos++
      return (c >>> 1) ^ -(c & 1)
    }
  }
  return varintSlow(b, end)
}

function varintSlow(b: Buffer, end: number): number {
  let x = 0
  for (let shift = 0; shift <= 28; shift += 7) {
    if (pos >= end) throw invalid(`record varint runs past the end at byte ${pos}`)
    const c = b[pos++]!
    if (shift === 28 && c > 0x0f) throw invalid(`record varint longer than 32 bits at byte ${pos - 1}`)
    x |= (c & 0x7f) << shift
    if (c < 0x80) return (x >>> 1) ^ -(x & 1)
  }
  throw invalid(`record varint longer than 32 bits at byte ${pos}`)
}

/** A zigzag varlong as a number; beyond 2^53 is refused, as the record decoder does. */
function varlong(b: Buffer, end: number): number {
  if (pos < end) {
    const c = b[pos]!
    if (c < 0x80) {
      pos++
      return (c >>> 1) ^ -(c & 1)
    }
  }
  let z = 0
  let mul = 1
  for (let i = 0; i < 8; i++) {
    if (pos >= end) throw invalid(`record varlong runs past the end at byte ${pos}`)
    const c = b[pos++]!
    z += (c & 0x7f) * mul
    if (c < 0x80) {
      if (z > Number.MAX_SAFE_INTEGER) break
      return z % 2 === 0 ? z / 2 : -(z + 1) / 2
    }
    mul *= 128
  }
  throw invalid(`record timestamp delta beyond 2^53 at byte ${pos}`)
}

/**
 * Walks `count` records in data[start, end) reading only their lengths and
 * deltas; returns the largest record timestamp (NO_TIMESTAMP if none has one).
 */
function walkRecords(data: Buffer, start: number, end: number, count: number, ctx: WalkContext): number {
  const { rules, logAppendTimeBatch, batchMaxTimestamp, baseTimestamp } = ctx
  const { now, timestampBeforeMaxMs: before, timestampAfterMaxMs: after } = rules
  const createTime = !rules.logAppendTime
  const checkRange = createTime && (before !== Infinity || after !== Infinity)
  let errors: RecordError[] | undefined
  let timestampErrors = false
  let maxTimestamp = NO_TIMESTAMP
  // The hot loop keeps its position in a local and decodes one-byte varints inline
  // (nearly all lengths and deltas); longer ones go through varint() and `pos`.
  let p = start
  let c = 0
  for (let i = 0; i < count; i++) {
    if (p >= end) throw invalid(`record batch declares ${count} records but holds ${i}`)
    let size: number
    if ((c = data[p]!) < 0x80) (size = (c >>> 1) ^ -(c & 1)), p++
    else (pos = p), (size = varint(data, end)), (p = pos)
    if (size <= 0 || size > end - p) throw invalid(`record ${i} declares ${size} bytes, ${end - p} are left`)
    const body = p
    const rEnd = p + size
    p++ // attributes: unused by Kafka
    pos = p
    const timestampDelta = varlong(data, rEnd)
    const offsetDelta = varint(data, rEnd)
    p = pos
    for (let f = 0; f < 2; f++) {
      // key, then value: -1 is null
      let len: number
      if (p < rEnd && (c = data[p]!) < 0x80) (len = (c >>> 1) ^ -(c & 1)), p++
      else (pos = p), (len = varint(data, rEnd)), (p = pos)
      if (len < -1 || len > rEnd - p) throw invalid(`record ${i} has a ${f === 0 ? 'key' : 'value'} length of ${len} with ${rEnd - p} bytes left`)
      if (len > 0) p += len
      else if (f === 0 && len === -1 && rules.compactedPartition !== undefined) {
        ;(errors ??= []).push({ batchIndex: i, batchIndexErrorMessage: `Compacted topic cannot accept message without key in topic partition ${rules.compactedPartition}.` })
      }
    }
    pos = p
    const headers = varint(data, rEnd)
    if (headers < 0) throw invalid(`record ${i} has ${headers} headers`)
    for (let k = 0; k < headers; k++) {
      const keyLen = varint(data, rEnd)
      if (keyLen < 0 || keyLen > rEnd - pos) throw invalid(`record ${i} has a header key length of ${keyLen} with ${rEnd - pos} bytes left`)
      pos += keyLen
      const valueLen = varint(data, rEnd)
      if (valueLen < -1 || valueLen > rEnd - pos) throw invalid(`record ${i} has a header value length of ${valueLen} with ${rEnd - pos} bytes left`)
      if (valueLen > 0) pos += valueLen
    }
    p = pos
    if (p !== rEnd) throw invalid(`record ${i} declares ${size} bytes but its fields take ${p - body}`)

    // As Kafka's Record.timestamp(): a LogAppendTime batch gives every record its maxTimestamp.
    const ts = logAppendTimeBatch ? batchMaxTimestamp : baseTimestamp + timestampDelta
    if (ts > maxTimestamp) maxTimestamp = ts
    if (offsetDelta !== i) {
      ;(errors ??= []).push({ batchIndex: i, batchIndexErrorMessage: `record ${i} has offset delta ${offsetDelta}, expected ${i}` })
    } else if (createTime && ts !== NO_TIMESTAMP) {
      if (checkRange && (now - ts > before || ts - now > after)) {
        timestampErrors = true
        ;(errors ??= []).push({
          batchIndex: i,
          batchIndexErrorMessage: `timestamp ${ts} of record ${i} is out of range; it must be within [${now - before}, ${now + after}]`,
        })
      }
    } else if (logAppendTimeBatch) {
      timestampErrors = true
      ;(errors ??= []).push({ batchIndex: i, batchIndexErrorMessage: `record ${i} has timestamp type LogAppendTime; producers must not set it` })
    }
  }
  if (p !== end) throw invalid(`${end - p} bytes left over after the batch's ${count} records`)
  if (errors !== undefined) {
    // As Kafka's processRecordErrors: any timestamp error makes it INVALID_TIMESTAMP.
    const shown = errors.slice(0, ERRORS_IN_MESSAGE).map((e) => e.batchIndexErrorMessage).join('; ')
    if (timestampErrors) throw new BatchRejectedError(ErrorCodes.INVALID_TIMESTAMP, `${errors.length} record(s) rejected for their timestamp: ${shown}`, errors)
    throw new BatchRejectedError(ErrorCodes.INVALID_RECORD, `${errors.length} record(s) rejected: ${shown}`, errors)
  }
  return maxTimestamp
}
