import type { Logger } from '@tidelog/client'
import type { AssignmentInput, Assignor } from '@tidelog/consumer'
import { AssignorError, decodeAssignmentInfo, decodeSubscriptionInfo, encodeAssignmentInfo, encodeSubscriptionInfo, type AssignmentInfo, type SubscriptionInfo } from './codec.js'
import { assignTasks, type ClientInput } from './task-assignor.js'

/** What the assignor needs to know of the topology (the same on every instance of the application). */
export interface TaskLayout {
  /** Source topic (as the broker names it) to its sub-topology. */
  topicToSub: ReadonlyMap<string, number>
  /** Sub-topologies with logged state (their tasks get standbys). */
  statefulSubs: ReadonlySet<number>
  numStandbyReplicas: number
  /** Per stateful sub-topology, its stores' changelog topics (task `<sub>_<p>` writes partition p of each). */
  changelogTopics: ReadonlyMap<number, readonly string[]>
  /** KIP-441: acceptable.recovery.lag, max.warmup.replicas, probing.rebalance.interval.ms. */
  acceptableRecoveryLag: bigint
  maxWarmupReplicas: number
  probingRebalanceIntervalMs: number
  /** rack.aware.assignment.tags (KIP-708). */
  rackAwareAssignmentTags?: readonly string[]
}

/** What the leader looks up while it assigns (Java's StreamsPartitionAssignor asks its admin client). */
export interface AssignorLookups {
  /** Latest offsets of changelog partitions, keyed `topic:partition`. */
  endOffsets(partitions: readonly { topic: string; partition: number }[]): Promise<ReadonlyMap<string, bigint>>
  now(): number
}

/** One stream thread's side: what it tells the leader, and what it is told back. */
export interface AssignorMember {
  subscriptionInfo(): SubscriptionInfo
  onAssignmentInfo(info: AssignmentInfo, generationId: number): void
}

/**
 * Java's name is "stream"; ours differs because the userData encoding does, so a Java instance
 * joining an application of ours is refused by the coordinator (INCONSISTENT_GROUP_PROTOCOL)
 * rather than misreading our subscriptions.
 */
export const STREAMS_ASSIGNOR_NAME = 'tidelog-stream'

/**
 * The group assignor of a stream thread (Java's StreamsPartitionAssignor): the leader groups the
 * members by processId into clients, places tasks with assignTasks (sticky, balanced, standbys
 * apart from their actives) and hands each thread the partitions of its active tasks plus, in the
 * assignment userData, its standby tasks. A subscription carrying SHUTDOWN_REQUESTED (KIP-671)
 * makes the leader give every member no partitions and that error code.
 */
export function streamsAssignor(layout: TaskLayout, member: AssignorMember, logger?: Logger, lookups?: AssignorLookups): Assignor {
  /** Sync once the end offsets are known (undefined: no lags; endsFailed: the lookup failed). */
  const compute = ({ members, partitionCounts }: AssignmentInput, endOffsetSums: Map<string, bigint> | undefined, endsFailed: boolean) => {
    const partitions = new Map(members.map((m) => [m.memberId, [] as { topic: string; partition: number }[]]))
    const userData = new Map<string, Uint8Array>()
    const infos = members.map((m) => {
      try {
        return decodeSubscriptionInfo(m.userData)
      } catch (e) {
        logger?.warn({ err: e, memberId: m.memberId }, 'streams assignor: unreadable subscription userData, treating the member as new')
        return undefined
      }
    })
    if (infos.some((i) => i?.errorCode === AssignorError.SHUTDOWN_REQUESTED)) {
      logger?.warn({}, 'streams assignor: a member requested the shutdown of the application; every member gets SHUTDOWN_REQUESTED')
      for (const m of members) userData.set(m.memberId, encodeAssignmentInfo({ standby: [], errorCode: AssignorError.SHUTDOWN_REQUESTED }))
      return { partitions, userData }
    }
    const { tasks, stateful, taskPartitions } = tasksOf(layout, partitionCounts)
    const clients = new Map<string, ClientInput & { offsetSums: Map<string, bigint>; tags: ReadonlyMap<string, string> }>()
    members.forEach((m, i) => {
      const info = infos[i]
      const pid = info?.processId || `member:${m.memberId}`
      let c = clients.get(pid)
      if (c === undefined) clients.set(pid, (c = { processId: pid, threads: [], offsetSums: new Map(), tags: new Map(Object.entries(info?.clientTags ?? {})) }))
      c.threads.push({ memberId: m.memberId, prevActive: new Set(info?.prevActive ?? []), prevStandby: new Set(info?.prevStandby ?? []) })
      for (const [task, sum] of Object.entries(info?.offsetSums ?? {})) {
        const v = BigInt(sum)
        if ((c.offsetSums.get(task) ?? -1n) < v) c.offsetSums.set(task, v)
      }
    })
    const result = assignTasks({
      clients: [...clients.values()],
      tasks,
      stateful,
      numStandbyReplicas: layout.numStandbyReplicas,
      ...(endOffsetSums ? { endOffsetSums } : {}),
      keepPriorOwners: endsFailed,
      acceptableRecoveryLag: layout.acceptableRecoveryLag,
      maxWarmupReplicas: layout.maxWarmupReplicas,
      rackAwareAssignmentTags: layout.rackAwareAssignmentTags ?? [],
    })
    if (result.rackUnawareStandbys > 0) {
      logger?.warn({ replicas: result.rackUnawareStandbys, tags: layout.rackAwareAssignmentTags }, `Unable to place ${result.rackUnawareStandbys} standby tasks on clients with different client tags: there are not enough distinct tag values; placed them on the least loaded clients`)
    }
    const probe = result.probingRebalanceNeeded
    if (result.movements.length > 0) {
      logger?.info({ movements: result.movements }, `streams assignor: ${result.movements.length} stateful active task(s) held on caught-up clients while warm-up replicas catch up (KIP-441)`)
    }
    // As Java: one thread of the leader's own client carries the time of the probing rebalance.
    const leaderPid = member.subscriptionInfo().processId
    const prober = probe ? [...result.threads.keys()].sort().find((m) => clients.get(leaderPid)?.threads.some((t) => t.memberId === m)) ?? [...result.threads.keys()].sort()[0] : undefined
    const nextRebalanceMs = probe ? (lookups?.now() ?? Date.now()) + layout.probingRebalanceIntervalMs : undefined
    if (result.unassignedStandbys > 0) {
      logger?.warn({ unassigned: result.unassignedStandbys, clients: clients.size }, `Unable to assign ${result.unassignedStandbys} of ${stateful.size * layout.numStandbyReplicas} standby tasks: there are not enough available clients`)
    }
    for (const [memberId, a] of result.threads) {
      partitions.set(memberId, a.active.flatMap((t) => taskPartitions.get(t) ?? []))
      userData.set(memberId, encodeAssignmentInfo({ standby: a.standby, errorCode: AssignorError.NONE, ...(memberId === prober && nextRebalanceMs !== undefined ? { nextRebalanceMs } : {}) }))
    }
    return { partitions, userData }
  }
  const assignWithUserData = async (input: AssignmentInput) => {
    if (lookups === undefined) return compute(input, undefined, false)
    try {
      return compute(input, await changelogEndSums(layout, [...tasksOf(layout, input.partitionCounts).stateful], lookups), false)
    } catch (e) {
      // Java's FallbackPriorTaskAssignor: keep tasks where they are and try again at the next probing rebalance.
      logger?.warn({ err: e }, 'streams assignor: failed to fetch end offsets for changelogs; keeping the previous placement and scheduling another rebalance to retry')
      return compute(input, undefined, true)
    }
  }
  return {
    name: STREAMS_ASSIGNOR_NAME,
    protocols: ['eager'],
    subscriptionUserData: () => encodeSubscriptionInfo(member.subscriptionInfo()),
    assign: (input) => compute(input, undefined, false).partitions,
    assignWithUserData,
    onAssignment: ({ userData, generationId }) => {
      let info: AssignmentInfo | undefined
      try {
        info = decodeAssignmentInfo(userData)
      } catch (e) {
        logger?.warn({ err: e }, 'streams assignor: unreadable assignment userData, no standby tasks this generation')
      }
      member.onAssignmentInfo(info ?? { standby: [], errorCode: AssignorError.NONE }, generationId)
    },
  }
}

/** Java's allTasksEndOffsetSums: per stateful task, the sum of its changelog partitions' end offsets. */
async function changelogEndSums(layout: TaskLayout, stateful: readonly string[], lookups: AssignorLookups): Promise<Map<string, bigint>> {
  const parts = stateful.flatMap((task) => {
    const [sub, p] = task.split('_').map(Number) as [number, number]
    return (layout.changelogTopics.get(sub) ?? []).map((topic) => ({ task, topic, partition: p }))
  })
  const ends = parts.length === 0 ? new Map<string, bigint>() : await lookups.endOffsets(parts)
  const out = new Map<string, bigint>()
  for (const { task, topic, partition } of parts) out.set(task, (out.get(task) ?? 0n) + (ends.get(`${topic}:${partition}`) ?? 0n))
  return out
}

/** Every task (one per sub-topology partition), which have logged state, and the input partitions of each. */
function tasksOf(layout: TaskLayout, partitionCounts: ReadonlyMap<string, number>) {
  const subTopics = new Map<number, string[]>()
  for (const [topic, sub] of layout.topicToSub) subTopics.set(sub, [...(subTopics.get(sub) ?? []), topic])
  const tasks: string[] = []
  const stateful = new Set<string>()
  const taskPartitions = new Map<string, { topic: string; partition: number }[]>()
  for (const [sub, topics] of subTopics) {
    const n = Math.max(0, ...topics.map((t) => partitionCounts.get(t) ?? 0))
    for (let p = 0; p < n; p++) {
      const id = `${sub}_${p}`
      tasks.push(id)
      if (layout.statefulSubs.has(sub)) stateful.add(id)
      taskPartitions.set(id, topics.filter((t) => (partitionCounts.get(t) ?? 0) > p).map((topic) => ({ topic, partition: p })))
    }
  }
  return { tasks, stateful, taskPartitions }
}
