/**
 * Standby replica placement: each replica on a client holding neither the active nor another
 * replica of the task, preferring the client with the most of the task's state, then the least
 * loaded. With rack.aware.assignment.tags (KIP-708), first as Java's
 * ClientTagAwareStandbyTaskAssignor: a replica goes only to a client whose value differs, for
 * each tag, from the active's and the earlier replicas' (a tag stops counting once every one of
 * its values is used); what cannot be placed that way goes to the best client left afterwards.
 */

export interface StandbyClient {
  processId: string
  capacity: number
  /** client.tag.* of the instance. */
  tags: ReadonlyMap<string, string>
}

export interface StandbyInput {
  /** Sorted by processId. */
  clients: readonly StandbyClient[]
  /** Stateful tasks, in Java's TaskId order. */
  tasks: readonly string[]
  owner: ReadonlyMap<string, string>
  numStandbyReplicas: number
  /** How much of a task's state a client holds (higher is preferred). */
  warmth(processId: string, task: string): bigint
  rackAwareAssignmentTags: readonly string[]
}

export interface StandbyPlacement {
  standby: Map<string, string[]>
  /** Replicas that found no client at all. */
  unassigned: number
  /** Replicas placed without the tag constraint (not enough distinct tag values). */
  rackUnaware: number
}

export function placeStandbys(input: StandbyInput): StandbyPlacement {
  const { clients, owner } = input
  const standby = new Map<string, string[]>(clients.map((c) => [c.processId, []]))
  const load = (c: StandbyClient) => standby.get(c.processId)!.length / Math.max(1, c.capacity)
  const pick = (task: string, allowed: (c: StandbyClient) => boolean): StandbyClient | undefined => {
    let best: StandbyClient | undefined
    for (const c of clients) {
      if (owner.get(task) === c.processId || standby.get(c.processId)!.includes(task) || !allowed(c)) continue
      if (best === undefined) {
        best = c
        continue
      }
      const w = input.warmth(c.processId, task) - input.warmth(best.processId, task)
      if (w > 0n || (w === 0n && load(c) < load(best))) best = c
    }
    return best
  }
  const tags = input.rackAwareAssignmentTags
  const pending = new Map<string, number>()
  if (tags.length === 0) {
    for (const task of input.tasks) pending.set(task, input.numStandbyReplicas)
  } else {
    const byPid = new Map(clients.map((c) => [c.processId, c]))
    const values = new Map<string, Set<string>>()
    for (const c of clients) for (const k of tags) if (c.tags.has(k)) values.set(k, (values.get(k) ?? new Set()).add(c.tags.get(k)!))
    for (const task of input.tasks) {
      // Per tag key, the values already used (by the active and the replicas) while that key still excludes anything.
      const used = new Map<string, Set<string>>()
      let count = 1
      let last = owner.get(task)
      let left = input.numStandbyReplicas
      while (left > 0 && last !== undefined) {
        const lastTags = byPid.get(last)!.tags
        for (const k of tags) {
          const v = lastTags.get(k)
          if (v === undefined) continue
          if ((values.get(k)?.size ?? 0) <= count) used.delete(k)
          else used.set(k, (used.get(k) ?? new Set()).add(v))
        }
        const c = pick(task, (x) => ![...used].some(([k, vs]) => vs.has(x.tags.get(k)!)))
        if (c === undefined) break
        standby.get(c.processId)!.push(task)
        count++
        left--
        last = c.processId
      }
      if (left > 0) pending.set(task, left)
    }
  }
  let unassigned = 0
  let rackUnaware = 0
  for (const [task, n] of pending) {
    for (let r = 0; r < n; r++) {
      const c = pick(task, () => true)
      if (c === undefined) unassigned++
      else {
        standby.get(c.processId)!.push(task)
        if (tags.length > 0) rackUnaware++
      }
    }
  }
  return { standby, unassigned, rackUnaware }
}
