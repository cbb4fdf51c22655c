// tidelog's benchmark runner: `npm run bench -- [suite ...] [--quick] [--out DIR]`.
// Runs the named suites (all without names), prints a table and writes
// DIR/latest.json and DIR/latest.md (DIR defaults to bench-results).
import { mkdirSync, writeFileSync } from 'node:fs'
import { cpus, totalmem } from 'node:os'
import { join, resolve } from 'node:path'
import { codec } from './scenarios/k1-codec.js'
import { compare, type Summary, type Timing } from './stats.js'
import type { Suite } from './types.js'

/** Every suite, by name. Producer, consumer and broker suites register here. */
const SUITES: Suite[] = [codec]

interface ScenarioResult {
  id: string
  title: string
  unit: string
  higherIsBetter: boolean
  results: { [impl: string]: Summary }
  ratios: { [pair: string]: number }
}

interface Report {
  date: string
  machine: { cpus: number; cpuModel: string; memory: string; node: string }
  timing: Timing & { mode: 'quick' | 'full' }
  scenarios: ScenarioResult[]
}

function usage(): never {
  console.log(`usage: npm run bench -- [suite ...] [--quick] [--out DIR]
suites: ${SUITES.map((s) => `${s.name} (${s.description})`).join('; ')}`)
  process.exit(2)
}

function parseArgs(argv: string[]) {
  const names: string[] = []
  let quick = false
  let out = 'bench-results'
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!
    if (a === '--quick') quick = true
    else if (a === '--out') out = argv[++i] ?? usage()
    else if (a === '--help' || a === '-h') usage()
    else if (a.startsWith('-')) {
      console.error(`unknown option ${a}`)
      usage()
    } else names.push(a)
  }
  const unknown = names.filter((n) => !SUITES.some((s) => s.name === n))
  if (unknown.length > 0) {
    console.error(`unknown suite ${unknown.join(', ')}`)
    usage()
  }
  return { suites: names.length === 0 ? SUITES : SUITES.filter((s) => names.includes(s.name)), quick, out }
}

const fmt = (n: number) =>
  n >= 1e6 ? `${(n / 1e6).toFixed(2)} M` : n >= 1e3 ? `${(n / 1e3).toFixed(1)} k` : n.toFixed(n >= 100 ? 0 : 1)

function markdown(r: Report): string {
  const peers = [...new Set(r.scenarios.flatMap((s) => Object.keys(s.results)))]
  const lines = [
    `# tidelog benchmark, ${r.date}`,
    '',
    `${r.machine.cpus} x ${r.machine.cpuModel}, ${r.machine.memory}, Node ${r.machine.node}; ` +
      `${r.timing.mode}: ${r.timing.rounds} interleaved rounds of ${r.timing.windowMs} ms after a ${r.timing.warmupMs} ms warm-up; median (min-max).`,
    '',
    `| id | scenario | unit | ${peers.join(' | ')} | ratios |`,
    `| --- | --- | --- | ${peers.map(() => '---:').join(' | ')} | --- |`,
  ]
  for (const s of r.scenarios) {
    const cells = peers.map((p) => {
      const x = s.results[p]
      return x ? `${fmt(x.median)} (${fmt(x.min)}-${fmt(x.max)})` : ''
    })
    const ratios = Object.entries(s.ratios)
      .map(([k, v]) => `${k} ${v.toFixed(2)}x`)
      .join(', ')
    lines.push(`| ${s.id} | ${s.title} | ${s.unit} | ${cells.join(' | ')} | ${ratios} |`)
  }
  return lines.join('\n') + '\n'
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2))
  const timing: Timing = args.quick ? { rounds: 3, windowMs: 150, warmupMs: 150 } : { rounds: 7, windowMs: 600, warmupMs: 500 }
  const report: Report = {
    date: new Date().toISOString(),
    machine: {
      cpus: cpus().length,
      cpuModel: cpus()[0]?.model.trim() ?? 'unknown',
      memory: `${Math.round(totalmem() / 2 ** 30)} GiB`,
      node: process.version,
    },
    timing: { ...timing, mode: args.quick ? 'quick' : 'full' },
    scenarios: [],
  }
  for (const suite of args.suites) {
    for (const s of await suite.scenarios()) {
      const results = await compare(s.impls, timing)
      const ours = results.get(s.impls[0]!.name)!
      const ratios: { [pair: string]: number } = {}
      for (const impl of s.impls.slice(1)) {
        const theirs = results.get(impl.name)!
        const r = s.higherIsBetter ? ours.median / theirs.median : theirs.median / ours.median
        ratios[`${s.impls[0]!.name}/${impl.name}`] = Math.round(r * 100) / 100
      }
      const row: ScenarioResult = {
        id: s.id,
        title: s.title,
        unit: s.unit,
        higherIsBetter: s.higherIsBetter,
        results: Object.fromEntries(results),
        ratios,
      }
      report.scenarios.push(row)
      const parts = [...results].map(([name, x]) => `${name} ${fmt(x.median)}`).join('  ')
      console.log(`${s.id.padEnd(6)} ${parts}  ${s.unit}  [${Object.entries(ratios).map(([k, v]) => `${k} ${v}x`).join(', ')}]  ${s.title}`)
    }
  }
  const dir = resolve(args.out)
  mkdirSync(dir, { recursive: true })
  const md = markdown(report)
  writeFileSync(join(dir, 'latest.json'), JSON.stringify(report, null, 2) + '\n')
  writeFileSync(join(dir, 'latest.md'), md)
  console.log('\n' + md)
  console.log(`wrote ${join(dir, 'latest.json')} and latest.md`)
}

main().catch((e: unknown) => {
  console.error(e)
  process.exit(1)
})
