/**
 * Task placement for a Kafka Streams group (the rules of Java's StreamsPartitionAssignor and its
 * task assignors): tasks go to clients (processes) in proportion to their thread count, then to
 * each client's threads; a task stays where it ran while that keeps the balance (sticky), a task
 * without a running owner goes preferably to a client holding its state (a standby, or the most
 * changelog offsets: KIP-441's "caught-up" client), and an active task and its standbys are never
 * on the same client. Pure and deterministic: the same subscriptions give the same assignment.
 * KIP-441's warm-ups are applied last (task-movement.ts).
 */
import { assignTaskMovements, isCaughtUp, lagFor, type Movement } from './task-movement.js'
import { placeStandbys } from './standby-placement.js'

export interface ThreadInput {
  memberId: string
  prevActive: ReadonlySet<string>
  prevStandby: ReadonlySet<string>
}

export interface ClientInput {
  processId: string
  threads: ThreadInput[]
  /** Per task, the sum of the changelog offsets this client holds locally (from its threads' tasks and its checkpoints). */
  offsetSums: ReadonlyMap<string, bigint>
  /** Its client.tag.* (KIP-708), for rack-aware standby placement. */
  tags?: ReadonlyMap<string, string>
}

export interface TaskAssignmentInput {
  clients: ClientInput[]
  /** Every task id ("<subtopology>_<partition>"). */
  tasks: readonly string[]
  /** Tasks with logged state (only they get standbys). */
  stateful: ReadonlySet<string>
  numStandbyReplicas: number
  /**
   * KIP-441: per stateful task, the sum of its changelog partitions' end offsets (the leader
   * looks them up). Absent when unknown: then no client counts as behind and nothing is held back.
   */
  endOffsetSums?: ReadonlyMap<string, bigint>
  /**
   * The end offsets could not be looked up: stateful tasks stay on the clients that ran them
   * (Java's FallbackPriorTaskAssignor), without warm-ups; a probing rebalance retries.
   */
  keepPriorOwners?: boolean
  /** acceptable.recovery.lag (default 10000): how far behind a client may be and still count as caught up. */
  acceptableRecoveryLag?: bigint
  /** max.warmup.replicas (default 2): warm-up replicas handed out per assignment, beyond the standbys. */
  maxWarmupReplicas?: number
  /** rack.aware.assignment.tags (KIP-708): client tag keys standby replicas are spread over. */
  rackAwareAssignmentTags?: readonly string[]
}

export interface TaskAssignment {
  /** Per member id, its active and standby tasks. */
  threads: Map<string, { active: string[]; standby: string[] }>
  /** Standby replicas that found no client (fewer clients than num.standby.replicas + 1). */
  unassignedStandbys: number
  /** With rack.aware.assignment.tags: replicas placed without the tag constraint (too few distinct tag values). */
  rackUnawareStandbys: number
  /** KIP-441 movements held back for a warm-up (or swapped with a caught-up standby). */
  movements: Movement[]
  /** Warm-ups are catching up: the leader schedules a probing rebalance (Java's probingRebalanceNeeded). */
  probingRebalanceNeeded: boolean
}

/** Java's StreamsConfig defaults for KIP-441. */
export const ACCEPTABLE_RECOVERY_LAG_DEFAULT = 10_000n
export const MAX_WARMUP_REPLICAS_DEFAULT = 2

interface Bin {
  id: string
  capacity: number
  /** What it ran before: kept first (stickiness). */
  prev: ReadonlySet<string>
  /** How much of a task's state it holds (higher wins a task nobody keeps). */
  warmth(task: string): bigint
}

/** Orders task ids as Java's TaskId does: by sub-topology, then partition. */
export function compareTaskIds(a: string, b: string): number {
  const [as, ap] = a.split('_').map(Number) as [number, number]
  const [bs, bp] = b.split('_').map(Number) as [number, number]
  return as - bs || ap - bp
}

/**
 * Spreads tasks over bins in proportion to capacity, as evenly as counts allow (each bin gets the
 * floor or the ceiling of its share), keeping each bin's previous tasks where the balance lets it;
 * only an orphaned task with a warm copy may push its bin past its share (see below).
 */
export function distribute(tasks: readonly string[], bins: readonly Bin[]): Map<string, string[]> {
  const out = new Map<string, string[]>(bins.map((b) => [b.id, []]))
  if (bins.length === 0) return out
  const total = bins.reduce((n, b) => n + b.capacity, 0)
  const floor = new Map(bins.map((b) => [b.id, Math.floor((tasks.length * b.capacity) / total)]))
  let extras = tasks.length - [...floor.values()].reduce((n, f) => n + f, 0)
  const load = (b: Bin) => out.get(b.id)!.length
  const room = (b: Bin) => load(b) < floor.get(b.id)! || (extras > 0 && load(b) === floor.get(b.id)!)
  const place = (b: Bin, task: string) => {
    if (load(b) >= floor.get(b.id)!) extras--
    out.get(b.id)!.push(task)
  }
  const left: string[] = []
  // First every bin keeps what it had up to its floor; then the extra slots go to bins that still have previous tasks.
  for (const task of tasks) {
    const b = bins.find((x) => x.prev.has(task) && load(x) < floor.get(x.id)!)
    if (b) place(b, task)
    else left.push(task)
  }
  const rest: string[] = []
  for (const task of left) {
    const b = bins.find((x) => x.prev.has(task) && room(x))
    if (b) place(b, task)
    else rest.push(task)
  }
  // A task whose owner is gone goes to the bin holding the most of its state (a standby) even past
  // its share, as Java's HighAvailabilityTaskAssignor puts stateful actives on caught-up clients
  // first: moving it to balance would restore it from scratch. Other tasks nobody keeps go where a
  // warm copy is if that bin has room, else to the least loaded.
  const cold: string[] = []
  for (const task of rest) {
    const orphan = !bins.some((b) => b.prev.has(task))
    let best: Bin | undefined
    for (const b of bins) if ((orphan || room(b)) && b.warmth(task) > 0n && (best === undefined || b.warmth(task) > best.warmth(task))) best = b
    if (best) place(best, task)
    else cold.push(task)
  }
  for (const task of cold) {
    let best: Bin | undefined
    for (const b of bins) if (room(b) && (best === undefined || load(b) / b.capacity < load(best) / best.capacity)) best = b
    place(best!, task)
  }
  return out
}

export function assignTasks(input: TaskAssignmentInput): TaskAssignment {
  const clients = [...input.clients].sort((a, b) => (a.processId < b.processId ? -1 : a.processId > b.processId ? 1 : 0))
  const tasks = [...input.tasks].sort(compareTaskIds)
  const warmthOf = (c: ClientInput, task: string): bigint => {
    if (c.threads.some((t) => t.prevStandby.has(task) || t.prevActive.has(task))) return (c.offsetSums.get(task) ?? 0n) + 1n
    const s = c.offsetSums.get(task)
    return s === undefined ? 0n : s + 1n
  }
  const clientBins: Bin[] = clients.map((c) => ({
    id: c.processId,
    capacity: Math.max(1, c.threads.length),
    prev: new Set(c.threads.flatMap((t) => [...t.prevActive])),
    warmth: (task) => warmthOf(c, task),
  }))
  const active = distribute(tasks, clientBins)
  const byPid = new Map(clients.map((c) => [c.processId, c]))
  const owner = new Map<string, string>()
  for (const [pid, list] of active) for (const t of list) owner.set(t, pid)

  const placed = placeStandbys({
    clients: clients.map((c) => ({ processId: c.processId, capacity: Math.max(1, c.threads.length), tags: c.tags ?? new Map() })),
    tasks: tasks.filter((t) => input.stateful.has(t)),
    owner,
    numStandbyReplicas: input.numStandbyReplicas,
    warmth: (pid, task) => warmthOf(byPid.get(pid)!, task),
    rackAwareAssignmentTags: input.rackAwareAssignmentTags ?? [],
  })
  const standby = placed.standby

  const statefulTasks = tasks.filter((t) => input.stateful.has(t))
  const caughtUp = input.endOffsetSums !== undefined
    ? caughtUpClients(clients, statefulTasks, input.endOffsetSums, input.acceptableRecoveryLag ?? ACCEPTABLE_RECOVERY_LAG_DEFAULT)
    : input.keepPriorOwners ? priorOwners(clients, statefulTasks) : undefined
  const movements = caughtUp === undefined ? [] : assignTaskMovements({
    clients: clients.map((c) => c.processId),
    active,
    standby,
    capacity: new Map(clients.map((c) => [c.processId, Math.max(1, c.threads.length)])),
    caughtUp,
    maxWarmupReplicas: input.endOffsetSums === undefined ? 0 : input.maxWarmupReplicas ?? MAX_WARMUP_REPLICAS_DEFAULT,
  }, compareTaskIds)

  const threads = new Map<string, { active: string[]; standby: string[] }>()
  for (const c of clients) {
    const members = [...c.threads].sort((a, b) => (a.memberId < b.memberId ? -1 : a.memberId > b.memberId ? 1 : 0))
    const bins = (pick: (t: ThreadInput) => ReadonlySet<string>, other: (t: ThreadInput) => ReadonlySet<string>): Bin[] =>
      members.map((t) => ({ id: t.memberId, capacity: 1, prev: pick(t), warmth: (task) => (other(t).has(task) ? 1n : 0n) }))
    const a = distribute(active.get(c.processId)!, bins((t) => t.prevActive, (t) => t.prevStandby))
    const s = distribute(standby.get(c.processId)!, bins((t) => t.prevStandby, (t) => t.prevActive))
    for (const t of members) threads.set(t.memberId, { active: a.get(t.memberId)!, standby: s.get(t.memberId)! })
  }
  return { threads, unassignedStandbys: placed.unassigned, rackUnawareStandbys: placed.rackUnaware, movements, probingRebalanceNeeded: movements.length > 0 || (input.keepPriorOwners === true && statefulTasks.length > 0) }
}

/** Without lags, only the client that ran a task counts as caught up on it. */
function priorOwners(clients: readonly ClientInput[], stateful: readonly string[]): Map<string, Set<string>> {
  return new Map(stateful.map((task) => [task, new Set(clients.filter((c) => c.threads.some((t) => t.prevActive.has(task))).map((c) => c.processId))]))
}

/** Java's tasksToCaughtUpClients: per stateful task with a known end, the clients within the acceptable lag. */
function caughtUpClients(clients: readonly ClientInput[], stateful: readonly string[], ends: ReadonlyMap<string, bigint>, acceptable: bigint): Map<string, Set<string>> {
  const out = new Map<string, Set<string>>()
  for (const task of stateful) {
    const end = ends.get(task)
    if (end === undefined) continue
    const set = new Set<string>()
    for (const c of clients) {
      const lag = lagFor({ ranActive: c.threads.some((t) => t.prevActive.has(task)), offsetSum: c.offsetSums.get(task), endOffsetSum: end })
      if (isCaughtUp(lag, acceptable)) set.add(c.processId)
    }
    out.set(task, set)
  }
  return out
}
