// Hot spots of V8 CPU profiles (from `BENCH_CPU_PROF=DIR npm run bench -- ...`, which runs
// every client process under `node --cpu-prof`): self time by function and by package.
//   node --import tsx apps/bench/src/top.ts DIR/tidelog-produce-*.cpuprofile [--top N]
import { readFileSync } from 'node:fs'

interface ProfileNode {
  id: number
  callFrame: { functionName: string; url: string; lineNumber: number }
  hitCount?: number
  children?: number[]
}

interface Profile {
  nodes: ProfileNode[]
  startTime: number
  endTime: number
  samples?: number[]
  timeDeltas?: number[]
}

/** Where a frame's code lives: a package name, node's internals, or (program)/(gc)/(idle). */
export function packageOf(url: string, fn: string): string {
  if (url === '') return fn.startsWith('(') ? fn : '(native)'
  if (url.startsWith('node:')) return 'node:' + url.slice(5).split('/')[0]
  const nm = url.lastIndexOf('/node_modules/')
  if (nm >= 0) {
    const rest = url.slice(nm + 14).split('/')
    return rest[0]!.startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0]!
  }
  const ws = /\/(packages|apps)\/([^/]+)\//.exec(url)
  if (ws !== null) return `@tidelog/${ws[2]}`
  return url
}

export function selfTimes(p: Profile): { byFunction: Map<string, number>; byPackage: Map<string, number>; totalMs: number } {
  const byId = new Map(p.nodes.map((n) => [n.id, n]))
  const ms = new Map<number, number>()
  if (p.samples !== undefined && p.timeDeltas !== undefined) {
    for (let i = 0; i < p.samples.length; i++) ms.set(p.samples[i]!, (ms.get(p.samples[i]!) ?? 0) + p.timeDeltas[i]! / 1000)
  }
  const byFunction = new Map<string, number>()
  const byPackage = new Map<string, number>()
  let totalMs = 0
  for (const [id, t] of ms) {
    const n = byId.get(id)!
    const { functionName, url, lineNumber } = n.callFrame
    const file = url.split('/').slice(-2).join('/')
    const key = `${functionName || '(anonymous)'} ${file}:${lineNumber + 1}`
    byFunction.set(key, (byFunction.get(key) ?? 0) + t)
    const pkg = packageOf(url, functionName)
    byPackage.set(pkg, (byPackage.get(pkg) ?? 0) + t)
    totalMs += t
  }
  return { byFunction, byPackage, totalMs }
}

function main(): void {
  const args = process.argv.slice(2)
  const i = args.indexOf('--top')
  const top = i >= 0 ? Number(args.splice(i, 2)[1]) : 25
  for (const file of args) {
    const { byFunction, byPackage, totalMs } = selfTimes(JSON.parse(readFileSync(file, 'utf8')) as Profile)
    const pct = (t: number) => `${((t / totalMs) * 100).toFixed(1).padStart(5)}%`
    console.log(`\n${file}: ${totalMs.toFixed(0)} ms sampled`)
    console.log('  by package:')
    for (const [k, t] of [...byPackage].sort((a, b) => b[1] - a[1]).slice(0, 12)) console.log(`  ${pct(t)}  ${k}`)
    console.log('  by function (self time):')
    for (const [k, t] of [...byFunction].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`  ${pct(t)}  ${k}`)
  }
}

main()
