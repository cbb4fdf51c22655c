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
export function streamsAssignor(layout: TaskLayout, member: AssignorMember, logger?: Logger): Assignor {
  const assignWithUserData = ({ members, partitionCounts }: AssignmentInput) => {
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
    const clients = new Map<string, ClientInput & { offsetSums: Map<string, bigint> }>()
    members.forEach((m, i) => {
      const info = infos[i]
      const pid = info?.processId || `member:${m.memberId}`
      let c = clients.get(pid)
      if (c === undefined) clients.set(pid, (c = { processId: pid, threads: [], offsetSums: new Map() }))
      c.threads.push({ memberId: m.memberId, prevActive: new Set(info?.prevActive ?? []), prevStandby: new Set(info?.prevStandby ?? []) })
      for (const [task, sum] of Object.entries(info?.offsetSums ?? {})) {
        const v = BigInt(sum)
        if ((c.offsetSums.get(task) ?? -1n) < v) c.offsetSums.set(task, v)
      }
    })
    const result = assignTasks({ clients: [...clients.values()], tasks, stateful, numStandbyReplicas: layout.numStandbyReplicas })
    if (result.unassignedStandbys > 0) {
      logger?.warn({ unassigned: result.unassignedStandbys, clients: clients.size }, `Unable to assign ${result.unassignedStandbys} of ${stateful.size * layout.numStandbyReplicas} standby tasks: there are not enough available clients`)
    }
    for (const [memberId, a] of result.threads) {
      partitions.set(memberId, a.active.flatMap((t) => taskPartitions.get(t) ?? []))
      userData.set(memberId, encodeAssignmentInfo({ standby: a.standby, errorCode: AssignorError.NONE }))
    }
    return { partitions, userData }
  }
  return {
    name: STREAMS_ASSIGNOR_NAME,
    protocols: ['eager'],
    subscriptionUserData: () => encodeSubscriptionInfo(member.subscriptionInfo()),
    assign: (input) => assignWithUserData(input).partitions,
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
