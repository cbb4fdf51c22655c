import type { GroupProtocol, GroupState } from './group.js'

export interface CoordinatorOptions {
  /** Kafka's group.min.session.timeout.ms (6 s). */
  minSessionTimeoutMs?: number
  /** Kafka's group.max.session.timeout.ms (30 min). */
  maxSessionTimeoutMs?: number
  /**
   * Kafka's group.initial.rebalance.delay.ms: how long the first rebalance of
   * an empty group waits for more members, extended while they keep coming
   * (up to the rebalance timeout). Kafka defaults to 3 s; a dev broker whose
   * groups are mostly tests and single processes defaults to 100 ms.
   */
  initialRebalanceDelayMs?: number
  /** Kafka's group.max.size (unlimited). */
  maxGroupSize?: number
  /** Kafka's offset.metadata.max.bytes: longer commit metadata gets OFFSET_METADATA_TOO_LARGE. */
  offsetMetadataMaxBytes?: number
  /** Kafka's offsets.retention.minutes (7 days), in ms. */
  offsetsRetentionMs?: number
  /** Kafka's offsets.retention.check.interval.ms (10 min). */
  offsetsRetentionCheckIntervalMs?: number
}

export const DEFAULT_COORDINATOR_OPTIONS: Readonly<Required<CoordinatorOptions>> = Object.freeze({
  minSessionTimeoutMs: 6000,
  maxSessionTimeoutMs: 30 * 60 * 1000,
  initialRebalanceDelayMs: 100,
  maxGroupSize: Infinity,
  offsetMetadataMaxBytes: 4096,
  offsetsRetentionMs: 7 * 24 * 60 * 60 * 1000,
  offsetsRetentionCheckIntervalMs: 10 * 60 * 1000,
})

/**
 * A member that joined but was never answered cannot heartbeat, and a client
 * that gave up on its JoinGroup may simply retry with a new one; such members
 * are dropped after this long (Kafka's NewMemberJoinTimeoutMs).
 */
export const NEW_MEMBER_JOIN_TIMEOUT_MS = 5 * 60 * 1000

export interface JoinRequest {
  groupId: string
  memberId: string
  groupInstanceId: string | null
  clientId: string
  clientHost: string
  sessionTimeoutMs: number
  rebalanceTimeoutMs: number
  protocolType: string
  protocols: GroupProtocol[]
  /** JoinGroup v4+: a new dynamic member first gets its id with MEMBER_ID_REQUIRED (KIP-394). */
  requireKnownMemberId: boolean
  /** JoinGroup v9+: a rejoining static leader may be told to skip the assignment (KIP-814). */
  supportSkippingAssignment: boolean
  reason?: string | null
}

export interface MemberRef {
  groupId: string
  memberId: string
  groupInstanceId: string | null
  generationId: number
}

export interface SyncRequest extends MemberRef {
  /** Checked against the group from SyncGroup v5 on; null before. */
  protocolType: string | null
  protocolName: string | null
  assignments: readonly { memberId: string; assignment: Uint8Array }[]
}

export interface LeaveResult {
  errorCode: number
  members: { memberId: string; groupInstanceId: string | null; errorCode: number }[]
}

export interface OffsetToCommit {
  topic: string
  partition: number
  offset: bigint
  leaderEpoch: number
  metadata: string | null
}

export interface CommitRequest extends MemberRef {
  /** OffsetCommit v2-4's retention_time_ms; -1 keeps the broker's retention. */
  retentionTimeMs: bigint
  offsets: readonly OffsetToCommit[]
}

export interface FetchedOffset {
  partition: number
  offset: bigint
  leaderEpoch: number
  metadata: string
  errorCode: number
}

export interface GroupOverview {
  groupId: string
  protocolType: string
  state: GroupState
  groupType: string
}

/** What every group is in this broker: Kafka's classic protocol (KIP-848 groups are not served). */
export const CLASSIC_GROUP_TYPE = 'classic'
