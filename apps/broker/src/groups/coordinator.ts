import { ErrorCodes } from '@tidelog/protocol'
import type { Logger } from '../logger.js'
import { GroupMembership } from './coordinator-membership.js'
import { Group, GroupState, type GroupSummary, joinError, syncError } from './group.js'
import { fromStoredGroup } from './group-records.js'
import { type OffsetsStore, RecordListTooLargeError } from './offsets-store.js'
import {
  CLASSIC_GROUP_TYPE,
  type CommitRequest,
  type CoordinatorOptions,
  type FetchedOffset,
  type GroupOverview,
  type MemberRef,
} from './types.js'

export {
  CLASSIC_GROUP_TYPE,
  DEFAULT_COORDINATOR_OPTIONS,
  NEW_MEMBER_JOIN_TIMEOUT_MS,
  type CommitRequest,
  type CoordinatorOptions,
  type FetchedOffset,
  type GroupOverview,
  type JoinRequest,
  type LeaveResult,
  type MemberRef,
  type OffsetToCommit,
  type SyncRequest,
} from './types.js'

/**
 * The classic group coordinator of a single broker, which coordinates every
 * group: Kafka's GroupCoordinator, state for state and error for error.
 * JoinGroup (MEMBER_ID_REQUIRED, the initial rebalance delay, the leader
 * receiving every member's metadata), SyncGroup, heartbeats and session
 * expiry, rebalance and pending-sync timeouts, LeaveGroup, static membership
 * (KIP-345, KIP-814), and the offsets' commit/fetch/delete rules. Committed
 * offsets and the group metadata of each generation go to the OffsetsStore, so
 * both survive a restart.
 */
export class GroupCoordinator extends GroupMembership {
  private readonly retentionTimer: NodeJS.Timeout

  constructor(offsets: OffsetsStore, logger: Logger, opts: CoordinatorOptions = {}) {
    super(offsets, logger, opts)
    this.load()
    this.retentionTimer = setInterval(() => this.expireOffsets(), this.opts.offsetsRetentionCheckIntervalMs)
    this.retentionTimer.unref()
  }

  /** Kafka's offset.metadata.max.bytes, which TxnOffsetCommit checks as OffsetCommit does. */
  get offsetMetadataMaxBytes(): number {
    return this.opts.offsetMetadataMaxBytes
  }

  /** The group, created Empty when unknown, as a commit from outside group management creates it. */
  groupForCommit(groupId: string): Group {
    let group = this.liveGroup(groupId)
    if (group === undefined) {
      group = new Group(groupId, Date.now())
      this.groups.set(groupId, group)
    }
    return group
  }

  /** The group, if this coordinator knows it (tests and tooling). */
  group(groupId: string): Group | undefined {
    return this.liveGroup(groupId)
  }

  // --- offsets -----------------------------------------------------------------------------

  /**
   * OffsetCommit for partitions the caller has checked exist. A group commit
   * must come from a member of the current generation; a commit with
   * generation -1 and no member id (admin tools, manual assignment) only while
   * the group has no members. Returns an error code per offset, in order.
   */
  async commitOffsets(req: CommitRequest): Promise<number[]> {
    const all = (code: number) => req.offsets.map(() => code)
    if (this.offsets.isClosed) return all(ErrorCodes.COORDINATOR_NOT_AVAILABLE)
    let group = this.liveGroup(req.groupId)
    if (group === undefined) {
      // Without group management the commit creates a simple group; otherwise it is from a stale generation.
      if (req.generationId >= 0) return all(ErrorCodes.ILLEGAL_GENERATION)
      group = new Group(req.groupId, Date.now())
      this.groups.set(req.groupId, group)
    }
    const error = this.validateCommit(group, req)
    if (error !== ErrorCodes.NONE) return all(error)
    if (group.is(GroupState.CompletingRebalance)) {
      // The member has its new generation but not yet its assignment: it must not commit for the old one.
      return all(ErrorCodes.REBALANCE_IN_PROGRESS)
    }
    if (!group.is(GroupState.Empty)) {
      // Stable or PreparingRebalance: a commit shows the member is alive (the heartbeat response tells it to rejoin).
      const member = group.get(req.memberId)!
      this.scheduleHeartbeat(group, member, member.sessionTimeoutMs)
    }
    const now = Date.now()
    // v2-4's explicit retention; clamped, since any int64 may arrive.
    const expireTimestamp = req.retentionTimeMs === -1n ? -1 : Math.max(0, Math.min(now + Number(req.retentionTimeMs), Number.MAX_SAFE_INTEGER))
    const codes: number[] = []
    const commits = []
    for (const o of req.offsets) {
      if (o.metadata !== null && o.metadata.length > this.opts.offsetMetadataMaxBytes) {
        codes.push(ErrorCodes.OFFSET_METADATA_TOO_LARGE)
        continue
      }
      codes.push(ErrorCodes.NONE)
      commits.push({
        topic: o.topic,
        partition: o.partition,
        offset: o.offset,
        leaderEpoch: o.leaderEpoch,
        metadata: o.metadata ?? '',
        commitTimestamp: now,
        expireTimestamp,
      })
    }
    try {
      this.offsets.commit(req.groupId, commits)
      await this.offsets.durable()
    } catch (err) {
      this.logger.error(`group ${req.groupId}: cannot persist offsets: ${(err as Error).message}`)
      // Kafka: a commit too large for the offsets log is INVALID_COMMIT_OFFSET_SIZE; other append
      // failures are a coordinator problem, which clients retry.
      return all(err instanceof RecordListTooLargeError ? ErrorCodes.INVALID_COMMIT_OFFSET_SIZE : ErrorCodes.NOT_COORDINATOR)
    }
    return codes
  }

  private validateCommit(group: Group, ref: MemberRef): number {
    if (group.is(GroupState.Dead)) return ErrorCodes.COORDINATOR_NOT_AVAILABLE
    if (ref.generationId < 0 && group.is(GroupState.Empty)) return ErrorCodes.NONE
    if (ref.generationId >= 0 || ref.memberId !== '' || ref.groupInstanceId !== null) {
      const error = this.validateMember(group, ref.memberId, ref.groupInstanceId)
      if (error !== ErrorCodes.NONE) return error
      return ref.generationId === group.generationId ? ErrorCodes.NONE : ErrorCodes.ILLEGAL_GENERATION
    }
    // Generation -1 and no member id, while the group has members: only members may commit.
    return ErrorCodes.UNKNOWN_MEMBER_ID
  }

  /**
   * OffsetFetch for one group: the requested partitions (-1 for those never
   * committed), or with `topics` null every committed offset. There are no
   * transactional commits here, so require_stable never waits on any.
   */
  fetchOffsets(groupId: string, topics: readonly { name: string; partitions: readonly number[] }[] | null): { name: string; partitions: FetchedOffset[] }[] {
    const found = (partition: number, c: { offset: bigint; leaderEpoch: number; metadata: string } | undefined): FetchedOffset =>
      c === undefined
        ? { partition, offset: -1n, leaderEpoch: -1, metadata: '', errorCode: ErrorCodes.NONE }
        : { partition, offset: c.offset, leaderEpoch: c.leaderEpoch, metadata: c.metadata, errorCode: ErrorCodes.NONE }
    if (topics === null) {
      const out: { name: string; partitions: FetchedOffset[] }[] = []
      for (const [name, parts] of this.offsets.groupOffsets(groupId)) {
        out.push({ name, partitions: [...parts].map(([p, c]) => found(p, c)) })
      }
      return out
    }
    return topics.map((t) => ({ name: t.name, partitions: t.partitions.map((p) => found(p, this.offsets.get(groupId, t.name, p))) }))
  }

  /**
   * OffsetDelete: an empty group loses any offsets; a consumer group with
   * members keeps those of topics a member subscribes to
   * (GROUP_SUBSCRIBED_TO_TOPIC). Returns the group error, or one code per partition.
   */
  deleteOffsets(groupId: string, partitions: readonly { topic: string; partition: number }[]): { errorCode: number; errors: number[] } {
    if (groupId === '') return { errorCode: ErrorCodes.INVALID_GROUP_ID, errors: [] }
    const group = this.liveGroup(groupId)
    if (group === undefined || group.is(GroupState.Dead)) return { errorCode: ErrorCodes.GROUP_ID_NOT_FOUND, errors: [] }
    let errors: number[]
    if (group.is(GroupState.Empty)) {
      errors = partitions.map(() => ErrorCodes.NONE)
    } else if (group.isConsumerGroup) {
      errors = partitions.map((p) => (group.isSubscribedToTopic(p.topic) ? ErrorCodes.GROUP_SUBSCRIBED_TO_TOPIC : ErrorCodes.NONE))
    } else {
      return { errorCode: ErrorCodes.NON_EMPTY_GROUP, errors: [] }
    }
    const eligible = partitions.filter((_, i) => errors[i] === ErrorCodes.NONE)
    try {
      this.offsets.deleteOffsets(groupId, eligible)
      this.maybeRemoveGroup(group)
    } catch (err) {
      this.logger.error(`group ${groupId}: cannot delete offsets: ${(err as Error).message}`)
      return { errorCode: ErrorCodes.NOT_COORDINATOR, errors: [] }
    }
    return { errorCode: ErrorCodes.NONE, errors }
  }

  /**
   * Kafka's offset retention: offsets of an empty group expire once it has
   * been empty for the retention time (or, for simple groups, once they are
   * that old, or at their explicit v2-4 expiry); a stable consumer group loses
   * only offsets of topics nobody subscribes to. An empty group left without
   * offsets is forgotten.
   */
  expireOffsets(now = Date.now()): number {
    let removed = 0
    const retention = this.opts.offsetsRetentionMs
    for (const group of [...this.groups.values()]) {
      let base: ((commitTimestamp: number) => number) | undefined
      let keep: ReadonlySet<string> | undefined
      if (group.protocolType !== null && group.is(GroupState.Empty)) {
        base = () => group.stateTimestamp
      } else if (group.isConsumerGroup && group.subscribedTopics !== undefined && group.is(GroupState.Stable)) {
        base = (t) => t
        keep = group.subscribedTopics
      } else if (group.protocolType === null) {
        base = (t) => t
      }
      if (base !== undefined) {
        const expired: { topic: string; partition: number }[] = []
        for (const [topic, parts] of this.offsets.groupOffsets(group.groupId)) {
          if (keep?.has(topic) === true) continue
          for (const [partition, c] of parts) {
            const due = c.expireTimestamp >= 0 ? now >= c.expireTimestamp : now - base(c.commitTimestamp) >= retention
            if (due) expired.push({ topic, partition })
          }
        }
        try {
          removed += this.offsets.deleteOffsets(group.groupId, expired)
        } catch (err) {
          this.logger.error(`group ${group.groupId}: cannot expire offsets: ${(err as Error).message}`)
          continue
        }
      }
      try {
        this.maybeRemoveGroup(group)
      } catch (err) {
        this.logger.error(`group ${group.groupId}: cannot remove the group: ${(err as Error).message}`)
      }
    }
    if (removed > 0) this.logger.info(`expired ${removed} committed offset(s)`)
    return removed
  }

  /** An empty group without offsets has nothing left to keep: it goes (Kafka: Empty -> Dead). */
  private maybeRemoveGroup(group: Group): void {
    // Offsets of an open transaction count too: the group must outlive them (KIP-98).
    if (!group.is(GroupState.Empty) || this.offsets.hasOffsets(group.groupId) || this.offsets.hasPendingFor(group.groupId) || group.pendingMembers.size > 0) return
    this.offsets.deleteGroup(group.groupId)
    this.removeGroup(group)
  }

  private removeGroup(group: Group): void {
    group.transitionTo(GroupState.Dead, Date.now())
    if (group.joinTimer !== undefined) clearTimeout(group.joinTimer)
    this.cancelPendingSync(group)
    for (const t of group.pendingMembers.values()) clearTimeout(t)
    if (this.groups.get(group.groupId) === group) this.groups.delete(group.groupId)
  }

  // --- DescribeGroups, ListGroups, DeleteGroups ------------------------------------------------

  /** A group this coordinator does not know is described as Dead, as Kafka does before DescribeGroups v6. */
  describeGroup(groupId: string): GroupSummary {
    const group = this.liveGroup(groupId)
    if (group === undefined) return { state: GroupState.Dead, protocolType: '', protocol: '', members: [] }
    return group.summary()
  }

  /** ListGroups: filters match Kafka's, case-insensitively; every group here is a classic one. */
  listGroups(statesFilter: readonly string[] = [], typesFilter: readonly string[] = []): GroupOverview[] {
    const states = new Set(statesFilter.map((s) => s.toLowerCase()))
    if (typesFilter.length > 0 && !typesFilter.some((t) => t.toLowerCase() === CLASSIC_GROUP_TYPE)) return []
    const out: GroupOverview[] = []
    const now = Date.now()
    for (const g of [...this.groups.values()]) {
      this.expireDueMembers(g, now)
      if (states.size > 0 && !states.has(g.state.toLowerCase())) continue
      out.push({ groupId: g.groupId, protocolType: g.protocolType ?? '', state: g.state, groupType: CLASSIC_GROUP_TYPE })
    }
    return out
  }

  /** DeleteGroups: only empty groups go, with their offsets. One code per id. */
  deleteGroups(groupIds: readonly string[]): number[] {
    return groupIds.map((id) => {
      const group = this.liveGroup(id)
      if (group === undefined || group.is(GroupState.Dead)) return ErrorCodes.GROUP_ID_NOT_FOUND
      if (!group.is(GroupState.Empty)) return ErrorCodes.NON_EMPTY_GROUP
      try {
        this.offsets.deleteGroup(id)
      } catch (err) {
        this.logger.error(`group ${id}: cannot delete: ${(err as Error).message}`)
        return ErrorCodes.NOT_COORDINATOR
      }
      this.removeGroup(group)
      this.logger.info(`deleted group ${id}`)
      return ErrorCodes.NONE
    })
  }

  // --- persistence and lifecycle -----------------------------------------------------------------

  /** Rebuilds the groups from the store; the members of a restored generation start their sessions now. */
  private load(): void {
    const now = Date.now()
    for (const [groupId, stored] of this.offsets.storedGroups()) {
      const group = fromStoredGroup(groupId, stored)
      for (const m of group.members.values()) {
        m.heartbeatDeadline = now + m.sessionTimeoutMs
        this.armMemberTimer(group, m, m.sessionTimeoutMs)
      }
      this.groups.set(groupId, group)
    }
    // Groups known only by their offsets (commits from outside group management) are Empty.
    for (const groupId of [...this.offsets.groupIds(), ...this.offsets.pendingGroupIds()]) {
      if (!this.groups.has(groupId)) this.groups.set(groupId, new Group(groupId, now))
    }
  }

  /**
   * Shutdown: every JoinGroup and SyncGroup still waiting is answered
   * NOT_COORDINATOR (so clients look for the coordinator again, as when Kafka
   * unloads a group), new ones are refused, and no timer runs any more. Other
   * requests already read are still served until the store closes.
   */
  close(): void {
    if (this.closed) return
    this.closed = true
    clearInterval(this.retentionTimer)
    for (const group of this.groups.values()) {
      if (group.joinTimer !== undefined) clearTimeout(group.joinTimer)
      group.joinTimer = undefined
      if (group.syncTimer !== undefined) clearTimeout(group.syncTimer)
      group.syncTimer = undefined
      for (const t of group.pendingMembers.values()) clearTimeout(t)
      for (const m of group.members.values()) {
        this.clearMemberTimer(m)
        group.maybeInvokeJoin(m, joinError(m.memberId, ErrorCodes.NOT_COORDINATOR))
        group.maybeInvokeSync(m, syncError(ErrorCodes.NOT_COORDINATOR))
      }
    }
  }
}
