// CL1: the log cleaner (issue 12's performance goals), run by apps/broker/test/compaction-bench.ts
// in a process of its own: a dirty log of keyed 1 KiB records (10% distinct keys, 64 MiB
// segments) cleaned by the broker's cleaner (its worker thread), while the same event loop
// appends to another log as produce requests would. Each round has a window of appends alone
// and one beside the cleaning, both with the event-loop delay recorded, so the two compare like
// with like. Kafka's cleaner has no equivalent figure to set beside it (it runs in its own
// thread of a JVM whose request threads are not one event loop), so the rows compare the
// broker with itself and the goals are absolute: >= 100 MB/s cleaned, p99 delay < 10 ms,
// appends beside cleaning >= 0.8x of alone.
import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { makeRow } from '../rows.js'
import { summarize } from '../stats.js'
import type { ScenarioResult, Suite } from '../types.js'

const SCRIPT = fileURLToPath(new URL('../../../broker/test/compaction-bench.ts', import.meta.url))

/** One round as compaction-bench.ts prints it. */
export interface CleanerRound {
  dirtyMiB: number
  cleanerMiBPerSecond: number
  delayMs: { alone: { p50: number; p99: number; max: number }; cleaning: { p50: number; p99: number; max: number } }
  produceMiBPerSecond: { alone: number; cleaning: number }
  produceRatio: number
}

/** The rounds and the lone pass (nothing else on the loop) out of the script's JSON lines. */
export function parseCleanerOutput(stdout: string): { rounds: CleanerRound[]; alone: { cleanerMiBPerSecond: number; eventLoopUtilization: number } } {
  const rounds: CleanerRound[] = []
  let alone: { cleanerMiBPerSecond: number; eventLoopUtilization: number } | undefined
  for (const line of stdout.split('\n')) {
    if (!line.startsWith('{')) continue
    const o = JSON.parse(line) as Record<string, unknown>
    if ('alone' in o && typeof o.alone === 'object') alone = o.alone as typeof alone
    else if ('cleanerMiBPerSecond' in o) rounds.push(o as unknown as CleanerRound)
  }
  if (alone === undefined || rounds.length === 0) throw new Error(`compaction-bench printed no results:\n${stdout.slice(-2000)}`)
  return { rounds, alone }
}

function runScript(mib: number, rounds: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', import.meta.resolve('tsx'), SCRIPT, String(mib), String(rounds)], { stdio: ['ignore', 'pipe', 'pipe'] })
    let out = ''
    let err = ''
    child.stdout.on('data', (d: Buffer) => (out += d.toString()))
    child.stderr.on('data', (d: Buffer) => (err += d.toString()))
    child.once('error', reject)
    child.once('exit', (code) => (code === 0 ? resolve(out) : reject(new Error(`compaction-bench exited with ${code}: ${err.slice(-2000)}`))))
  })
}

/** The CL1 rows from the script's output (exported for the unit test). */
export function cleanerRows(stdout: string, mib: number): ScenarioResult[] {
  const { rounds, alone } = parseCleanerOutput(stdout)
  const mb = (mibps: number) => (mibps * 1048576) / 1e6
  const of = (f: (r: CleanerRound) => number) => summarize(rounds.map(f))
  const setup = `${mib} MiB dirty log per round, ${rounds.length} round${rounds.length === 1 ? '' : 's'}; keyed 1 KiB records, 10% distinct keys, 64 MiB segments; the cleaner in its worker thread (nice +10), appends of 10 x 1 KiB records one per turn of the loop`
  return [
    makeRow({ id: 'CL1.rate', title: 'log cleaner: dirty log cleaned per second, beside appends on the event loop', unit: 'MB/s', higherIsBetter: true }, [
      ['tidelog-broker', of((r) => mb(r.cleanerMiBPerSecond))],
      ['alone', summarize([mb(alone.cleanerMiBPerSecond)])],
    ], undefined, [setup, `alone: one pass with nothing else on the loop (event-loop utilization ${alone.eventLoopUtilization} during it)`]),
    makeRow({ id: 'CL1.delay', title: 'event-loop delay p99 while the cleaner runs, and with the same appends alone', unit: 'ms', higherIsBetter: false }, [
      ['cleaning', of((r) => r.delayMs.cleaning.p99)],
      ['alone', of((r) => r.delayMs.alone.p99)],
    ], undefined, ['monitorEventLoopDelay at 1 ms resolution over each window']),
    makeRow({ id: 'CL1.produce', title: 'appends while the cleaner runs, and alone', unit: 'MB/s', higherIsBetter: true }, [
      ['cleaning', of((r) => mb(r.produceMiBPerSecond.cleaning))],
      ['alone', of((r) => mb(r.produceMiBPerSecond.alone))],
    ]),
  ]
}

export const cleaner: Suite = {
  name: 'cleaner',
  description: 'CL1: the log cleaner: MB/s cleaned, event-loop delay p99 and append rate while it runs, against the same appends alone',
  ids: ['CL1'],
  async run(ctx) {
    const mib = ctx.quick ? 20 : 100
    const rounds = ctx.quick ? 1 : 3
    ctx.log(`CL1: cleaning ${rounds} x ${mib} MiB`)
    return cleanerRows(await runScript(mib, rounds), mib)
  },
}
