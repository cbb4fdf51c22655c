import { TidelogError } from '@tidelog/protocol'
import { sleep } from '../backoff.js'
import type { Cluster } from '../cluster.js'
import { AdminError, isRetriable } from '../errors.js'
import { Deadline } from '../retry.js'

/** What every Admin operation needs. */
export interface AdminContext {
  cluster: Cluster
  /** Java's default.api.timeout.ms (60 s): the default bound on each operation, retries included. */
  timeoutMs: number
}

/** An item's outcome in one attempt: its result, or why it failed. */
export type Outcomes<R> = Map<string, R | Error>

export interface PerItemOptions {
  timeoutMs?: number
  /** Which per-item errors to try again; default: the error's retriable flag. */
  retriable?: (error: Error) => boolean
  /** Called for each retriable per-item error before the next attempt (e.g. forget a coordinator). */
  onRetriable?: (key: string, error: Error) => void
}

/**
 * Runs an operation over many items (topics, partitions, groups) the way Java's AdminClient
 * does: each attempt covers the items still pending; items that succeed or fail for good are
 * settled; items with a retriable error (and those of an attempt that failed as a whole with a
 * retriable error) are tried again after a backoff until the deadline. Metadata is refreshed
 * when an error says it is stale. Results come back in input order; if any item failed, an
 * AdminError carries every failure and the partial results.
 */
export async function perItem<I, R>(
  ctx: AdminContext,
  operation: string,
  items: readonly I[],
  key: (item: I) => string,
  attempt: (pending: I[], deadline: Deadline) => Promise<Outcomes<R>>,
  options: PerItemOptions = {},
): Promise<R[]> {
  const deadline = new Deadline(options.timeoutMs ?? ctx.timeoutMs)
  const retriable = options.retriable ?? isRetriable
  const results = new Map<string, R>()
  const errors = new Map<string, Error>()
  const last = new Map<string, Error>()
  const unique = new Map<string, I>()
  for (const item of items) if (!unique.has(key(item))) unique.set(key(item), item)
  let pending = [...unique.values()]

  for (let n = 0; pending.length > 0; n++) {
    let outcomes: Outcomes<R>
    try {
      outcomes = await attempt(pending, deadline)
    } catch (e) {
      const error = e instanceof Error ? e : new Error(String(e))
      const delay = ctx.cluster.retryBackoff.delay(n)
      if (!isRetriable(error) || deadline.passedAfter(delay)) {
        // A failure of the whole operation (closed client, no common version, auth) is
        // thrown as itself unless some items already have an outcome to report.
        if (results.size === 0 && errors.size === 0) throw error
        for (const item of pending) errors.set(key(item), error)
        break
      }
      ctx.cluster.handleError(error)
      await sleep(delay)
      continue
    }
    const again: I[] = []
    for (const item of pending) {
      const k = key(item)
      const o = outcomes.get(k)
      if (o === undefined) {
        errors.set(k, new TidelogError(`${operation}: the broker's response left out ${k}`))
      } else if (o instanceof Error) {
        if (retriable(o)) {
          last.set(k, o)
          again.push(item)
          ctx.cluster.handleError(o)
          options.onRetriable?.(k, o)
        } else {
          errors.set(k, o)
        }
      } else {
        results.set(k, o)
      }
    }
    pending = again
    if (pending.length === 0) break
    const delay = ctx.cluster.retryBackoff.delay(n)
    if (deadline.passedAfter(delay)) {
      for (const item of pending) errors.set(key(item), last.get(key(item))!)
      break
    }
    await sleep(delay)
  }

  const ordered: R[] = []
  for (const k of unique.keys()) {
    const r = results.get(k)
    if (r !== undefined) ordered.push(r)
  }
  if (errors.size > 0) throw new AdminError(operation, [...errors.values()], ordered)
  return ordered
}

/** Splits items by the node that must receive them. */
export function groupBy<I>(items: readonly I[], node: (item: I) => number): Map<number, I[]> {
  const out = new Map<number, I[]>()
  for (const item of items) {
    const n = node(item)
    let list = out.get(n)
    if (list === undefined) out.set(n, (list = []))
    list.push(item)
  }
  return out
}

/** Runs one request per node in parallel; a node whose request fails gives that error to all its items. */
export async function perNode<I, R>(
  groups: Map<number, I[]>,
  key: (item: I) => string,
  send: (nodeId: number, items: I[]) => Promise<Outcomes<R>>,
): Promise<Outcomes<R>> {
  const out: Outcomes<R> = new Map()
  await Promise.all(
    [...groups].map(async ([nodeId, items]) => {
      try {
        for (const [k, v] of await send(nodeId, items)) out.set(k, v)
      } catch (e) {
        const error = e instanceof Error ? e : new Error(String(e))
        for (const item of items) out.set(key(item), error)
      }
    }),
  )
  return out
}
