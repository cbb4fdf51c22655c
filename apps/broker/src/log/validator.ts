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
 *   whose CRC32C matches, that is no control batch and, when idempotent, has a
 *   sequence (INVALID_RECORD, CORRUPT_MESSAGE, MESSAGE_TOO_LARGE);
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
  if (h.isTransactional) throw new BatchRejectedError(ErrorCodes.INVALID_RECORD, 'transactional batches are not supported by this broker')
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

/** Skips a length-prefixed field of at most `rEnd - pos` bytes; -1 (null) is allowed when `nullable`. */
function skipField(b: Buffer, rEnd: number, what: string, nullable: boolean): void {
  const len = varint(b, rEnd)
  if (len < (nullable ? -1 : 0)) throw invalid(`invalid ${what} length ${len}`)
  if (len > rEnd - pos) throw invalid(`${what} of ${len} bytes runs past its record`)
  if (len > 0) pos += len
}

/**
 * Walks `count` records in data[start, end) reading only their lengths and
 * deltas; returns the largest record timestamp (NO_TIMESTAMP if none has one).
 */
function walkRecords(data: Buffer, start: number, end: number, count: number, ctx: WalkContext): number {
  const { rules } = ctx
  const checkRange = !rules.logAppendTime && (rules.timestampBeforeMaxMs !== Infinity || rules.timestampAfterMaxMs !== Infinity)
  let errors: RecordError[] | undefined
  let timestampErrors = false
  let maxTimestamp = NO_TIMESTAMP
  pos = start
  for (let i = 0; i < count; i++) {
    if (pos >= end) throw invalid(`record batch declares ${count} records but holds ${i}`)
    const size = varint(data, end)
    const body = pos
    if (size <= 0 || size > end - body) throw invalid(`record ${i} declares ${size} bytes, ${end - body} are left`)
    const rEnd = body + size
    pos++ // attributes: unused by Kafka
    const timestampDelta = varlong(data, rEnd)
    const offsetDelta = varint(data, rEnd)
    skipField(data, rEnd, 'key', true)
    skipField(data, rEnd, 'value', true)
    const headers = varint(data, rEnd)
    if (headers < 0) throw invalid(`record ${i} has ${headers} headers`)
    for (let k = 0; k < headers; k++) {
      skipField(data, rEnd, 'header key', false)
      skipField(data, rEnd, 'header value', true)
    }
    if (pos !== rEnd) throw invalid(`record ${i} declares ${size} bytes but its fields take ${pos - body}`)

    let problem: string | undefined
    if (offsetDelta !== i) problem = `record ${i} has offset delta ${offsetDelta}, expected ${i}`
    // As Kafka's Record.timestamp(): a LogAppendTime batch gives every record its maxTimestamp.
    const ts = ctx.logAppendTimeBatch ? ctx.batchMaxTimestamp : ctx.baseTimestamp + timestampDelta
    if (problem === undefined) {
      if (!rules.logAppendTime && ts !== NO_TIMESTAMP) {
        if (checkRange && (rules.now - ts > rules.timestampBeforeMaxMs || ts - rules.now > rules.timestampAfterMaxMs)) {
          problem = `timestamp ${ts} of record ${i} is out of range; it must be within [${rules.now - rules.timestampBeforeMaxMs}, ${rules.now + rules.timestampAfterMaxMs}]`
          timestampErrors = true
        }
      } else if (ctx.logAppendTimeBatch) {
        problem = `record ${i} has timestamp type LogAppendTime; producers must not set it`
        timestampErrors = true
      }
    }
    if (problem !== undefined) (errors ??= []).push({ batchIndex: i, batchIndexErrorMessage: problem })
    if (ts > maxTimestamp) maxTimestamp = ts
  }
  if (pos !== end) throw invalid(`${end - pos} bytes left over after the batch's ${count} records`)
  if (errors !== undefined) {
    // As Kafka's processRecordErrors: any timestamp error makes it INVALID_TIMESTAMP.
    const shown = errors.slice(0, ERRORS_IN_MESSAGE).map((e) => e.batchIndexErrorMessage).join('; ')
    if (timestampErrors) throw new BatchRejectedError(ErrorCodes.INVALID_TIMESTAMP, `${errors.length} record(s) rejected for their timestamp: ${shown}`, errors)
    throw new BatchRejectedError(ErrorCodes.INVALID_RECORD, `${errors.length} record(s) rejected: ${shown}`, errors)
  }
  return maxTimestamp
}
