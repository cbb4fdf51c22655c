import { afterAll, describe, expect, it } from 'vitest'
import { DecodeError } from '@tidelog/protocol'
import { fuzz, MAX_MS_PER_INPUT, watchdog } from './harness.js'
import { Prng, seedFor } from './prng.js'
import { hostileLength, mutate } from './mutate.js'

afterAll(() => watchdog.stop())

// The fuzz suites are only as good as the harness's ability to fail: each check is
// shown to fire on a decoder that misbehaves in exactly that way.
describe('fuzz harness', () => {
  const input = (rng: Prng) => rng.bytes(rng.size(32))

  it('passes typed errors and reports their counts', () => {
    const stats = fuzz({
      name: 'self/typed',
      iterations: 200,
      input,
      run: (b) => {
        if (b.length % 2 === 1) throw new DecodeError('odd', 0)
      },
    })
    expect(stats.inputs).toBe(200)
    expect(stats.decoded + stats.rejected).toBe(200)
    expect(stats.rejected).toBeGreaterThan(0)
  })

  it('fails on an untyped error, naming the target, input number and seed', () => {
    expect(() =>
      fuzz({
        name: 'self/untyped',
        iterations: 200,
        input,
        run: (b) => {
          if (b.length > 3) (undefined as unknown as { x: number }).x
        },
      }),
    ).toThrow(/untyped error from fuzz target "self\/untyped", input #\d+ \(replay: FUZZ_SEED=\d+/)
  })

  it('fails when one decode allocates far more than its input justifies', () => {
    expect(() =>
      fuzz({
        name: 'self/alloc',
        iterations: 50,
        input,
        run: (b) => {
          if (b.length > 0 && b[0]! > 200) Buffer.alloc(64 * 1024 * 1024)
        },
      }),
    ).toThrow(/grew external memory by \d+ bytes/)
  })

  it('fails when one decode builds a huge JS structure', () => {
    expect(() =>
      fuzz({
        name: 'self/heap',
        iterations: 50,
        // Building the structure takes time on a loaded machine; this test is about the heap check.
        maxMsPerInput: 60_000,
        input,
        run: (b) => {
          if (b.length > 0 && b[0]! > 200) {
            const a: number[] = []
            for (let i = 0; i < 4_000_000; i++) a.push(i + 0.5)
            if (a.length === 0) throw new Error('unreachable')
          }
        },
      }),
    ).toThrow(/grew the heap by \d+ bytes/)
  })

  it('fails when one input takes too long', () => {
    expect(() =>
      fuzz({
        name: 'self/slow',
        iterations: 5,
        input,
        run: () => {
          const until = performance.now() + MAX_MS_PER_INPUT + 20
          while (performance.now() < until);
        },
      }),
    ).toThrow(/ms for one input/)
  })

  it('is reproducible from its seed', () => {
    const a = new Prng(seedFor('x', 1))
    const b = new Prng(seedFor('x', 1))
    const seed = { bytes: Buffer.from('0123456789abcdef0123456789'), lengths: [{ offset: 2, kind: 'int32' as const, size: 4 }] }
    const outputs = new Set<string>()
    for (let i = 0; i < 100; i++) {
      const x = Buffer.from(mutate(a, seed))
      expect(mutate(b, seed).equals(x)).toBe(true)
      outputs.add(x.toString('hex'))
    }
    expect(outputs.size).toBeGreaterThan(50)
    expect(new Prng(seedFor('x', 1)).u32()).not.toBe(new Prng(seedFor('y', 1)).u32())
  })

  it('aims hostile lengths at the declared length fields', () => {
    const rng = new Prng(7)
    const seed = { bytes: Buffer.from([0, 0, 0, 3, 1, 2, 3]), lengths: [{ offset: 0, kind: 'int32' as const, size: 4 }] }
    const seen = new Set<number>()
    for (let i = 0; i < 200; i++) seen.add(hostileLength(rng, seed).readInt32BE(0))
    expect(seen).toContain(-1)
    expect(seen).toContain(0x7fffffff)
    expect(seen).toContain(-0x80000000)
  })
})
