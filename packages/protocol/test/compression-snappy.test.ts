import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import snappyjs from 'snappyjs'
import { CompressionType, decodeRecordBatch, encodeRecordBatch, getCodec } from '@tidelog/protocol'
import { snappyCompressRaw, snappyMaxCompressedLength } from '../src/records/codecs/snappy-compress.js'

const codec = getCodec(CompressionType.Snappy)

/** Every element of a raw snappy block, checked against the format's limits; returns the bytes it produces. */
function walk(c: Uint8Array): number {
  let pos = 0
  let declared = 0
  for (let shift = 0; ; shift += 7) {
    const b = c[pos++]!
    declared += (b & 0x7f) * 2 ** shift
    if (b < 0x80) break
  }
  let produced = 0
  while (pos < c.length) {
    const tag = c[pos++]!
    const kind = tag & 3
    if (kind === 0) {
      let len = (tag >>> 2) + 1
      if (len > 60) {
        const extra = len - 60
        expect(extra).toBeLessThanOrEqual(2)
        len = 1 + (extra === 1 ? c[pos]! : c[pos]! | (c[pos + 1]! << 8))
        pos += extra
      }
      pos += len
      produced += len
    } else if (kind === 1) {
      const offset = ((tag >>> 5) << 8) | c[pos++]!
      expect(offset).toBeGreaterThan(0)
      produced += ((tag >>> 2) & 7) + 4
    } else {
      // We never write copy-4 elements: blocks are 64 KiB, so offsets fit two bytes.
      expect(kind).toBe(2)
      const offset = c[pos]! | (c[pos + 1]! << 8)
      expect(offset).toBeGreaterThan(0)
      expect(offset).toBeLessThan(65536)
      pos += 2
      produced += (tag >>> 2) + 1
    }
  }
  expect(pos).toBe(c.length)
  expect(produced).toBe(declared)
  return produced
}

describe('snappy compressor', () => {
  it('round-trips through snappyjs and our decoder, within the worst-case bound', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 5000 }), fc.nat(40), fc.nat(255), (data, rep, fill) => {
        const input = Buffer.concat([Buffer.from(data), Buffer.alloc(rep * 17, fill), Buffer.from(data), Buffer.from(data.subarray(3))])
        const c = snappyCompressRaw(input)
        expect(c.length).toBeLessThanOrEqual(snappyMaxCompressedLength(input.length))
        expect(walk(c)).toBe(input.length)
        expect(Buffer.from(snappyjs.uncompress(c)).equals(input)).toBe(true)
        expect(Buffer.from(codec.decompress(c, input.length) as Uint8Array).equals(input)).toBe(true)
      }),
      { numRuns: 400 },
    )
  })

  it('handles inputs across 64 KiB blocks, long runs and incompressible data', () => {
    const random = Buffer.alloc(200_003)
    let x = 12345
    for (let i = 0; i < random.length; i++) random[i] = (x = (Math.imul(x, 1103515245) + 12345) >>> 0) >>> 24
    const text = Buffer.from('the quick brown fox jumps over the lazy dog '.repeat(5000))
    const cases = [
      Buffer.alloc(0),
      Buffer.from('a'),
      Buffer.alloc(15, 1),
      Buffer.alloc(16, 1),
      Buffer.alloc(65536, 0),
      Buffer.alloc(65537, 9),
      Buffer.alloc(300_000, 0x41),
      random,
      text,
      Buffer.concat([random.subarray(0, 70_000), text, random.subarray(0, 70_000)]),
    ]
    for (const input of cases) {
      const c = snappyCompressRaw(input)
      expect(c.length).toBeLessThanOrEqual(snappyMaxCompressedLength(input.length))
      expect(walk(c)).toBe(input.length)
      expect(Buffer.from(snappyjs.uncompress(c)).equals(input)).toBe(true)
    }
    // Repetitive input must actually compress.
    expect(snappyCompressRaw(Buffer.alloc(300_000, 0x41)).length).toBeLessThan(300_000 / 20)
    expect(snappyCompressRaw(text).length).toBeLessThan(text.length / 4)
  })

  it('compresses a view into a larger buffer without reading outside it', () => {
    const big = Buffer.from('0123456789abcdef'.repeat(1000))
    const view = new Uint8Array(big.buffer, big.byteOffset + 5, 4000)
    const c = snappyCompressRaw(view)
    expect(Buffer.from(snappyjs.uncompress(c)).equals(Buffer.from(view))).toBe(true)
  })

  it('writes record batches that decode to the same records', () => {
    const records = Array.from({ length: 1000 }, (_, i) => ({ key: Buffer.from(`key-${i}`), value: Buffer.from(`value ${i} `.repeat(10)) }))
    const batch = encodeRecordBatch({ records, compression: CompressionType.Snappy })
    const back = decodeRecordBatch(batch).toArray()
    expect(back.length).toBe(1000)
    expect(Buffer.from(back[999]!.value!).equals(records[999]!.value)).toBe(true)
  })
})
