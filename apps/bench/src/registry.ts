import { consume, latency, produce } from './scenarios/clients.js'
import { memory, startup } from './scenarios/brokers.js'
import { codec } from './scenarios/k1-codec.js'
import { cleaner } from './scenarios/cleaner.js'
import { limits } from './scenarios/limits.js'
import { streams } from './scenarios/streams.js'
import { quotas } from './scenarios/quotas.js'
import { scale } from './scenarios/scale.js'
import { transactions } from './scenarios/transactions.js'
import type { Suite } from './types.js'

/** Every suite, in the order a full run takes them: brokers are measured idle before any load. */
export const SUITES: Suite[] = [codec, limits, startup, memory, produce, consume, latency, transactions, streams, scale, quotas, cleaner]

/** Other names the issues and READMEs use for suites (`npm run bench -- producer`). */
const ALIASES: Record<string, string> = { producer: 'produce', consumer: 'consume', txn: 'transactions', 'kafka-streams': 'streams' }

export interface Selection {
  suite: Suite
  only: Set<string> | undefined
}

/** Names select whole suites ("produce") or scenarios by id ("P1", "k1"). */
export function select(names: string[], suites: Suite[] = SUITES, quick = false): Selection[] | string {
  if (names.length === 0) return suites.filter((s) => !quick || s.inQuick !== false).map((suite) => ({ suite, only: undefined }))
  const picked = new Map<Suite, Set<string> | undefined>()
  for (const raw of names) {
    const name = raw.toLowerCase()
    const bySuite = suites.find((s) => s.name === (ALIASES[name] ?? name))
    if (bySuite !== undefined) {
      picked.set(bySuite, undefined)
      continue
    }
    const id = raw.toUpperCase()
    // A sub-scenario ("C1.batch") belongs to the suite of its id's prefix.
    const byId = suites.find((s) => s.ids.includes(id.split('.')[0]!))
    if (byId === undefined) return `unknown suite or scenario ${raw}`
    if (picked.has(byId) && picked.get(byId) === undefined) continue
    picked.set(byId, new Set([...(picked.get(byId) ?? []), id]))
  }
  return suites.filter((s) => picked.has(s)).map((suite) => ({ suite, only: picked.get(suite) }))
}
