import type { Impl } from './stats.js'

/** One comparison: the first implementation is tidelog, the others its peers. */
export interface Scenario {
  id: string
  title: string
  unit: string
  higherIsBetter: boolean
  impls: Impl[]
}

/** A group of scenarios run by name (`npm run bench -- codec`). */
export interface Suite {
  name: string
  description: string
  scenarios: () => Promise<Scenario[]>
}
