/**
 * KIP-441 (smooth scaling out), after Java's HighAvailabilityTaskAssignor and TaskMovement: an
 * active stateful task placed (for balance) on a client that is not caught up on its state goes
 * back to a caught-up client, and the client it was meant for gets a warm-up replica (a standby,
 * at most max.warmup.replicas of them per assignment) that reads the changelog meanwhile. While
 * any such movement is pending the leader schedules a probing rebalance; once the warm-up is
 * within acceptable.recovery.lag the balanced placement stands and the task moves, restoring only
 * the tail. A caught-up standby of the task is swapped with the active instead (no warm-up needed).
 */

/** Java's Task.LATEST_OFFSET: the client ran the task as active, so it holds everything. */
export const LATEST_LAG = -2n

export interface LagInput {
  /** The client ran the task as active last generation (Java reports LATEST_OFFSET for it). */
  ranActive: boolean
  /** The sum of the changelog offsets it holds for the task, if it holds any. */
  offsetSum: bigint | undefined
  /** The sum of the task's changelog end offsets. */
  endOffsetSum: bigint
}

/** Java's ClientState.lagFor: what the client would have to restore to run the task. */
export function lagFor({ ranActive, offsetSum, endOffsetSum }: LagInput): bigint {
  if (ranActive) return LATEST_LAG
  if (offsetSum === undefined) return endOffsetSum
  // A position past the end (the topic was recreated, records deleted) is worth nothing: it restores everything.
  if (offsetSum > endOffsetSum) return endOffsetSum
  return endOffsetSum - offsetSum
}

/** Java's "caught-up" client: within acceptable.recovery.lag (or the running owner). */
export function isCaughtUp(lag: bigint, acceptableRecoveryLag: bigint): boolean {
  return lag === LATEST_LAG || lag <= acceptableRecoveryLag
}

export interface MovementState {
  /** Sorted client ids. */
  clients: readonly string[]
  /** Per client, its active and standby tasks (changed in place). */
  active: Map<string, string[]>
  standby: Map<string, string[]>
  /** Per client, its capacity (threads): a task load is tasks per thread, as Java's ClientState.taskLoad. */
  capacity: ReadonlyMap<string, number>
  /** Per stateful task, the clients caught up on it (absent: no lag known, nothing moves). */
  caughtUp: ReadonlyMap<string, ReadonlySet<string>>
  maxWarmupReplicas: number
}

export interface Movement {
  task: string
  /** The client the balanced assignment wanted (it gets the warm-up, or the standby of a swap). */
  destination: string
  /** The caught-up client that keeps or takes the active meanwhile. */
  source: string
  /** The destination got a warm-up replica (false: a swap with a caught-up standby, or out of warm-ups). */
  warmup: boolean
}

/**
 * Applies KIP-441's movements to a balanced assignment; returns them (empty: nothing to probe).
 * Order and choices as Java's TaskMovement: movements with the fewest caught-up clients first,
 * then by task; the source is the least loaded caught-up client holding a standby of the task,
 * else the least loaded caught-up client.
 */
export function assignTaskMovements(s: MovementState, compareTasks: (a: string, b: string) => number): Movement[] {
  const caughtUpOn = (client: string, task: string) => {
    const set = s.caughtUp.get(task)
    return set === undefined || set.size === 0 || set.has(client)
  }
  const pending: { task: string; destination: string; candidates: number }[] = []
  for (const c of s.clients) {
    for (const task of s.active.get(c)!) {
      if (!caughtUpOn(c, task)) pending.push({ task, destination: c, candidates: s.caughtUp.get(task)!.size })
    }
  }
  pending.sort((a, b) => a.candidates - b.candidates || compareTasks(a.task, b.task))
  const load = (c: string) => (s.active.get(c)!.length + s.standby.get(c)!.length) / Math.max(1, s.capacity.get(c) ?? 1)
  const leastLoaded = (task: string, extra: (c: string) => boolean): string | undefined => {
    let best: string | undefined
    for (const c of s.clients) {
      if (!s.caughtUp.get(task)!.has(c) || !extra(c)) continue
      if (best === undefined || load(c) < load(best)) best = c
    }
    return best
  }
  const remove = (list: string[], task: string) => list.splice(list.indexOf(task), 1)
  let warmups = s.maxWarmupReplicas
  const out: Movement[] = []
  for (const m of pending) {
    const swap = leastLoaded(m.task, (c) => s.standby.get(c)!.includes(m.task))
    if (swap !== undefined) {
      remove(s.standby.get(swap)!, m.task)
      s.active.get(swap)!.push(m.task)
      remove(s.active.get(m.destination)!, m.task)
      s.standby.get(m.destination)!.push(m.task)
      out.push({ task: m.task, destination: m.destination, source: swap, warmup: false })
      continue
    }
    const source = leastLoaded(m.task, (c) => !s.active.get(c)!.includes(m.task))!
    s.active.get(source)!.push(m.task)
    remove(s.active.get(m.destination)!, m.task)
    const warmup = warmups > 0
    if (warmup) {
      warmups--
      s.standby.get(m.destination)!.push(m.task)
    }
    out.push({ task: m.task, destination: m.destination, source, warmup })
  }
  return out
}
