import { DecodeError } from '../errors/base.js'

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

/** Records without headers share this (frozen) array. */
export const NO_HEADERS: RecordHeader[] = Object.freeze([]) as unknown as RecordHeader[]

// Node's own Buffer class for views (Buffer[Symbol.species] is FastBuffer, whose
// prototype is Buffer.prototype): constructing it directly is about twice as
// fast as buf.subarray(), which goes through argument normalisation first. Two
// views per record make this a visible share of decoding.
const Species = (Buffer as unknown as { [Symbol.species]?: unknown })[Symbol.species] as
  | (new (ab: ArrayBufferLike, offset: number, length: number) => Buffer)
  | undefined
const FastBuffer = typeof Species === 'function' && Species.prototype === Buffer.prototype ? Species : undefined

/** What every record of a batch shares, and where its bytes are. */
export class RecordContext {
  readonly baseOffset: bigint
  readonly baseTimestamp: bigint
  /** Set for LogAppendTime batches: every record's timestamp is the batch's maxTimestamp. */
  readonly logAppendTime: bigint | null
  /** The bases as numbers when offsets/timestamps computed from them stay exact; else NaN. */
  readonly baseOffsetNumber: number
  readonly baseTimestampNumber: number
  readonly data: Buffer
  readonly ab: ArrayBufferLike
  readonly byteOffset: number

  constructor(baseOffset: bigint, baseTimestamp: bigint, logAppendTime: bigint | null, data: Buffer) {
    this.baseOffset = baseOffset
    this.baseTimestamp = baseTimestamp
    this.logAppendTime = logAppendTime
    // Deltas are int32 (offsets) or checked below 2^53 (timestamps); a base within
    // ±2^52 keeps base + delta exact for offsets, and for timestamps in any real range.
    const LIMIT = 2n ** 52n
    this.baseOffsetNumber = baseOffset < LIMIT && baseOffset > -LIMIT ? Number(baseOffset) : NaN
    this.baseTimestampNumber = baseTimestamp < LIMIT && baseTimestamp > -LIMIT ? Number(baseTimestamp) : NaN
    this.data = data
    this.ab = data.buffer
    this.byteOffset = data.byteOffset
  }
}

// The record decoder's read position. Module-local and never re-entered (decoding
// is synchronous), so the varint readers need neither objects nor closures.
let pos = 0

/** Where the last readRecord stopped. */
export function recordEnd(): number {
  return pos
}

function varint(b: Uint8Array, end: number): number {
  let p = pos
  if (p >= end) throw new DecodeError('truncated varint', p, 1, 0)
  let x = b[p++]!
  if (x < 0x80) {
    pos = p
    return (x >>> 1) ^ -(x & 1)
  }
  x &= 0x7f
  for (let shift = 7; ; shift += 7) {
    if (p >= end) throw new DecodeError('truncated varint', p, 1, 0)
    const c = b[p++]!
    if (shift === 28) {
      if (c > 0x0f) throw new DecodeError('varint is longer than 32 bits', pos)
      x |= c << 28
      break
    }
    x |= (c & 0x7f) << shift
    if (c < 0x80) break
  }
  pos = p
  return (x >>> 1) ^ -(x & 1)
}

/**
 * A zigzag varlong as a number. Record timestamp deltas are varlongs, but any
 * real one is far below 2^53; beyond that we refuse rather than lose precision.
 */
function varlongNumber(b: Uint8Array, end: number): number {
  let p = pos
  if (p >= end) throw new DecodeError('truncated varlong', p, 1, 0)
  const first = b[p++]!
  if (first < 0x80) {
    pos = p
    return (first >>> 1) ^ -(first & 1)
  }
  let z = first & 0x7f
  let mul = 128
  for (let i = 1; ; i++) {
    if (p >= end) throw new DecodeError('truncated varlong', p, 1, 0)
    const c = b[p++]!
    z += (c & 0x7f) * mul
    if (c < 0x80) break
    if (i === 7) throw new DecodeError('timestamp delta varlong beyond 2^53', pos)
    mul *= 128
  }
  if (z > Number.MAX_SAFE_INTEGER) throw new DecodeError('timestamp delta varlong beyond 2^53', pos)
  pos = p
  return z % 2 === 0 ? z / 2 : -(z + 1) / 2
}

function view(ctx: RecordContext, p: number, len: number): Buffer {
  return FastBuffer !== undefined ? new FastBuffer(ctx.ab, ctx.byteOffset + p, len) : ctx.data.subarray(p, p + len)
}

/**
 * Decodes the record at `start` in ctx.data (never reading at or past `end`);
 * recordEnd() then tells where it stopped. Checks, as Kafka's
 * DefaultRecord.readFrom does, that every length fits inside the record and
 * that the fields use exactly the record's declared size.
 */
export function readRecord(ctx: RecordContext, start: number, end: number): Record {
  const b = ctx.data
  pos = start
  const size = varint(b, end)
  const bodyStart = pos
  if (size <= 0 || size > end - bodyStart) {
    throw new DecodeError(`invalid record size ${size}`, start, Math.max(size, 0), end - bodyStart)
  }
  const rEnd = bodyStart + size
  const attributes = b[pos++]!
  const timestampDelta = varlongNumber(b, rEnd)
  const offsetDelta = varint(b, rEnd)

  let key: Buffer | null = null
  const keyLen = varint(b, rEnd)
  if (keyLen >= 0) {
    if (keyLen > rEnd - pos) throw new DecodeError('record key runs past the record', pos, keyLen, rEnd - pos)
    key = view(ctx, pos, keyLen)
    pos += keyLen
  } else if (keyLen !== -1) {
    throw new DecodeError(`invalid record key length ${keyLen}`, pos)
  }

  let value: Buffer | null = null
  const valueLen = varint(b, rEnd)
  if (valueLen >= 0) {
    if (valueLen > rEnd - pos) throw new DecodeError('record value runs past the record', pos, valueLen, rEnd - pos)
    value = view(ctx, pos, valueLen)
    pos += valueLen
  } else if (valueLen !== -1) {
    throw new DecodeError(`invalid record value length ${valueLen}`, pos)
  }

  const headerCount = varint(b, rEnd)
  let headers = NO_HEADERS
  if (headerCount !== 0) {
    // Each header takes at least two bytes (two one-byte lengths).
    if (headerCount < 0 || headerCount * 2 > rEnd - pos) {
      throw new DecodeError(`invalid record header count ${headerCount}`, pos)
    }
    headers = new Array<RecordHeader>(headerCount)
    for (let i = 0; i < headerCount; i++) headers[i] = readHeader(ctx, rEnd)
  }
  if (pos !== rEnd) {
    throw new DecodeError(`record declares ${size} bytes but its fields take ${pos - bodyStart}`, start)
  }
  const o = ctx.baseOffsetNumber + offsetDelta
  const t = ctx.baseTimestampNumber + timestampDelta
  return {
    offset: o === o ? BigInt(o) : ctx.baseOffset + BigInt(offsetDelta),
    timestamp:
      ctx.logAppendTime !== null
        ? ctx.logAppendTime
        : Number.isSafeInteger(t)
          ? BigInt(t)
          : ctx.baseTimestamp + BigInt(timestampDelta),
    key,
    value,
    headers,
    offsetDelta,
    timestampDelta,
    attributes,
  }
}

function readHeader(ctx: RecordContext, rEnd: number): RecordHeader {
  const b = ctx.data
  const keyLen = varint(b, rEnd)
  if (keyLen < 0) throw new DecodeError(`invalid header key length ${keyLen}`, pos)
  if (keyLen > rEnd - pos) throw new DecodeError('header key runs past the record', pos, keyLen, rEnd - pos)
  const key = b.toString('utf8', pos, pos + keyLen)
  pos += keyLen
  const valueLen = varint(b, rEnd)
  if (valueLen < 0) {
    if (valueLen !== -1) throw new DecodeError(`invalid header value length ${valueLen}`, pos)
    return { key, value: null }
  }
  if (valueLen > rEnd - pos) throw new DecodeError('header value runs past the record', pos, valueLen, rEnd - pos)
  const value = view(ctx, pos, valueLen)
  pos += valueLen
  return { key, value }
}
