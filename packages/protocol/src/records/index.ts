export { crc32c, crc32cNative } from './crc32c.js'
export { CompressionType, compressionTypeOf, compressionName } from './compression-type.js'
export type { CompressionName } from './compression-type.js'
export { CorruptRecordError, InvalidRecordError, RecordTooLargeError } from './errors.js'
export {
  RECORD_BATCH_OVERHEAD,
  LOG_OVERHEAD,
  readBatchHeader,
  batchSizeAt,
  validateRecordBatch,
  setBaseOffset,
  setPartitionLeaderEpoch,
  iterateBatches,
} from './batch-header.js'
export type { RecordBatchHeader } from './batch-header.js'
export {
  registerCodec,
  getCodec,
  compress,
  decompress,
  DEFAULT_MAX_DECOMPRESSED_BYTES,
} from './compression.js'
export type { CompressionCodec } from './compression.js'
export {
  encodeRecordBatch,
  encodeRecordBatchAsync,
  decodeRecordBatch,
  decodeRecordBatchAsync,
  decodeRecordBatches,
  decodeRecordBatchesAsync,
} from './record-batch.js'
export type {
  Bytes,
  HeaderInput,
  RecordInput,
  EncodeRecordBatchInput,
  DecodeRecordBatchOptions,
  RecordBatch,
} from './record-batch.js'
export type { Record, RecordHeader } from './record.js'
export { crc32 } from './crc32.js'
