import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { DEFAULT_MAX_FRAME_BYTES, FrameDecoder, FrameTooLargeError } from '@tidelog/protocol'

function frame(body: Uint8Array): Buffer {
  const b = Buffer.allocUnsafe(4 + body.length)
  b.writeInt32BE(body.length, 0)
  b.set(body, 4)
  return b
}

function lengthOnly(n: number): Buffer {
  const b = Buffer.alloc(4)
  b.writeInt32BE(n, 0)
  return b
}

/** Splits `data` at the given cut points (any order, duplicates allowed). */
function split(data: Buffer, cuts: number[]): Buffer[] {
  const points = [...new Set(cuts.map((c) => c % (data.length + 1)))].sort((a, b) => a - b)
  const chunks: Buffer[] = []
  let last = 0
  for (const p of points) {
    chunks.push(data.subarray(last, p))
    last = p
  }
  chunks.push(data.subarray(last))
  return chunks
}

describe('FrameDecoder', () => {
  it('defaults to Kafka socket.request.max.bytes', () => {
    expect(DEFAULT_MAX_FRAME_BYTES).toBe(104857600)
    expect(new FrameDecoder().maxFrameBytes).toBe(104857600)
  })

  it('returns whole frames in a chunk as views into it, without copying', () => {
    const a = Buffer.from('hello')
    const b = Buffer.from('kafka!')
    const chunk = Buffer.concat([frame(a), frame(b), frame(Buffer.alloc(0))])
    const d = new FrameDecoder()
    const out = d.push(chunk)
    expect(out.map((f) => f.toString())).toEqual(['hello', 'kafka!', ''])
    expect(out[0]!.buffer).toBe(chunk.buffer)
    expect(out[0]!.byteOffset).toBe(chunk.byteOffset + 4)
    expect(out[1]!.byteOffset).toBe(chunk.byteOffset + 13)
    expect(d.pending).toBe(0)
  })

  it('accepts plain Uint8Array chunks', () => {
    const d = new FrameDecoder()
    const f = frame(Buffer.from('xyz'))
    const u8 = new Uint8Array(f)
    const out = d.push(u8)
    expect(out).toHaveLength(1)
    expect(Buffer.isBuffer(out[0])).toBe(true)
    expect(out[0]!.toString()).toBe('xyz')
  })

  it('reassembles a frame fed one byte at a time and reports pending bytes', () => {
    const body = Buffer.from('0123456789abcdef')
    const data = frame(body)
    const d = new FrameDecoder()
    for (let i = 0; i < data.length - 1; i++) {
      expect(d.push(data.subarray(i, i + 1))).toEqual([])
      expect(d.pending).toBe(i + 1)
    }
    const out = d.push(data.subarray(data.length - 1))
    expect(out).toHaveLength(1)
    expect(out[0]!.equals(body)).toBe(true)
    expect(d.pending).toBe(0)
  })

  it('assembles a frame spanning chunks into one buffer of exactly its size', () => {
    const body = Buffer.alloc(200_000)
    for (let i = 0; i < body.length; i++) body[i] = (i * 31) & 0xff
    const data = frame(body)
    const d = new FrameDecoder()
    const chunks = [data.subarray(0, 3), data.subarray(3, 10), data.subarray(10, 70_000), data.subarray(70_000, 70_001), data.subarray(70_001)]
    const out = chunks.flatMap((c) => d.push(c))
    expect(out).toHaveLength(1)
    expect(out[0]!.length).toBe(body.length)
    expect(out[0]!.equals(body)).toBe(true)
    // The assembled frame must not alias any chunk: the caller may keep it after chunks are gone.
    expect(out[0]!.buffer).not.toBe(data.buffer)
  })

  it('keeps frames order and completes several frames in one push after a split', () => {
    const bodies = ['a', 'bb', 'ccc', 'dddd'].map((s) => Buffer.from(s))
    const data = Buffer.concat(bodies.map(frame))
    const d = new FrameDecoder()
    expect(d.push(data.subarray(0, 6))).toEqual([Buffer.from('a')])
    expect(d.push(data.subarray(6)).map(String)).toEqual(['bb', 'ccc', 'dddd'])
  })

  it('rejects a length above the maximum from the 4 length bytes alone', () => {
    const d = new FrameDecoder()
    const before = process.memoryUsage().arrayBuffers
    expect(() => d.push(lengthOnly(0x7fffffff))).toThrow(FrameTooLargeError)
    expect(process.memoryUsage().arrayBuffers - before).toBeLessThan(1 << 20)
    try {
      new FrameDecoder().push(lengthOnly(0x7fffffff))
    } catch (e) {
      expect(e).toBeInstanceOf(FrameTooLargeError)
      expect((e as FrameTooLargeError).size).toBe(0x7fffffff)
      expect((e as FrameTooLargeError).max).toBe(DEFAULT_MAX_FRAME_BYTES)
      expect((e as FrameTooLargeError).retriable).toBe(false)
    }
  })

  it('rejects negative lengths, also when the prefix is split', () => {
    expect(() => new FrameDecoder().push(lengthOnly(-1))).toThrow(FrameTooLargeError)
    const d = new FrameDecoder()
    const neg = lengthOnly(-2147483648)
    expect(d.push(neg.subarray(0, 1))).toEqual([])
    expect(d.push(neg.subarray(1, 3))).toEqual([])
    expect(() => d.push(neg.subarray(3))).toThrow(/invalid frame length -2147483648/)
  })

  it('honours a custom maximum exactly', () => {
    const d = new FrameDecoder({ maxFrameBytes: 8 })
    expect(d.push(frame(Buffer.alloc(8)))).toHaveLength(1)
    expect(() => d.push(lengthOnly(9))).toThrow(FrameTooLargeError)
    expect(() => new FrameDecoder({ maxFrameBytes: -1 })).toThrow(RangeError)
    expect(() => new FrameDecoder({ maxFrameBytes: 2 ** 31 })).toThrow(RangeError)
  })

  it('stays failed after a bad length until reset', () => {
    const d = new FrameDecoder({ maxFrameBytes: 16 })
    expect(() => d.push(Buffer.concat([frame(Buffer.from('ok')), lengthOnly(17)]))).toThrow(FrameTooLargeError)
    expect(() => d.push(frame(Buffer.from('later')))).toThrow(FrameTooLargeError)
    d.reset()
    expect(d.push(frame(Buffer.from('later'))).map(String)).toEqual(['later'])
  })

  it('reset drops a partial frame', () => {
    const d = new FrameDecoder()
    d.push(frame(Buffer.from('partial')).subarray(0, 6))
    expect(d.pending).toBe(6)
    d.reset()
    expect(d.pending).toBe(0)
    expect(d.push(frame(Buffer.from('next'))).map(String)).toEqual(['next'])
  })

  it('holds memory in proportion to bytes received, not to the announced size', () => {
    const d = new FrameDecoder()
    const before = process.memoryUsage().arrayBuffers
    d.push(lengthOnly(DEFAULT_MAX_FRAME_BYTES))
    for (let i = 0; i < 100; i++) d.push(Buffer.from([i]))
    expect(d.pending).toBe(104)
    expect(process.memoryUsage().arrayBuffers - before).toBeLessThan(1 << 20)
  })

  it('property: random frames split at random points come back identical and in order', () => {
    fc.assert(
      fc.property(
        fc.array(fc.uint8Array({ maxLength: 3000 }), { maxLength: 12 }),
        fc.array(fc.nat(), { maxLength: 40 }),
        (bodies, cuts) => {
          const data = Buffer.concat(bodies.map(frame))
          const d = new FrameDecoder()
          const out: Buffer[] = []
          for (const c of split(data, cuts)) out.push(...d.push(c))
          expect(out.length).toBe(bodies.length)
          for (let i = 0; i < bodies.length; i++) expect(out[i]!.equals(bodies[i]!)).toBe(true)
          expect(d.pending).toBe(0)
        },
      ),
      { numRuns: 500 },
    )
  })

  it('property: an incomplete tail is reported as pending and completes later', () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 1, maxLength: 40_000 }), fc.nat(), (body, cut) => {
        const data = frame(body)
        const at = cut % data.length
        const d = new FrameDecoder()
        expect(d.push(data.subarray(0, at))).toEqual([])
        expect(d.pending).toBe(at)
        const out = d.push(data.subarray(at))
        expect(out).toHaveLength(1)
        expect(out[0]!.equals(body)).toBe(true)
      }),
      { numRuns: 300 },
    )
  })
})
