/**
 * sfc32: a small, fast, well-mixed 32-bit generator. Reproducible from one seed,
 * which is what a fuzz failure needs (fast-check's shrinking is too slow for
 * 100k-input loops).
 */
export class Prng {
  private a: number
  private b: number
  private c: number
  private d: number

  constructor(readonly seed: number) {
    this.a = 0x9e3779b9
    this.b = 0x243f6a88
    this.c = 0xb7e15162
    this.d = seed >>> 0
    for (let i = 0; i < 15; i++) this.u32()
  }

  u32(): number {
    const t = (((this.a + this.b) | 0) + this.d) | 0
    this.d = (this.d + 1) | 0
    this.a = this.b ^ (this.b >>> 9)
    this.b = (this.c + (this.c << 3)) | 0
    this.c = (this.c << 21) | (this.c >>> 11)
    this.c = (this.c + t) | 0
    return t >>> 0
  }

  /** Integer in [0, n). */
  int(n: number): number {
    return n <= 0 ? 0 : Math.floor((this.u32() / 0x100000000) * n)
  }

  /** Integer in [lo, hi]. */
  range(lo: number, hi: number): number {
    return lo + this.int(hi - lo + 1)
  }

  chance(p: number): boolean {
    return this.u32() < p * 0x100000000
  }

  pick<T>(items: readonly T[]): T {
    return items[this.int(items.length)]!
  }

  /** Lengths skewed towards small values, as most interesting bugs live there. */
  size(max: number): number {
    const r = this.u32()
    if ((r & 3) !== 0) return this.int(Math.min(max, 16) + 1)
    if ((r & 12) !== 0) return this.int(Math.min(max, 256) + 1)
    return this.int(max + 1)
  }

  fill(buf: Uint8Array, from = 0, to = buf.length): void {
    let i = from
    for (; i + 4 <= to; i += 4) {
      const v = this.u32()
      buf[i] = v
      buf[i + 1] = v >>> 8
      buf[i + 2] = v >>> 16
      buf[i + 3] = v >>> 24
    }
    for (; i < to; i++) buf[i] = this.u32()
  }

  bytes(n: number): Buffer {
    const b = Buffer.allocUnsafe(n)
    this.fill(b)
    return b
  }
}

/** The suite's seed: FUZZ_SEED if set (to replay a failure), else a fixed one so CI is reproducible. */
export function baseSeed(): number {
  const env = process.env.FUZZ_SEED
  if (env !== undefined && env !== '') {
    const n = Number(env)
    if (!Number.isInteger(n)) throw new Error(`FUZZ_SEED must be an integer, got ${env}`)
    return n >>> 0
  }
  return 0x7146e10c
}

/** A per-target seed derived from the base seed and a name (FNV-1a), so targets are independent. */
export function seedFor(name: string, base = baseSeed()): number {
  let h = 0x811c9dc5 ^ base
  for (let i = 0; i < name.length; i++) {
    h ^= name.charCodeAt(i)
    h = Math.imul(h, 0x01000193)
  }
  return h >>> 0
}
