import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { DecodeError, Reader, Writer, ZERO_UUID, randomUuid } from '@tidelog/protocol'

const hex = (b: Uint8Array) => Buffer.from(b).toString('hex')

describe('varints', () => {
  // Vectors from Kafka's ByteUtilsTest (zigzag varint / varlong encodings).
  const varints: [number, string][] = [
    [0, '00'], [-1, '01'], [1, '02'], [63, '7e'], [-64, '7f'], [64, '8001'], [-65, '8101'],
    [8191, 'fe7f'], [-8192, 'ff7f'], [8192, '808001'], [-8193, '818001'],
    [1048575, 'feff7f'], [-1048576, 'ffff7f'], [1048576, '80808001'], [-1048577, '81808001'],
    [134217727, 'feffff7f'], [-134217728, 'ffffff7f'], [134217728, '8080808001'], [-134217729, '8180808001'],
    [2147483647, 'feffffff0f'], [-2147483648, 'ffffffff0f'],
  ]
  it.each(varints)('varint %d encodes as %s and back', (v, h) => {
    const w = new Writer(1)
    w.varint(v)
    expect(hex(w.finish())).toBe(h)
    expect(new Reader(w.finish()).varint()).toBe(v)
    const wl = new Writer(1)
    wl.varlong(BigInt(v))
    expect(hex(wl.finish())).toBe(h)
    expect(new Reader(wl.finish()).varlong()).toBe(BigInt(v))
  })

  it('varlong extremes', () => {
    for (const v of [2n ** 63n - 1n, -(2n ** 63n), 2n ** 35n, -(2n ** 35n) - 1n]) {
      const w = new Writer(1)
      w.varlong(v)
      expect(new Reader(w.finish()).varlong()).toBe(v)
    }
    const w = new Writer(1)
    w.varlong(-(2n ** 63n))
    expect(hex(w.finish())).toBe('ffffffffffffffffff01')
  })

  it('unsigned varint of the largest uint32', () => {
    const w = new Writer(1)
    w.uvarint(0xffffffff)
    expect(hex(w.finish())).toBe('ffffffff0f')
    expect(new Reader(w.finish()).uvarint()).toBe(0xffffffff)
  })

  it('rejects over-long varints with a DecodeError', () => {
    expect(() => new Reader(Buffer.from('ffffffffff01', 'hex')).uvarint()).toThrow(DecodeError)
    expect(() => new Reader(Buffer.from('ffffffff7f', 'hex')).uvarint()).toThrow(DecodeError)
    expect(() => new Reader(Buffer.from('ffffffffffffffffff7f', 'hex')).varlong()).toThrow(DecodeError)
    expect(() => new Reader(Buffer.from('8080', 'hex')).varlong()).toThrow(DecodeError)
  })

  it('property: varint and varlong round-trip', () => {
    fc.assert(
      fc.property(fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }), fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }), (i, l) => {
        const w = new Writer(1)
        w.varint(i).varlong(l).uvarint(i >>> 0)
        const r = new Reader(w.finish())
        expect(r.varint()).toBe(i)
        expect(r.varlong()).toBe(l)
        expect(r.uvarint()).toBe(i >>> 0)
        expect(r.remaining).toBe(0)
      }),
      { numRuns: 2000 },
    )
  })
})

describe('strings, bytes, arrays', () => {
  it('encodes classic and compact forms', () => {
    const w = new Writer(1)
    w.string('ab').nullableString(null).compactString('ab').compactNullableString(null)
    w.bytes(Buffer.from([1])).nullableBytes(null).compactBytes(Buffer.from([1])).compactNullableBytes(null)
    expect(hex(w.finish())).toBe('00026162' + 'ffff' + '036162' + '00' + '0000000101' + 'ffffffff' + '0201' + '00')
    const r = new Reader(w.finish())
    expect(r.string()).toBe('ab')
    expect(r.nullableString()).toBeNull()
    expect(r.compactString()).toBe('ab')
    expect(r.compactNullableString()).toBeNull()
    expect([...r.bytes()]).toEqual([1])
    expect(r.nullableBytes()).toBeNull()
    expect([...r.compactBytes()]).toEqual([1])
    expect(r.compactNullableBytes()).toBeNull()
  })

  it('utf-8 lengths are byte lengths', () => {
    const w = new Writer(1)
    w.string('héllo €')
    expect(w.finish().readInt16BE(0)).toBe(Buffer.byteLength('héllo €'))
    expect(new Reader(w.finish()).string()).toBe('héllo €')
  })

  it('rejects lengths that do not fit before allocating', () => {
    const huge = Buffer.from('7fffffff', 'hex')
    expect(() => new Reader(huge).bytes()).toThrow(DecodeError)
    expect(() => new Reader(huge).arrayLength(false)).toThrow(/cannot fit/)
    expect(() => new Reader(Buffer.from('fffffffe', 'hex')).arrayLength(false)).toThrow(DecodeError)
    expect(() => new Reader(Buffer.from('fffe', 'hex')).nullableString()).toThrow(DecodeError)
    expect(new Reader(Buffer.from('ffffffff', 'hex')).arrayLength(false)).toBe(-1)
    expect(new Reader(Buffer.from('00', 'hex')).arrayLength(true)).toBe(-1)
  })

  it('DecodeError says where and what', () => {
    const r = new Reader(Buffer.from('0001', 'hex'))
    r.int8()
    try {
      r.int32()
      expect.unreachable()
    } catch (e) {
      expect(e).toBeInstanceOf(DecodeError)
      const d = e as DecodeError
      expect(d.offset).toBe(1)
      expect(d.needed).toBe(4)
      expect(d.available).toBe(1)
      expect(d.retriable).toBe(false)
    }
  })
})

describe('uuid and tagged fields', () => {
  it('uuid round-trips in Kafka base64url form', () => {
    const id = randomUuid()
    expect(id).toHaveLength(22)
    const w = new Writer(1)
    w.uuid(id).uuid(ZERO_UUID)
    const r = new Reader(w.finish())
    expect(r.uuid()).toBe(id)
    expect(r.uuid()).toBe(ZERO_UUID)
    expect(hex(w.finish().subarray(16))).toBe('00'.repeat(16))
  })

  it('keeps unknown tags and hands known ones to the caller', () => {
    const w = new Writer(1)
    w.taggedFields([{ tag: 5, data: Buffer.from([9, 9]) }, { tag: 0, data: Buffer.from([7]) }])
    expect(hex(w.finish())).toBe('02' + '000107' + '05020909')
    let seen = -1
    const unknown = new Reader(w.finish()).taggedFields((tag, r) => {
      if (tag !== 0) return false
      seen = r.int8()
      return true
    })
    expect(seen).toBe(7)
    expect(unknown).toEqual([{ tag: 5, data: Buffer.from([9, 9]) }])
  })

  it('rejects out-of-order and oversized tags', () => {
    expect(() => new Reader(Buffer.from('02050100' + '000100', 'hex')).taggedFields()).toThrow(DecodeError)
    expect(() => new Reader(Buffer.from('0100ff0f', 'hex')).taggedFields()).toThrow(DecodeError)
  })
})
