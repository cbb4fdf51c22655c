// `npm run bench -- P1.best cleaner --merge`: measure some scenarios again and put their rows
// into the report already in bench-results, in place of the old ones. A full run takes more
// than an hour on 2 cores; when one scenario was wrong (the bench's fault) or a suite is new,
// this reruns just that, on an idle machine, and the report says which rows came from which
// run. It refuses when the code measured differs between the two runs' commits: only the
// bench itself, results and documents may have changed.
import { execFileSync } from 'node:child_process'
import { checkGoals } from './goals.js'
import type { Report } from './report.js'
import { ingestRow } from './scenarios/limits.js'
import type { ScenarioResult } from './types.js'

/** Paths whose changes do not change what is measured. */
const NOT_MEASURED = [/^apps\/bench\//, /^bench-results\//, /\.md$/, /^\.changeset\//]

/** Files changed between two commits that the benchmarks measure (empty: the same code). */
export function measuredChanges(from: string, to: string, cwd?: string): string[] {
  const out = execFileSync('git', ['diff', '--name-only', from, to], { encoding: 'utf8', cwd })
  return out
    .split('\n')
    .filter((f) => f !== '')
    .filter((f) => !NOT_MEASURED.some((p) => p.test(f)))
}

export interface MergeRecord {
  command: string
  date: string
  commit: string
  loadAverage: { start: number; end: number }
  ids: string[]
}

/**
 * The base report with `next`'s rows in place of its rows of the same id (new ids at the end),
 * the derived rows and goals recomputed, and a record of the merge.
 */
export function mergeReports(base: Report, next: Report): Report {
  const fresh = new Map(next.scenarios.filter((r) => r.id !== 'X1.ingest').map((r) => [r.id, r]))
  const rows: ScenarioResult[] = []
  for (const r of base.scenarios) {
    if (r.id === 'X1.ingest') continue
    const replaced = fresh.get(r.id)
    rows.push(replaced ?? r)
    fresh.delete(r.id)
  }
  rows.push(...fresh.values())
  const ingest = ingestRow(rows)
  if (ingest !== undefined) rows.push(ingest)
  const record: MergeRecord = {
    command: next.command,
    date: next.date,
    commit: next.provenance?.commit ?? 'unknown',
    loadAverage: next.machine.loadAverage ?? { start: NaN, end: NaN },
    ids: next.scenarios.filter((r) => r.id !== 'X1.ingest').map((r) => r.id),
  }
  return { ...base, scenarios: rows, goals: checkGoals(rows), merged: [...(base.merged ?? []), record] }
}

/** Why `next` may not go into `base`, or undefined when it may. */
export function mergeRefusal(base: Report | undefined, next: Report, cwd?: string): string | undefined {
  if (base === undefined) return 'there is no report to merge into (run the full bench first)'
  if (base.timing.mode !== next.timing.mode) return `the report is a ${base.timing.mode} run and this one is ${next.timing.mode}`
  if ((next.failedSuites ?? []).length > 0) return `suites failed in this run: ${next.failedSuites!.map((f) => f.suite).join(', ')}`
  const a = base.provenance
  const b = next.provenance
  if (a === undefined || b === undefined || a.commit === 'unknown' || b.commit === 'unknown') return 'a commit is unknown'
  if (a.dirty || b.dirty) return 'a run had uncommitted changes'
  const peers = Object.keys({ ...a.peers, ...b.peers }).filter((k) => a.peers[k] !== b.peers[k])
  if (peers.length > 0) return `peer versions differ: ${peers.map((k) => `${k} ${a.peers[k]} vs ${b.peers[k]}`).join(', ')}`
  let changed: string[]
  try {
    changed = measuredChanges(a.commit, b.commit, cwd)
  } catch (e) {
    return `git cannot compare ${a.commit.slice(0, 12)} and ${b.commit.slice(0, 12)}: ${(e as Error).message}`
  }
  if (changed.length > 0) return `the measured code changed since ${a.commit.slice(0, 12)}: ${changed.slice(0, 10).join(', ')}${changed.length > 10 ? ', ...' : ''}`
  return undefined
}
