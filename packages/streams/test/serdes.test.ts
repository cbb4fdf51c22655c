import { describe, expect, it } from 'vitest'
import { Serdes } from '../src/index.js'

const L = Serdes.Long() as unknown as { serialize(v: number | bigint): Buffer; deserialize(b: Buffer): number | bigint }
const javaLong = (v: bigint) => {
  const b = Buffer.alloc(8)
  b.writeBigInt64BE(v)
  return b
}

describe('Serdes.Long (Java LongSerializer bytes)', () => {
  // The 32-bit-halves fast path must write and read exactly what BigInt does, signs and carries included.
  const numbers = [0, 1, -1, 2 ** 31, -(2 ** 31), 2 ** 32 - 1, 2 ** 32, -(2 ** 32), -(2 ** 32) + 1, 123456789012, -98765432109, Number.MAX_SAFE_INTEGER, Number.MIN_SAFE_INTEGER]

  it.each(numbers)('%d round-trips in big-endian two\'s complement', (v) => {
    expect(L.serialize(v).equals(javaLong(BigInt(v)))).toBe(true)
    expect(L.deserialize(javaLong(BigInt(v)))).toBe(v)
  })

  it('values outside the safe range come back as bigint, exactly', () => {
    for (const v of [2n ** 53n, -(2n ** 53n), 2n ** 53n + 1n, 2n ** 63n - 1n, -(2n ** 63n)]) {
      expect(L.deserialize(javaLong(v))).toBe(v)
      expect(L.serialize(v).equals(javaLong(v))).toBe(true)
    }
  })

  it('rejects what Java rejects', () => {
    expect(() => L.deserialize(Buffer.alloc(7))).toThrow('Size of data received by LongDeserializer is not 8 (got 7)')
    expect(() => L.serialize(1.5)).toThrow(TypeError)
    expect(() => L.serialize(2 ** 53)).toThrow(TypeError)
  })
})
