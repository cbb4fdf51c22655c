import { ErrorCodes } from '@tidelog/protocol'
import type { Logger } from '../logger.js'
import {
  Group,
  GroupMember,
  GroupState,
  type GroupProtocol,
  type GroupSummary,
  type JoinResult,
  type SyncResult,
  joinError,
  syncError,
} from './group.js'
import { fromStoredGroup, toStoredGroup } from './group-records.js'
import { type OffsetsStore, RecordListTooLargeError } from './offsets-store.js'
import {
  CLASSIC_GROUP_TYPE,
  type CommitRequest,
  type CoordinatorOptions,
  DEFAULT_COORDINATOR_OPTIONS,
  type FetchedOffset,
  type GroupOverview,
  type JoinRequest,
  type LeaveResult,
  type MemberRef,
  NEW_MEMBER_JOIN_TIMEOUT_MS,
  type SyncRequest,
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
export class GroupCoordinator {
  private readonly groups = new Map<string, Group>()
  private readonly opts: Readonly<Required<CoordinatorOptions>>
  private readonly retentionTimer: NodeJS.Timeout
  private closed = false

  constructor(
    readonly offsets: OffsetsStore,
    private readonly logger: Logger,
    opts: CoordinatorOptions = {},
  ) {
    this.opts = { ...DEFAULT_COORDINATOR_OPTIONS, ...definedOnly(opts) }
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

  /**
   * The group, with every member whose session deadline has passed expired
   * first. Expiry is timer-driven, but a timer may fire late on a loaded
   * machine; every operation that reads or changes membership goes through
   * here, so its answer is what it would be had the timers fired on time
   * (librdkafka's 0081 deletes a group one session timeout after its static
   * member stopped, and must not see NON_EMPTY_GROUP).
   */
  private liveGroup(groupId: string, now = Date.now()): Group | undefined {
    const group = this.groups.get(groupId)
    if (group !== undefined) this.expireDueMembers(group, now)
    return group
  }

  // --- JoinGroup ---------------------------------------------------------------------------

  join(req: JoinRequest): Promise<JoinResult> {
    return new Promise<JoinResult>((resolve) => this.handleJoin(req, resolve))
  }

  private handleJoin(req: JoinRequest, respond: (r: JoinResult) => void): void {
    if (req.groupId === '') return respond(joinError(req.memberId, ErrorCodes.INVALID_GROUP_ID))
    // A JoinGroup arriving during shutdown would only wait for it.
    if (this.closed) return respond(joinError(req.memberId, ErrorCodes.COORDINATOR_NOT_AVAILABLE))
    if (req.sessionTimeoutMs < this.opts.minSessionTimeoutMs || req.sessionTimeoutMs > this.opts.maxSessionTimeoutMs) {
      return respond(joinError(req.memberId, ErrorCodes.INVALID_SESSION_TIMEOUT))
    }
    const isNewMember = req.memberId === ''
    let group = this.liveGroup(req.groupId)
    if (group === undefined) {
      // Only a member without an id may create a group.
      if (!isNewMember) return respond(joinError(req.memberId, ErrorCodes.UNKNOWN_MEMBER_ID))
      group = new Group(req.groupId, Date.now())
      this.groups.set(req.groupId, group)
    }
    if (!this.acceptJoiningMember(group, req.memberId)) {
      // An oversized group sheds the members that have not rejoined.
      const m = group.get(req.memberId)
      if (m !== undefined) this.dropMember(group, m)
      else group.remove(req.memberId)
      respond(joinError('', ErrorCodes.GROUP_MAX_SIZE_REACHED))
    } else if (isNewMember) {
      this.joinNewMember(group, req, respond)
    } else {
      this.joinCurrentMember(group, req, respond)
    }
    if (group.is(GroupState.PreparingRebalance)) this.tryCompleteJoin(group)
  }

  /** Kafka's group.max.size check: members already waiting keep their place. */
  private acceptJoiningMember(group: Group, memberId: string): boolean {
    const max = this.opts.maxGroupSize
    switch (group.state) {
      case GroupState.Empty:
      case GroupState.Dead:
        return true
      case GroupState.PreparingRebalance:
        return group.get(memberId)?.awaitingJoin != null || group.numAwaiting < max
      default:
        return group.has(memberId) || group.size < max
    }
  }

  private joinNewMember(group: Group, req: JoinRequest, respond: (r: JoinResult) => void): void {
    if (group.is(GroupState.Dead)) return respond(joinError('', ErrorCodes.COORDINATOR_NOT_AVAILABLE))
    if (!group.supportsProtocols(req.protocolType, req.protocols)) return respond(joinError('', ErrorCodes.INCONSISTENT_GROUP_PROTOCOL))
    const newMemberId = group.generateMemberId(req.clientId, req.groupInstanceId)
    if (req.groupInstanceId !== null) {
      const oldMemberId = group.currentStaticMemberId(req.groupInstanceId)
      if (oldMemberId !== undefined) this.replaceStaticMember(group, req.groupInstanceId, oldMemberId, newMemberId, req, respond)
      else this.addMemberAndRebalance(group, req, newMemberId, respond)
    } else if (req.requireKnownMemberId) {
      // KIP-394: the id is handed out first and the member only counts once it comes back
      // with it, so clients that time out and retry do not pile up as members.
      const timer = setTimeout(() => this.onPendingMemberExpired(group, newMemberId), req.sessionTimeoutMs)
      timer.unref()
      group.pendingMembers.set(newMemberId, timer)
      respond(joinError(newMemberId, ErrorCodes.MEMBER_ID_REQUIRED))
    } else {
      this.addMemberAndRebalance(group, req, newMemberId, respond)
    }
  }

  private joinCurrentMember(group: Group, req: JoinRequest, respond: (r: JoinResult) => void): void {
    const memberId = req.memberId
    if (group.is(GroupState.Dead)) return respond(joinError(memberId, ErrorCodes.COORDINATOR_NOT_AVAILABLE))
    if (!group.supportsProtocols(req.protocolType, req.protocols)) return respond(joinError(memberId, ErrorCodes.INCONSISTENT_GROUP_PROTOCOL))
    if (group.pendingMembers.has(memberId) && req.groupInstanceId === null) {
      clearTimeout(group.pendingMembers.get(memberId))
      this.addMemberAndRebalance(group, req, memberId, respond)
      return
    }
    const error = this.validateMember(group, memberId, req.groupInstanceId)
    if (error !== ErrorCodes.NONE) return respond(joinError(memberId, error))
    const member = group.get(memberId)!
    switch (group.state) {
      case GroupState.PreparingRebalance:
        this.updateMemberAndRebalance(group, member, req, respond)
        return
      case GroupState.CompletingRebalance:
        // The same metadata again means the member missed our answer: repeat it.
        if (member.matches(req.protocols)) respond(this.joinResultFor(group, member, group.isLeader(memberId)))
        else this.updateMemberAndRebalance(group, member, req, respond)
        return
      case GroupState.Stable:
        // A leader's JoinGroup is how it asks for a rebalance its metadata does not show
        // (for consumers: a change in the subscribed topics' partitions).
        if (group.isLeader(memberId) || !member.matches(req.protocols)) this.updateMemberAndRebalance(group, member, req, respond)
        else respond(this.joinResultFor(group, member, false))
        return
      default:
        respond(joinError(memberId, ErrorCodes.UNKNOWN_MEMBER_ID))
    }
  }

  private addMemberAndRebalance(group: Group, req: JoinRequest, memberId: string, respond: (r: JoinResult) => void): void {
    const member = new GroupMember(
      memberId,
      req.groupInstanceId,
      req.clientId,
      req.clientHost,
      req.rebalanceTimeoutMs,
      req.sessionTimeoutMs,
      req.protocolType,
      req.protocols,
    )
    member.isNew = true
    // While a new group forms, each newcomer may extend the initial delay.
    if (group.is(GroupState.PreparingRebalance) && group.generationId === 0) group.newMemberAdded = true
    group.add(member, respond)
    this.scheduleHeartbeat(group, member, NEW_MEMBER_JOIN_TIMEOUT_MS)
    this.maybePrepareRebalance(group, `member ${memberId} joined${reasonSuffix(req.reason)}`)
  }

  private updateMemberAndRebalance(group: Group, member: GroupMember, req: JoinRequest, respond: (r: JoinResult) => void): void {
    this.supersedeJoin(group, member)
    group.updateMember(member, req.protocols, req.rebalanceTimeoutMs, req.sessionTimeoutMs, respond)
    this.maybePrepareRebalance(group, `member ${member.memberId} rejoined${reasonSuffix(req.reason)}`)
  }

  /**
   * A static member rejoined without its member id (a restarted instance): it
   * takes over the old member's place under a new id; the old id is fenced. In
   * a Stable group whose protocol would not change, nothing is rebalanced.
   */
  private replaceStaticMember(
    group: Group,
    groupInstanceId: string,
    oldMemberId: string,
    newMemberId: string,
    req: JoinRequest,
    respond: (r: JoinResult) => void,
  ): void {
    const previousLeader = group.leaderId
    const member = group.replaceStaticMember(groupInstanceId, oldMemberId, newMemberId)
    this.scheduleHeartbeat(group, member, member.sessionTimeoutMs)
    const before = { protocols: member.protocols, rebalanceTimeoutMs: member.rebalanceTimeoutMs, sessionTimeoutMs: member.sessionTimeoutMs }
    group.updateMember(member, req.protocols, req.rebalanceTimeoutMs, req.sessionTimeoutMs, respond)
    switch (group.state) {
      case GroupState.Stable: {
        if (group.selectProtocol() !== group.protocolName) {
          this.maybePrepareRebalance(group, `static member ${groupInstanceId} rejoined with other protocols`)
          return
        }
        try {
          this.storeGroup(group)
        } catch (err) {
          this.logger.error(`group ${group.groupId}: cannot persist static member ${groupInstanceId}: ${(err as Error).message}`)
          group.updateMember(member, before.protocols, before.rebalanceTimeoutMs, before.sessionTimeoutMs, null)
          group.replaceStaticMember(groupInstanceId, newMemberId, oldMemberId)
          respond({ ...this.joinResultFor(group, member, false), memberId: '', leader: previousLeader ?? '', errorCode: groupWriteError(err) })
          return
        }
        if (req.supportSkippingAssignment) {
          // KIP-814: a static leader learns it leads (so it keeps watching metadata) but must not
          // run the assignor: the Stable group would not hand out a new assignment anyway.
          const isLeader = group.isLeader(newMemberId)
          group.maybeInvokeJoin(member, { ...this.joinResultFor(group, member, isLeader), skipAssignment: isLeader })
        } else {
          // Before v9, naming the old leader id keeps a restarted static leader from assigning.
          group.maybeInvokeJoin(member, { ...this.joinResultFor(group, member, false), leader: previousLeader ?? '' })
        }
        return
      }
      case GroupState.CompletingRebalance:
        // The leader may already hold the old id in its assignment: start over.
        this.prepareRebalance(group, `static member ${groupInstanceId} rejoined during CompletingRebalance`)
        return
      case GroupState.PreparingRebalance:
        return
      default:
        group.maybeInvokeJoin(member, joinError(newMemberId, ErrorCodes.UNKNOWN_MEMBER_ID))
    }
  }

  /** A JoinGroup still waiting for this member is answered before a newer one takes its place. */
  private supersedeJoin(group: Group, member: GroupMember): void {
    group.maybeInvokeJoin(member, joinError(member.memberId, ErrorCodes.REBALANCE_IN_PROGRESS))
  }

  private joinResultFor(group: Group, member: GroupMember, withMembers: boolean): JoinResult {
    return {
      errorCode: ErrorCodes.NONE,
      memberId: member.memberId,
      generationId: group.generationId,
      protocolType: group.protocolType,
      protocolName: group.protocolName,
      leader: group.leaderId ?? '',
      skipAssignment: false,
      members: withMembers ? group.currentMemberMetadata() : [],
    }
  }

  // --- rebalances --------------------------------------------------------------------------

  private maybePrepareRebalance(group: Group, reason: string): void {
    if (group.canRebalance) this.prepareRebalance(group, reason)
  }

  private prepareRebalance(group: Group, reason: string): void {
    // Members waiting for an assignment of the generation being abandoned must rejoin.
    if (group.is(GroupState.CompletingRebalance)) this.resetAndPropagateAssignmentError(group, ErrorCodes.REBALANCE_IN_PROGRESS)
    this.cancelPendingSync(group)
    const wasEmpty = group.is(GroupState.Empty)
    group.transitionTo(GroupState.PreparingRebalance, Date.now())
    this.logger.debug(`group ${group.groupId}: preparing rebalance from generation ${group.generationId} (${reason})`)
    if (wasEmpty) {
      const delay = this.opts.initialRebalanceDelayMs
      this.armJoin(group, true, delay, Math.max(group.rebalanceTimeoutMs - delay, 0))
    } else {
      this.armJoin(group, false, group.rebalanceTimeoutMs, 0)
    }
    this.tryCompleteJoin(group)
  }

  private armJoin(group: Group, initial: boolean, delayMs: number, remainingMs: number): void {
    if (group.joinTimer !== undefined) clearTimeout(group.joinTimer)
    group.joinInitial = initial
    group.joinDelayMs = delayMs
    group.joinRemainingMs = remainingMs
    if (this.closed) {
      group.joinTimer = undefined
      return
    }
    group.joinTimer = setTimeout(() => this.onJoinTimer(group), delayMs)
    group.joinTimer.unref()
  }

  private onJoinTimer(group: Group): void {
    group.joinTimer = undefined
    if (!group.is(GroupState.PreparingRebalance)) return
    if (group.joinInitial && group.newMemberAdded && group.joinRemainingMs !== 0) {
      // Kafka's InitialDelayedJoin: members still arriving buy another delay, within the rebalance timeout.
      group.newMemberAdded = false
      const delay = Math.min(this.opts.initialRebalanceDelayMs, group.joinRemainingMs)
      this.armJoin(group, true, delay, Math.max(group.joinRemainingMs - group.joinDelayMs, 0))
      return
    }
    this.completeJoin(group)
  }

  /** Completes the join phase early once everyone is in (never during the initial delay). */
  private tryCompleteJoin(group: Group): void {
    if (!group.is(GroupState.PreparingRebalance) || group.joinInitial || !group.hasAllMembersJoined) return
    this.completeJoin(group)
  }

  private completeJoin(group: Group): void {
    if (group.joinTimer !== undefined) clearTimeout(group.joinTimer)
    group.joinTimer = undefined
    group.joinInitial = false
    // Dynamic members that did not rejoin in time are out; static ones keep their place.
    for (const m of [...group.members.values()]) {
      if (m.awaitingJoin === null && !m.isStatic) {
        this.logger.debug(`group ${group.groupId}: member ${m.memberId} did not rejoin in time`)
        this.dropMember(group, m)
      }
    }
    if (group.is(GroupState.Dead)) return
    if (!group.maybeElectNewJoinedLeader() && group.size > 0) {
      // Only static members that have not rejoined are left: wait again for them (or for their sessions to end).
      this.armJoin(group, false, group.rebalanceTimeoutMs, 0)
      return
    }
    const now = Date.now()
    group.initNextGeneration(now)
    if (group.is(GroupState.Empty)) {
      this.logger.debug(`group ${group.groupId}: generation ${group.generationId} is empty`)
      this.storeGroupQuietly(group)
      return
    }
    this.logger.debug(
      `group ${group.groupId}: generation ${group.generationId} with ${group.size} member(s), protocol ${group.protocolName}, leader ${group.leaderId}`,
    )
    for (const m of group.members.values()) {
      group.maybeInvokeJoin(m, this.joinResultFor(group, m, group.isLeader(m.memberId)))
      this.scheduleHeartbeat(group, m, m.sessionTimeoutMs)
      m.isNew = false
      group.pendingSyncMembers.add(m.memberId)
    }
    this.armPendingSync(group)
  }

  /**
   * Every member of the new generation must send SyncGroup within the
   * rebalance timeout; those that do not are removed and the group rebalances.
   */
  private armPendingSync(group: Group): void {
    if (group.syncTimer !== undefined) clearTimeout(group.syncTimer)
    group.syncTimer = undefined
    if (this.closed) return
    const generation = group.generationId
    group.syncTimer = setTimeout(() => this.onPendingSyncExpired(group, generation), group.rebalanceTimeoutMs)
    group.syncTimer.unref()
  }

  private cancelPendingSync(group: Group): void {
    group.pendingSyncMembers.clear()
    if (group.syncTimer !== undefined) clearTimeout(group.syncTimer)
    group.syncTimer = undefined
  }

  private removePendingSyncMember(group: Group, memberId: string): void {
    group.pendingSyncMembers.delete(memberId)
    if (group.pendingSyncMembers.size === 0) this.cancelPendingSync(group)
  }

  private onPendingSyncExpired(group: Group, generation: number): void {
    group.syncTimer = undefined
    if (generation !== group.generationId) return
    if (!group.is(GroupState.CompletingRebalance) && !group.is(GroupState.Stable)) return
    if (group.pendingSyncMembers.size === 0) return
    const late = [...group.pendingSyncMembers]
    for (const id of late) {
      const m = group.get(id)
      if (m !== undefined) this.dropMember(group, m)
    }
    this.prepareRebalance(group, `member(s) ${late.join(', ')} did not send SyncGroup in time`)
  }

  // --- SyncGroup ---------------------------------------------------------------------------

  sync(req: SyncRequest): Promise<SyncResult> {
    return new Promise<SyncResult>((resolve) => this.handleSync(req, resolve))
  }

  private handleSync(req: SyncRequest, respond: (r: SyncResult) => void): void {
    if (req.groupId === '') return respond(syncError(ErrorCodes.INVALID_GROUP_ID))
    if (this.closed) return respond(syncError(ErrorCodes.COORDINATOR_NOT_AVAILABLE))
    const group = this.liveGroup(req.groupId)
    if (group === undefined) return respond(syncError(ErrorCodes.UNKNOWN_MEMBER_ID))
    if (group.is(GroupState.Dead)) return respond(syncError(ErrorCodes.COORDINATOR_NOT_AVAILABLE))
    let error = this.validateMember(group, req.memberId, req.groupInstanceId)
    if (error === ErrorCodes.NONE && req.generationId !== group.generationId) error = ErrorCodes.ILLEGAL_GENERATION
    if (error === ErrorCodes.NONE && req.protocolType !== null && req.protocolType !== group.protocolType) error = ErrorCodes.INCONSISTENT_GROUP_PROTOCOL
    if (error === ErrorCodes.NONE && req.protocolName !== null && req.protocolName !== group.protocolName) error = ErrorCodes.INCONSISTENT_GROUP_PROTOCOL
    if (error !== ErrorCodes.NONE) return respond(syncError(error))
    const member = group.get(req.memberId)!
    switch (group.state) {
      case GroupState.Empty:
        return respond(syncError(ErrorCodes.UNKNOWN_MEMBER_ID))
      case GroupState.PreparingRebalance:
        return respond(syncError(ErrorCodes.REBALANCE_IN_PROGRESS))
      case GroupState.CompletingRebalance:
        group.maybeInvokeSync(member, syncError(ErrorCodes.REBALANCE_IN_PROGRESS))
        member.awaitingSync = respond
        this.removePendingSyncMember(group, member.memberId)
        if (group.isLeader(member.memberId)) this.completeSync(group, req.assignments)
        return
      case GroupState.Stable:
        this.removePendingSyncMember(group, member.memberId)
        respond({ errorCode: ErrorCodes.NONE, protocolType: group.protocolType, protocolName: group.protocolName, assignment: member.assignment })
        this.scheduleHeartbeat(group, member, member.sessionTimeoutMs)
        return
      default:
        respond(syncError(ErrorCodes.COORDINATOR_NOT_AVAILABLE))
    }
  }

  /** The leader's assignments: persisted with the generation, then handed to every waiting member. */
  private completeSync(group: Group, assignments: SyncRequest['assignments']): void {
    const byMember = new Map<string, Uint8Array>()
    for (const a of assignments) if (group.has(a.memberId)) byMember.set(a.memberId, a.assignment)
    const empty = Buffer.alloc(0)
    for (const id of group.members.keys()) if (!byMember.has(id)) byMember.set(id, empty)
    try {
      this.storeGroup(group, byMember)
    } catch (err) {
      this.logger.error(`group ${group.groupId}: cannot persist generation ${group.generationId}: ${(err as Error).message}`)
      this.resetAndPropagateAssignmentError(group, groupWriteError(err))
      this.maybePrepareRebalance(group, 'the assignment could not be persisted')
      return
    }
    for (const m of group.members.values()) m.assignment = byMember.get(m.memberId)!
    this.propagateAssignment(group, ErrorCodes.NONE)
    group.transitionTo(GroupState.Stable, Date.now())
    this.logger.debug(`group ${group.groupId}: generation ${group.generationId} is stable`)
  }

  private resetAndPropagateAssignmentError(group: Group, errorCode: number): void {
    const empty = Buffer.alloc(0)
    for (const m of group.members.values()) m.assignment = empty
    this.propagateAssignment(group, errorCode)
  }

  private propagateAssignment(group: Group, errorCode: number): void {
    const ok = errorCode === ErrorCodes.NONE
    for (const m of group.members.values()) {
      const result: SyncResult = ok
        ? { errorCode, protocolType: group.protocolType, protocolName: group.protocolName, assignment: m.assignment }
        : syncError(errorCode)
      // The session restarts once the member has its answer: it may have expired while the leader was slow.
      if (group.maybeInvokeSync(m, result)) this.scheduleHeartbeat(group, m, m.sessionTimeoutMs)
    }
  }

  // --- Heartbeat and LeaveGroup ---------------------------------------------------------------

  heartbeat(ref: MemberRef): number {
    if (ref.groupId === '') return ErrorCodes.INVALID_GROUP_ID
    const group = this.liveGroup(ref.groupId)
    if (group === undefined) return ErrorCodes.UNKNOWN_MEMBER_ID
    if (group.is(GroupState.Dead)) return ErrorCodes.COORDINATOR_NOT_AVAILABLE
    const error = this.validateMember(group, ref.memberId, ref.groupInstanceId)
    if (error !== ErrorCodes.NONE) return error
    if (ref.generationId !== group.generationId) return ErrorCodes.ILLEGAL_GENERATION
    const member = group.get(ref.memberId)!
    switch (group.state) {
      case GroupState.CompletingRebalance:
      case GroupState.Stable:
        this.scheduleHeartbeat(group, member, member.sessionTimeoutMs)
        return ErrorCodes.NONE
      case GroupState.PreparingRebalance:
        // How members learn they must rejoin.
        this.scheduleHeartbeat(group, member, member.sessionTimeoutMs)
        return ErrorCodes.REBALANCE_IN_PROGRESS
      default:
        return ErrorCodes.UNKNOWN_MEMBER_ID
    }
  }

  /**
   * Removes members (LeaveGroup). Before v3 a request names one member; from
   * v3 a batch, where a static member may be named by its instance id alone
   * (KIP-345's administrative removal).
   */
  leave(groupId: string, members: readonly { memberId: string; groupInstanceId: string | null; reason?: string | null }[]): LeaveResult {
    if (groupId === '') return { errorCode: ErrorCodes.INVALID_GROUP_ID, members: [] }
    const group = this.liveGroup(groupId)
    const answer = (m: { memberId: string; groupInstanceId: string | null }, errorCode: number) => ({ memberId: m.memberId, groupInstanceId: m.groupInstanceId, errorCode })
    if (group === undefined) return { errorCode: ErrorCodes.NONE, members: members.map((m) => answer(m, ErrorCodes.UNKNOWN_MEMBER_ID)) }
    if (group.is(GroupState.Dead)) return { errorCode: ErrorCodes.COORDINATOR_NOT_AVAILABLE, members: [] }
    const results = members.map((m) => {
      const reason = `left the group${reasonSuffix(m.reason)}`
      if (m.memberId === '') {
        const current = m.groupInstanceId === null ? undefined : group.currentStaticMemberId(m.groupInstanceId)
        if (current === undefined) return answer(m, ErrorCodes.UNKNOWN_MEMBER_ID)
        this.removeMemberAndUpdateGroup(group, group.get(current)!, reason)
        return answer(m, ErrorCodes.NONE)
      }
      if (group.pendingMembers.has(m.memberId)) {
        this.removePendingMember(group, m.memberId)
        return answer(m, ErrorCodes.NONE)
      }
      const error = this.validateMember(group, m.memberId, m.groupInstanceId)
      if (error !== ErrorCodes.NONE) return answer(m, error)
      this.removeMemberAndUpdateGroup(group, group.get(m.memberId)!, reason)
      return answer(m, ErrorCodes.NONE)
    })
    return { errorCode: ErrorCodes.NONE, members: results }
  }

  private removeMemberAndUpdateGroup(group: Group, member: GroupMember, reason: string): void {
    this.logger.debug(`group ${group.groupId}: member ${member.memberId} ${reason}`)
    this.dropMember(group, member)
    switch (group.state) {
      case GroupState.Stable:
      case GroupState.CompletingRebalance:
        this.maybePrepareRebalance(group, `member ${member.memberId} ${reason}`)
        break
      case GroupState.PreparingRebalance:
        this.tryCompleteJoin(group)
        break
      default:
        break
    }
  }

  /**
   * Takes a member out of the group, answering whatever request of it still
   * waits (UNKNOWN_MEMBER_ID: if the client is still there, it joins again).
   */
  private dropMember(group: Group, member: GroupMember): void {
    group.maybeInvokeJoin(member, joinError('', ErrorCodes.UNKNOWN_MEMBER_ID))
    group.maybeInvokeSync(member, syncError(ErrorCodes.UNKNOWN_MEMBER_ID))
    this.clearMemberTimer(member)
    group.remove(member.memberId)
  }

  private removePendingMember(group: Group, memberId: string): void {
    clearTimeout(group.pendingMembers.get(memberId))
    group.pendingMembers.delete(memberId)
    this.tryCompleteJoin(group)
  }

  private onPendingMemberExpired(group: Group, memberId: string): void {
    if (!group.pendingMembers.has(memberId)) return
    this.logger.debug(`group ${group.groupId}: member id ${memberId} was never used`)
    group.pendingMembers.delete(memberId)
    this.tryCompleteJoin(group)
  }

  // --- sessions ----------------------------------------------------------------------------

  /**
   * Moves the member's session deadline. One timer per member, re-armed only
   * when it fires early, so a heartbeat costs no timer churn.
   */
  private scheduleHeartbeat(group: Group, member: GroupMember, timeoutMs: number): void {
    if (this.closed) return
    const now = Date.now()
    member.heartbeatDeadline = now + timeoutMs
    if (member.timer !== undefined) {
      if (member.timerAt <= member.heartbeatDeadline) return
      clearTimeout(member.timer)
    }
    this.armMemberTimer(group, member, timeoutMs)
  }

  private armMemberTimer(group: Group, member: GroupMember, delayMs: number): void {
    member.timerAt = Date.now() + delayMs
    member.timer = setTimeout(() => this.onMemberTimer(group, member), delayMs)
    member.timer.unref()
  }

  private onMemberTimer(group: Group, member: GroupMember): void {
    member.timer = undefined
    if (this.closed || group.is(GroupState.Dead) || group.get(member.memberId) !== member) return
    const now = Date.now()
    const left = member.heartbeatDeadline - now
    if (left > 0) this.armMemberTimer(group, member, left)
    else this.maybeExpireMember(group, member, now)
  }

  /** The lazy half of session expiry (see liveGroup): the timer's decision, taken early. */
  private expireDueMembers(group: Group, now: number): void {
    if (this.closed || group.is(GroupState.Dead)) return
    for (const member of [...group.members.values()]) {
      if (member.heartbeatDeadline <= now && group.get(member.memberId) === member) this.maybeExpireMember(group, member, now)
    }
  }

  private maybeExpireMember(group: Group, member: GroupMember, now: number): void {
    if (member.heartbeatDeadline > now) return
    // Waiting in a rebalance counts as alive (the rebalance has its own timeouts), except for
    // members that joined in it and were never answered.
    if (!member.isNew && (member.awaitingJoin !== null || member.awaitingSync !== null)) return
    this.removeMemberAndUpdateGroup(group, member, `session timeout (${member.isNew ? NEW_MEMBER_JOIN_TIMEOUT_MS : member.sessionTimeoutMs} ms) expired`)
  }

  private clearMemberTimer(member: GroupMember): void {
    if (member.timer !== undefined) clearTimeout(member.timer)
    member.timer = undefined
  }

  private validateMember(group: Group, memberId: string, groupInstanceId: string | null): number {
    if (groupInstanceId !== null) {
      const current = group.currentStaticMemberId(groupInstanceId)
      if (current === undefined) return ErrorCodes.UNKNOWN_MEMBER_ID
      // KIP-345: another process took this instance id over; the old one must stop.
      if (current !== memberId) return ErrorCodes.FENCED_INSTANCE_ID
      return ErrorCodes.NONE
    }
    return group.has(memberId) ? ErrorCodes.NONE : ErrorCodes.UNKNOWN_MEMBER_ID
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

  private storeGroup(group: Group, assignments?: ReadonlyMap<string, Uint8Array>): void {
    this.offsets.storeGroup(group.groupId, toStoredGroup(group, assignments))
  }

  private storeGroupQuietly(group: Group): void {
    try {
      this.storeGroup(group)
    } catch (err) {
      // An empty generation that is not recorded only means the previous one reloads after a
      // restart, and its members then expire: harmless.
      this.logger.warn(`group ${group.groupId}: cannot persist generation ${group.generationId}: ${(err as Error).message}`)
    }
  }

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

/**
 * What JoinGroup/SyncGroup answer when the group's metadata cannot be written:
 * Kafka's GroupMetadataManager turns a record too large for the offsets topic
 * into UNKNOWN_SERVER_ERROR (retrying cannot help), a storage failure into
 * NOT_COORDINATOR (the client looks for the coordinator again).
 */
function groupWriteError(err: unknown): number {
  return err instanceof RecordListTooLargeError ? ErrorCodes.UNKNOWN_SERVER_ERROR : ErrorCodes.NOT_COORDINATOR
}

function reasonSuffix(reason: string | null | undefined): string {
  return reason === null || reason === undefined || reason === '' ? '' : ` (reason: ${reason})`
}

function definedOnly<T extends object>(o: T): Partial<T> {
  const out: Partial<T> = {}
  for (const [k, v] of Object.entries(o)) if (v !== undefined) (out as Record<string, unknown>)[k] = v
  return out
}
