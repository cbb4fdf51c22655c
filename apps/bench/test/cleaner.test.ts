import { describe, expect, it } from 'vitest'
import { checkGoals } from '../src/goals.js'
import { cleanerRows, parseCleanerOutput } from '../src/scenarios/cleaner.js'

// The lines apps/broker/test/compaction-bench.ts prints (one per round, the lone pass, the medians).
const round = (rate: number, p99: number, ratio: number) =>
  JSON.stringify({
    dirtyMiB: 100,
    cleanerMiBPerSecond: rate,
    readMiB: 100,
    writtenMiB: 10,
    delayMs: { alone: { p50: 1, p99: 4, max: 6 }, cleaning: { p50: 1, p99, max: p99 * 2 } },
    produceMiBPerSecond: { alone: 100, cleaning: 100 * ratio },
    produceRatio: ratio,
  })
const OUTPUT = [
  'some log line the script may print',
  JSON.stringify({ alone: { cleanerMiBPerSecond: 300, eventLoopUtilization: 0.04, eventLoopBusyMs: 12, seconds: 0.33 } }),
  round(200, 8, 0.9),
  round(100, 12, 0.7),
  round(150, 9, 0.85),
  JSON.stringify({ median: { cleanerMiBPerSecond: 150 } }),
].join('\n')

describe('CL1, the cleaner rows', () => {
  it('reads every round and the lone pass, and turns MiB/s into MB/s', () => {
    const parsed = parseCleanerOutput(OUTPUT)
    expect(parsed.rounds.map((r) => r.cleanerMiBPerSecond)).toEqual([200, 100, 150])
    expect(parsed.alone.cleanerMiBPerSecond).toBe(300)
    const [rate, delay, produce] = cleanerRows(OUTPUT, 100)
    expect(rate!.results['tidelog-broker']!.median).toBeCloseTo(150 * 1.048576, 6)
    expect(rate!.results['tidelog-broker']!.min).toBeCloseTo(100 * 1.048576, 6)
    expect(delay!.results.cleaning!.median).toBe(9)
    expect(delay!.results.alone!.median).toBe(4)
    expect(produce!.ratios['cleaning/alone']).toBe(0.85)
  })

  it('checks the goals on the medians: >= 100 MB/s, p99 < 10 ms, appends >= 0.8x', () => {
    const goals = checkGoals(cleanerRows(OUTPUT, 100)).filter((g) => g.goal.includes('CL1'))
    expect(goals.map((g) => [g.measured, g.met])).toEqual([
      [['CL1.rate: 157 MB/s'], true],
      [['CL1.delay: 9.0 ms'], true],
      [['CL1.produce: 0.85x'], true],
    ])
    expect(checkGoals([]).filter((g) => g.goal.includes('CL1')).every((g) => g.met === 'not measured')).toBe(true)
  })

  it('fails loudly on output without results', () => {
    expect(() => parseCleanerOutput('Error: boom')).toThrow(/no results/)
  })
})
