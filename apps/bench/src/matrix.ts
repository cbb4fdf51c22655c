// End-to-end scenarios measure one run at a time (a process producing N records, a
// broker starting), not a loop inside a time window as the codec does. The same
// method holds: every contender gets an uncounted warm-up, then rounds in which
// they take turns, the order reversed every other round so that none always
// follows the same one. A contender that fails is recorded with its reason and not
// retried in later rounds, so one broken peer cannot stall the whole run.
import { summarize, type Summary } from './stats.js'

/** A measurement's named values, e.g. { rate: 412000 } or { p50: 1.2, p99: 4.8 }. */
export type Metrics = Record<string, number>

export interface Trial {
  name: string
  run: (round: number) => Promise<Metrics>
  /** Uncounted run before the rounds (JIT, page cache, connections); default: none. */
  warmup?: () => Promise<unknown>
}

export interface TrialOutcome {
  /** Per metric, the summary over the rounds that succeeded. */
  metrics: Map<string, Summary>
  /** Why the contender could not run (first failure); its earlier rounds are kept. */
  error?: string
}

export interface InterleaveOptions {
  rounds: number
  /** Called after each run, for progress output. */
  onRun?: (name: string, round: number, m: Metrics | Error) => void
}

/** One line: the message, and for a failed command (execFile) the last line it printed instead of its arguments. */
export function describeError(e: unknown): string {
  const msg = e instanceof Error ? e.message : String(e)
  const stderr = (e as { stderr?: unknown } | null)?.stderr
  if (typeof stderr === 'string' && msg.startsWith('Command failed')) {
    const last = stderr.trim().split('\n').filter((l) => l.trim() !== '').slice(-2).join(' ').replace(/\s+/g, ' ')
    return `${msg.split(' ').slice(0, 4).join(' ')}...: ${last}`.slice(0, 300)
  }
  return msg.split('\n')[0]!.slice(0, 300)
}

export async function interleave(trials: Trial[], o: InterleaveOptions): Promise<Map<string, TrialOutcome>> {
  const runs = new Map<string, Metrics[]>(trials.map((t) => [t.name, []]))
  const errors = new Map<string, string>()
  const fail = (t: Trial, round: number, e: unknown) => {
    const why = describeError(e)
    errors.set(t.name, why)
    o.onRun?.(t.name, round, new Error(why))
  }
  for (const t of trials) {
    if (t.warmup === undefined) continue
    try {
      await t.warmup()
    } catch (e) {
      fail(t, -1, e)
    }
  }
  for (let round = 0; round < o.rounds; round++) {
    const order = round % 2 === 0 ? trials : [...trials].reverse()
    for (const t of order) {
      if (errors.has(t.name)) continue
      try {
        const m = await t.run(round)
        runs.get(t.name)!.push(m)
        o.onRun?.(t.name, round, m)
      } catch (e) {
        fail(t, round, e)
      }
    }
  }
  const out = new Map<string, TrialOutcome>()
  for (const t of trials) {
    const metrics = new Map<string, Summary>()
    const list = runs.get(t.name)!
    for (const key of new Set(list.flatMap((m) => Object.keys(m)))) {
      const values = list.map((m) => m[key]).filter((v): v is number => typeof v === 'number' && Number.isFinite(v))
      if (values.length > 0) metrics.set(key, summarize(values))
    }
    const error = errors.get(t.name)
    out.set(t.name, error === undefined ? { metrics } : { metrics, error })
  }
  return out
}
