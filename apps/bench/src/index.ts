// tidelog's benchmark runner: `npm run bench -- [suite|scenario ...] [--quick] [--out DIR] [--readme]`.
// Runs the named suites or scenarios (all without names), prints a table and writes
// DIR/latest.json and DIR/latest.md (DIR defaults to bench-results, bench-results/quick
// for --quick).
import { spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { cpus, loadavg, totalmem } from 'node:os'
import { join, resolve } from 'node:path'
import { Brokers } from './env/brokers.js'
import { checkGoals } from './goals.js'
import { SUITES, select, type Selection } from './registry.js'
import { fmt, markdown, withReadmeSection, type Report } from './report.js'
import { mergeRefusal, mergeReports } from './merge.js'
import { makeRow } from './rows.js'
import { CONTENDERS } from './scenarios/clients.js'
import { ingestRow } from './scenarios/limits.js'
import { provenance } from './provenance.js'
import { compare, type Timing } from './stats.js'
import type { RunContext, ScenarioResult } from './types.js'

function usage(): never {
  console.log(`usage: npm run bench -- [suite|scenario ...] [--quick] [--out DIR] [--readme] [--merge] [--clients a,b] [--brokers tidelog,kafka]
DIR defaults to bench-results (bench-results/quick with --quick)
--brokers tidelog|kafka runs the client scenarios on that broker only
--clients runs only these contenders (${CONTENDERS.join(', ')}); --quick leaves out those from the bench cache unless named
--readme also puts the compact table into README.md's Benchmarks section
--merge puts the rows of the named scenarios into DIR/latest.json in place of the old ones (the code measured must be the same)
suites: ${SUITES.map((s) => `${s.name} [${s.ids.join(' ')}] (${s.description})`).join('\n        ')}`)
  process.exit(2)
}

function parseArgs(argv: string[]) {
  const names: string[] = []
  let quick = false
  let out: string | undefined
  let readme = false
  let merge = false
  let clients: Set<string> | undefined
  let brokers: Set<string> | undefined
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!
    if (a === '--quick') quick = true
    else if (a === '--out') out = argv[++i] ?? usage()
    else if (a === '--readme') readme = true
    else if (a === '--merge') merge = true
    else if (a === '--brokers') brokers = new Set((argv[++i] ?? usage()).split(',').filter((c) => c !== ''))
    else if (a === '--clients') clients = new Set((argv[++i] ?? usage()).split(',').filter((c) => c !== ''))
    else if (a === '--help' || a === '-h') usage()
    else if (a.startsWith('-')) {
      console.error(`unknown option ${a}`)
      usage()
    } else names.push(a)
  }
  const unknown = [...(clients ?? [])].filter((c) => !(CONTENDERS as string[]).includes(c))
  if (unknown.length > 0) {
    console.error(`unknown client ${unknown.join(', ')}`)
    usage()
  }
  if ([...(brokers ?? [])].some((b) => b !== 'tidelog' && b !== 'kafka')) {
    console.error('--brokers takes tidelog and/or kafka')
    usage()
  }
  const selection = select(names, undefined, quick)
  if (typeof selection === 'string') {
    console.error(selection)
    usage()
  }
  // Quick runs (CI) go aside, so they never overwrite the committed results of a full run.
  if (merge && names.length === 0) {
    console.error('--merge takes the suites or scenarios to measure again')
    usage()
  }
  return { selection, quick, out: out ?? (quick ? 'bench-results/quick' : 'bench-results'), names, readme, merge, clients, brokers }
}

function printRow(s: ScenarioResult): void {
  const parts = Object.entries(s.results).map(([name, x]) => `${name} ${fmt(x.median)}`)
  for (const name of Object.keys(s.unavailable ?? {})) parts.push(`${name} n/a`)
  const ratios = Object.entries(s.ratios).map(([k, v]) => `${k} ${v}x`).join(', ')
  console.log(`${s.id.padEnd(24)} ${parts.join('  ')}  ${s.unit}${ratios === '' ? '' : `  [${ratios}]`}`)
}

async function runSuite(sel: Selection, ctx: RunContext, timing: Timing): Promise<ScenarioResult[]> {
  const { suite } = sel
  if (suite.run !== undefined) return suite.run({ ...ctx, only: sel.only })
  const rows: ScenarioResult[] = []
  for (const s of (await suite.scenarios?.()) ?? []) {
    const results = await compare(s.impls, timing)
    rows.push(makeRow({ id: s.id, title: s.title, unit: s.unit, higherIsBetter: s.higherIsBetter }, [...results]))
    printRow(rows[rows.length - 1]!)
  }
  return rows
}

/** Open files the scale suite needs (10,000 partitions: a log, indexes and sockets each). */
const NOFILE = 65_536

/**
 * Node cannot raise its own RLIMIT_NOFILE: the bench runs itself again under `ulimit -n` (the
 * hard limit, or NOFILE if that is lower), so both brokers and every client inherit it.
 * Returns the child's exit code, or undefined when no re-run is needed.
 */
function rerunWithMoreFiles(): number | undefined {
  if (process.env.BENCH_NOFILE_RAISED === '1') return undefined
  const [soft, hard] = spawnSync('sh', ['-c', 'ulimit -n; ulimit -Hn'], { encoding: 'utf8' }).stdout.trim().split('\n').map((l) => (l === 'unlimited' ? Infinity : Number(l)))
  if (!(soft! < Math.min(hard!, NOFILE))) return undefined
  const script = `hard=$(ulimit -Hn); if [ "$hard" = unlimited ] || [ "$hard" -gt ${NOFILE} ]; then hard=${NOFILE}; fi; ulimit -n "$hard" && exec "$@"`
  const r = spawnSync('sh', ['-c', script, 'sh', process.execPath, ...process.execArgv, ...process.argv.slice(1)], {
    stdio: 'inherit',
    env: { ...process.env, BENCH_NOFILE_RAISED: '1' },
  })
  return r.status ?? 1
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2))
  if (args.selection.some((s) => s.suite.name === 'scale')) {
    const code = rerunWithMoreFiles()
    if (code !== undefined) process.exit(code)
  }
  const timing: Timing = args.quick ? { rounds: 3, windowMs: 60, warmupMs: 60 } : { rounds: 7, windowMs: 600, warmupMs: 500 }
  const rounds = args.quick ? 1 : 3
  let report: Report = {
    date: new Date().toISOString(),
    machine: {
      cpus: cpus().length,
      cpuModel: cpus()[0]?.model.trim() ?? 'unknown',
      memory: `${Math.round(totalmem() / 2 ** 30)} GiB`,
      node: process.version,
      loadAverage: { start: loadavg()[0]!, end: NaN },
    },
    provenance: provenance(),
    command: ['npm run bench', ...(process.argv.length > 2 ? ['--', ...process.argv.slice(2)] : [])].join(' '),
    timing: { ...timing, mode: args.quick ? 'quick' : 'full', endToEndRounds: rounds },
    scenarios: [],
    goals: [],
  }
  const brokers = new Brokers()
  const started = performance.now()
  const stamp = () => `[${((performance.now() - started) / 1000).toFixed(0).padStart(4)} s]`
  const ctx: RunContext = { quick: args.quick, timing, rounds, brokers, only: undefined, clients: args.clients, brokerKinds: args.brokers as RunContext['brokerKinds'], log: (l) => console.log(`${stamp()} ${l}`) }
  const dir = resolve(args.out)
  mkdirSync(dir, { recursive: true })
  try {
    for (const sel of args.selection) {
      try {
        const rows = await runSuite(sel, ctx, timing)
        if (sel.suite.run !== undefined) rows.forEach(printRow)
        report.scenarios.push(...rows)
      } catch (e) {
        // One suite's crash (a peer that would not start, say) must not cost the other suites' rows.
        const error = e instanceof Error ? (e.stack ?? e.message) : String(e)
        console.error(`${stamp()} suite ${sel.suite.name} failed: ${error}`)
        ;(report.failedSuites ??= []).push({ suite: sel.suite.name, error })
      }
      // A checkpoint after every suite: an interrupted full run still leaves what it measured.
      writeFileSync(join(dir, 'partial.json'), JSON.stringify(report, null, 2) + '\n')
    }
  } finally {
    await brokers.close()
  }
  const ingest = ingestRow(report.scenarios)
  if (ingest !== undefined) {
    report.scenarios.push(ingest)
    printRow(ingest)
  }
  report.goals = checkGoals(report.scenarios)
  report.machine.loadAverage!.end = loadavg()[0]!
  if (args.merge) {
    const file = join(dir, 'latest.json')
    const base = existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as Report) : undefined
    const refused = mergeRefusal(base, report)
    if (refused !== undefined) {
      writeFileSync(join(dir, 'partial.json'), JSON.stringify(report, null, 2) + '\n')
      console.error(`not merged into ${file}: ${refused} (this run is in partial.json)`)
      process.exit(2)
    }
    report = mergeReports(base!, report)
  }
  const md = markdown(report)
  writeFileSync(join(dir, 'latest.json'), JSON.stringify(report, null, 2) + '\n')
  writeFileSync(join(dir, 'latest.md'), md)
  console.log('\n' + md)
  if (args.readme) {
    writeFileSync('README.md', withReadmeSection(readFileSync('README.md', 'utf8'), report))
    console.log('updated README.md')
  }
  rmSync(join(dir, 'partial.json'), { force: true })
  console.log(`wrote ${join(dir, 'latest.json')} and latest.md in ${((performance.now() - started) / 1000).toFixed(0)} s`)
  // A failed suite fails the command (CI's --quick run included), after the report is written.
  if ((report.failedSuites ?? []).length > 0) process.exitCode = 1
}

main().then(
  // Clients and brokers are closed; exit even if a peer library left a timer behind.
  () => process.exit(process.exitCode ?? 0),
  (e: unknown) => {
    console.error(e)
    process.exit(1)
  },
)
