import { ErrorCodes } from '@tidelog/protocol'
import {
  Group,
  GroupMember,
  GroupState,
  type JoinResult,
  type SyncResult,
  joinError,
  syncError,
} from './group.js'
import { RecordListTooLargeError } from './offsets-store.js'
import { GroupCoordinatorBase } from './coordinator-core.js'
import { type JoinRequest, type LeaveResult, type MemberRef, NEW_MEMBER_JOIN_TIMEOUT_MS, type SyncRequest } from './types.js'

/**
 * Group membership and rebalances: JoinGroup (MEMBER_ID_REQUIRED, the initial
 * rebalance delay, the leader receiving every member's metadata), SyncGroup,
 * Heartbeat, LeaveGroup, the rebalance and pending-sync timeouts, and static
 * membership (KIP-345, KIP-814). The group's state transitions themselves are
 * checked by Group (group.ts).
 */
export abstract class GroupMembership extends GroupCoordinatorBase {
  // --- JoinGroup ---------------------------------------------------------------------------

  join(req: JoinRequest): Promise<JoinResult> {
    return new Promise<JoinResult>((resolve) => this.handleJoin(req, resolve))
  }

  protected handleJoin(req: JoinRequest, respond: (r: JoinResult) => void): void {
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
  protected acceptJoiningMember(group: Group, memberId: string): boolean {
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

  protected joinNewMember(group: Group, req: JoinRequest, respond: (r: JoinResult) => void): void {
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

  protected joinCurrentMember(group: Group, req: JoinRequest, respond: (r: JoinResult) => void): void {
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

  protected addMemberAndRebalance(group: Group, req: JoinRequest, memberId: string, respond: (r: JoinResult) => void): void {
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

  protected updateMemberAndRebalance(group: Group, member: GroupMember, req: JoinRequest, respond: (r: JoinResult) => void): void {
    this.supersedeJoin(group, member)
    group.updateMember(member, req.protocols, req.rebalanceTimeoutMs, req.sessionTimeoutMs, respond)
    this.maybePrepareRebalance(group, `member ${member.memberId} rejoined${reasonSuffix(req.reason)}`)
  }

  /**
   * A static member rejoined without its member id (a restarted instance): it
   * takes over the old member's place under a new id; the old id is fenced. In
   * a Stable group whose protocol would not change, nothing is rebalanced.
   */
  protected replaceStaticMember(
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
  protected supersedeJoin(group: Group, member: GroupMember): void {
    group.maybeInvokeJoin(member, joinError(member.memberId, ErrorCodes.REBALANCE_IN_PROGRESS))
  }

  protected joinResultFor(group: Group, member: GroupMember, withMembers: boolean): JoinResult {
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

  protected maybePrepareRebalance(group: Group, reason: string): void {
    if (group.canRebalance) this.prepareRebalance(group, reason)
  }

  protected prepareRebalance(group: Group, reason: string): void {
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

  protected armJoin(group: Group, initial: boolean, delayMs: number, remainingMs: number): void {
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

  protected onJoinTimer(group: Group): void {
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
  protected tryCompleteJoin(group: Group): void {
    if (!group.is(GroupState.PreparingRebalance) || group.joinInitial || !group.hasAllMembersJoined) return
    this.completeJoin(group)
  }

  protected completeJoin(group: Group): void {
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
  protected armPendingSync(group: Group): void {
    if (group.syncTimer !== undefined) clearTimeout(group.syncTimer)
    group.syncTimer = undefined
    if (this.closed) return
    const generation = group.generationId
    group.syncTimer = setTimeout(() => this.onPendingSyncExpired(group, generation), group.rebalanceTimeoutMs)
    group.syncTimer.unref()
  }

  protected cancelPendingSync(group: Group): void {
    group.pendingSyncMembers.clear()
    if (group.syncTimer !== undefined) clearTimeout(group.syncTimer)
    group.syncTimer = undefined
  }

  protected removePendingSyncMember(group: Group, memberId: string): void {
    group.pendingSyncMembers.delete(memberId)
    if (group.pendingSyncMembers.size === 0) this.cancelPendingSync(group)
  }

  protected onPendingSyncExpired(group: Group, generation: number): void {
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

  protected handleSync(req: SyncRequest, respond: (r: SyncResult) => void): void {
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
  protected completeSync(group: Group, assignments: SyncRequest['assignments']): void {
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

  protected resetAndPropagateAssignmentError(group: Group, errorCode: number): void {
    const empty = Buffer.alloc(0)
    for (const m of group.members.values()) m.assignment = empty
    this.propagateAssignment(group, errorCode)
  }

  protected propagateAssignment(group: Group, errorCode: number): void {
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

  protected override removeMemberAndUpdateGroup(group: Group, member: GroupMember, reason: string): void {
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

  protected removePendingMember(group: Group, memberId: string): void {
    clearTimeout(group.pendingMembers.get(memberId))
    group.pendingMembers.delete(memberId)
    this.tryCompleteJoin(group)
  }

  protected onPendingMemberExpired(group: Group, memberId: string): void {
    if (!group.pendingMembers.has(memberId)) return
    this.logger.debug(`group ${group.groupId}: member id ${memberId} was never used`)
    group.pendingMembers.delete(memberId)
    this.tryCompleteJoin(group)
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
