import { DecodeError, EncodeError } from '../errors/base.js'
import {
  ATTRIBUTES_OFFSET,
  ATTR_CONTROL,
  ATTR_TIMESTAMP_TYPE,
  ATTR_TRANSACTIONAL,
  BATCH_LENGTH_OFFSET,
  CRC_OFFSET,
  LOG_OVERHEAD,
  MAGIC_OFFSET,
  RECORD_BATCH_OVERHEAD,
  readBatchHeader,
  type RecordBatchHeader,
} from './batch-header.js'
import { int32BE, putInt16BE, putInt32BE, putInt64BE } from './bytes.js'
import { compress, compressAsync, decompress, DEFAULT_MAX_DECOMPRESSED_BYTES } from './compression.js'
import { CompressionType, compressionTypeOf, type CompressionName } from './compression-type.js'
import { crc32c } from './crc32c.js'
import { CorruptRecordError } from './errors.js'
import { decodeLegacyMessage } from './legacy.js'
import { readRecord, recordEnd, RecordContext, type Record } from './record.js'
import { varintSize, varlongSize, writeVarint, writeVarlong } from './varint.js'

export type Bytes = Uint8Array | string
export type HeaderInput =
  | Array<{ key: string; value: Bytes | null }>
  | { [key: string]: Bytes | null | undefined | Array<Bytes | null> }

export interface RecordInput {
  key?: Bytes | null
  value: Bytes | null
  headers?: HeaderInput
  /** Milliseconds since the epoch; defaults to the batch's `now`. */
  timestamp?: bigint | number
}

export interface EncodeRecordBatchInput {
  records: readonly RecordInput[]
  baseOffset?: bigint
  compression?: CompressionType | CompressionName
  /** 0 = CreateTime (default), 1 = LogAppendTime. */
  timestampType?: 0 | 1
  producerId?: bigint
  producerEpoch?: number
  baseSequence?: number
  isTransactional?: boolean
  isControl?: boolean
  partitionLeaderEpoch?: number
  /** Timestamp for records that carry none (default Date.now()). */
  now?: bigint | number
  /** The timestamp deltas' base (default: the first record's timestamp, as Kafka's producer does). */
  baseTimestamp?: bigint | number
}

// Per-record sizes, key/value byte lengths (-1 = null) and timestamps computed in
// the first pass and reused by the second, so no string is measured twice. Grown on demand.
let sizes = new Int32Array(1024)
let keyLens = new Int32Array(1024)
let valueLens = new Int32Array(1024)
let stamps = new Float64Array(1024)

const utf8Length = (s: string) => Buffer.byteLength(s, 'utf8')

function bytesLength(v: Bytes): number {
  if (typeof v === 'string') return utf8Length(v)
  if (v instanceof Uint8Array) return v.length
  throw new EncodeError(`record keys, values and header values must be strings, Uint8Arrays or null, not ${typeof v}`)
}

function toMillis(t: bigint | number, what: string): number {
  const n = typeof t === 'bigint' ? Number(t) : t
  if (!Number.isSafeInteger(n)) throw new EncodeError(`${what} ${String(t)} is not a safe integer of milliseconds`)
  return n
}

function normalizeHeaders(h: HeaderInput | undefined): Array<{ key: string; value: Bytes | null }> | undefined {
  if (h === undefined) return undefined
  if (Array.isArray(h)) return h.length === 0 ? undefined : h
  let out: Array<{ key: string; value: Bytes | null }> | undefined
  for (const key of Object.keys(h)) {
    const v = h[key]
    if (v === undefined) continue
    out ??= []
    if (Array.isArray(v)) for (const x of v) out.push({ key, value: x })
    else out.push({ key, value: v })
  }
  return out
}

function writeBytes(b: Buffer, p: number, v: Bytes, len: number): number {
  if (typeof v === 'string') {
    // As many bytes as UTF-16 units means all ASCII: copy the char codes (short
    // strings) or take the latin1 path, both well ahead of the UTF-8 encoder.
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

/**
 * Encodes the records section (everything after the 61-byte header) into `out`
 * at `at`; `headersOf[i]` holds normalised headers where records have any.
 */
function writeRecords(
  out: Buffer,
  at: number,
  records: readonly RecordInput[],
  baseTs: number,
  headersOf: Array<Array<{ key: string; value: Bytes | null }> | undefined> | null,
): number {
  let p = at
  const n = records.length
  const sz = sizes
  const kl = keyLens
  const vl = valueLens
  const ts = stamps
  for (let i = 0; i < n; i++) {
    const r = records[i]!
    p = writeVarint(out, p, sz[i]!)
    out[p++] = 0
    p = writeVarlong(out, p, ts[i]! - baseTs)
    p = writeVarint(out, p, i)
    const keyLen = kl[i]!
    if (keyLen < 0) {
      out[p++] = 1 // zigzag(-1)
    } else {
      p = writeBytes(out, writeVarint(out, p, keyLen), r.key!, keyLen)
    }
    const valueLen = vl[i]!
    if (valueLen < 0) {
      out[p++] = 1
    } else {
      p = writeBytes(out, writeVarint(out, p, valueLen), r.value!, valueLen)
    }
    const hs = headersOf === null ? undefined : headersOf[i]
    if (hs === undefined) {
      out[p++] = 0
    } else {
      p = writeVarint(out, p, hs.length)
      for (let j = 0; j < hs.length; j++) {
        const h = hs[j]!
        const hkl = utf8Length(h.key)
        p = writeBytes(out, writeVarint(out, p, hkl), h.key, hkl)
        if (h.value == null) {
          out[p++] = 1
        } else {
          const vl = bytesLength(h.value)
          p = writeBytes(out, writeVarint(out, p, vl), h.value, vl)
        }
      }
    }
  }
  return p
}

interface Plan {
  recordsSize: number
  baseTs: number
  maxTs: number
  headersOf: Array<Array<{ key: string; value: Bytes | null }> | undefined> | null
}

/** Pass 1: timestamps and the exact size of every record, so the batch is written into one buffer. */
function plan(input: EncodeRecordBatchInput): Plan {
  const records = input.records
  const n = records.length
  if (n === 0) throw new EncodeError('a record batch needs at least one record')
  if (sizes.length < n) {
    const len = Math.max(n, sizes.length * 2)
    sizes = new Int32Array(len)
    keyLens = new Int32Array(len)
    valueLens = new Int32Array(len)
    stamps = new Float64Array(len)
  }
  const st = stamps
  const kl = keyLens
  const vl = valueLens
  const sz = sizes
  let now = -1
  let maxTs = -Infinity
  for (let i = 0; i < n; i++) {
    const t = records[i]!.timestamp
    let ts: number
    if (t === undefined) {
      if (now < 0) now = input.now === undefined ? Date.now() : toMillis(input.now, 'now')
      ts = now
    } else {
      ts = typeof t === 'number' && Number.isSafeInteger(t) ? t : toMillis(t, 'timestamp')
    }
    st[i] = ts
    if (ts > maxTs) maxTs = ts
  }
  const baseTs = input.baseTimestamp === undefined ? st[0]! : toMillis(input.baseTimestamp, 'baseTimestamp')
  let headersOf: Plan['headersOf'] = null
  let total = 0
  for (let i = 0; i < n; i++) {
    const r = records[i]!
    const key = r.key
    const value = r.value
    let body = 1 + varlongSize(st[i]! - baseTs) + varintSize(i)
    if (key == null) {
      kl[i] = -1
      body += 1
    } else {
      const l = bytesLength(key)
      kl[i] = l
      body += varintSize(l) + l
    }
    if (value == null) {
      vl[i] = -1
      body += 1
    } else {
      const l = bytesLength(value)
      vl[i] = l
      body += varintSize(l) + l
    }
    if (r.headers === undefined) {
      body += 1
    } else {
      const hs = normalizeHeaders(r.headers)
      if (hs === undefined) body += 1
      else {
        ;(headersOf ??= new Array(n))[i] = hs
        body += varintSize(hs.length)
        for (const h of hs) {
          if (typeof h.key !== 'string') throw new EncodeError('record header keys must be strings')
          const kl = utf8Length(h.key)
          body += varintSize(kl) + kl
          if (h.value == null) body += 1
          else {
            const vl = bytesLength(h.value)
            body += varintSize(vl) + vl
          }
        }
      }
    }
    sz[i] = body
    total += varintSize(body) + body
  }
  return { recordsSize: total, baseTs, maxTs, headersOf }
}

function writeHeader(out: Buffer, input: EncodeRecordBatchInput, codec: number, baseTs: number, maxTs: number): void {
  const n = input.records.length
  putInt64BE(out, 0, input.baseOffset ?? 0n)
  putInt32BE(out, BATCH_LENGTH_OFFSET, out.length - LOG_OVERHEAD)
  putInt32BE(out, 12, input.partitionLeaderEpoch ?? -1)
  out[MAGIC_OFFSET] = 2
  let attributes = codec
  if (input.timestampType === 1) attributes |= ATTR_TIMESTAMP_TYPE
  if (input.isTransactional) attributes |= ATTR_TRANSACTIONAL
  if (input.isControl) attributes |= ATTR_CONTROL
  putInt16BE(out, ATTRIBUTES_OFFSET, attributes)
  putInt32BE(out, 23, n - 1)
  putInt64BE(out, 27, BigInt(baseTs))
  putInt64BE(out, 35, BigInt(maxTs))
  putInt64BE(out, 43, input.producerId ?? -1n)
  putInt16BE(out, 51, input.producerEpoch ?? -1)
  putInt32BE(out, 53, input.baseSequence ?? -1)
  putInt32BE(out, 57, n)
  putInt32BE(out, CRC_OFFSET, crc32c(out, ATTRIBUTES_OFFSET, out.length))
}

function finishCompressed(input: EncodeRecordBatchInput, codec: number, p: Plan, compressed: Uint8Array): Buffer {
  const out = Buffer.allocUnsafe(RECORD_BATCH_OVERHEAD + compressed.length)
  out.set(compressed, RECORD_BATCH_OVERHEAD)
  writeHeader(out, input, codec, p.baseTs, p.maxTs)
  return out
}

function encodeBody(input: EncodeRecordBatchInput, p: Plan): Buffer {
  const body = Buffer.allocUnsafe(p.recordsSize)
  writeRecords(body, 0, input.records, p.baseTs, p.headersOf)
  return body
}

/**
 * Encodes a magic-2 record batch. Synchronous for every built-in codec except
 * zstd on runtimes without node:zlib zstd; a codec that returns a promise needs
 * encodeRecordBatchAsync.
 */
export function encodeRecordBatch(input: EncodeRecordBatchInput): Buffer {
  const codec = compressionTypeOf(input.compression ?? CompressionType.None)
  const p = plan(input)
  if (codec === CompressionType.None) {
    const out = Buffer.allocUnsafe(RECORD_BATCH_OVERHEAD + p.recordsSize)
    writeRecords(out, RECORD_BATCH_OVERHEAD, input.records, p.baseTs, p.headersOf)
    writeHeader(out, input, codec, p.baseTs, p.maxTs)
    return out
  }
  const compressed = compress(codec, encodeBody(input, p))
  if (!(compressed instanceof Uint8Array)) {
    void compressed.catch(() => undefined)
    throw new EncodeError('this compression codec is asynchronous: use encodeRecordBatchAsync')
  }
  return finishCompressed(input, codec, p, compressed)
}

/** encodeRecordBatch for codecs that compress asynchronously. */
export async function encodeRecordBatchAsync(input: EncodeRecordBatchInput): Promise<Buffer> {
  const codec = compressionTypeOf(input.compression ?? CompressionType.None)
  if (codec === CompressionType.None) return encodeRecordBatch(input)
  const p = plan(input)
  return finishCompressed(input, codec, p, await compressAsync(codec, encodeBody(input, p)))
}

export interface DecodeRecordBatchOptions {
  /** Check the batch CRC (default true). */
  verifyCrc?: boolean
  /** Cap on one batch's decompressed records (default 64 MiB). */
  maxDecompressedBytes?: number
}

/** A decoded batch: its header, plus its records decoded as they are iterated. */
export interface RecordBatch extends RecordBatchHeader, Iterable<Record> {
  /** Bytes the batch took in its buffer. */
  size: number
  /** Every record, decoded at once. */
  toArray(): Record[]
}

/**
 * The records of a magic-2 batch, decoded one at a time as they are iterated.
 * Every iteration decodes afresh from the bytes; a batch whose records do not
 * add up to its declared count, or leave bytes over, throws when the iteration
 * reaches that point.
 */
class DecodedBatch implements RecordBatch {
  baseOffset!: bigint
  batchLength!: number
  partitionLeaderEpoch!: number
  magic!: number
  crc!: number
  attributes!: number
  lastOffsetDelta!: number
  baseTimestamp!: bigint
  maxTimestamp!: bigint
  producerId!: bigint
  producerEpoch!: number
  baseSequence!: number
  recordCount!: number
  compression!: CompressionType
  timestampType!: 0 | 1
  isTransactional!: boolean
  isControl!: boolean
  hasDeleteHorizon!: boolean
  size: number
  private readonly start: number
  private readonly end: number
  private readonly ctx: RecordContext

  constructor(h: RecordBatchHeader, data: Buffer, start: number, end: number) {
    // Every record takes at least 7 bytes: a count the bytes cannot hold is refused up front.
    if (h.recordCount < 0 || h.recordCount > (end - start) / 7) {
      throw new DecodeError(`record batch declares ${h.recordCount} records in ${end - start} bytes`, start)
    }
    Object.assign(this, h)
    this.size = LOG_OVERHEAD + h.batchLength
    this.start = start
    this.end = end
    this.ctx = new RecordContext(h.baseOffset, h.baseTimestamp, h.timestampType === 1 ? h.maxTimestamp : null, data)
  }

  [Symbol.iterator](): Iterator<Record> {
    return new RecordIterator(this.ctx, this.start, this.end, this.recordCount)
  }

  toArray(): Record[] {
    const n = this.recordCount
    const out = new Array<Record>(n)
    const end = this.end
    const ctx = this.ctx
    let p = this.start
    for (let i = 0; i < n; i++) {
      if (p >= end) throw countMismatch(n, i, p)
      out[i] = readRecord(ctx, p, end)
      p = recordEnd()
    }
    if (p !== end) throw leftover(end - p, p)
    return out
  }
}

const countMismatch = (declared: number, found: number, at: number) =>
  new DecodeError(`record batch declares ${declared} records but holds ${found}`, at)
const leftover = (n: number, at: number) => new DecodeError(`${n} bytes left over after the batch's last record`, at)

class RecordIterator implements Iterator<Record> {
  private pos: number
  private i = 0
  constructor(
    private readonly ctx: RecordContext,
    start: number,
    private readonly end: number,
    private readonly count: number,
  ) {
    this.pos = start
  }

  next(): IteratorResult<Record> {
    if (this.i >= this.count) {
      if (this.pos !== this.end) {
        const at = this.pos
        this.pos = this.end
        throw leftover(this.end - at, at)
      }
      return { done: true, value: undefined }
    }
    if (this.pos >= this.end) {
      const found = this.i
      this.i = this.count
      throw countMismatch(this.count, found, this.pos)
    }
    const r = readRecord(this.ctx, this.pos, this.end)
    this.pos = recordEnd()
    this.i++
    return { done: false, value: r }
  }
}

function checkedHeader(buf: Buffer, offset: number, verifyCrc: boolean): RecordBatchHeader {
  const available = buf.length - offset
  if (offset < 0 || available < LOG_OVERHEAD + 5) {
    throw new DecodeError('truncated record batch', offset, LOG_OVERHEAD + 5, Math.max(0, available))
  }
  const batchLength = int32BE(buf, offset + BATCH_LENGTH_OFFSET)
  if (batchLength < RECORD_BATCH_OVERHEAD - LOG_OVERHEAD) {
    throw new CorruptRecordError(`record batch length ${batchLength} is smaller than a batch header`, offset)
  }
  if (LOG_OVERHEAD + batchLength > available) {
    throw new DecodeError('truncated record batch', offset, LOG_OVERHEAD + batchLength, available)
  }
  const h = readBatchHeader(buf, offset)
  if (verifyCrc) {
    const computed = crc32c(buf, offset + ATTRIBUTES_OFFSET, offset + LOG_OVERHEAD + batchLength)
    if (computed !== h.crc) {
      throw new CorruptRecordError(`record batch CRC ${h.crc.toString(16)} does not match computed ${computed.toString(16)}`, offset)
    }
  }
  if (h.compression > CompressionType.Zstd) throw new CorruptRecordError(`unknown compression type ${h.compression}`, offset)
  return h
}

const asBuffer = (b: Uint8Array): Buffer => (Buffer.isBuffer(b) ? b : Buffer.from(b.buffer, b.byteOffset, b.byteLength))

/**
 * Decodes the batch at `offset`: magic 2 (its records are decoded lazily, when
 * iterated) or a legacy magic 0/1 message (decoded at once, with its IEEE CRC).
 * The CRC is checked unless `verifyCrc` is false; compressed records are
 * inflated here, under the cap. Throws DecodeError when the buffer holds less
 * than the whole batch.
 */
export function decodeRecordBatch(buf: Uint8Array, offset = 0, opts?: DecodeRecordBatchOptions): RecordBatch {
  const b = asBuffer(buf)
  const magic = b.length - offset > MAGIC_OFFSET && offset >= 0 ? b[offset + MAGIC_OFFSET]! : -1
  if (magic === 0 || magic === 1) return decodeLegacyMessage(b, offset, opts)
  if (magic !== 2 && magic !== -1) throw new CorruptRecordError(`unknown record batch magic ${magic}`, offset)
  const h = checkedHeader(b, offset, opts?.verifyCrc !== false)
  const end = offset + LOG_OVERHEAD + h.batchLength
  if (h.compression === CompressionType.None) return new DecodedBatch(h, b, offset + RECORD_BATCH_OVERHEAD, end)
  const out = decompress(h.compression, b.subarray(offset + RECORD_BATCH_OVERHEAD, end), maxOf(opts))
  if (!(out instanceof Uint8Array)) {
    void out.catch(() => undefined)
    throw new DecodeError('this compression codec is asynchronous: use decodeRecordBatchAsync', offset)
  }
  const data = asBuffer(out)
  return new DecodedBatch(h, data, 0, data.length)
}

/** decodeRecordBatch for codecs that decompress asynchronously. */
export async function decodeRecordBatchAsync(buf: Uint8Array, offset = 0, opts?: DecodeRecordBatchOptions): Promise<RecordBatch> {
  const b = asBuffer(buf)
  const magic = b.length - offset > MAGIC_OFFSET && offset >= 0 ? b[offset + MAGIC_OFFSET]! : -1
  if (magic !== 2) return decodeRecordBatch(b, offset, opts)
  const h = checkedHeader(b, offset, opts?.verifyCrc !== false)
  const end = offset + LOG_OVERHEAD + h.batchLength
  if (h.compression === CompressionType.None) return new DecodedBatch(h, b, offset + RECORD_BATCH_OVERHEAD, end)
  const data = asBuffer(await decompress(h.compression, b.subarray(offset + RECORD_BATCH_OVERHEAD, end), maxOf(opts)))
  return new DecodedBatch(h, data, 0, data.length)
}

const maxOf = (opts?: DecodeRecordBatchOptions) => opts?.maxDecompressedBytes ?? DEFAULT_MAX_DECOMPRESSED_BYTES

/**
 * Decodes concatenated batches (a Fetch response's records, a log segment),
 * any mix of magic 0, 1 and 2. A trailing partial batch is skipped, as brokers
 * cut fetch responses at max_bytes in the middle of one.
 */
export function decodeRecordBatches(buf: Uint8Array, opts?: DecodeRecordBatchOptions): RecordBatch[] {
  const b = asBuffer(buf)
  const out: RecordBatch[] = []
  for (let pos = 0; ; ) {
    const size = completeBatchAt(b, pos)
    if (size < 0) return out
    out.push(decodeRecordBatch(b, pos, opts))
    pos += size
  }
}

/** decodeRecordBatches for codecs that decompress asynchronously. */
export async function decodeRecordBatchesAsync(buf: Uint8Array, opts?: DecodeRecordBatchOptions): Promise<RecordBatch[]> {
  const b = asBuffer(buf)
  const out: RecordBatch[] = []
  for (let pos = 0; ; ) {
    const size = completeBatchAt(b, pos)
    if (size < 0) return out
    out.push(await decodeRecordBatchAsync(b, pos, opts))
    pos += size
  }
}

/** Size of the whole batch at `pos`, or -1 when the buffer ends before it does. */
function completeBatchAt(b: Buffer, pos: number): number {
  if (b.length - pos < LOG_OVERHEAD) return -1
  const length = int32BE(b, pos + BATCH_LENGTH_OFFSET)
  // Kafka's smallest legacy message (magic 0, null key and value) is 14 bytes after the length.
  if (length < 14) throw new CorruptRecordError(`record batch length ${length} is below the minimum`, pos)
  if (length > b.length - pos - LOG_OVERHEAD) return -1
  return LOG_OVERHEAD + length
}
