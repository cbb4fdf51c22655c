import { describe, expect, it } from 'vitest'
import { compare, summarize } from '../src/stats.js'

describe('bench statistics', () => {
  it('summarize: median of odd and even counts, min, max, runs kept in order', () => {
    expect(summarize([5, 1, 3])).toEqual({ median: 3, min: 1, max: 5, runs: [5, 1, 3] })
    expect(summarize([4, 1, 3, 2])).toMatchObject({ median: 2.5, min: 1, max: 4 })
  })

  it('compare interleaves implementations and reports a rate per round', async () => {
    const calls: string[] = []
    // A clock the calls move: every call costs exactly 2 ms, so the rates are facts, not
    // measurements a loaded (or quiet but preempted) machine can push around.
    let t = 0
    const clock = () => t
    const slow = () => {
      t += 2
      return 1
    }
    const results = await compare(
      [
        { name: 'a', run: () => (calls.push('a'), slow()) },
        { name: 'b', run: async () => (calls.push('b'), slow() * 2) },
      ],
      { rounds: 3, windowMs: 40, warmupMs: 5, clock },
    )
    expect(results.get('a')!.runs.length).toBe(3)
    expect(results.get('b')!.runs.length).toBe(3)
    // b does twice the units per call at the same cost: twice the rate, 500 and 1,000 per second.
    expect(results.get('a')!.runs).toEqual([500, 500, 500])
    expect(results.get('b')!.runs).toEqual([1000, 1000, 1000])
    // Both ran in every round, in alternating order after the warm-ups.
    const switches = calls.filter((c, i) => i > 0 && c !== calls[i - 1]).length
    expect(switches).toBe(5) // warm-ups a b, then a b | b a | a b
  })
})
