import { afterAll, describe, expect, it } from 'vitest'
import { DEFAULT_MAX_FRAME_BYTES, FrameDecoder, FrameTooLargeError } from '@tidelog/protocol'
import { fuzz, iterations, watchdog } from './harness.js'
import { mutate, type LengthField } from './mutate.js'
import type { Prng } from './prng.js'

afterAll(() => watchdog.stop())

const MAXES = [0, 1, 16, 1024, 65536, DEFAULT_MAX_FRAME_BYTES]
const onlyFrameErrors = (e: unknown): boolean => e instanceof FrameTooLargeError

/** Feeds `input` in chunks cut at `cuts`, then checks what came out against the input itself. */
function feed(input: Buffer, cuts: number[], max: number): void {
  const d = new FrameDecoder({ maxFrameBytes: max })
  const frames: Buffer[] = []
  let last = 0
  for (const c of [...cuts, input.length]) {
    for (const f of d.push(input.subarray(last, c))) frames.push(f)
    last = c
  }
  // Everything taken in is either a returned frame (prefix + body) or pending: the
  // frames, re-prefixed, must be exactly the input's leading bytes.
  let at = 0
  for (const f of frames) {
    if (f.length > max) throw new Error(`frame of ${f.length} bytes passed a max of ${max}`)
    if (input.readInt32BE(at) !== f.length) throw new Error(`frame at ${at} has the wrong length`)
    if (!input.subarray(at + 4, at + 4 + f.length).equals(f)) throw new Error(`frame at ${at} has the wrong bytes`)
    at += 4 + f.length
  }
  if (at + d.pending !== input.length) throw new Error(`${at} framed + ${d.pending} pending != ${input.length} fed`)
}

function cutsFor(rng: Prng, n: number): number[] {
  const k = rng.int(6)
  const cuts: number[] = []
  for (let i = 0; i < k; i++) cuts.push(rng.int(n + 1))
  return cuts.sort((a, b) => a - b)
}

function frameStream(rng: Prng): { bytes: Buffer; lengths: LengthField[] } {
  const parts: Buffer[] = []
  const lengths: LengthField[] = []
  let at = 0
  for (let k = rng.range(1, 5); k > 0; k--) {
    const body = rng.bytes(rng.size(300))
    const prefix = Buffer.allocUnsafe(4)
    prefix.writeInt32BE(body.length, 0)
    lengths.push({ offset: at, kind: 'int32', size: 4 })
    parts.push(prefix, body)
    at += 4 + body.length
  }
  return { bytes: Buffer.concat(parts), lengths }
}

describe('fuzz: FrameDecoder', () => {
  it('random byte streams in random chunks: typed errors only, frames and pending account for every byte', () => {
    let cuts: number[] = []
    let max = DEFAULT_MAX_FRAME_BYTES
    const stats = fuzz({
      name: 'frame/random',
      iterations: iterations(50_000),
      input(rng) {
        const b = rng.bytes(rng.size(2048))
        // Mostly-small lengths so that real frames come out too, not only rejections.
        if (b.length >= 4 && rng.chance(0.5)) b.writeInt32BE(rng.int(b.length), 0)
        cuts = cutsFor(rng, b.length)
        max = rng.pick(MAXES)
        return b
      },
      run: (input) => feed(input, cuts, max),
      allowed: onlyFrameErrors,
    })
    expect(stats.inputs).toBe(iterations(50_000))
    expect(stats.decoded).toBeGreaterThan(stats.inputs / 10)
    expect(stats.rejected).toBeGreaterThan(stats.inputs / 10)
  })

  it('mutated valid frame streams in random chunks', () => {
    let cuts: number[] = []
    let max = DEFAULT_MAX_FRAME_BYTES
    const stats = fuzz({
      name: 'frame/mutated',
      iterations: iterations(50_000),
      input(rng) {
        const b = rng.chance(0.1) ? frameStream(rng).bytes : mutate(rng, frameStream(rng))
        cuts = cutsFor(rng, b.length)
        max = rng.chance(0.7) ? DEFAULT_MAX_FRAME_BYTES : rng.pick(MAXES)
        return b
      },
      run: (input) => feed(input, cuts, max),
      allowed: onlyFrameErrors,
    })
    expect(stats.decoded).toBeGreaterThan(stats.inputs / 10)
    expect(stats.rejected).toBeGreaterThan(stats.inputs / 20)
  })

  it('huge and negative announced lengths cost nothing before their bytes arrive', () => {
    const hostile = [-1, -2, -0x80000000, 0x7fffffff, DEFAULT_MAX_FRAME_BYTES + 1, DEFAULT_MAX_FRAME_BYTES, 0x4000000]
    let cuts: number[] = []
    const stats = fuzz({
      name: 'frame/huge-lengths',
      iterations: iterations(20_000),
      input(rng) {
        const b = rng.bytes(4 + rng.size(64))
        b.writeInt32BE(rng.pick(hostile), 0)
        cuts = cutsFor(rng, b.length)
        return b
      },
      run: (input) => feed(input, cuts, DEFAULT_MAX_FRAME_BYTES),
      allowed: onlyFrameErrors,
    })
    // Announced frames of 64-100 MiB whose bodies never arrive are held as what was received.
    expect(stats.maxExternalGrowth).toBeLessThan(1024 * 1024)
    expect(stats.decoded).toBeGreaterThan(0)
    expect(stats.rejected).toBeGreaterThan(0)
  })
})
