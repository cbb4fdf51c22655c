import { describe, expect, it } from 'vitest'
import { compare, summarize } from '../src/stats.js'

describe('bench statistics', () => {
  it('summarize: median of odd and even counts, min, max, runs kept in order', () => {
    expect(summarize([5, 1, 3])).toEqual({ median: 3, min: 1, max: 5, runs: [5, 1, 3] })
    expect(summarize([4, 1, 3, 2])).toMatchObject({ median: 2.5, min: 1, max: 4 })
  })

  it('compare interleaves implementations and reports a rate per round', async () => {
    const calls: string[] = []
    const slow = () => {
      const end = performance.now() + 2
      while (performance.now() < end);
      return 1
    }
    const results = await compare(
      [
        { name: 'a', run: () => (calls.push('a'), slow()) },
        { name: 'b', run: async () => (calls.push('b'), slow() * 2) },
      ],
      { rounds: 3, windowMs: 40, warmupMs: 5 },
    )
    expect(results.get('a')!.runs.length).toBe(3)
    expect(results.get('b')!.runs.length).toBe(3)
    // b does twice the units per call at the same cost: about twice the rate. Windows of
    // 20 calls keep the one-call overshoot of a window (and a preempted call on a loaded
    // machine) from moving the ratio far from 2.
    const ratio = results.get('b')!.median / results.get('a')!.median
    expect(ratio).toBeGreaterThan(1.3)
    expect(ratio).toBeLessThan(3)
    // Both ran in every round, in alternating order after the warm-ups.
    const switches = calls.filter((c, i) => i > 0 && c !== calls[i - 1]).length
    expect(switches).toBe(5) // warm-ups a b, then a b | b a | a b
  })
})
