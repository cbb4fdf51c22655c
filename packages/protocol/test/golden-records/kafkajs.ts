// Builds record batches with kafkajs 2.2.4's own encoder (a devDependency) so our
// decoder and validators are checked against bytes we did not write ourselves.
import { createRequire } from 'node:module'

const require = createRequire(import.meta.url)
const { RecordBatch } = require('kafkajs/src/protocol/recordBatch/v0/index.js')
const Record = require('kafkajs/src/protocol/recordBatch/record/v0/index.js')
const Long = require('kafkajs/src/utils/long')
const Decoder = require('kafkajs/src/protocol/decoder')
const decodeBatch = require('kafkajs/src/protocol/recordBatch/v0/decoder.js')
const { Types } = require('kafkajs/src/protocol/message/compression/index.js')
const crc32CKafkajs = require('kafkajs/src/protocol/recordBatch/crc32C/index.js')

export const KafkajsCompression = Types as { None: 0; GZIP: 1; Snappy: 2; LZ4: 3; ZSTD: 4 }

export interface KjsRecord {
  key: Buffer | null
  value: Buffer | null
  headers?: Record<string, Buffer | string>
  timestampDelta?: number
}

export interface KjsBatchInput {
  records: KjsRecord[]
  firstOffset?: bigint
  firstTimestamp: number
  maxTimestamp?: number
  compression?: number
  producerId?: bigint
  producerEpoch?: number
  firstSequence?: number
  partitionLeaderEpoch?: number
  transactional?: boolean
}

/** A magic-2 batch encoded by kafkajs. */
export async function kafkajsBatch(input: KjsBatchInput): Promise<Buffer> {
  const records = input.records.map((r, i) =>
    Record({ offsetDelta: i, timestampDelta: r.timestampDelta ?? 0, key: r.key, value: r.value, headers: r.headers ?? {} }),
  )
  const enc = await RecordBatch({
    compression: input.compression ?? 0,
    firstOffset: Long.fromString(String(input.firstOffset ?? 0n)),
    firstTimestamp: input.firstTimestamp,
    maxTimestamp: input.maxTimestamp ?? input.firstTimestamp,
    partitionLeaderEpoch: input.partitionLeaderEpoch ?? 0,
    lastOffsetDelta: input.records.length - 1,
    transactional: input.transactional ?? false,
    producerId: Long.fromString(String(input.producerId ?? -1n)),
    producerEpoch: input.producerEpoch ?? 0,
    firstSequence: input.firstSequence ?? 0,
    records,
  })
  return enc.buffer as Buffer
}

export interface KjsDecoded {
  firstOffset: string
  records: Array<{ offset: string; key: Buffer | null; value: Buffer | null; timestamp: string; headers: Record<string, Buffer | Buffer[]> }>
  [k: string]: unknown
}

/** kafkajs' decoding of one batch. */
export async function kafkajsDecode(batch: Buffer): Promise<KjsDecoded> {
  return decodeBatch(new Decoder(batch))
}

export function kafkajsCrc32C(b: Buffer): number {
  return crc32CKafkajs(b)
}

const MessageSet = require('kafkajs/src/protocol/messageSet/index.js')
const gzipCodec = require('kafkajs/src/protocol/message/compression/gzip.js')

export interface KjsLegacyEntry {
  key: Buffer | null
  value: Buffer | null
  timestamp?: number
}

/** A legacy message set (magic 0 or 1) encoded by kafkajs, as its produce v0-v2 requests carry. */
export function kafkajsMessageSet(version: 0 | 1, entries: KjsLegacyEntry[]): Buffer {
  return MessageSet({ messageVersion: version, compression: 0, entries }).buffer as Buffer
}

/**
 * A gzip-compressed magic-1 wrapper as kafkajs' produce v2 builds it (inner
 * offsets 0..n-1), with the wrapper offset then set the way a broker assigns
 * it: the absolute offset of the last inner message.
 */
export async function kafkajsGzipWrapper(entries: KjsLegacyEntry[], timestamp: number, lastOffset: bigint): Promise<Buffer> {
  const inner = MessageSet({ messageVersion: 1, compression: 1, entries })
  const value = await gzipCodec.compress(inner)
  const wrapper = MessageSet({ messageVersion: 1, compression: 1, entries: [{ compression: 1, timestamp, key: null, value }] })
  const buf = Buffer.from(wrapper.buffer as Buffer)
  buf.writeBigInt64BE(lastOffset, 0)
  return buf
}
