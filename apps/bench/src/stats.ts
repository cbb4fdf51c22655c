// Measurement and statistics. Each scenario compares implementations (tidelog
// first, then its peers) over the same work: one warm-up run each (not counted),
// then rounds in which the implementations take turns (A B A B ...), so drift in
// the machine (turbo clocks, other load, GC) falls on all of them alike.

export interface Summary {
  median: number
  min: number
  max: number
  runs: number[]
}

export function summarize(runs: number[]): Summary {
  const s = [...runs].sort((a, b) => a - b)
  const mid = s.length >> 1
  const median = s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2
  return { median, min: s[0]!, max: s[s.length - 1]!, runs }
}

/** One implementation of a scenario: `run` does a unit of work and says how much (records, bytes, hashes). */
export interface Impl {
  name: string
  run: () => number | Promise<number>
}

export interface Timing {
  /** Rounds in which every implementation is measured. */
  rounds: number
  /** How long one measurement lasts. */
  windowMs: number
  /** How long the uncounted warm-up of each implementation lasts. */
  warmupMs: number
  /** The clock, in milliseconds (performance.now); tests give one they move themselves. */
  clock?: () => number
}

/** Rate (units per second) of `impl` over about `ms` milliseconds. */
async function measure(impl: Impl, ms: number, now: () => number): Promise<number> {
  let units = 0
  const start = now()
  const deadline = start + ms
  let elapsed: number
  do {
    const r = impl.run()
    units += typeof r === 'number' ? r : await r
    elapsed = now() - start
  } while (now() < deadline)
  return units / (elapsed / 1000)
}

export async function compare(impls: Impl[], t: Timing): Promise<Map<string, Summary>> {
  const now = t.clock ?? (() => performance.now())
  for (const impl of impls) await measure(impl, t.warmupMs, now)
  const runs = new Map<string, number[]>(impls.map((i) => [i.name, []]))
  for (let round = 0; round < t.rounds; round++) {
    // Alternate who goes first, so no implementation always follows the same one.
    const order = round % 2 === 0 ? impls : [...impls].reverse()
    for (const impl of order) runs.get(impl.name)!.push(await measure(impl, t.windowMs, now))
  }
  return new Map([...runs].map(([name, r]) => [name, summarize(r)]))
}
