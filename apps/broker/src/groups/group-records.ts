import { Group, GroupMember, GroupState } from './group.js'
import type { StoredGroup } from './offsets-store.js'

const EMPTY = Buffer.alloc(0)

/**
 * A group's generation as the offsets store keeps it (Kafka's
 * GroupMetadataValue): each member with its metadata for the chosen protocol
 * and its assignment, `assignments` replacing the members' own (the leader's
 * SyncGroup is persisted before it is handed out).
 */
export function toStoredGroup(group: Group, assignments?: ReadonlyMap<string, Uint8Array>): StoredGroup {
  const protocol = group.protocolName
  return {
    protocolType: group.protocolType,
    generationId: group.generationId,
    protocolName: protocol,
    leaderId: group.leaderId,
    stateTimestamp: group.stateTimestamp,
    members: [...group.members.values()].map((m) => ({
      memberId: m.memberId,
      groupInstanceId: m.groupInstanceId,
      clientId: m.clientId,
      clientHost: m.clientHost,
      rebalanceTimeoutMs: m.rebalanceTimeoutMs,
      sessionTimeoutMs: m.sessionTimeoutMs,
      subscription: protocol === null ? EMPTY : m.metadata(protocol),
      assignment: assignments?.get(m.memberId) ?? m.assignment,
    })),
  }
}

/**
 * The group as Kafka loads it from __consumer_offsets: Stable in its last
 * generation when it has members (each knowing only the chosen protocol),
 * Empty otherwise. Sessions are the caller's to start.
 */
export function fromStoredGroup(groupId: string, stored: StoredGroup): Group {
  const withMembers = stored.members.length > 0 && stored.protocolName !== null && stored.protocolType !== null
  const group = new Group(groupId, stored.stateTimestamp, withMembers ? GroupState.Stable : GroupState.Empty)
  group.protocolType = stored.protocolType
  group.generationId = stored.generationId
  if (!withMembers) return group
  group.protocolName = stored.protocolName
  for (const s of stored.members) {
    const m = new GroupMember(s.memberId, s.groupInstanceId, s.clientId, s.clientHost, s.rebalanceTimeoutMs, s.sessionTimeoutMs, stored.protocolType!, [
      { name: stored.protocolName!, metadata: s.subscription },
    ])
    m.assignment = s.assignment
    group.add(m, null)
  }
  if (stored.leaderId !== null && group.has(stored.leaderId)) group.leaderId = stored.leaderId
  group.subscribedTopics = group.computeSubscribedTopics()
  return group
}
