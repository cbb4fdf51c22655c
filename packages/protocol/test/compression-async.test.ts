import * as zlib from 'node:zlib'
import { afterEach, describe, expect, it } from 'vitest'
import {
  CompressionError,
  CompressionType,
  decodeRecordBatch,
  encodeRecordBatch,
  encodeRecordBatchAsync,
  getCodec,
  registerCodec,
  type CompressionCodec,
} from '@tidelog/protocol'
import { compressAsync } from '../src/records/compression.js'
import { gzipCodec } from '../src/records/codecs/gzip.js'

const records = Array.from({ length: 500 }, (_, i) => ({ key: Buffer.from(`k${i}`), value: Buffer.from(`value ${i % 7} `.repeat(8)) }))

describe('async compression', () => {
  const original = getCodec(CompressionType.Gzip)
  afterEach(() => registerCodec('gzip', original))

  it('gzip offers compressAsync producing what gunzip reads, at the default level like the sync path', async () => {
    expect(gzipCodec.compressAsync).toBeTypeOf('function')
    const input = Buffer.from('tidelog '.repeat(10_000))
    const a = await gzipCodec.compressAsync!(input)
    expect(zlib.gunzipSync(a).equals(input)).toBe(true)
    // Same deflate level and strategy: byte-identical to the sync output.
    expect(Buffer.from(a).equals(Buffer.from(gzipCodec.compress(input) as Uint8Array))).toBe(true)
  })

  it('encodeRecordBatchAsync prefers compressAsync; encodeRecordBatch keeps the sync compress', async () => {
    const calls: string[] = []
    const codec: CompressionCodec = {
      compress: (d) => (calls.push('sync'), zlib.gzipSync(d)),
      compressAsync: async (d) => (calls.push('async'), zlib.gzipSync(d)),
      decompress: (d) => zlib.gunzipSync(d),
    }
    registerCodec('gzip', codec)
    const input = { records, compression: CompressionType.Gzip, now: 1_700_000_000_000 }
    const viaAsync = await encodeRecordBatchAsync(input)
    const viaSync = encodeRecordBatch(input)
    expect(calls).toEqual(['async', 'sync'])
    expect(viaAsync.equals(viaSync)).toBe(true)
    expect(decodeRecordBatch(viaAsync).toArray().map((r) => r.value!.toString())).toEqual(records.map((r) => r.value.toString()))
  })

  it('a failing or misbehaving compressAsync rejects with CompressionError', async () => {
    registerCodec('gzip', { ...original, compressAsync: async () => Promise.reject(new Error('boom')) })
    await expect(compressAsync(CompressionType.Gzip, Buffer.from('x'))).rejects.toThrow(CompressionError)
    await expect(encodeRecordBatchAsync({ records, compression: CompressionType.Gzip })).rejects.toThrow(CompressionError)
    registerCodec('gzip', {
      ...original,
      compressAsync: () => {
        throw new Error('sync throw')
      },
    })
    await expect(compressAsync(CompressionType.Gzip, Buffer.from('x'))).rejects.toThrow(CompressionError)
    registerCodec('gzip', { ...original, compressAsync: async () => 'nope' as unknown as Uint8Array })
    await expect(compressAsync(CompressionType.Gzip, Buffer.from('x'))).rejects.toThrow(CompressionError)
  })

  it('falls back to compress for codecs without compressAsync', async () => {
    const out = await compressAsync(CompressionType.Snappy, Buffer.from('abcabcabcabcabcabc'))
    expect(out).toBeInstanceOf(Uint8Array)
  })
})
