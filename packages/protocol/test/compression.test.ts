import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import * as zlib from 'node:zlib'
import { afterEach, describe, expect, it } from 'vitest'
import fc from 'fast-check'
import snappyjs from 'snappyjs'
import {
  CompressionError,
  CompressionType,
  DecompressionLimitError,
  compress,
  decompress,
  getCodec,
  registerCodec,
  type CompressionCodec,
} from '@tidelog/protocol'
import { nodeGzipCodec, pakoGzipCodec } from '../src/records/codecs/gzip.js'
import { lz4FrameCompress, lz4FrameDecompress } from '../src/records/codecs/lz4.js'
import { xxhash32 } from '../src/records/codecs/xxhash32.js'

const MiB = 1024 * 1024

/** The input of every fixture in golden-records/compressed-fixtures.json. */
function fixtureInput(): Buffer {
  const parts: string[] = []
  for (let i = 0; i < 3000; i++) parts.push(`record-${i % 977} value ${(i * 7919) % 10007} ${'x'.repeat(i % 13)}\n`)
  return Buffer.from(parts.join(''))
}

const fixtures = JSON.parse(readFileSync(new URL('./golden-records/compressed-fixtures.json', import.meta.url), 'utf8')) as {
  fixtures: Array<{ name: string; command: string; hex: string }>
}
const typeOf = (name: string) =>
  name.startsWith('lz4') ? CompressionType.Lz4 : name.startsWith('zstd') ? CompressionType.Zstd : CompressionType.Gzip

const hasCli = (cmd: string) => {
  try {
    execFileSync(cmd, ['--version'], { stdio: 'ignore' })
    return true
  } catch {
    return false
  }
}

describe('fixtures from the reference CLIs', () => {
  const input = fixtureInput()
  it.each(fixtures.fixtures.map((f) => [f.name, f] as const))('%s decodes to the original', (_name, f) => {
    const data = Buffer.from(f.hex, 'hex')
    const out = decompress(typeOf(f.name), data, 10 * MiB) as Uint8Array
    expect(Buffer.from(out).equals(input)).toBe(true)
    // One byte under the real size is a bomb as far as the cap is concerned.
    expect(() => decompress(typeOf(f.name), data, input.length - 1)).toThrow(DecompressionLimitError)
  })

  it('pako decodes the gzip fixtures too', () => {
    for (const f of fixtures.fixtures.filter((x) => x.name.startsWith('gzip'))) {
      const out = pakoGzipCodec.decompress(Buffer.from(f.hex, 'hex'), 10 * MiB) as Uint8Array
      expect(Buffer.from(out).equals(input)).toBe(true)
    }
  })

  it('a flipped byte in an lz4 fixture with checksums is caught', () => {
    for (const name of ['lz4-default.lz4', 'lz4-size-blockcrc.lz4']) {
      const data = Buffer.from(fixtures.fixtures.find((f) => f.name === name)!.hex, 'hex')
      data[data.length - 200]! ^= 0x01
      expect(() => lz4FrameDecompress(data, 10 * MiB)).toThrow(CompressionError)
    }
  })
})

describe('round trips', () => {
  const codecs: Array<[string, CompressionCodec]> = [
    ['gzip (node:zlib)', nodeGzipCodec(zlib)],
    ['gzip (pako)', pakoGzipCodec],
    ['snappy', getCodec(CompressionType.Snappy)],
    ['lz4', getCodec(CompressionType.Lz4)],
  ]
  it.each(codecs)('%s: decompress(compress(x)) = x', (_n, codec) => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.uint8Array({ maxLength: 2000 }),
          fc.array(fc.constantFrom('a', 'bb', 'kafka', '\n', 'x'.repeat(40)), { maxLength: 400 }).map((a) => Buffer.from(a.join(''))),
        ),
        (data) => {
          const c = codec.compress(data) as Uint8Array
          const d = codec.decompress(c, data.length) as Uint8Array
          expect(Buffer.from(d).equals(Buffer.from(data))).toBe(true)
        },
      ),
      { numRuns: 300 },
    )
  })

  it.each(codecs)('%s: large multi-block inputs', (_n, codec) => {
    const big = Buffer.concat([fixtureInput(), Buffer.from(Array.from({ length: 200_000 }, (_, i) => (i * 2654435761) >>> 24)), fixtureInput()])
    const d = codec.decompress(codec.compress(big) as Uint8Array, big.length) as Uint8Array
    expect(Buffer.from(d).equals(big)).toBe(true)
  })

  it('lz4 output is what the lz4 CLI reads, and Kafka-shaped', { skip: !hasCli('lz4') && process.env.CI !== 'true' }, () => {
    const input = fixtureInput()
    const c = lz4FrameCompress(input)
    expect(Buffer.from(c.subarray(0, 7)).toString('hex')).toBe('04224d18' + '6040' + '82')
    expect(execFileSync('lz4', ['-d', '-c'], { input: c }).equals(input)).toBe(true)
  })

  it('lz4 frame header checksum: the magic-0 variant is accepted only when asked for', () => {
    const c = Buffer.from(lz4FrameCompress(Buffer.from('hello hello hello hello')))
    c[6] = (xxhash32(c, 0, 6) >>> 8) & 0xff
    expect(() => lz4FrameDecompress(c, 100)).toThrow(/header checksum/)
    expect(Buffer.from(lz4FrameDecompress(c, 100, { brokenHeaderChecksum: true })).toString()).toBe('hello hello hello hello')
  })

  it('zstd compresses on every Node version (node:zlib where it has zstd, else the pure-JS compressor)', () => {
    const codec = getCodec(CompressionType.Zstd)
    const input = fixtureInput()
    expect(Buffer.from(codec.decompress(codec.compress(input) as Uint8Array, input.length) as Uint8Array).equals(input)).toBe(true)
  })

  it('xxhash32 matches the reference values', () => {
    expect(xxhash32(new Uint8Array(0))).toBe(0x02cc5d05)
    expect(xxhash32(Buffer.from('a'))).toBe(0x550d7456)
    expect(xxhash32(Buffer.from('abc'))).toBe(0x32d153ff)
    expect(xxhash32(Buffer.from('Nobody inspects the spammish repetition'))).toBe(0xe2293b2f)
  })
})

describe('snappy', () => {
  const codec = getCodec(CompressionType.Snappy)
  const xerial = (blocks: Uint8Array[]) => {
    const head = Buffer.from([0x82, 0x53, 0x4e, 0x41, 0x50, 0x50, 0x59, 0x00, 0, 0, 0, 1, 0, 0, 0, 1])
    return Buffer.concat([head, ...blocks.flatMap((b) => [Buffer.from([b.length >>> 24, b.length >>> 16, b.length >>> 8, b.length]), b])])
  }

  it('reads what snappyjs writes, and snappyjs reads what we write', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 3000 }), fc.nat(20), (data, rep) => {
        const input = Buffer.concat([Buffer.from(data), Buffer.alloc(rep * 10, 7), Buffer.from(data)])
        const c = snappyjs.compress(input)
        expect(Buffer.from(codec.decompress(c, input.length) as Uint8Array).equals(input)).toBe(true)
        expect(Buffer.from(snappyjs.uncompress(codec.compress(input) as Uint8Array)).equals(input)).toBe(true)
      }),
      { numRuns: 300 },
    )
  })

  it('reads the xerial framing the Java client writes', () => {
    const input = fixtureInput()
    const blocks = [0, 32768, 65536].map((s) => snappyjs.compress(input.subarray(s, Math.min(input.length, s + 32768))))
    const framed = xerial(blocks)
    const total = Math.min(input.length, 98304)
    expect(Buffer.from(codec.decompress(framed, 10 * MiB) as Uint8Array).equals(input.subarray(0, total))).toBe(true)
    expect(() => codec.decompress(framed, total - 1)).toThrow(DecompressionLimitError)
    expect(() => codec.decompress(framed.subarray(0, framed.length - 1), MiB)).toThrow(CompressionError)
  })

  it('refuses declared lengths past the cap or past what the block can hold, before allocating', () => {
    // uvarint 0x7fffffff then one literal byte.
    const huge = Buffer.from([0xff, 0xff, 0xff, 0xff, 0x07, 0x00, 0x41])
    expect(() => codec.decompress(huge, 64 * MiB)).toThrow(DecompressionLimitError)
    const liar = Buffer.from([0x80, 0x08, 0x00, 0x41]) // declares 1024 bytes from a 2-byte body
    expect(() => codec.decompress(liar, 64 * MiB)).toThrow(CompressionError)
  })

  it('does not loop on a literal whose 4-byte length wraps negative (snappyjs would)', () => {
    // Literal tag 0xfc (4-byte length) with length 0xfffffffa.
    const evil = Buffer.from([0x20, 0xfc, 0xfa, 0xff, 0xff, 0xff, 0x00, 0x00, 0x00])
    expect(() => codec.decompress(evil, MiB)).toThrow(CompressionError)
  })

  it('rejects bad copy offsets and short output', () => {
    expect(() => codec.decompress(Buffer.from([0x08, 0x01, 0x01]), 100)).toThrow(/offset/)
    expect(() => codec.decompress(Buffer.from([0x05, 0x00, 0x41]), 100)).toThrow(/declared/)
  })
})

describe('bombs', () => {
  const zeros = Buffer.alloc(8 * MiB)
  it('gzip (node:zlib and pako)', () => {
    const bomb = zlib.gzipSync(zeros, { level: 9 })
    expect(bomb.length).toBeLessThan(20_000)
    expect(() => nodeGzipCodec(zlib).decompress(bomb, MiB)).toThrow(DecompressionLimitError)
    expect(() => pakoGzipCodec.decompress(bomb, MiB)).toThrow(DecompressionLimitError)
  })

  it('lz4', () => {
    const bomb = lz4FrameCompress(zeros)
    expect(bomb.length).toBeLessThan(40_000)
    expect(() => lz4FrameDecompress(bomb, MiB)).toThrow(DecompressionLimitError)
  })

  it('zstd: a window over the cap is refused before allocation, and so is output', () => {
    // `head -c 10000000 /dev/zero | zstd -19`: 326 bytes, an 8 MiB window, 10 MB out.
    const bomb = Buffer.from(
      [
        '28b52ffd04684c000008000100fcff39100202001000020010000200100002001000020010000200',
        '10000200100002001000020010000200100002001000020010000200100002001000020010000200',
        '10000200100002001000020010000200100002001000020010000200100002001000020010000200',
        '10000200100002001000020010000200100002001000020010000200100002001000020010000200',
        '10000200100002001000020010000200100002001000020010000200100002001000020010000200',
        '10000200100002001000020010000200100002001000020010000200100002001000020010000200',
        '10000200100002001000020010000200100002001000020010000200100002001000020010000200',
        '100002001000020010000200100002001000020010000200100002001000020010000200100003b4',
        '040092d261cf',
      ].join(''),
      'hex',
    )
    expect(bomb.length).toBe(326)
    expect(() => decompress(CompressionType.Zstd, bomb, MiB)).toThrow(DecompressionLimitError)
    expect(() => decompress(CompressionType.Zstd, bomb, 9 * MiB)).toThrow(DecompressionLimitError)
    expect((decompress(CompressionType.Zstd, bomb, 10_000_000) as Uint8Array).every((b) => b === 0)).toBe(true)
    // A header declaring a 2 TiB window with one empty block behind it: decoded with a
    // window sized to what the blocks can produce, not what the header asks for.
    const window = Buffer.from('28b52ffd00f8010000', 'hex')
    const before = process.memoryUsage().arrayBuffers
    expect((decompress(CompressionType.Zstd, window, 64 * MiB) as Uint8Array).length).toBe(0)
    expect(process.memoryUsage().arrayBuffers - before).toBeLessThan(MiB)
    // The CLI's stream output (no content size, a 2 MiB window) decodes under a cap far below the window.
    const input = fixtureInput()
    const stream = Buffer.from(fixtures.fixtures.find((f) => f.name === 'zstd-stream.zst')!.hex, 'hex')
    expect(Buffer.from(decompress(CompressionType.Zstd, stream, input.length) as Uint8Array).equals(input)).toBe(true)
  })

  it('none: the cap applies to uncompressed data too', () => {
    expect(() => decompress(CompressionType.None, Buffer.alloc(10), 9)).toThrow(DecompressionLimitError)
  })
})

describe('the codec registry', () => {
  const original = getCodec(CompressionType.Snappy)
  afterEach(() => registerCodec(CompressionType.Snappy, original))

  it('a registered codec is used, and its failures come out typed', async () => {
    const calls: string[] = []
    registerCodec('snappy', {
      compress: (d) => {
        calls.push('c')
        return Buffer.concat([Buffer.from('X'), d])
      },
      decompress: (d) => {
        calls.push('d')
        if (d[0] !== 0x58) throw new TypeError('not mine')
        return d.subarray(1)
      },
    })
    const c = compress(CompressionType.Snappy, Buffer.from('abc')) as Uint8Array
    expect(Buffer.from(decompress(CompressionType.Snappy, c, 10) as Uint8Array).toString()).toBe('abc')
    expect(calls).toEqual(['c', 'd'])
    expect(() => decompress(CompressionType.Snappy, Buffer.from('abc'), 10)).toThrow(CompressionError)
    expect(() => decompress(CompressionType.Snappy, c, 2)).toThrow(DecompressionLimitError)
  })

  it('async codecs pass through as promises with the same guarantees', async () => {
    registerCodec(CompressionType.Snappy, {
      compress: async (d) => d,
      decompress: async (d) => {
        if (d.length === 0) throw new Error('empty')
        return d
      },
    })
    await expect(compress(CompressionType.Snappy, Buffer.from('a'))).resolves.toEqual(Buffer.from('a'))
    await expect(decompress(CompressionType.Snappy, Buffer.from('abc'), 3)).resolves.toEqual(Buffer.from('abc'))
    await expect(decompress(CompressionType.Snappy, Buffer.from('abc'), 2)).rejects.toBeInstanceOf(DecompressionLimitError)
    await expect(decompress(CompressionType.Snappy, Buffer.alloc(0), 2)).rejects.toBeInstanceOf(CompressionError)
  })

  it('unknown types are typed errors; none cannot be replaced', () => {
    expect(() => getCodec(5)).toThrow(CompressionError)
    expect(() => decompress(7, Buffer.alloc(1), 10)).toThrow(CompressionError)
    expect(() => registerCodec(CompressionType.None, original)).toThrow(TypeError)
  })
})
