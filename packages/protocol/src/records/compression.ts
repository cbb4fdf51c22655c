import { CompressionError, DecompressionLimitError, TidelogError } from '../errors/base.js'
import { gzipCodec, nodeZlib } from './codecs/gzip.js'
import { lz4FrameCompress, lz4FrameDecompress } from './codecs/lz4.js'
import { snappyCompress, snappyDecompress } from './codecs/snappy.js'
import { zstdCodec } from './codecs/zstd.js'
import { CompressionType, compressionName, compressionTypeOf, type CompressionName } from './compression-type.js'

/**
 * A compression codec. Either method may be async; the synchronous record batch
 * functions then refuse that codec and point at their async variants.
 * `decompress` must not produce more than `maxOutputBytes`: a decompression bomb
 * should throw DecompressionLimitError as early as the format allows.
 */
export interface CompressionCodec {
  compress(data: Uint8Array): Uint8Array | Promise<Uint8Array>
  decompress(data: Uint8Array, maxOutputBytes: number): Uint8Array | Promise<Uint8Array>
  /**
   * Optional: the same output as `compress`, produced off the main thread (e.g. node:zlib's
   * callback API on the libuv pool). Async callers prefer it; `compress` stays for sync callers.
   */
  compressAsync?(data: Uint8Array): Promise<Uint8Array>
}

/** The cap on one batch's decompressed size unless a caller passes its own. */
export const DEFAULT_MAX_DECOMPRESSED_BYTES = 64 * 1024 * 1024

const identity: CompressionCodec = {
  compress: (d) => d,
  decompress(d, max) {
    if (d.length > max) throw new DecompressionLimitError('none', max)
    return d
  },
}

const codecs: CompressionCodec[] = [
  identity,
  gzipCodec,
  { compress: snappyCompress, decompress: snappyDecompress },
  { compress: lz4FrameCompress, decompress: (d, max) => lz4FrameDecompress(d, max) },
  zstdCodec(nodeZlib),
]

/** Replaces the codec for a compression type (e.g. a native snappy or zstd binding). */
export function registerCodec(type: CompressionType | CompressionName, codec: CompressionCodec): void {
  const t = compressionTypeOf(type)
  if (t === CompressionType.None) throw new TypeError('the none codec cannot be replaced')
  if (!(t >= 1 && t <= 4)) throw new TypeError(`unknown compression type ${String(type)}`)
  codecs[t] = codec
}

/** The codec registered for a compression type; CompressionError for an unknown id. */
export function getCodec(type: CompressionType | CompressionName | number): CompressionCodec {
  const codec = codecs[typeof type === 'number' ? type : compressionTypeOf(type)]
  if (codec === undefined) throw new CompressionError(`unknown compression type ${String(type)}`)
  return codec
}

/**
 * Runs a codec's decompress under the guarantees the rest of the codec relies
 * on, whoever wrote the codec: only typed errors come out, and nothing longer
 * than the cap. A promise from an async codec is passed through (checked when
 * it settles).
 */
export function decompress(type: number, data: Uint8Array, max: number): Uint8Array | Promise<Uint8Array> {
  const codec = getCodec(type)
  let out: Uint8Array | Promise<Uint8Array>
  try {
    out = codec.decompress(data, max)
  } catch (e) {
    throw wrapError(type, e)
  }
  if (out instanceof Uint8Array) return checkOutput(type, out, max)
  return Promise.resolve(out).then(
    (o) => checkOutput(type, o, max),
    (e: unknown) => {
      throw wrapError(type, e)
    },
  )
}

/** Runs a codec's compress, wrapping failures as CompressionError. */
export function compress(type: number, data: Uint8Array): Uint8Array | Promise<Uint8Array> {
  const codec = getCodec(type)
  let out: Uint8Array | Promise<Uint8Array>
  try {
    out = codec.compress(data)
  } catch (e) {
    throw wrapError(type, e)
  }
  if (out instanceof Uint8Array) return out
  return Promise.resolve(out).catch((e: unknown) => {
    throw wrapError(type, e)
  })
}

/**
 * compress() for callers that can wait: uses the codec's compressAsync when it has one, so the
 * work leaves the main thread, and otherwise whatever compress returns.
 */
export function compressAsync(type: number, data: Uint8Array): Promise<Uint8Array> {
  const codec = getCodec(type)
  if (codec.compressAsync === undefined) {
    try {
      return Promise.resolve(compress(type, data))
    } catch (e) {
      return Promise.reject(e as Error)
    }
  }
  let out: Promise<Uint8Array>
  try {
    out = codec.compressAsync(data)
  } catch (e) {
    return Promise.reject(wrapError(type, e))
  }
  return Promise.resolve(out).then(
    (o) => {
      if (!(o instanceof Uint8Array)) throw new CompressionError(`${compressionName(type)} codec returned ${typeof o}`)
      return o
    },
    (e: unknown) => {
      throw wrapError(type, e)
    },
  )
}

function checkOutput(type: number, out: unknown, max: number): Uint8Array {
  if (!(out instanceof Uint8Array)) throw new CompressionError(`${compressionName(type)} codec returned ${typeof out}`)
  if (out.length > max) throw new DecompressionLimitError(compressionName(type), max)
  return out
}

function wrapError(type: number, e: unknown): TidelogError {
  if (e instanceof TidelogError) return e
  return new CompressionError(`${compressionName(type)}: ${(e as Error)?.message ?? String(e)}`, { cause: e })
}
