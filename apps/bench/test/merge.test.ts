import { execFileSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { measuredChanges, mergeRefusal, mergeReports } from '../src/merge.js'
import { markdown, type Report } from '../src/report.js'
import { makeRow } from '../src/rows.js'
import { summarize } from '../src/stats.js'

const s = (x: number) => summarize([x])
const row = (id: string, a: number, b: number) => makeRow({ id, title: id, unit: 'records/s', higherIsBetter: true }, [['tidelog', s(a)], ['kafkajs', s(b)]])

function report(commit: string, rows: Report['scenarios'], extra: Partial<Report> = {}): Report {
  return {
    date: '2026-12-02T06:00:00.000Z',
    machine: { cpus: 2, cpuModel: 'cpu', memory: '1 GiB', node: 'v20', loadAverage: { start: 0.1, end: 0.2 } },
    command: 'npm run bench',
    provenance: { commit, dirty: false, peers: { kafkajs: '2.2.4' } },
    timing: { rounds: 7, windowMs: 600, warmupMs: 500, mode: 'full', endToEndRounds: 3 },
    scenarios: rows,
    goals: [],
    ...extra,
  }
}

function git(cwd: string, ...args: string[]): string {
  return execFileSync('git', ['-c', 'user.email=t@t', '-c', 'user.name=t', ...args], { cwd, encoding: 'utf8' }).trim()
}

function write(dir: string, file: string, text: string): void {
  mkdirSync(join(dir, file, '..'), { recursive: true })
  writeFileSync(join(dir, file), text)
}

describe('bench --merge', () => {
  it('puts the new rows in place of the old ones of the same id, adds new ids at the end and recomputes the goals', () => {
    const base = report('a'.repeat(40), [row('P1@tidelog-broker', 100, 50), row('P1.best@tidelog-broker', 10, 50), row('C1@kafka', 70, 10)])
    const next = report('b'.repeat(40), [row('P1.best@tidelog-broker', 300, 50), row('CL1.rate', 150, 140)], { command: 'npm run bench -- P1.best cleaner --merge', date: '2026-12-02T08:00:00.000Z' })
    const m = mergeReports(base, next)
    expect(m.scenarios.map((r) => [r.id, r.results.tidelog!.median])).toEqual([
      ['P1@tidelog-broker', 100],
      ['P1.best@tidelog-broker', 300],
      ['C1@kafka', 70],
      ['CL1.rate', 150],
    ])
    expect(m.date).toBe(base.date)
    expect(m.merged).toEqual([{ command: next.command, date: next.date, commit: 'b'.repeat(40), loadAverage: { start: 0.1, end: 0.2 }, ids: ['P1.best@tidelog-broker', 'CL1.rate'] }])
    const goal = m.goals.find((g) => g.goal.startsWith('tidelog producer and consumer >= 5x kafkajs'))!
    expect(goal.measured).toEqual(['P1@tidelog-broker: 2x', 'P1.best@tidelog-broker: 6x'])
    expect(markdown(m)).toContain('Measured again by `npm run bench -- P1.best cleaner --merge` at 2026-12-02T08:00:00.000Z (commit bbbbbbbbbbbb')
  })

  it('is refused when the code measured changed between the two commits, or anything else differs', () => {
    const dir = mkdtempSync(join(tmpdir(), 'tidelog-bench-merge-'))
    git(dir, 'init', '-q')
    write(dir, 'apps/broker/src/a.ts', '1')
    git(dir, 'add', '-A')
    git(dir, 'commit', '-qm', 'one')
    const one = git(dir, 'rev-parse', 'HEAD')
    write(dir, 'apps/bench/src/b.ts', '2')
    write(dir, 'README.md', 'x')
    git(dir, 'add', '-A')
    git(dir, 'commit', '-qm', 'two')
    const two = git(dir, 'rev-parse', 'HEAD')
    write(dir, 'apps/broker/src/a.ts', '3')
    git(dir, 'add', '-A')
    git(dir, 'commit', '-qm', 'three')
    const three = git(dir, 'rev-parse', 'HEAD')
    expect(measuredChanges(one, two, dir)).toEqual([])
    expect(measuredChanges(one, three, dir)).toEqual(['apps/broker/src/a.ts'])
    const base = report(one, [])
    expect(mergeRefusal(base, report(two, []), dir)).toBeUndefined()
    expect(mergeRefusal(base, report(three, []), dir)).toContain('the measured code changed since')
    expect(mergeRefusal(undefined, report(two, []), dir)).toContain('no report')
    expect(mergeRefusal(base, report(two, [], { timing: { ...base.timing, mode: 'quick' } }), dir)).toContain('quick')
    expect(mergeRefusal(base, report(two, [], { failedSuites: [{ suite: 'cleaner', error: 'x' }] }), dir)).toContain('cleaner')
    expect(mergeRefusal(base, report(two, [], { provenance: { commit: two, dirty: true, peers: { kafkajs: '2.2.4' } } }), dir)).toContain('uncommitted')
    expect(mergeRefusal(base, report(two, [], { provenance: { commit: two, dirty: false, peers: { kafkajs: '2.2.3' } } }), dir)).toContain('kafkajs 2.2.4 vs 2.2.3')
  })
})
