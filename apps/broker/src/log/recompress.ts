import { constants as zlibConstants, gzipSync } from 'node:zlib'
import { CompressionType, ErrorCodes, LOG_OVERHEAD, RECORD_BATCH_OVERHEAD, TidelogError, compress, crc32c, decompress, batchSizeAt } from '@tidelog/protocol'
import { ATTRIBUTES_AT, BATCH_LENGTH_AT, CRC_AT } from './format.js'
import { BatchRejectedError } from './validator.js'

/** A topic's compression.type (KIP-390 levels beside it): producer keeps the producer's batches byte for byte. */
export type TopicCompression = 'producer' | 'uncompressed' | 'gzip' | 'snappy' | 'lz4' | 'zstd'

export interface CompressionSettings {
  type: TopicCompression
  /** compression.gzip.level: -1 is zlib's default (6), as Kafka's. */
  gzipLevel: number
}

export const PRODUCER_COMPRESSION: CompressionSettings = { type: 'producer', gzipLevel: -1 }

const CODEC_OF: Record<Exclude<TopicCompression, 'producer'>, number> = {
  uncompressed: CompressionType.None,
  gzip: CompressionType.Gzip,
  snappy: CompressionType.Snappy,
  lz4: CompressionType.Lz4,
  zstd: CompressionType.Zstd,
}
const CODEC_MASK = 0x07

function sync(out: Uint8Array | Promise<Uint8Array>, what: string): Buffer {
  if (!(out instanceof Uint8Array)) {
    // Appends stay in arrival order: an asynchronous codec registered in this process cannot be waited for here.
    void out.catch(() => undefined)
    throw new BatchRejectedError(ErrorCodes.UNKNOWN_SERVER_ERROR, `the broker cannot recompress with an asynchronous ${what} codec`)
  }
  return Buffer.isBuffer(out) ? out : Buffer.from(out.buffer, out.byteOffset, out.byteLength)
}

/**
 * Broker-side recompression, as Kafka's LogValidator does it when the topic's
 * compression.type names a codec other than the batch's: the records are
 * inflated and compressed again with the topic's codec (gzip at
 * compression.gzip.level), keeping every record byte, so offsets, timestamps,
 * headers and the batch's producer id, epoch, sequence and transactional flag
 * are what the producer sent; the header's codec bits, length and CRC change.
 * `producer`, or a batch already in the topic's codec, is kept as it is (the
 * zero-copy path). A batch the new codec makes larger than max.message.bytes
 * is refused with MESSAGE_TOO_LARGE, as Kafka refuses it. Call after
 * validateProducedBatch, which has checked that the records inflate.
 */
export function recompressBatch(records: Buffer, settings: CompressionSettings, maxMessageBytes: number): Buffer {
  if (settings.type === 'producer') return records
  const target = CODEC_OF[settings.type]
  const attributes = records.readInt16BE(ATTRIBUTES_AT)
  const source = attributes & CODEC_MASK
  if (source === target) return records
  const size = batchSizeAt(records, 0)
  const body = records.subarray(RECORD_BATCH_OVERHEAD, size)
  let out: Buffer
  try {
    const plain = source === CompressionType.None ? body : sync(decompress(source, body, 0x7fffffff), 'decompression')
    if (target === CompressionType.None) out = plain
    else if (target === CompressionType.Gzip) out = gzipSync(plain, { level: settings.gzipLevel === -1 ? zlibConstants.Z_DEFAULT_COMPRESSION : settings.gzipLevel })
    else out = sync(compress(target, plain), 'compression')
  } catch (err) {
    if (err instanceof BatchRejectedError) throw err
    if (err instanceof TidelogError) throw new BatchRejectedError(ErrorCodes.CORRUPT_MESSAGE, `records cannot be recompressed: ${err.message}`)
    throw err
  }
  const batch = Buffer.allocUnsafe(RECORD_BATCH_OVERHEAD + out.length)
  records.copy(batch, 0, 0, RECORD_BATCH_OVERHEAD)
  out.copy(batch, RECORD_BATCH_OVERHEAD)
  batch.writeInt32BE(batch.length - LOG_OVERHEAD, BATCH_LENGTH_AT)
  batch.writeInt16BE((attributes & ~CODEC_MASK) | target, ATTRIBUTES_AT)
  batch.writeUInt32BE(crc32c(batch, ATTRIBUTES_AT, batch.length), CRC_AT)
  if (batch.length > maxMessageBytes) {
    throw new BatchRejectedError(ErrorCodes.MESSAGE_TOO_LARGE, `the record batch is ${batch.length} bytes once recompressed as ${settings.type}, more than max.message.bytes ${maxMessageBytes}`)
  }
  return batch
}
