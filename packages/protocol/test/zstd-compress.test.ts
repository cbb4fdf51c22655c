// The pure-JS zstd compressor: every frame must decode, through our decoder
// (fzstd behind prepareFrames) and, where the binary exists, through the
// reference `zstd` CLI, an independent decoder.
import { execFileSync } from 'node:child_process'
import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { CompressionType, decodeRecordBatches, encodeRecordBatch, getCodec } from '@tidelog/protocol'
import { zstdCompress } from '../src/records/codecs/zstd-compress.js'
import { zstdDecompress } from '../src/records/codecs/zstd.js'

const KiB = 1024
const MiB = 1024 * KiB

function hasZstdCli(): boolean {
  try {
    execFileSync('zstd', ['--version'], { stdio: 'ignore' })
    return true
  } catch {
    return false
  }
}
const cli = hasZstdCli() || process.env.CI === 'true' // under CI a missing zstd CLI fails

/** xorshift32, so failures replay. */
function rng(seed: number) {
  let s = seed | 0 || 1
  return () => {
    s ^= s << 13
    s ^= s >>> 17
    s ^= s << 5
    return s >>> 0
  }
}

function randomBytes(n: number, seed: number): Buffer {
  const next = rng(seed)
  const b = Buffer.allocUnsafe(n)
  for (let i = 0; i < n; i++) b[i] = next() & 0xff
  return b
}

const WORDS =
  'the order payment user session checkout cart item product shipped delivered failed retry timeout request service account'.split(' ')

function textLike(n: number, seed: number): Buffer {
  const next = rng(seed)
  let s = ''
  for (let i = 0; s.length < n; i++) {
    s += `${new Date(1_700_000_000_000 + i * 1_337).toISOString()} INFO svc-${next() % 8} user=${next() % 100_000} `
    for (let w = 0; w < 8; w++) s += WORDS[next() % WORDS.length] + ' '
    s += '\n'
  }
  return Buffer.from(s.slice(0, n))
}

/** The records section of a real batch: varints, keys, values and headers. */
function recordBatchBody(count: number, seed: number): Buffer {
  const next = rng(seed)
  const records = Array.from({ length: count }, (_, i) => ({
    key: `user-${String(next() % 100_000).padStart(5, '0')}`,
    value: textLike(100, seed + i),
    headers: [{ key: 'trace', value: `t-${next() % 1000}` }],
    timestamp: 1_700_000_000_000n + BigInt(i),
  }))
  return encodeRecordBatch({ records }).subarray(61)
}

/** Each byte from a skewed distribution over all 256 values, no repeats to match: Huffman alone. */
function skewedBytes(n: number, seed: number): Buffer {
  const next = rng(seed)
  const b = Buffer.allocUnsafe(n)
  for (let i = 0; i < n; i++) {
    const r = next()
    b[i] = r & 1 ? 200 + ((r >>> 1) % 8) : r & 2 ? (r >>> 2) % 64 : (r >>> 2) & 0xff
  }
  return b
}

function roundTrip(data: Uint8Array, level?: number): Buffer {
  const frame = Buffer.from(zstdCompress(data, level))
  const back = Buffer.from(zstdDecompress(frame, Math.max(1, data.length)))
  expect(back.length).toBe(data.length)
  expect(back.equals(Buffer.from(data.buffer, data.byteOffset, data.length))).toBe(true)
  return frame
}

function viaCli(frame: Uint8Array): Buffer {
  return execFileSync('zstd', ['-d', '-c', '-q'], { input: frame, maxBuffer: 64 * MiB })
}

interface FrameInfo {
  singleSegment: boolean
  checksum: boolean
  contentSize: number
  window: number
  blocks: { type: number; size: number; last: boolean }[]
}

/** Walks a frame the way RFC 8878 lays it out, to check what the compressor declared. */
function parseFrame(f: Buffer): FrameInfo {
  expect(f.readUInt32LE(0)).toBe(0xfd2fb528)
  const fhd = f[4]!
  const singleSegment = (fhd & 0x20) !== 0
  expect(fhd & 0x18).toBe(0) // unused and reserved bits
  expect(fhd & 3).toBe(0) // no dictionary
  let p = 5
  let window = 0
  if (!singleSegment) {
    const wd = f[p++]!
    window = 2 ** (10 + (wd >>> 3)) * (1 + (wd & 7) / 8)
  }
  const flag = fhd >>> 6
  const bytes = flag === 0 ? (singleSegment ? 1 : 0) : 1 << flag
  let contentSize = 0
  for (let i = bytes - 1; i >= 0; i--) contentSize = contentSize * 256 + f[p + i]!
  if (bytes === 2) contentSize += 256
  p += bytes
  if (singleSegment) window = contentSize
  const blocks: FrameInfo['blocks'] = []
  for (;;) {
    const h = f[p]! | (f[p + 1]! << 8) | (f[p + 2]! << 16)
    const block = { last: (h & 1) === 1, type: (h >>> 1) & 3, size: h >>> 3 }
    blocks.push(block)
    p += 3 + (block.type === 1 ? 1 : block.size)
    if (block.last) break
  }
  const checksum = (fhd & 4) !== 0
  expect(p + (checksum ? 4 : 0)).toBe(f.length)
  return { singleSegment, checksum, contentSize, window, blocks }
}

describe('zstdCompress', () => {
  it('empty input is a valid frame: one empty raw block', () => {
    const frame = roundTrip(new Uint8Array(0))
    expect(frame.toString('hex')).toBe('28b52ffd2000010000')
    if (cli) expect(viaCli(frame).length).toBe(0)
  })

  it.each([
    ['one byte', Buffer.from([7])],
    ['the producer probe', Buffer.from('tidelog')],
    ['a short repeat', Buffer.from('abcabcabcabcabcabcabcabcabcabcabcabcabcabcabcabc')],
    ['random, 1 KiB', randomBytes(KiB, 1)],
    ['random, 300 KiB', randomBytes(300 * KiB, 2)],
    ['zeros, 400 KiB', Buffer.alloc(400 * KiB)],
    ['text, 150 KiB', textLike(150 * KiB, 3)],
    ['record batch body', recordBatchBody(1000, 4)],
    ['skewed bytes over all 256 values', skewedBytes(64 * KiB, 5)],
  ])('round trip: %s', (_name, data) => {
    for (const level of [undefined, -1, 1, 2, 3, 4, 9]) roundTrip(data, level)
  })

  it('declares the content size, one segment, no checksum; blocks at most 128 KiB', () => {
    for (const n of [0, 1, 255, 256, 65791, 65792, 300 * KiB]) {
      const data = textLike(n, n)
      const info = parseFrame(roundTrip(data))
      expect(info).toMatchObject({ singleSegment: true, checksum: false, contentSize: n })
      for (const b of info.blocks) expect(b.type === 2 ? b.size < 128 * KiB : b.size <= 128 * KiB).toBe(true)
      expect(info.blocks.reduce((s, b) => s + (b.type === 2 ? 0 : b.size), 0)).toBeLessThanOrEqual(n)
    }
  })

  it('sizes across block boundaries, 0 to 400 KiB', () => {
    const sizes = [2, 3, 4, 5, 15, 16, 17, 31, 32, 33, 1023, 1024, 1025, 4095, 4096, 16383, 16384, 65535, 65536]
    sizes.push(128 * KiB - 1, 128 * KiB, 128 * KiB + 1, 128 * KiB + 4, 256 * KiB - 3, 256 * KiB, 256 * KiB + 5, 400 * KiB)
    // Compressible with an incompressible stretch, so blocks of every type meet at the boundaries.
    const source = Buffer.concat([textLike(200 * KiB, 7), randomBytes(100 * KiB, 8), Buffer.alloc(100 * KiB, 0x61)])
    for (const n of sizes) {
      const data = source.subarray(0, n)
      const frame = roundTrip(data)
      expect(parseFrame(frame).blocks).toHaveLength(Math.max(1, Math.ceil(n / (128 * KiB))))
    }
  })

  it('views at any offset of their buffer (pooled Buffers, subarrays)', () => {
    const source = Buffer.concat([randomBytes(11, 24), textLike(200 * KiB, 25), recordBatchBody(300, 26)])
    for (const [from, n] of [
      [1, 0],
      [3, 10],
      [7, 5000],
      [13, 150 * KiB],
      [5, source.length - 5],
    ] as const) {
      const view = source.subarray(from, from + n)
      expect(view.byteOffset).toBe(source.byteOffset + from)
      roundTrip(view)
      if (cli) expect(viaCli(zstdCompress(view)).equals(view)).toBe(true)
    }
    const pooled = Buffer.from('a pooled buffer: its bytes start somewhere inside a shared ArrayBuffer '.repeat(3))
    roundTrip(pooled)
  })

  it('incompressible input costs only the frame and block headers (raw blocks)', () => {
    const data = randomBytes(300 * KiB, 9)
    const frame = roundTrip(data)
    expect(frame.length).toBeLessThanOrEqual(data.length + 6 + 4 + 3 * 3)
    expect(parseFrame(frame).blocks.map((b) => b.type)).toEqual([0, 0, 0])
  })

  it('runs become RLE blocks', () => {
    const frame = roundTrip(Buffer.alloc(400 * KiB, 0x2a))
    expect(parseFrame(frame).blocks.map((b) => b.type)).toEqual([1, 1, 1, 1])
    // Magic, descriptor, a 4-byte content size, then four 4-byte RLE blocks.
    expect(frame.length).toBe(4 + 1 + 4 + 4 * 4)
  })

  it('compresses repetitive records to a small fraction, and records and text well', () => {
    const record = (i: number) => `{"id":${i % 10},"customer":"customer-${i % 10}","status":"active","items":[1,2,3],"total":12.5}\n`
    let s = ''
    for (let i = 0; s.length < 100 * KiB; i++) s += record(i)
    const repetitive = Buffer.from(s)
    expect(roundTrip(repetitive).length / repetitive.length).toBeLessThan(0.02)
    const body = recordBatchBody(1000, 10)
    expect(roundTrip(body).length / body.length).toBeLessThan(0.45)
    const text = textLike(128 * KiB, 11)
    expect(roundTrip(text).length / text.length).toBeLessThan(0.4)
    // Literals alone (no matches to find): Huffman-coded with FSE-compressed weights.
    const skewed = skewedBytes(64 * KiB, 12)
    expect(roundTrip(skewed).length / skewed.length).toBeLessThan(0.8)
    // ASCII-only literals: Huffman weights in the direct form.
    const ascii = Buffer.from(Array.from(randomBytes(64 * KiB, 13), (b) => 0x61 + (b % 20)))
    expect(roundTrip(ascii).length / ascii.length).toBeLessThan(0.7)
  })

  it('more than 8 MiB: a window descriptor (8 MiB) instead of one segment', () => {
    const data = Buffer.concat([textLike(5 * MiB, 14), randomBytes(MiB, 15), textLike(3 * MiB, 14)])
    const frame = roundTrip(data)
    const info = parseFrame(frame)
    expect(info).toMatchObject({ singleSegment: false, contentSize: data.length, window: 8 * MiB })
    expect(frame.length).toBeLessThan(data.length / 2)
    if (cli) expect(viaCli(frame).equals(data)).toBe(true)
  })

  it('property: any bytes round trip, at any level', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 3000 }), fc.integer({ min: -2, max: 6 }), (data, level) => {
        roundTrip(data, level)
      }),
      { numRuns: 300 },
    )
  })

  it('property: compositions of repeated chunks round trip (matches, repeat offsets, runs)', () => {
    const piece = fc.record({
      chunk: fc.oneof(fc.uint8Array({ minLength: 1, maxLength: 40 }), fc.constantFrom(Buffer.from('abcd'), Buffer.from('x'))),
      times: fc.integer({ min: 1, max: 60 }),
      // Re-use an earlier piece: long-distance matches and older repeat offsets.
      again: fc.nat(),
    })
    fc.assert(
      fc.property(fc.array(piece, { minLength: 1, maxLength: 40 }), fc.integer({ min: -1, max: 5 }), (pieces, level) => {
        const parts: Uint8Array[] = []
        for (const p of pieces) {
          const chunk = parts.length > 0 && p.again % 3 === 0 ? parts[p.again % parts.length]! : p.chunk
          for (let i = 0; i < p.times; i++) parts.push(chunk)
        }
        roundTrip(Buffer.concat(parts), level)
      }),
      { numRuns: 300 },
    )
  })

  it.skipIf(!cli)('the zstd CLI decodes our frames (independent decoder)', () => {
    const inputs = [
      new Uint8Array(0),
      Buffer.from('tidelog'),
      randomBytes(200 * KiB, 16),
      Buffer.alloc(300 * KiB, 7),
      textLike(300 * KiB, 17),
      recordBatchBody(2000, 18),
      skewedBytes(40 * KiB, 19),
      Buffer.concat([textLike(100 * KiB, 20), randomBytes(50 * KiB, 21), textLike(100 * KiB, 20)]),
    ]
    for (const data of inputs) {
      for (const level of [-1, 1, 3, 5]) expect(viaCli(zstdCompress(data, level)).equals(Buffer.from(data))).toBe(true)
    }
    const next = rng(22)
    for (let i = 0; i < 40; i++) {
      const parts: Buffer[] = []
      for (let j = next() % 30; j >= 0; j--) {
        const kind = next() % 3
        parts.push(
          kind === 0
            ? randomBytes(next() % 3000, next())
            : kind === 1
            ? Buffer.alloc(next() % 2000, next())
            : textLike(next() % 5000, next()),
        )
      }
      const data = Buffer.concat(parts)
      expect(viaCli(zstdCompress(data)).equals(data)).toBe(true)
    }
  })

  it('the registered codec compresses zstd on every Node version, and batches carry it', () => {
    const codec = getCodec(CompressionType.Zstd)
    const body = recordBatchBody(300, 23)
    const compressed = codec.compress(body) as Uint8Array
    expect(Buffer.from(codec.decompress(compressed, body.length) as Uint8Array).equals(body)).toBe(true)
    const records = Array.from({ length: 200 }, (_, i) => ({ key: `k${i}`, value: `zstd value ${i} `.repeat(5) }))
    const batch = encodeRecordBatch({ records, compression: 'zstd' })
    const [decoded] = decodeRecordBatches(batch)
    expect(decoded!.compression).toBe(CompressionType.Zstd)
    expect(decoded!.toArray().map((r) => r.value!.toString())).toEqual(records.map((r) => r.value))
  })
})
