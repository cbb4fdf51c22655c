import type { BrokerKind, Brokers } from './env/brokers.js'
import type { Impl, Summary, Timing } from './stats.js'

/** One comparison: the first implementation is tidelog, the others its peers. */
export interface Scenario {
  id: string
  title: string
  unit: string
  higherIsBetter: boolean
  impls: Impl[]
}

/** One row of the report: a scenario and each contender's runs. */
export interface ScenarioResult {
  id: string
  title: string
  unit: string
  higherIsBetter: boolean
  results: { [contender: string]: Summary }
  /**
   * "a/b": how many times better a did than b (a's rate over b's when higher is better, b's
   * time or size over a's when lower is), so above 1 always means a won.
   */
  ratios: { [pair: string]: number }
  /** Contenders that could not run here, with the reason. */
  unavailable?: { [contender: string]: string }
  notes?: string[]
}

export interface RunContext {
  quick: boolean
  /** Codec-style timing (windows); end-to-end scenarios use `rounds`. */
  timing: Timing
  rounds: number
  brokers: Brokers
  /** Scenario ids asked for (upper case); undefined runs every scenario of the suite. */
  only: Set<string> | undefined
  /** Contenders asked for with --clients; undefined takes each suite's default set. */
  clients?: Set<string>
  /** Brokers asked for with --brokers (client scenarios); undefined: both. */
  brokerKinds?: Set<BrokerKind>
  log(line: string): void
}

/** A group of scenarios run by name (`npm run bench -- codec`) or by id (`npm run bench -- P1`). */
export interface Suite {
  name: string
  description: string
  /** The scenario ids it produces (their prefix before any dot or @). */
  ids: string[]
  /** false: a run without names under --quick (CI) leaves it out; name it to run it quick. */
  inQuick?: boolean
  /** Micro-benchmarks measured in time windows by compare(). */
  scenarios?: () => Promise<Scenario[]>
  /** End-to-end scenarios that measure and summarise themselves. */
  run?: (ctx: RunContext) => Promise<ScenarioResult[]>
}
