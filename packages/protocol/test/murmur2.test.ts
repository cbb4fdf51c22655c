import { createRequire } from 'node:module'
import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { murmur2, murmur2Partition } from '@tidelog/protocol'

const require = createRequire(import.meta.url)
const kafkajsMurmur2 = require('kafkajs/src/producer/partitioners/default/murmur2.js') as (k: Buffer | string) => number

describe('murmur2', () => {
  // Kafka's UtilsTest.testMurmur2 vectors.
  it.each([
    ['21', -973932308],
    ['foobar', -790332482],
    ['a-little-bit-long-string', -985981536],
    ['a-little-bit-longer-string', -1486304829],
    ['lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8', -58897971],
    ['abc', 479470107],
  ])('%s -> %d', (key, hash) => {
    expect(murmur2(key)).toBe(hash)
    expect(murmur2(Buffer.from(key))).toBe(hash)
    expect(murmur2(new Uint8Array(Buffer.from(key)))).toBe(hash)
  })

  it('equals kafkajs (Java-compatible) for 10,000 random keys, strings and bytes, ASCII and not', () => {
    let n = 0
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string({ maxLength: 40 }),
          fc.string({ unit: 'grapheme', maxLength: 20 }),
          fc.string({ unit: 'binary', maxLength: 20 }),
          fc.uint8Array({ maxLength: 64 }).map((a) => Buffer.from(a)),
        ),
        (key) => {
          n++
          expect(murmur2(key)).toBe(kafkajsMurmur2(key))
        },
      ),
      { numRuns: 10_000 },
    )
    expect(n).toBe(10_000)
  })

  it('handles long non-ASCII strings (scratch growth)', () => {
    const key = 'ключ-🔑-'.repeat(500)
    expect(murmur2(key)).toBe(kafkajsMurmur2(key))
    expect(murmur2('')).toBe(kafkajsMurmur2(''))
  })

  it('partitions as (hash & 0x7fffffff) % n', () => {
    expect(murmur2Partition('21', 7)).toBe((-973932308 & 0x7fffffff) % 7)
    for (let n = 1; n < 50; n++) {
      const p = murmur2Partition('foobar', n)
      expect(p).toBeGreaterThanOrEqual(0)
      expect(p).toBeLessThan(n)
    }
    expect(() => murmur2Partition('x', 0)).toThrow(RangeError)
  })
})
