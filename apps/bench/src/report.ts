import type { MergeRecord } from './merge.js'
import type { GoalCheck } from './goals.js'
import type { Provenance } from './provenance.js'
import { FAILED } from './rows.js'
import type { Timing } from './stats.js'
import type { ScenarioResult } from './types.js'

export interface Report {
  date: string
  machine: { cpus: number; cpuModel: string; memory: string; node: string; loadAverage?: { start: number; end: number } }
  command: string
  /** Commit and peer versions (reports before issue 17 have none). */
  provenance?: Provenance
  timing: Timing & { mode: 'quick' | 'full'; endToEndRounds: number }
  scenarios: ScenarioResult[]
  goals: GoalCheck[]
  /** Suites that threw: the run goes on without them and says so (a long run is not lost to one). */
  failedSuites?: Array<{ suite: string; error: string }>
  /** Later runs (--merge) whose rows replaced or joined this run's. */
  merged?: MergeRecord[]
}

export const fmt = (n: number) =>
  n >= 1e6 ? `${(n / 1e6).toFixed(2)} M` : n >= 1e3 ? `${(n / 1e3).toFixed(1)} k` : n >= 100 ? n.toFixed(0) : n >= 10 ? n.toFixed(1) : n.toFixed(2)

const cell = (x: { median: number; min: number; max: number }) => `${fmt(x.median)} (${fmt(x.min)}-${fmt(x.max)})`

/** Rows that follow each other with the same contenders share one table. */
function groups(rows: ScenarioResult[]): Array<{ contenders: string[]; rows: ScenarioResult[] }> {
  const out: Array<{ contenders: string[]; rows: ScenarioResult[] }> = []
  for (const r of rows) {
    const contenders = [...new Set([...Object.keys(r.results), ...Object.keys(r.unavailable ?? {})])]
    const last = out[out.length - 1]
    if (last !== undefined && last.contenders.join('\0') === contenders.join('\0')) last.rows.push(r)
    else out.push({ contenders, rows: [r] })
  }
  return out
}

/**
 * The report as markdown. `compact` (for the README) shows medians only and leaves the notes
 * to the full table; headings start at `level`.
 */
export function markdown(r: Report, options: { compact?: boolean; level?: number } = {}): string {
  const t = r.timing
  const h = '#'.repeat(options.level ?? 1)
  const compact = options.compact === true
  const lines = [
    ...(compact ? [] : [`${h} tidelog benchmark, ${r.date}`, '']),
    `${compact ? `Measured ${r.date.slice(0, 16).replace('T', ' ')} UTC on ` : ''}${r.machine.cpus} x ${r.machine.cpuModel}, ${r.machine.memory}, Node ${r.machine.node}` +
      (r.machine.loadAverage === undefined ? '' : `, load average ${r.machine.loadAverage.start.toFixed(1)} at the start and ${r.machine.loadAverage.end.toFixed(1)} at the end (other work on the machine shows in the spread)`) +
      `. Command: \`${r.command}\` (${t.mode}).`,
    ...(r.provenance === undefined
      ? []
      : [
          '',
          `Commit ${r.provenance.commit.slice(0, 12)}${r.provenance.dirty ? ' with uncommitted changes' : ''}; peers: ` +
            Object.entries(r.provenance.peers).map(([k, v]) => `${k} ${v}`).join(', ') +
            '. Which Node runs each client is in the notes of its rows.',
        ]),
    ...(r.merged ?? []).flatMap((m) => [
      '',
      `Measured again by \`${m.command}\` at ${m.date} (commit ${m.commit.slice(0, 12)}, the same code measured; load average ${m.loadAverage.start.toFixed(1)} at the start and ${m.loadAverage.end.toFixed(1)} at the end), replacing or adding: ${m.ids.join(', ')}.`,
    ]),
    '',
    `Method: contenders interleaved (A B, then B A), warm-up never counted; median (min-max) over the rounds. ` +
      `Codec (K1): ${t.rounds} rounds of ${t.windowMs} ms after a ${t.warmupMs} ms warm-up. ` +
      `End-to-end: ${t.endToEndRounds} round${t.endToEndRounds === 1 ? '' : 's'}, each client in a fresh process, uncounted warm-up records in every run. ` +
      `Ratios "a/b" say how many times better a did than b (above 1: a won), whether higher or lower is better.`,
  ]
  if (r.goals.length > 0) {
    lines.push('', `${h}# Goals`, '', '| goal | met | measured |', '| --- | --- | --- |')
    for (const g of r.goals) {
      const met = g.met === 'not measured' ? 'not measured' : g.met ? 'yes' : 'no'
      lines.push(`| ${g.goal} | ${met} | ${g.measured.join(', ')} |`)
    }
  }
  if ((r.failedSuites ?? []).length > 0) {
    lines.push('', `${h}# Failed suites`, '', 'These suites threw and have no rows in this report:', '')
    for (const f of r.failedSuites!) lines.push(`- ${f.suite}: ${f.error.split('\n')[0]}`)
  }
  lines.push('', `${h}# Results`)
  if (compact) lines.push('', 'Medians; the spread (min-max), the settings of each scenario and the reasons behind n/a are in [bench-results/latest.md](bench-results/latest.md).')
  for (const g of groups(r.scenarios)) {
    const reasons: string[] = []
    const notes: string[] = []
    lines.push('', `| id | scenario | unit | ${g.contenders.join(' | ')} | ratios |`, `| --- | --- | --- | ${g.contenders.map(() => '---:').join(' | ')} | --- |`)
    for (const s of g.rows) {
      const cells = g.contenders.map((c) => {
        const x = s.results[c]
        if (x !== undefined) return compact ? fmt(x.median) : cell(x)
        const why = s.unavailable?.[c]
        if (why === undefined) return ''
        let i = reasons.indexOf(why)
        if (i < 0) i = reasons.push(why) - 1
        return `${why.startsWith(FAILED) ? 'failed' : 'n/a'} [${i + 1}]`
      })
      const ratios = Object.entries(s.ratios).map(([k, v]) => `${k} ${v}x`).join(', ')
      lines.push(`| ${s.id} | ${s.title} | ${s.unit} | ${cells.join(' | ')} | ${ratios} |`)
      for (const n of s.notes ?? []) if (!notes.includes(n)) notes.push(n)
    }
    if (compact) notes.length = 0
    if (notes.length > 0 || reasons.length > 0) lines.push('')
    for (const n of notes) lines.push(`- ${n}`)
    reasons.forEach((why, i) => lines.push(`- [${i + 1}] ${why}`))
  }
  return lines.join('\n') + '\n'
}

export const README_START = '<!-- bench:start -->'
export const README_END = '<!-- bench:end -->'

/** README text with the section between the markers replaced by the compact report. */
export function withReadmeSection(readme: string, r: Report): string {
  const a = readme.indexOf(README_START)
  const b = readme.indexOf(README_END)
  if (a < 0 || b < a) throw new Error(`README has no ${README_START} ... ${README_END} section`)
  // The same text as README.md's Benchmarks section, so --readme rewrites it unchanged.
  const how =
    '`npm run bench` runs every scenario and writes bench-results/latest.json and latest.md. ' +
    '`npm run bench -- P1` (or a suite: `codec`, `produce`, `scale`, ...) runs one, and `npm run bench -- --quick` is the short run CI does. ' +
    '`--clients a,b` and `--brokers tidelog|kafka` narrow a run. ' +
    'Add `--readme` to refresh this section, and `--merge` to measure the named scenarios again into the last full report (refused when the code measured has changed since). ' +
    '`BENCH_CPU_PROF=DIR` runs every client process under `node --cpu-prof`; `node --import tsx apps/bench/src/top.ts DIR/*.cpuprofile` lists the hot spots.\n\nThe peers are kafkajs, @platformatic/kafka 1.x on Node 20 and 2.x on Node 22, @confluentinc/kafka-javascript (librdkafka) and the Java client. ' +
    'Node 22, @platformatic/kafka 2.x and confluent are installed into the bench\'s cache on first use (confluent is built from its package, which takes minutes). ' +
    'tidelog runs on both Node 20 and Node 22 (`tidelog-node22`). ' +
    'Each producer scenario has a like-for-like row and a `.best` row: like for like gives every client the same acks, linger, batch size, in-flight limit and compression, and says what a client cannot set; `.best` uses each client\'s documented settings. ' +
    'C1.best takes each client\'s faster consume mode. ' +
    'A contender that failed a round shows as failed. ' +
    'Every report names the commit, the peer versions and the load average. ' +
    'The `scale` suite (B1-B6: partitions, idle connections, 4 producers, large records, latency at a fixed rate, a consumer that does not read) raises `ulimit -n` itself. ' +
    '`quotas` (Q1) runs our producer over a 1 MB/s client-id `producer_byte_rate` on both brokers and reports the achieved rate over the quota. ' +
    '`cleaner` (CL1) cleans 100 MiB dirty logs while the same event loop appends, and reports the cleaning rate, the event-loop delay and the appends against the same appends alone.\n\n'
  const body = how + markdown(r, { compact: true, level: 2 })
  return `${readme.slice(0, a + README_START.length)}\n${body}${readme.slice(b)}`
}
