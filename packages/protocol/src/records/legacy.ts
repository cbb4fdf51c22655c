import { DecodeError } from '../errors/base.js'
import { Reader } from '../wire/reader.js'
import type { RecordBatchHeader } from './batch-header.js'
import { decompress, DEFAULT_MAX_DECOMPRESSED_BYTES } from './compression.js'
import { CompressionType } from './compression-type.js'
import { lz4FrameDecompress } from './codecs/lz4.js'
import { crc32 } from './crc32.js'
import { CorruptRecordError } from './errors.js'
import { NO_HEADERS, type Record } from './record.js'
import type { DecodeRecordBatchOptions, RecordBatch } from './record-batch.js'

// Legacy message sets (magic 0, and magic 1 from KIP-32), which old topics still
// hold: offset int64, size int32, crc int32 (IEEE, over magic..end), magic int8,
// attributes int8, [timestamp int64 if magic 1], key bytes, value bytes. A
// compressed message wraps a whole message set in its value. Like Kafka, each
// top-level (shallow) message is one batch and a wrapper's inner messages are
// its records.

const ATTR_TIMESTAMP_TYPE = 0x08
const NO_TIMESTAMP = -1n

interface Message {
  offset: bigint
  magic: number
  attributes: number
  crc: number
  timestamp: bigint
  key: Buffer | null
  value: Buffer | null
  size: number
}

function readMessage(b: Buffer, at: number, verifyCrc: boolean): Message {
  const r = new Reader(b, at)
  const offset = r.int64()
  const size = r.int32()
  const minimum = 14
  if (size < minimum) throw new CorruptRecordError(`legacy message size ${size} is below the minimum ${minimum}`, at)
  r.need(size, 'legacy message')
  const end = r.pos + size
  const body = new Reader(b, r.pos, end)
  const crc = body.uint32()
  const magic = body.int8()
  if (magic !== 0 && magic !== 1) throw new CorruptRecordError(`legacy message has magic ${magic}`, at)
  if (verifyCrc) {
    const computed = crc32(b, body.pos - 1, end)
    if (computed !== crc) throw new CorruptRecordError(`legacy message CRC ${crc.toString(16)} does not match computed ${computed.toString(16)}`, at)
  }
  const attributes = body.int8() & 0xff
  const timestamp = magic === 1 ? body.int64() : NO_TIMESTAMP
  const key = body.nullableBytes()
  const value = body.nullableBytes()
  if (body.pos !== end) throw new DecodeError(`legacy message has ${end - body.pos} bytes left over`, body.pos)
  return { offset, magic, attributes, crc, timestamp, key, value, size: 12 + size }
}

class LegacyBatch implements RecordBatch {
  baseOffset: bigint
  batchLength: number
  partitionLeaderEpoch = -1
  magic: number
  crc: number
  attributes: number
  lastOffsetDelta: number
  baseTimestamp: bigint
  maxTimestamp: bigint
  producerId = -1n
  producerEpoch = -1
  baseSequence = -1
  recordCount: number
  compression: CompressionType
  timestampType: 0 | 1
  isTransactional = false
  isControl = false
  hasDeleteHorizon = false
  size: number
  private readonly records: Record[]

  constructor(wrapper: Message, records: Record[]) {
    const first = records[0]!
    const last = records[records.length - 1]!
    this.baseOffset = first.offset
    this.batchLength = wrapper.size - 12
    this.magic = wrapper.magic
    this.crc = wrapper.crc
    this.attributes = wrapper.attributes
    this.lastOffsetDelta = Number(last.offset - first.offset)
    this.baseTimestamp = first.timestamp
    this.maxTimestamp = wrapper.timestamp
    this.recordCount = records.length
    this.compression = (wrapper.attributes & 7) as CompressionType
    this.timestampType = wrapper.magic === 1 && wrapper.attributes & ATTR_TIMESTAMP_TYPE ? 1 : 0
    this.size = wrapper.size
    for (const r of records) {
      r.offsetDelta = Number(r.offset - first.offset)
      r.timestampDelta = Number(r.timestamp - first.timestamp)
    }
    this.records = records
  }

  [Symbol.iterator](): Iterator<Record> {
    return this.records[Symbol.iterator]()
  }

  toArray(): Record[] {
    return this.records.slice()
  }
}

const toRecord = (m: Message, offset: bigint, timestamp: bigint): Record => ({
  offset,
  timestamp,
  key: m.key,
  value: m.value,
  headers: NO_HEADERS,
  offsetDelta: 0,
  timestampDelta: 0,
  attributes: m.attributes,
})

/** Decodes the legacy (magic 0 or 1) message at `offset`, unwrapping a compressed one. */
export function decodeLegacyMessage(b: Buffer, offset: number, opts?: DecodeRecordBatchOptions): RecordBatch {
  const verifyCrc = opts?.verifyCrc !== false
  const m = readMessage(b, offset, verifyCrc)
  const codec = m.attributes & 7
  if (codec === CompressionType.None) return new LegacyBatch(m, [toRecord(m, m.offset, m.timestamp)])
  if (codec > CompressionType.Lz4) throw new CorruptRecordError(`compression ${codec} is not allowed in a magic ${m.magic} message`, offset)
  if (m.value === null) throw new CorruptRecordError('compressed legacy message has a null value', offset)
  const max = opts?.maxDecompressedBytes ?? DEFAULT_MAX_DECOMPRESSED_BYTES
  // Kafka 0.8/0.9 wrote the LZ4 frame header checksum over the magic too (KAFKA-3160).
  const raw =
    codec === CompressionType.Lz4 && m.magic === 0
      ? lz4FrameDecompress(m.value, max, { brokenHeaderChecksum: true })
      : decompress(codec, m.value, max)
  if (!(raw instanceof Uint8Array)) {
    void raw.catch(() => undefined)
    throw new DecodeError('this compression codec is asynchronous: use decodeRecordBatchAsync', offset)
  }
  const inner = Buffer.isBuffer(raw) ? raw : Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength)
  const messages: Message[] = []
  for (let pos = 0; pos < inner.length; ) {
    const im = readMessage(inner, pos, verifyCrc)
    if (im.attributes & 7) throw new CorruptRecordError('legacy message with nested compression', offset)
    if (im.magic !== m.magic) throw new CorruptRecordError(`inner message magic ${im.magic} differs from its wrapper's ${m.magic}`, offset)
    messages.push(im)
    pos += im.size
  }
  if (messages.length === 0) throw new CorruptRecordError('compressed legacy message holds no messages', offset)
  // Magic 1 wrappers carry the last inner offset; inner offsets are relative (KIP-31).
  const base = m.magic === 1 ? m.offset - messages[messages.length - 1]!.offset : 0n
  const logAppend = m.magic === 1 && (m.attributes & ATTR_TIMESTAMP_TYPE) !== 0
  return new LegacyBatch(
    m,
    messages.map((im) => toRecord(im, base + im.offset, logAppend ? m.timestamp : im.timestamp)),
  )
}
