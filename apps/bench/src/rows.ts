import type { TrialOutcome } from './matrix.js'
import type { Summary } from './stats.js'
import type { ScenarioResult } from './types.js'

/** How an unavailable entry says the contender ran and failed (report.ts shows "failed"). */
export const FAILED = 'failed: '

export type RowHead = Pick<ScenarioResult, 'id' | 'title' | 'unit' | 'higherIsBetter'>

/** Each contender's summary of `metric`, or why it has none. */
export type Entry = Summary | string

export function ratio(a: Summary, b: Summary, higherIsBetter: boolean): number {
  const r = higherIsBetter ? a.median / b.median : b.median / a.median
  return Math.round(r * 100) / 100
}

/**
 * A report row. Ratios compare the first contender with each of the others unless `pairs`
 * names them; a pair with a missing side is left out (the missing side is in `unavailable`).
 */
export function makeRow(head: RowHead, entries: Array<[string, Entry]>, pairs?: Array<[string, string]>, notes?: string[]): ScenarioResult {
  const results: { [k: string]: Summary } = {}
  const unavailable: { [k: string]: string } = {}
  for (const [name, e] of entries) {
    if (typeof e === 'string') unavailable[name] = e
    else results[name] = e
  }
  const ratios: { [k: string]: number } = {}
  const names = entries.map(([n]) => n)
  for (const [a, b] of pairs ?? names.slice(1).map((n) => [names[0]!, n] as [string, string])) {
    const x = results[a]
    const y = results[b]
    if (x !== undefined && y !== undefined && x.median > 0 && y.median > 0) ratios[`${a}/${b}`] = ratio(x, y, head.higherIsBetter)
  }
  const row: ScenarioResult = { ...head, results, ratios }
  if (Object.keys(unavailable).length > 0) row.unavailable = unavailable
  if (notes !== undefined && notes.length > 0) row.notes = notes
  return row
}

/** A contender's entry for one metric from an interleave() outcome. */
export function entryOf(o: TrialOutcome | undefined, metric: string, missing = 'not run'): Entry {
  if (o === undefined) return missing
  // A contender that failed a round is shown as failed, not as the rounds it survived.
  if (o.error !== undefined) return `${FAILED}${o.error}`
  return o.metrics.get(metric) ?? missing
}
