import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { crc32c, crc32cNative } from '@tidelog/protocol'
import { crc32cJs } from '../src/records/crc32c.js'
import { kafkajsCrc32C } from './golden-records/kafkajs.js'

describe('crc32c', () => {
  // RFC 3720 appendix B.4 test vectors, plus the classic check value.
  it('matches the RFC 3720 vectors', () => {
    expect(crc32c(Buffer.from('123456789'))).toBe(0xe3069283)
    expect(crc32c(new Uint8Array(32))).toBe(0x8a9136aa)
    expect(crc32c(new Uint8Array(32).fill(0xff))).toBe(0x62a8ab43)
    expect(crc32c(Uint8Array.from({ length: 32 }, (_, i) => i))).toBe(0x46dd794e)
    expect(crc32c(Uint8Array.from({ length: 32 }, (_, i) => 31 - i))).toBe(0x113fdb5c)
    const iscsiRead = Buffer.from(
      '01c00000000000000000000000000000' + '14000000000004000000001400000018' + '28000000000000000200000000000000',
      'hex',
    )
    expect(crc32c(iscsiRead)).toBe(0xd9963a56)
    expect(crc32c(new Uint8Array(0))).toBe(0)
  })

  it('agrees with kafkajs on random data of every length around the 16-byte stride', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 300 }), (data) => {
        expect(crc32c(data)).toBe(kafkajsCrc32C(Buffer.from(data)))
      }),
      { numRuns: 2000 },
    )
  })

  it('honours start/end and continues from a seed', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 200 }), fc.nat(), fc.nat(), (data, a, b) => {
        const s = data.length === 0 ? 0 : a % (data.length + 1)
        const e = s + (data.length === 0 ? 0 : b % (data.length - s + 1))
        expect(crc32c(data, s, e)).toBe(kafkajsCrc32C(Buffer.from(data.subarray(s, e))))
        expect(crc32c(data, e, data.length, crc32c(data, 0, e))).toBe(crc32c(data))
      }),
      { numRuns: 1000 },
    )
  })

  it('the JS version and the native one (when installed) agree on large, unaligned ranges', () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 500, maxLength: 5000 }), fc.nat(40), fc.nat(40), fc.nat(), (data, a, b, seed) => {
        const e = data.length - b
        expect(crc32cJs(data, a, e, seed)).toBe(crc32c(data, a, e, seed))
        expect(crc32cJs(data, a, e)).toBe(kafkajsCrc32C(Buffer.from(data.subarray(a, e))))
      }),
      { numRuns: 300 },
    )
    // Recorded so a run without the optional module shows in the output.
    console.log(`crc32c: native module ${crc32cNative ? 'in use' : 'absent, JS only'}`)
  })

  it('clamps bounds past the buffer', () => {
    const b = Buffer.from('123456789')
    expect(crc32c(b, -5, 100)).toBe(0xe3069283)
  })
})
