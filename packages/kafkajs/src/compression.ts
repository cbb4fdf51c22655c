import { getCodec } from '@tidelog/protocol'
import { KafkaJSNotImplemented } from './errors.js'

/** kafkajs' compression ids, Kafka's attribute values. */
export enum CompressionTypes {
  None = 0,
  GZIP = 1,
  Snappy = 2,
  LZ4 = 3,
  ZSTD = 4,
}

/** kafkajs' codec shape: compress gets an encoder holding the bytes, decompress a Buffer. */
export interface KafkaJSCodec {
  compress(encoder: { buffer: Buffer }): Promise<Buffer>
  decompress(buffer: Buffer): Promise<Buffer>
}

// One decompressed batch at most; the native consumer applies its own, configurable cap.
const MAX_DECOMPRESSED = 64 * 1024 * 1024

const builtIn = (type: CompressionTypes) => (): KafkaJSCodec => {
  const codec = getCodec(type)
  return {
    compress: async ({ buffer }) => Buffer.from(await codec.compress(buffer)),
    decompress: async (buffer) => Buffer.from(await codec.decompress(buffer, MAX_DECOMPRESSED)),
  }
}

/**
 * Every codec is built in (gzip, snappy, lz4, zstd, in pure TypeScript). kafkajs programs that
 * register kafkajs-snappy, kafkajs-lz4 or @kafkajs/zstd here keep working: the assignment is
 * accepted, and the producer and consumer go on using the built-in codec, which writes and reads
 * the same formats.
 */
export const CompressionCodecs: Record<number, () => KafkaJSCodec> = {
  [CompressionTypes.GZIP]: builtIn(CompressionTypes.GZIP),
  [CompressionTypes.Snappy]: builtIn(CompressionTypes.Snappy),
  [CompressionTypes.LZ4]: builtIn(CompressionTypes.LZ4),
  [CompressionTypes.ZSTD]: builtIn(CompressionTypes.ZSTD),
}

export function compressionOf(c: unknown): CompressionTypes {
  if (c === undefined || c === null) return CompressionTypes.None
  if (typeof c === 'number' && Number.isInteger(c) && c >= 0 && c <= 4) return c
  throw new KafkaJSNotImplemented(`Compression codec ${String(c)} not implemented`)
}
