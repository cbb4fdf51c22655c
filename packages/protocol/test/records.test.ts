import { afterEach, describe, expect, it } from 'vitest'
import fc from 'fast-check'
import * as zlib from 'node:zlib'
import {
  CompressionType,
  CorruptRecordError,
  DecodeError,
  EncodeError,
  crc32c,
  decodeRecordBatch,
  decodeRecordBatchAsync,
  decodeRecordBatches,
  decodeRecordBatchesAsync,
  encodeRecordBatch,
  encodeRecordBatchAsync,
  getCodec,
  registerCodec,
  setBaseOffset,
  validateRecordBatch,
  type Record as KRecord,
  type RecordInput,
} from '@tidelog/protocol'
import { lz4FrameCompress } from '../src/records/codecs/lz4.js'
import {
  kafkajsBatch,
  kafkajsDecode,
  kafkajsGzipWrapper,
  kafkajsMessageSet,
  type KjsRecord,
} from './golden-records/kafkajs.js'
import { kafkajsVersion, recordsPeers } from '../../../test/helpers/peers.js'

const TS = 1_700_000_000_000
const b = (s: string) => Buffer.from(s)

interface Case {
  name: string
  records: KjsRecord[]
  timestamps: number[]
}

const cases: Case[] = [
  { name: 'one record', records: [{ key: b('key'), value: b('value') }], timestamps: [TS] },
  {
    name: 'nulls and empties',
    records: [
      { key: null, value: b('v') },
      { key: b(''), value: null },
      { key: null, value: null },
      { key: b('k'), value: b('') },
    ],
    timestamps: [TS, TS, TS + 1, TS + 1],
  },
  {
    name: 'headers, including repeated keys and non-ASCII',
    records: [
      { key: b('k1'), value: b('v1'), headers: { source: 'web', 'trace-id': b('abc') } },
      { key: b('k2'), value: b('v2'), headers: { 'ключ': 'значение' } },
      { key: b('k3'), value: b('v3') },
    ],
    timestamps: [TS, TS + 5, TS + 1000],
  },
  {
    name: '200 records, multi-byte varints and large deltas',
    records: Array.from({ length: 200 }, (_, i) => ({ key: b(`key-${i}`), value: Buffer.alloc(i * 3, i) })),
    timestamps: Array.from({ length: 200 }, (_, i) => TS + i * 100_000),
  },
  {
    name: 'a 100 KiB value',
    records: [{ key: b('big'), value: Buffer.alloc(100 * 1024, 7) }],
    timestamps: [TS],
  },
]

function ourInput(c: Case, compression: CompressionType): Parameters<typeof encodeRecordBatch>[0] {
  return {
    records: c.records.map((r, i) => ({ key: r.key, value: r.value, headers: r.headers, timestamp: c.timestamps[i] })),
    baseOffset: 0n,
    compression,
    producerId: 77n,
    producerEpoch: 2,
    baseSequence: 40,
    partitionLeaderEpoch: 0,
  }
}

function kjsInput(c: Case, compression: number) {
  return {
    records: c.records.map((r, i) => ({ ...r, timestampDelta: c.timestamps[i]! - c.timestamps[0]! })),
    firstTimestamp: c.timestamps[0]!,
    maxTimestamp: Math.max(...c.timestamps),
    compression,
    producerId: 77n,
    producerEpoch: 2,
    firstSequence: 40,
  }
}

const headerObject = (r: KRecord) => {
  const o: { [k: string]: Buffer | Buffer[] } = {}
  for (const h of r.headers) {
    const prev = o[h.key]
    o[h.key] = prev === undefined ? h.value! : Array.isArray(prev) ? [...prev, h.value!] : [prev, h.value!]
  }
  return o
}

describe('golden bytes against kafkajs 2.2.4', () => {
  recordsPeers(() => [{ peer: 'kafkajs', version: kafkajsVersion() }])
  it.each(cases.map((c) => [c.name, c] as const))('uncompressed: %s', async (_n, c) => {
    const theirs = await kafkajsBatch(kjsInput(c, 0))
    const ours = encodeRecordBatch(ourInput(c, CompressionType.None))
    expect(ours.toString('hex')).toBe(theirs.toString('hex'))
  })

  it.each(cases.map((c) => [c.name, c] as const))('gzip: %s', async (_n, c) => {
    const theirs = await kafkajsBatch(kjsInput(c, 1))
    const ours = encodeRecordBatch(ourInput(c, CompressionType.Gzip))
    // Same zlib, same (default) level: the compressed bytes match too.
    expect(ours.toString('hex')).toBe(theirs.toString('hex'))
  })

  it.each(cases.map((c) => [c.name, c] as const))('kafkajs decodes ours and we decode theirs: %s', async (_n, c) => {
    for (const [ours, theirs] of [
      [CompressionType.None, 0],
      [CompressionType.Gzip, 1],
    ] as const) {
      const mine = encodeRecordBatch({ ...ourInput(c, ours), baseOffset: 1000n })
      const decoded = await kafkajsDecode(mine)
      expect(decoded.records.length).toBe(c.records.length)
      decoded.records.forEach((r, i) => {
        expect(r.offset).toBe(String(1000 + i))
        expect(r.timestamp).toBe(String(c.timestamps[i]))
        expect(r.key).toEqual(c.records[i]!.key)
        expect(r.value).toEqual(c.records[i]!.value)
      })
      const kjs = await kafkajsBatch({ ...kjsInput(c, theirs), firstOffset: 500n })
      const batch = decodeRecordBatch(kjs)
      expect(batch.compression).toBe(ours)
      const recs = batch.toArray()
      recs.forEach((r, i) => {
        expect(r.offset).toBe(500n + BigInt(i))
        expect(r.timestamp).toBe(BigInt(c.timestamps[i]!))
        expect(r.key).toEqual(c.records[i]!.key)
        expect(r.value).toEqual(c.records[i]!.value)
        const want = c.records[i]!.headers ?? {}
        expect(headerObject(r)).toEqual(Object.fromEntries(Object.entries(want).map(([k, v]) => [k, Buffer.from(v)])))
      })
    }
  })

  it('kafkajs reads our header arrays with repeated keys', async () => {
    const batch = encodeRecordBatch({
      records: [{ value: 'x', headers: [{ key: 'a', value: '1' }, { key: 'a', value: '2' }, { key: 'b', value: null }] }],
      now: TS,
    })
    const d = await kafkajsDecode(batch)
    expect(d.records[0]!.headers).toEqual({ a: [b('1'), b('2')], b: null })
  })
})

// ---------------------------------------------------------------------------

// Strings of every kind: ASCII (short and long: two write paths), any code point, lone surrogates.
const bytesArb = fc.oneof(
  fc.uint8Array({ maxLength: 60 }).map((a) => Buffer.from(a)),
  fc.string({ maxLength: 40 }),
  fc.string({ unit: 'grapheme', maxLength: 20 }),
  fc.string({ unit: 'binary', maxLength: 20 }),
)
const recordArb: fc.Arbitrary<RecordInput> = fc.record(
  {
    key: fc.option(bytesArb, { nil: null }),
    value: fc.option(bytesArb, { nil: null }),
    headers: fc.array(fc.record({ key: fc.string({ unit: 'grapheme', maxLength: 10 }), value: fc.option(bytesArb, { nil: null }) }), { maxLength: 4 }),
    timestamp: fc.oneof(fc.integer({ min: -1, max: 2 ** 45 }), fc.bigInt({ min: 0n, max: 2n ** 50n })),
  },
  { requiredKeys: ['value'] },
)

const asBuf = (v: Uint8Array | string | null | undefined) => (v == null ? null : Buffer.from(v as Uint8Array))

describe('round trips', () => {
  it('decode(encode(x)) = x for random batches, every built-in codec', () => {
    fc.assert(
      fc.property(
        fc.array(recordArb, { minLength: 1, maxLength: 30 }),
        fc.constantFrom(CompressionType.None, CompressionType.Gzip, CompressionType.Snappy, CompressionType.Lz4),
        fc.record({
          baseOffset: fc.bigInt({ min: 0n, max: 2n ** 62n }),
          producerId: fc.bigInt({ min: -1n, max: 2n ** 62n }),
          producerEpoch: fc.integer({ min: -1, max: 32767 }),
          baseSequence: fc.integer({ min: -1, max: 2 ** 31 - 1 }),
          partitionLeaderEpoch: fc.integer({ min: -1, max: 2 ** 31 - 1 }),
          isTransactional: fc.boolean(),
          isControl: fc.boolean(),
        }),
        (records, compression, fields) => {
          const buf = encodeRecordBatch({ records, compression, now: TS, ...fields })
          const h = validateRecordBatch(buf)
          expect(h).toMatchObject({ ...fields, compression, recordCount: records.length, lastOffsetDelta: records.length - 1 })
          const stamps = records.map((r) => BigInt(r.timestamp ?? TS))
          expect(h.baseTimestamp).toBe(stamps[0])
          expect(h.maxTimestamp).toBe(stamps.reduce((a, x) => (x > a ? x : a)))
          const batch = decodeRecordBatch(buf)
          const lazily = [...batch]
          expect(lazily).toEqual(batch.toArray())
          expect(lazily.length).toBe(records.length)
          lazily.forEach((r, i) => {
            const want = records[i]!
            expect(r.offset).toBe(fields.baseOffset + BigInt(i))
            expect(r.offsetDelta).toBe(i)
            expect(r.timestamp).toBe(stamps[i])
            expect(r.key).toEqual(asBuf(want.key))
            expect(r.value).toEqual(asBuf(want.value))
            const hs = (want.headers ?? []) as Array<{ key: string; value: Uint8Array | string | null }>
            expect(r.headers).toEqual(hs.map((x) => ({ key: x.key, value: asBuf(x.value) })))
          })
        },
      ),
      { numRuns: 400 },
    )
  })

  it('header objects, arrays of values and undefined entries', () => {
    const buf = encodeRecordBatch({ records: [{ value: 'v', headers: { a: ['1', '2'], b: Buffer.from('3'), c: undefined, d: null } }], now: TS })
    expect(decodeRecordBatch(buf).toArray()[0]!.headers).toEqual([
      { key: 'a', value: b('1') },
      { key: 'a', value: b('2') },
      { key: 'b', value: b('3') },
      { key: 'd', value: null },
    ])
  })

  it('LogAppendTime batches give every record the batch maxTimestamp', () => {
    const buf = encodeRecordBatch({ records: [{ value: 'a', timestamp: 1 }, { value: 'b', timestamp: 9 }], timestampType: 1 })
    const h = validateRecordBatch(buf)
    expect(h.timestampType).toBe(1)
    expect(decodeRecordBatch(buf).toArray().map((r) => r.timestamp)).toEqual([9n, 9n])
  })

  it('baseTimestamp and now make encoding deterministic', () => {
    const input = { records: [{ value: 'a' }, { value: 'b', timestamp: 50 }], now: 100, baseTimestamp: 40 }
    const x = encodeRecordBatch(input)
    expect(encodeRecordBatch(input).equals(x)).toBe(true)
    const [r0, r1] = decodeRecordBatch(x).toArray()
    expect([r0!.timestamp, r0!.timestampDelta, r1!.timestamp, r1!.timestampDelta]).toEqual([100n, 60, 50n, 10])
  })

  it('refuses what cannot be encoded', () => {
    expect(() => encodeRecordBatch({ records: [] })).toThrow(EncodeError)
    expect(() => encodeRecordBatch({ records: [{ value: 'a', timestamp: 2 ** 60 }] })).toThrow(EncodeError)
    expect(() => encodeRecordBatch({ records: [{ value: 'a', headers: [{ key: 1 as unknown as string, value: null }] }] })).toThrow(EncodeError)
    expect(() => encodeRecordBatch({ records: [{ value: 42 as unknown as string }] })).toThrow(EncodeError)
    expect(() => encodeRecordBatch({ records: [{ key: {} as unknown as string, value: null }] })).toThrow(EncodeError)
  })

  it('zstd batches decode (fixture compressed by the zstd CLI)', () => {
    const plain = encodeRecordBatch({ records: [{ key: 'k', value: 'zstd value'.repeat(20) }], now: TS })
    // The records section of `plain`, compressed by `zstd -3` (frame with content size and checksum).
    const zstdBody = Buffer.from(zstdOfBody, 'hex')
    const batch = Buffer.concat([plain.subarray(0, 61), zstdBody])
    batch.writeInt32BE(batch.length - 12, 8)
    batch.writeInt16BE(4, 21)
    batch.writeUInt32BE(crc32c(batch, 21), 17)
    const r = decodeRecordBatch(batch).toArray()
    expect(r[0]!.value!.toString()).toBe('zstd value'.repeat(20))
    expect(r[0]!.key!.toString()).toBe('k')
  })
})

// `encodeRecordBatch({ records: [{ key: 'k', value: 'zstd value'.repeat(20) }], now: 1.7e12 }).subarray(61) | zstd -3 -c`
const zstdOfBody = '28b52ffd0458dd0000a0a003000000026b90037a7374642076616c756500010077a54a186368e955'

// ---------------------------------------------------------------------------

describe('decoding errors', () => {
  const good = encodeRecordBatch({ records: [{ key: 'a', value: 'b' }, { key: 'c', value: 'd'.repeat(30) }], now: TS })
  const recrc = (x: Buffer) => {
    x.writeUInt32BE(crc32c(x, 21), 17)
    return x
  }

  it('a CRC mismatch is CorruptRecordError unless verification is off', () => {
    const x = Buffer.from(good)
    x[x.length - 1]! ^= 1
    expect(() => decodeRecordBatch(x)).toThrow(CorruptRecordError)
    expect(decodeRecordBatch(x, 0, { verifyCrc: false }).recordCount).toBe(2)
  })

  it('a count larger than the records, or records left over, throws while iterating', () => {
    const more = recrc(Buffer.from(good))
    more.writeInt32BE(3, 57)
    recrc(more)
    expect(() => [...decodeRecordBatch(more)]).toThrow(/declares 3 records but holds 2/)
    expect(() => decodeRecordBatch(more).toArray()).toThrow(DecodeError)
    const fewer = Buffer.from(good)
    fewer.writeInt32BE(1, 57)
    recrc(fewer)
    expect(() => [...decodeRecordBatch(fewer)]).toThrow(/left over/)
    const huge = Buffer.from(good)
    huge.writeInt32BE(0x7fffffff, 57)
    recrc(huge)
    expect(() => decodeRecordBatch(huge)).toThrow(DecodeError)
  })

  it('a record whose fields disagree with its size throws', () => {
    const x = Buffer.from(good)
    x[61] = x[61]! + 2 // first record's size varint
    recrc(x)
    expect(() => decodeRecordBatch(x).toArray()).toThrow(DecodeError)
    const neg = Buffer.from(good)
    // key length of the first record: size(1) attr(1) tsDelta(1) offsetDelta(1) then key length
    neg[65] = 0x03 // zigzag -2
    recrc(neg)
    expect(() => decodeRecordBatch(neg).toArray()).toThrow(/key length -2/)
  })

  it('truncated batches are DecodeError; impossible lengths and unknown magic are CorruptRecordError', () => {
    expect(() => decodeRecordBatch(good.subarray(0, good.length - 1))).toThrow(DecodeError)
    expect(() => decodeRecordBatch(good.subarray(0, 10))).toThrow(DecodeError)
    const len = Buffer.from(good)
    len.writeInt32BE(20, 8)
    expect(() => decodeRecordBatch(len)).toThrow(CorruptRecordError)
    const magic = Buffer.from(good)
    magic[16] = 3
    expect(() => decodeRecordBatch(magic)).toThrow(CorruptRecordError)
  })

  it('a bomb in a batch hits the cap', () => {
    const big = encodeRecordBatch({ records: [{ value: Buffer.alloc(4 * 1024 * 1024) }], compression: 'gzip', now: TS })
    expect(big.length).toBeLessThan(10_000)
    expect(() => decodeRecordBatch(big, 0, { maxDecompressedBytes: 1024 * 1024 })).toThrow(/exceeds the limit/)
    expect(decodeRecordBatch(big).toArray()[0]!.value!.length).toBe(4 * 1024 * 1024)
  })
})

describe('decodeRecordBatches', () => {
  it('walks concatenated batches and drops a trailing partial one', () => {
    const a = encodeRecordBatch({ records: [{ value: 'a' }], baseOffset: 0n, now: TS })
    const c = encodeRecordBatch({ records: [{ value: 'b' }, { value: 'c' }], baseOffset: 1n, compression: 'lz4', now: TS })
    const all = Buffer.concat([a, c, a.subarray(0, 30)])
    const batches = decodeRecordBatches(all)
    expect(batches.map((x) => x.size)).toEqual([a.length, c.length])
    expect(batches.flatMap((x) => x.toArray().map((r) => [r.offset, r.value!.toString()]))).toEqual([
      [0n, 'a'],
      [1n, 'b'],
      [2n, 'c'],
    ])
    expect(decodeRecordBatches(Buffer.alloc(0))).toEqual([])
    expect(decodeRecordBatches(all.subarray(0, 11))).toEqual([])
  })

  it('a length below any message is corrupt, not partial', () => {
    const bad = Buffer.alloc(20)
    bad.writeInt32BE(5, 8)
    expect(() => decodeRecordBatches(bad)).toThrow(CorruptRecordError)
  })
})

describe('legacy message sets (magic 0 and 1)', () => {
  it('uncompressed magic 0 and 1 messages built by kafkajs', () => {
    for (const version of [0, 1] as const) {
      const set = Buffer.from(kafkajsMessageSet(version, [
        { key: b('k0'), value: b('v0'), timestamp: TS },
        { key: null, value: b('v1'), timestamp: TS + 7 },
        { key: b('k2'), value: null, timestamp: TS + 9 },
      ]))
      // Set offsets as a broker would (kafkajs leaves -1 for the broker to fill in).
      let pos = 0
      for (let i = 0; pos < set.length; i++) {
        set.writeBigInt64BE(10n + BigInt(i), pos)
        pos += 12 + set.readInt32BE(pos + 8)
      }
      const batches = decodeRecordBatches(set)
      expect(batches.map((x) => x.magic)).toEqual([version, version, version])
      const recs = batches.flatMap((x) => x.toArray())
      expect(recs.map((r) => r.offset)).toEqual([10n, 11n, 12n])
      expect(recs.map((r) => r.key && r.key.toString())).toEqual(['k0', null, 'k2'])
      expect(recs.map((r) => r.value && r.value.toString())).toEqual(['v0', 'v1', null])
      expect(recs.map((r) => r.timestamp)).toEqual(version === 1 ? [BigInt(TS), BigInt(TS + 7), BigInt(TS + 9)] : [-1n, -1n, -1n])
      expect(batches[0]!.recordCount).toBe(1)
      const corrupt = Buffer.from(set)
      corrupt[25]! ^= 0xff
      expect(() => decodeRecordBatches(corrupt)).toThrow(CorruptRecordError)
    }
  })

  it('a gzip wrapper (magic 1): inner relative offsets become absolute', async () => {
    const wrapper = await kafkajsGzipWrapper(
      [
        { key: b('a'), value: b('1'), timestamp: TS },
        { key: b('b'), value: b('2'), timestamp: TS + 1 },
        { key: b('c'), value: b('3'), timestamp: TS + 2 },
      ],
      TS + 2,
      102n,
    )
    const [batch] = decodeRecordBatches(wrapper)
    expect(batch!.compression).toBe(CompressionType.Gzip)
    expect(batch!.baseOffset).toBe(100n)
    expect(batch!.lastOffsetDelta).toBe(2)
    expect([...batch!].map((r) => [r.offset, r.key!.toString(), r.timestamp])).toEqual([
      [100n, 'a', BigInt(TS)],
      [101n, 'b', BigInt(TS + 1)],
      [102n, 'c', BigInt(TS + 2)],
    ])
    // LogAppendTime on the wrapper: every inner record takes the wrapper's timestamp.
    const lat = Buffer.from(wrapper)
    lat[17] = lat[17]! | 0x08
    const crc = (await import('node:zlib')).crc32
    if (typeof crc === 'function') {
      lat.writeUInt32BE(crc(lat.subarray(16)), 12)
      expect([...decodeRecordBatch(lat)].map((r) => r.timestamp)).toEqual([BigInt(TS + 2), BigInt(TS + 2), BigInt(TS + 2)])
    }
  })

  it('a magic-0 lz4 wrapper with the pre-0.10 header checksum', () => {
    // Inner: two magic-0 messages with absolute offsets 5 and 6.
    const inner = Buffer.concat([legacyV0(5n, b('x'), b('one')), legacyV0(6n, null, b('two'))])
    const frame = Buffer.from(lz4FrameCompress(inner))
    frame[6] = (xxh(frame, 0, 6) >>> 8) & 0xff // checksum over magic + descriptor, as Kafka 0.8/0.9 wrote it
    const wrapper = legacyV0(6n, null, frame, 3)
    const recs = decodeRecordBatch(wrapper).toArray()
    expect(recs.map((r) => [r.offset, r.value!.toString()])).toEqual([
      [5n, 'one'],
      [6n, 'two'],
    ])
  })

  it('nested compression and zstd in legacy messages are corrupt', () => {
    const gz = zlib.gzipSync(legacyV0(0n, null, b('x'), 1))
    expect(() => decodeRecordBatch(legacyV0(0n, null, gz, 1))).toThrow(CorruptRecordError)
    expect(() => decodeRecordBatch(legacyV0(0n, null, b('x'), 4))).toThrow(CorruptRecordError)
  })
})

import { xxhash32 as xxh } from '../src/records/codecs/xxhash32.js'
import { crc32 } from '../src/records/crc32.js'

/** A magic-0 message: offset, size, crc, magic, attributes, key, value. */
function legacyV0(offset: bigint, key: Buffer | null, value: Buffer | null, attributes = 0): Buffer {
  const body = Buffer.concat([
    Buffer.from([0, attributes]),
    int32(key === null ? -1 : key.length),
    key ?? Buffer.alloc(0),
    int32(value === null ? -1 : value.length),
    value ?? Buffer.alloc(0),
  ])
  const head = Buffer.alloc(16)
  head.writeBigInt64BE(offset, 0)
  head.writeInt32BE(body.length + 4, 8)
  head.writeUInt32BE(crc32(body), 12)
  return Buffer.concat([head, body])
}

function int32(n: number): Buffer {
  const x = Buffer.alloc(4)
  x.writeInt32BE(n)
  return x
}

describe('async codecs', () => {
  const original = getCodec(CompressionType.Snappy)
  afterEach(() => registerCodec(CompressionType.Snappy, original))

  it('sync functions refuse an async codec; the async variants use it', async () => {
    registerCodec('snappy', {
      compress: async (d) => original.compress(d) as Uint8Array,
      decompress: async (d, max) => original.decompress(d, max) as Uint8Array,
    })
    const input = { records: [{ key: 'k', value: 'v' }], compression: CompressionType.Snappy, now: TS }
    expect(() => encodeRecordBatch(input)).toThrow(/encodeRecordBatchAsync/)
    const buf = await encodeRecordBatchAsync(input)
    expect(() => decodeRecordBatch(buf)).toThrow(/decodeRecordBatchAsync/)
    const batch = await decodeRecordBatchAsync(buf)
    expect(batch.toArray()[0]!.value!.toString()).toBe('v')
    const two = await decodeRecordBatchesAsync(Buffer.concat([buf, buf]))
    expect(two.length).toBe(2)
    setBaseOffset(buf, 0, 9n)
    expect((await decodeRecordBatchAsync(buf)).toArray()[0]!.offset).toBe(9n)
  })
})
