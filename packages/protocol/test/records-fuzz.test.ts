// Hostile input: random and mutated bytes into every record-batch decoder and
// every codec's decompress. Only typed errors may come out (TidelogError and its
// subclasses), nothing may hang, and no call may allocate more than its input
// and the cap justify (measured through process.memoryUsage().arrayBuffers,
// which counts every ArrayBuffer backing store until it is collected).
import { describe, expect, it } from 'vitest'
import * as zlib from 'node:zlib'
import {
  CompressionType,
  TidelogError,
  crc32c,
  decodeRecordBatch,
  decodeRecordBatches,
  encodeRecordBatch,
  getCodec,
  iterateBatches,
  validateRecordBatch,
  type RecordBatch,
} from '@tidelog/protocol'
import { crc32 } from '../src/records/crc32.js'

// A run takes tens of seconds on a loaded machine; vitest's worker must still answer its
// runner's calls (60 s timeout), so the loops give the event loop a turn now and then.
const yieldToEventLoop = () => new Promise<void>((resolve) => setImmediate(resolve))

const SEED = Number(process.env.FUZZ_SEED ?? 0x5eed)
const CAP = 256 * 1024

/** xorshift32: deterministic, so a failure can be replayed with FUZZ_SEED. */
function rng(seed: number) {
  let s = seed | 0 || 1
  const next = () => {
    s ^= s << 13
    s ^= s >>> 17
    s ^= s << 5
    return s >>> 0
  }
  return { next, int: (n: number) => next() % n, bool: () => (next() & 1) === 1 }
}
type Rng = ReturnType<typeof rng>

const INTERESTING = [0, 1, -1, 0x7f, 0x80, 0xff, 0x7fff, 0x8000, 0x7fffffff, -0x80000000, 0x3fffffff]

function mutate(r: Rng, input: Buffer): Buffer {
  let b = Buffer.from(input)
  const rounds = 1 + r.int(4)
  for (let k = 0; k < rounds; k++) {
    if (b.length === 0) return Buffer.from([r.int(256)])
    switch (r.int(7)) {
      case 0:
        b[r.int(b.length)] = r.int(256)
        break
      case 1:
        b[r.int(b.length)]! ^= 1 << r.int(8)
        break
      case 2: {
        if (b.length < 4) break
        const at = r.int(b.length - 3)
        b.writeInt32BE(INTERESTING[r.int(INTERESTING.length)]! | 0, at)
        break
      }
      case 3:
        b = b.subarray(0, r.int(b.length))
        break
      case 4: {
        const at = r.int(b.length)
        b = Buffer.concat([b.subarray(0, at), Buffer.from(Array.from({ length: 1 + r.int(8) }, () => r.int(256))), b.subarray(at)])
        break
      }
      case 5: {
        const at = r.int(b.length)
        b = Buffer.concat([b.subarray(0, at), b.subarray(Math.min(b.length, at + 1 + r.int(8)))])
        break
      }
      case 6: {
        // varint-looking garbage: a run of continuation bytes
        const at = r.int(b.length)
        for (let i = at; i < Math.min(b.length, at + 1 + r.int(10)); i++) b[i] = 0x80 | r.int(128)
        break
      }
    }
  }
  return b
}

/** Re-seal a mutated buffer so the mutation gets past the checksums into the parsers. */
function reseal(b: Buffer): Buffer {
  if (b.length >= 61 && b[16] === 2) b.writeUInt32BE(crc32c(b, 21, Math.min(b.length, 12 + Math.max(0, b.readInt32BE(8)))), 17)
  else if (b.length >= 17 && (b[16] === 0 || b[16] === 1)) b.writeUInt32BE(crc32(b, 16, Math.min(b.length, 12 + Math.max(0, b.readInt32BE(8)))), 12)
  return b
}

function touch(batch: RecordBatch): number {
  let n = 0
  for (const rec of batch) {
    n += (rec.key?.length ?? 0) + (rec.value?.length ?? 0) + rec.headers.length + Number(rec.offset & 1n) + Number(rec.timestamp & 1n)
  }
  return n + batch.toArray().length
}

function legacy(magic: 0 | 1, offset: bigint, attributes: number, key: Buffer | null, value: Buffer | null): Buffer {
  const len = (x: Buffer | null) => {
    const l = Buffer.alloc(4)
    l.writeInt32BE(x === null ? -1 : x.length)
    return l
  }
  const ts = Buffer.alloc(magic === 1 ? 8 : 0)
  if (magic === 1) ts.writeBigInt64BE(1_700_000_000_000n)
  const body = Buffer.concat([Buffer.from([magic, attributes]), ts, len(key), key ?? Buffer.alloc(0), len(value), value ?? Buffer.alloc(0)])
  const head = Buffer.alloc(16)
  head.writeBigInt64BE(offset)
  head.writeInt32BE(body.length + 4, 8)
  head.writeUInt32BE(crc32(body), 12)
  return Buffer.concat([head, body])
}

function corpus(): Buffer[] {
  const recs = (n: number) =>
    Array.from({ length: n }, (_, i) => ({
      key: i % 3 === 0 ? null : `key-${i}`,
      value: i % 5 === 0 ? null : Buffer.alloc(i * 7, i),
      headers: i % 2 ? [{ key: `h${i}`, value: i % 4 ? 'x' : null }] : undefined,
      timestamp: 1_700_000_000_000 + i * 1000,
    }))
  const out: Buffer[] = []
  for (const compression of ['none', 'gzip', 'snappy', 'lz4'] as const) {
    out.push(encodeRecordBatch({ records: recs(1), compression }))
    out.push(encodeRecordBatch({ records: recs(12), compression, producerId: 5n, baseSequence: 3, isTransactional: true }))
  }
  const inner = Buffer.concat([legacy(1, 0n, 0, Buffer.from('a'), Buffer.from('1')), legacy(1, 1n, 0, null, Buffer.from('2'))])
  out.push(legacy(0, 3n, 0, Buffer.from('k'), Buffer.from('v')))
  out.push(legacy(1, 4n, 0, null, Buffer.from('v')))
  out.push(legacy(1, 6n, 1, null, zlib.gzipSync(inner)))
  out.push(legacy(1, 6n, 2, null, Buffer.from(getCodec(CompressionType.Snappy).compress(inner) as Uint8Array)))
  out.push(legacy(1, 6n, 3, null, Buffer.from(getCodec(CompressionType.Lz4).compress(inner) as Uint8Array)))
  out.push(Buffer.concat([out[0]!, out[3]!, out[9]!]))
  return out
}

function expectTyped(f: () => unknown): void {
  try {
    f()
  } catch (e) {
    if (!(e instanceof TidelogError)) throw new Error(`untyped error ${(e as Error)?.constructor?.name}: ${(e as Error)?.message}`, { cause: e })
  }
}

/** Runs f, returning the ArrayBuffer bytes it left allocated (a GC in between can only lower it). */
function allocated(f: () => void): number {
  const before = process.memoryUsage().arrayBuffers
  f()
  return process.memoryUsage().arrayBuffers - before
}

describe('hostile record batches', () => {
  it('the allocation probe sees allocations', () => {
    let keep: Buffer | undefined
    expect(allocated(() => (keep = Buffer.alloc(8 * CAP)))).toBeGreaterThanOrEqual(8 * CAP)
    expect(keep!.length).toBe(8 * CAP)
  })

  it('100,000 mutated and random inputs: typed errors only, bounded time and memory', async () => {
    const r = rng(SEED)
    const seeds = corpus()
    let calls = 0
    let worstMs = 0
    let worstAlloc = 0
    const opts = { maxDecompressedBytes: CAP }
    for (let i = 0; i < 100_000; i++) {
      if (i % 2000 === 0) await yieldToEventLoop()
      let input: Buffer
      if (i % 10 === 0) {
        input = Buffer.from(Array.from({ length: r.int(200) }, () => r.int(256)))
        if (input.length > 17 && r.bool()) input[16] = r.int(3) // plausible magic
        if (input.length > 12 && r.bool()) input.writeInt32BE(input.length - 12, 8) // plausible length
      } else {
        input = mutate(r, seeds[r.int(seeds.length)]!)
      }
      if (r.int(3) > 0) reseal(input)
      const t = performance.now()
      const bytes = allocated(() => {
        expectTyped(() => touch(decodeRecordBatch(input, 0, opts)))
        expectTyped(() => decodeRecordBatches(input, opts).forEach(touch))
        expectTyped(() => validateRecordBatch(input))
        expectTyped(() => [...iterateBatches(input)].length)
      })
      calls += 4
      const ms = performance.now() - t
      if (process.env.FUZZ_DEBUG && ms > 20) console.log('slow', i, ms.toFixed(1), input.length, input.subarray(0, 64).toString('hex'))
      worstMs = Math.max(worstMs, ms)
      // The cap, plus what the decoders may legitimately hold per input byte.
      const allowed = 4 * CAP + 64 * input.length + 256 * 1024
      if (bytes > allowed) throw new Error(`input ${i} allocated ${bytes} bytes (allowed ${allowed}): ${input.toString('hex')}`)
      worstAlloc = Math.max(worstAlloc, bytes)
    }
    expect(calls).toBe(400_000)
    expect(worstMs).toBeLessThan(2000)
    console.log(`record batch fuzz: worst call ${worstMs.toFixed(1)} ms, worst allocation ${worstAlloc} bytes`)
  }, 300_000)
})

describe('hostile compressed payloads', () => {
  const plain = Buffer.concat(
    Array.from({ length: 40 }, (_, i) => Buffer.from(`record ${i} ${'abc'.repeat(i % 9)} ${(i * 7919) % 1000}\n`)),
  )
  const seedsFor = (type: CompressionType): Buffer[] => {
    const c = getCodec(type)
    if (type === CompressionType.Zstd) {
      // `plain` through `zstd -3` (CLI 1.5.4; compressed blocks with Huffman and FSE tables), and a
      // frame of raw blocks (the records.test.ts fixture).
      return [
        Buffer.from(
          [
            '28b52ffd0458f50800828c1d13b0a5d00680ee6c233f4c59d9dd9bf6f8ecc0810113363ff31e5bbbb975a3cf3b44b850',
            '9f78b9bb6c7e1d637b93589bbaa9d2dcc7931ec1cbd8284dd5a23f47e2429bf9c8d32182c51d2258d262dfb439f5e24f',
            '1d221cd92aab4384b2b30e11e8ea3a44381e3b44987476885007a4950a06010360105ca8701292b48535e0222111e901',
            '11203c42584d485298428b019443edbb6075075504e83bd6a288d558afde2c84924d5847dc4ac31da9a3d1808ef67115',
            'dc59d17db0c6413e0196639568912fd681cac23a9763a8919670840ae19e3480987bfc513d73409ef5ac9d209c8289ed',
            '4ddaf2613f7eb058407e0dfb603e834cc03df0029caebbcb85a8a52794620e191a074e47e2bbe0cdb3ce239a5260ec6c',
            '88a1fcc9c32b05f38a3bbf',
          ].join(''),
          'hex',
        ),
        Buffer.from('28b52ffd0458dd0000a0a003000000026b90037a7374642076616c756500010077a54a186368e955', 'hex'),
      ]
    }
    const seeds = [Buffer.from(c.compress(plain) as Uint8Array), Buffer.from(c.compress(Buffer.alloc(0)) as Uint8Array)]
    if (type === CompressionType.Snappy) {
      const raw = seeds[0]!
      const head = Buffer.from([0x82, 0x53, 0x4e, 0x41, 0x50, 0x50, 0x59, 0x00, 0, 0, 0, 1, 0, 0, 0, 1])
      const len = Buffer.alloc(4)
      len.writeInt32BE(raw.length)
      seeds.push(Buffer.concat([head, len, raw, len, raw]))
    }
    return seeds
  }

  it.each([
    ['gzip', CompressionType.Gzip],
    ['snappy', CompressionType.Snappy],
    ['lz4', CompressionType.Lz4],
    ['zstd', CompressionType.Zstd],
  ] as const)('%s: 100,000 mutated and random payloads', async (_n, type) => {
    const r = rng(SEED + type)
    const codec = getCodec(type)
    const seeds = seedsFor(type)
    // The first seed is valid and decodes to `plain`: the mutations start from real streams.
    expect(Buffer.from(codec.decompress(seeds[0]!, CAP) as Uint8Array).equals(plain)).toBe(true)
    let worstMs = 0
    for (let i = 0; i < 100_000; i++) {
      if (i % 2000 === 0) await yieldToEventLoop()
      const input =
        i % 8 === 0 ? Buffer.from(Array.from({ length: r.int(100) }, () => r.int(256))) : mutate(r, seeds[r.int(seeds.length)]!)
      const t = performance.now()
      const bytes = allocated(() => expectTyped(() => codec.decompress(input, CAP)))
      worstMs = Math.max(worstMs, performance.now() - t)
      const allowed = 3 * CAP + 64 * input.length + 256 * 1024
      if (bytes > allowed) throw new Error(`${_n} input ${i} allocated ${bytes} bytes: ${input.toString('hex')}`)
    }
    expect(worstMs).toBeLessThan(2000)
  }, 300_000)
})
