import {
  DeleteGroups,
  DescribeGroups,
  ErrorCodes,
  ListGroups,
  OffsetCommit,
  OffsetFetch,
  ProtocolError,
  decodeConsumerProtocolAssignment,
  decodeConsumerProtocolSubscription,
  type OffsetCommitRequest,
  type OffsetFetchRequest,
} from '@tidelog/protocol'
import type { Connection } from '../connection.js'
import type { BrokerInfo } from '../metadata.js'
import { groupBy, perItem, perNode, type AdminContext, type Outcomes } from './engine.js'
import type { CommitOffset, GroupDescription, GroupListing, GroupMember, GroupOffset } from './types.js'

/** Errors that mean the group's coordinator moved or is not ready: look it up again. */
const COORDINATOR_ERRORS = new Set<number>([
  ErrorCodes.COORDINATOR_NOT_AVAILABLE,
  ErrorCodes.NOT_COORDINATOR,
  ErrorCodes.COORDINATOR_LOAD_IN_PROGRESS,
])

function forgetCoordinator(ctx: AdminContext) {
  return (groupId: string, error: Error): void => {
    if (error instanceof ProtocolError && COORDINATOR_ERRORS.has(error.code)) ctx.cluster.invalidateCoordinator(groupId)
  }
}

/** Coordinators for the groups; groups whose lookup failed get that error as their outcome. */
async function coordinators(ctx: AdminContext, groupIds: string[], timeoutMs: number) {
  const found = await ctx.cluster.findCoordinators(groupIds, 'group', timeoutMs)
  const errors: Outcomes<never> = new Map()
  const brokers = new Map<number, BrokerInfo>()
  const routable: string[] = []
  for (const id of groupIds) {
    const c = found.get(id)
    if (c === undefined || c instanceof Error) errors.set(id, c ?? new ProtocolError(ErrorCodes.COORDINATOR_NOT_AVAILABLE, { groupId: id }))
    else {
      brokers.set(c.nodeId, c)
      routable.push(id)
    }
  }
  return { byNode: groupBy(routable, (id) => (found.get(id) as BrokerInfo).nodeId), brokers, errors }
}

async function coordinatorConnection(ctx: AdminContext, broker: BrokerInfo): Promise<Connection> {
  return ctx.cluster.connectionToBroker(broker)
}

function groupError(code: number, api: string, groupId: string, message?: string | null): ProtocolError {
  return new ProtocolError(code, { api, groupId, message })
}

export async function listGroups(
  ctx: AdminContext,
  options: { states?: string[]; types?: string[]; timeoutMs?: number } = {},
): Promise<GroupListing[]> {
  if (ctx.cluster.metadata.updatedAt === 0) await ctx.cluster.connect()
  // Every broker coordinates some groups, so all of them are asked, as Java does.
  const nodes = [...ctx.cluster.metadata.brokers.values()]
  const states = options.states?.map((s) => s.toLowerCase())
  const types = options.types?.map((t) => t.toLowerCase())
  const perBroker = await perItem(ctx, 'listGroups', nodes, (b) => String(b.nodeId), async (pending) => {
    const out: Outcomes<GroupListing[]> = new Map()
    await Promise.all(
      pending.map(async (b) => {
        try {
          const conn = await ctx.cluster.connectionToBroker(b)
          const res = await conn.request(ListGroups, (v) => {
            const req: { statesFilter?: string[]; typesFilter?: string[] } = {}
            // Filters the broker cannot apply (before v4 / v5) are applied here instead.
            if (v >= 4 && options.states !== undefined) req.statesFilter = options.states
            if (v >= 5 && options.types !== undefined) req.typesFilter = options.types
            return req
          })
          if (res.errorCode !== 0) {
            out.set(String(b.nodeId), new ProtocolError(res.errorCode, { api: 'ListGroups', message: `broker ${b.nodeId}` }))
            return
          }
          out.set(
            String(b.nodeId),
            res.groups.map((g) => ({ groupId: g.groupId, protocolType: g.protocolType, state: g.groupState ?? '', type: g.groupType ?? '' })),
          )
        } catch (e) {
          out.set(String(b.nodeId), e instanceof Error ? e : new Error(String(e)))
        }
      }),
    )
    return out
  }, { timeoutMs: options.timeoutMs })
  const seen = new Set<string>()
  const all: GroupListing[] = []
  for (const list of perBroker) {
    for (const g of list) {
      if (seen.has(g.groupId)) continue
      if (states !== undefined && g.state !== '' && !states.includes(g.state.toLowerCase())) continue
      if (types !== undefined && !types.includes((g.type === '' ? 'classic' : g.type).toLowerCase())) continue
      seen.add(g.groupId)
      all.push(g)
    }
  }
  return all.sort((a, b) => (a.groupId < b.groupId ? -1 : a.groupId > b.groupId ? 1 : 0))
}

function decodeMember(protocolType: string, m: {
  memberId: string
  groupInstanceId?: string | null
  clientId: string
  clientHost: string
  memberMetadata: Uint8Array
  memberAssignment: Uint8Array
}): GroupMember {
  const member: GroupMember = {
    memberId: m.memberId,
    groupInstanceId: m.groupInstanceId ?? null,
    clientId: m.clientId,
    clientHost: m.clientHost,
    metadata: Buffer.from(m.memberMetadata),
    assignment: Buffer.from(m.memberAssignment),
  }
  if (protocolType === 'consumer') {
    // Bytes written by another client may be in a shape we cannot read; they stay raw then.
    if (member.metadata.length > 0) {
      try {
        member.subscription = decodeConsumerProtocolSubscription(member.metadata)
      } catch {
        /* left undecoded */
      }
    }
    if (member.assignment.length > 0) {
      try {
        member.memberAssignment = decodeConsumerProtocolAssignment(member.assignment)
      } catch {
        /* left undecoded */
      }
    }
  }
  return member
}

export async function describeGroups(ctx: AdminContext, groupIds: readonly string[], options: { timeoutMs?: number } = {}): Promise<GroupDescription[]> {
  return perItem(ctx, 'describeGroups', groupIds, (g) => g, async (pending, deadline) => {
    const { byNode, brokers, errors } = await coordinators(ctx, pending, deadline.remaining())
    const out = await perNode(byNode, (g) => g, async (nodeId, ids) => {
      const conn = await coordinatorConnection(ctx, brokers.get(nodeId)!)
      const res = await conn.request(DescribeGroups, { groups: ids })
      const answers: Outcomes<GroupDescription> = new Map()
      for (const g of res.groups) {
        answers.set(
          g.groupId,
          g.errorCode !== 0
            ? groupError(g.errorCode, 'DescribeGroups', g.groupId)
            : {
                groupId: g.groupId,
                state: g.groupState,
                protocolType: g.protocolType,
                protocol: g.protocolData,
                members: g.members.map((m) => decodeMember(g.protocolType, m)),
              },
        )
      }
      return answers
    })
    for (const [k, e] of errors) out.set(k, e)
    return out
  }, { timeoutMs: options.timeoutMs, onRetriable: forgetCoordinator(ctx) })
}

export async function deleteGroups(ctx: AdminContext, groupIds: readonly string[], options: { timeoutMs?: number } = {}): Promise<void> {
  await perItem(ctx, 'deleteGroups', groupIds, (g) => g, async (pending, deadline) => {
    const { byNode, brokers, errors } = await coordinators(ctx, pending, deadline.remaining())
    const out = await perNode(byNode, (g) => g, async (nodeId, ids) => {
      const conn = await coordinatorConnection(ctx, brokers.get(nodeId)!)
      const res = await conn.request(DeleteGroups, { groupsNames: ids })
      const answers: Outcomes<true> = new Map()
      for (const r of res.results) answers.set(r.groupId, r.errorCode === 0 ? true : groupError(r.errorCode, 'DeleteGroups', r.groupId))
      return answers
    })
    for (const [k, e] of errors) out.set(k, e)
    return out
  }, { timeoutMs: options.timeoutMs, onRetriable: forgetCoordinator(ctx) })
}

/**
 * Committed offsets of a group: all of them, or every partition of the given topics (with -1n
 * where nothing is committed).
 */
export async function fetchOffsets(
  ctx: AdminContext,
  groupId: string,
  topics?: readonly string[],
  options: { timeoutMs?: number } = {},
): Promise<GroupOffset[]> {
  const [result] = await perItem<string, GroupOffset[]>(ctx, 'fetchOffsets', [groupId], (g) => g, async (_pending, deadline): Promise<Outcomes<GroupOffset[]>> => {
    let wanted: { name: string; partitionIndexes: number[] }[] | null = null
    if (topics !== undefined) {
      const { metadata, topicErrors } = await ctx.cluster.fetchMetadata(topics, { timeoutMs: deadline.remaining(), allowAutoTopicCreation: false })
      wanted = []
      for (const name of topics) {
        const code = topicErrors.get(name)
        if (code !== undefined) return new Map([[groupId, new ProtocolError(code, { api: 'Metadata', topic: name, groupId })]]) as Outcomes<GroupOffset[]>
        wanted.push({ name, partitionIndexes: (metadata.topic(name)?.partitions ?? []).map((p) => p.partition) })
      }
    }
    const coordinator = await ctx.cluster.findCoordinator(groupId, 'group', deadline.remaining())
    const conn = await coordinatorConnection(ctx, coordinator)
    const res = await conn.request(
      OffsetFetch,
      (v): OffsetFetchRequest =>
        v >= 8
          ? { groups: [{ groupId, topics: wanted }], requireStable: false }
          : v >= 7
            ? { groupId, topics: wanted, requireStable: false }
            : { groupId, topics: wanted },
      // "All topics" (null) needs v2+.
      { minVersion: wanted === null ? 2 : 1 },
    )
    const group = res.groups !== undefined && res.groups.length > 0 ? res.groups.find((g) => g.groupId === groupId) : undefined
    const errorCode = group !== undefined ? group.errorCode : (res.errorCode ?? 0)
    if (errorCode !== 0) return new Map([[groupId, groupError(errorCode, 'OffsetFetch', groupId)]]) as Outcomes<GroupOffset[]>
    const offsets: GroupOffset[] = []
    const failed: ProtocolError[] = []
    for (const t of group !== undefined ? group.topics : (res.topics ?? [])) {
      for (const p of t.partitions) {
        if (p.errorCode !== 0) {
          failed.push(new ProtocolError(p.errorCode, { api: 'OffsetFetch', topic: t.name, partition: p.partitionIndex, groupId }))
          continue
        }
        offsets.push({
          topic: t.name,
          partition: p.partitionIndex,
          offset: p.committedOffset,
          leaderEpoch: p.committedLeaderEpoch ?? -1,
          metadata: p.metadata,
        })
      }
    }
    // A partition error is the group's answer as a whole (e.g. UNSTABLE_OFFSET_COMMIT): retry or fail it.
    if (failed.length > 0) return new Map([[groupId, failed[0]!]]) as Outcomes<GroupOffset[]>
    offsets.sort((a, b) => (a.topic < b.topic ? -1 : a.topic > b.topic ? 1 : a.partition - b.partition))
    return new Map([[groupId, offsets]]) as Outcomes<GroupOffset[]>
  }, { timeoutMs: options.timeoutMs, onRetriable: forgetCoordinator(ctx) })
  return result ?? []
}

/**
 * Commits offsets for a group that has no active members, as Java's AdminClient does
 * (alterConsumerGroupOffsets): an OffsetCommit with generation -1 and an empty member id.
 * Kafka refuses it with UNKNOWN_MEMBER_ID while members are active.
 */
export async function alterOffsets(
  ctx: AdminContext,
  groupId: string,
  offsets: readonly CommitOffset[],
  options: { timeoutMs?: number } = {},
): Promise<void> {
  const key = (o: CommitOffset): string => `${o.topic}-${o.partition}`
  await perItem(ctx, 'alterOffsets', offsets, key, async (pending, deadline) => {
    const coordinator = await ctx.cluster.findCoordinator(groupId, 'group', deadline.remaining())
    const conn = await coordinatorConnection(ctx, coordinator)
    const topics = new Map<string, CommitOffset[]>()
    for (const o of pending) {
      let list = topics.get(o.topic)
      if (list === undefined) topics.set(o.topic, (list = []))
      list.push(o)
    }
    const res = await conn.request(OffsetCommit, (v): OffsetCommitRequest => {
      const req: OffsetCommitRequest = {
        groupId,
        topics: [...topics].map(([name, list]) => ({
          name,
          partitions: list.map((o) => ({
            partitionIndex: o.partition,
            committedOffset: o.offset,
            committedLeaderEpoch: o.leaderEpoch ?? -1,
            committedMetadata: o.metadata ?? '',
          })),
        })),
      }
      if (v >= 1) {
        req.generationIdOrMemberEpoch = -1
        req.memberId = ''
      }
      return req
    }, { minVersion: 2 })
    const out: Outcomes<true> = new Map()
    for (const t of res.topics) {
      for (const p of t.partitions) {
        out.set(
          `${t.name}-${p.partitionIndex}`,
          p.errorCode === 0 ? true : new ProtocolError(p.errorCode, { api: 'OffsetCommit', apiKey: OffsetCommit.apiKey, topic: t.name, partition: p.partitionIndex, groupId }),
        )
      }
    }
    return out
  }, {
    timeoutMs: options.timeoutMs,
    onRetriable: (_key, error) => {
      if (error instanceof ProtocolError && COORDINATOR_ERRORS.has(error.code)) ctx.cluster.invalidateCoordinator(groupId)
    },
  })
}
