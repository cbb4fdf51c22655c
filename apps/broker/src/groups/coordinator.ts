import { randomUUID } from 'node:crypto'
import { ErrorCodes } from '@tidelog/protocol'
import type { Logger } from '../logger.js'
import { EMPTY_BYTES, Group, type JoinResult, type Member, type SyncResult } from './group.js'
import type { OffsetsStore } from './offsets-store.js'

export interface CoordinatorOptions {
  /** Kafka's group.min.session.timeout.ms. */
  minSessionTimeoutMs?: number
  /** Kafka's group.max.session.timeout.ms. */
  maxSessionTimeoutMs?: number
  /** Kafka's group.initial.rebalance.delay.ms: how long a new group waits for more members. */
  initialRebalanceDelayMs?: number
}

export interface JoinRequest {
  groupId: string
  memberId: string
  groupInstanceId: string | null
  clientId: string
  clientHost: string
  sessionTimeoutMs: number
  rebalanceTimeoutMs: number
  protocolType: string
  protocols: { name: string; metadata: Uint8Array }[]
  /** From JoinGroup v4 on, a new member first gets MEMBER_ID_REQUIRED (KIP-394). */
  requireKnownMemberId: boolean
}

export interface MemberRef {
  groupId: string
  memberId: string
  groupInstanceId: string | null
  generationId: number
}

const joinError = (errorCode: number, memberId = ''): JoinResult => ({
  errorCode,
  generationId: -1,
  protocolType: null,
  protocolName: null,
  leader: '',
  memberId,
  members: [],
})

const syncError = (errorCode: number): SyncResult => ({ errorCode, protocolType: null, protocolName: null, assignment: EMPTY_BYTES })

/**
 * The classic consumer-group protocol for a single broker: every group is
 * coordinated here. Generations, member ids, the leader receiving the members'
 * metadata, assignments handed out by SyncGroup, heartbeats with session
 * expiry, rebalance timeouts, LeaveGroup and static membership, with the
 * error codes Kafka's GroupCoordinator answers in each state.
 */
export class GroupCoordinator {
  readonly groups = new Map<string, Group>()
  private readonly minSession: number
  private readonly maxSession: number
  private readonly initialDelay: number
  private closed = false

  constructor(
    readonly offsets: OffsetsStore,
    private readonly logger: Logger,
    opts: CoordinatorOptions = {},
  ) {
    this.minSession = opts.minSessionTimeoutMs ?? 6000
    this.maxSession = opts.maxSessionTimeoutMs ?? 1_800_000
    this.initialDelay = opts.initialRebalanceDelayMs ?? 3000
  }

  join(req: JoinRequest): Promise<JoinResult> {
    if (this.closed) return Promise.resolve(joinError(ErrorCodes.COORDINATOR_NOT_AVAILABLE, req.memberId))
    if (req.groupId === '') return Promise.resolve(joinError(ErrorCodes.INVALID_GROUP_ID, req.memberId))
    if (req.sessionTimeoutMs < this.minSession || req.sessionTimeoutMs > this.maxSession) {
      return Promise.resolve(joinError(ErrorCodes.INVALID_SESSION_TIMEOUT, req.memberId))
    }
    let group = this.groups.get(req.groupId)
    if (group === undefined) this.groups.set(req.groupId, (group = new Group(req.groupId)))
    const names = req.protocols.map((p) => p.name)
    if (!group.supportsProtocols(req.protocolType, names)) {
      return Promise.resolve(joinError(ErrorCodes.INCONSISTENT_GROUP_PROTOCOL, req.memberId))
    }

    if (req.memberId === '') {
      const memberId = `${req.clientId}-${randomUUID()}`
      if (req.groupInstanceId !== null) return this.joinStatic(group, req, memberId)
      if (req.requireKnownMemberId) {
        // KIP-394: hand out the id first, so a member that never comes back costs nothing.
        const timer = setTimeout(() => {
          group.pendingMembers.delete(memberId)
          if (group.state === 'PreparingRebalance') this.tryCompleteJoin(group)
        }, req.sessionTimeoutMs)
        timer.unref()
        group.pendingMembers.set(memberId, timer)
        return Promise.resolve(joinError(ErrorCodes.MEMBER_ID_REQUIRED, memberId))
      }
      return this.addMemberAndRebalance(group, req, memberId)
    }

    const pending = group.pendingMembers.get(req.memberId)
    if (pending !== undefined) {
      clearTimeout(pending)
      group.pendingMembers.delete(req.memberId)
      return this.addMemberAndRebalance(group, req, req.memberId)
    }
    const fenced = this.fencedInstance(group, req.memberId, req.groupInstanceId)
    if (fenced !== ErrorCodes.NONE) return Promise.resolve(joinError(fenced, req.memberId))
    const member = group.members.get(req.memberId)
    if (member === undefined) return Promise.resolve(joinError(ErrorCodes.UNKNOWN_MEMBER_ID, req.memberId))
    return this.rejoin(group, member, req)
  }

  sync(ref: MemberRef, protocolType: string | null, protocolName: string | null, assignments: { memberId: string; assignment: Uint8Array }[]): Promise<SyncResult> {
    const group = this.groups.get(ref.groupId)
    if (group === undefined) return Promise.resolve(syncError(ErrorCodes.UNKNOWN_MEMBER_ID))
    const err = this.validateMember(group, ref)
    if (err !== ErrorCodes.NONE) return Promise.resolve(syncError(err))
    if ((protocolType !== null && protocolType !== group.protocolType) || (protocolName !== null && protocolName !== group.protocolName)) {
      return Promise.resolve(syncError(ErrorCodes.INCONSISTENT_GROUP_PROTOCOL))
    }
    const member = group.members.get(ref.memberId)!
    switch (group.state) {
      case 'PreparingRebalance':
        return Promise.resolve(syncError(ErrorCodes.REBALANCE_IN_PROGRESS))
      case 'Stable':
        this.scheduleHeartbeat(group, member)
        return Promise.resolve({ errorCode: ErrorCodes.NONE, protocolType: group.protocolType, protocolName: group.protocolName, assignment: member.assignment })
      case 'CompletingRebalance':
        return new Promise<SyncResult>((resolve) => {
          member.syncWaiter = resolve
          this.scheduleHeartbeat(group, member)
          if (ref.memberId === group.leaderId) {
            const byId = new Map(assignments.map((a) => [a.memberId, a.assignment]))
            for (const m of group.members.values()) m.assignment = byId.get(m.memberId) ?? EMPTY_BYTES
            group.state = 'Stable'
            this.logger.debug(`group ${group.groupId}: generation ${group.generationId} stable with ${group.members.size} member(s)`)
            for (const m of group.members.values()) {
              const w = m.syncWaiter
              m.syncWaiter = null
              w?.({ errorCode: ErrorCodes.NONE, protocolType: group.protocolType, protocolName: group.protocolName, assignment: m.assignment })
            }
          }
        })
      default:
        return Promise.resolve(syncError(ErrorCodes.UNKNOWN_MEMBER_ID))
    }
  }

  heartbeat(ref: MemberRef): number {
    const group = this.groups.get(ref.groupId)
    if (group === undefined) return ErrorCodes.UNKNOWN_MEMBER_ID
    const err = this.validateMember(group, ref)
    if (err !== ErrorCodes.NONE) return err
    const member = group.members.get(ref.memberId)!
    switch (group.state) {
      case 'PreparingRebalance':
        this.scheduleHeartbeat(group, member)
        return ErrorCodes.REBALANCE_IN_PROGRESS
      case 'CompletingRebalance':
      case 'Stable':
        this.scheduleHeartbeat(group, member)
        return ErrorCodes.NONE
      default:
        return ErrorCodes.UNKNOWN_MEMBER_ID
    }
  }

  /** Removes members (LeaveGroup); returns a code per identity. */
  leave(groupId: string, identities: { memberId: string; groupInstanceId: string | null }[]): number[] {
    const group = this.groups.get(groupId)
    if (group === undefined) return identities.map(() => ErrorCodes.UNKNOWN_MEMBER_ID)
    const codes = identities.map(({ memberId, groupInstanceId }) => {
      let id = memberId
      if (groupInstanceId !== null) {
        const current = group.staticMembers.get(groupInstanceId)
        if (current === undefined) return ErrorCodes.UNKNOWN_MEMBER_ID
        // KIP-345: a static member may leave without its id; with a different one it is fenced.
        if (memberId !== '' && memberId !== current) return ErrorCodes.FENCED_INSTANCE_ID
        id = current
      }
      const pending = group.pendingMembers.get(id)
      if (pending !== undefined) {
        clearTimeout(pending)
        group.pendingMembers.delete(id)
        return ErrorCodes.NONE
      }
      const m = group.members.get(id)
      if (m === undefined) return ErrorCodes.UNKNOWN_MEMBER_ID
      this.removeMember(group, m, 'left the group')
      return ErrorCodes.NONE
    })
    return codes
  }

  /**
   * Checks an offset commit against the group (KIP-98 generation fencing):
   * generation -1 with no member id is a commit from outside the group, allowed
   * only while the group has no members.
   */
  validateCommit(ref: MemberRef): number {
    const group = this.groups.get(ref.groupId)
    if (ref.generationId < 0 && ref.memberId === '' && ref.groupInstanceId === null) {
      return group === undefined || group.isEmpty ? ErrorCodes.NONE : ErrorCodes.UNKNOWN_MEMBER_ID
    }
    if (group === undefined) return ErrorCodes.ILLEGAL_GENERATION
    const err = this.validateMember(group, ref)
    if (err !== ErrorCodes.NONE) return err
    if (group.state === 'CompletingRebalance') return ErrorCodes.REBALANCE_IN_PROGRESS
    this.scheduleHeartbeat(group, group.members.get(ref.memberId)!)
    return ErrorCodes.NONE
  }

  /** Deletes an empty group and its offsets (DeleteGroups). */
  deleteGroup(groupId: string): number {
    const group = this.groups.get(groupId)
    if (group !== undefined && !group.isEmpty) return ErrorCodes.NON_EMPTY_GROUP
    if (group === undefined && !this.offsets.groupIds().includes(groupId)) return ErrorCodes.GROUP_ID_NOT_FOUND
    this.groups.delete(groupId)
    this.offsets.deleteGroup(groupId)
    return ErrorCodes.NONE
  }

  /** Stops every timer and answers anything waiting (shutdown). */
  close(): void {
    this.closed = true
    for (const g of this.groups.values()) {
      if (g.rebalanceTimer !== null) clearTimeout(g.rebalanceTimer)
      for (const t of g.pendingMembers.values()) clearTimeout(t)
      for (const m of g.members.values()) {
        if (m.heartbeatTimer !== null) clearTimeout(m.heartbeatTimer)
        m.joinWaiter?.(joinError(ErrorCodes.COORDINATOR_NOT_AVAILABLE, m.memberId))
        m.syncWaiter?.(syncError(ErrorCodes.COORDINATOR_NOT_AVAILABLE))
        m.joinWaiter = null
        m.syncWaiter = null
      }
    }
  }

  private joinStatic(group: Group, req: JoinRequest, memberId: string): Promise<JoinResult> {
    const oldId = group.staticMembers.get(req.groupInstanceId!)
    const old = oldId === undefined ? undefined : group.members.get(oldId)
    if (old === undefined) return this.addMemberAndRebalance(group, req, memberId)
    // KIP-345: a restarted static member takes over its old identity; the old id is fenced.
    old.joinWaiter?.(joinError(ErrorCodes.FENCED_INSTANCE_ID, old.memberId))
    old.syncWaiter?.(syncError(ErrorCodes.FENCED_INSTANCE_ID))
    old.joinWaiter = null
    old.syncWaiter = null
    group.members.delete(old.memberId)
    const member: Member = { ...old, memberId, clientId: req.clientId, clientHost: req.clientHost, sessionTimeoutMs: req.sessionTimeoutMs, rebalanceTimeoutMs: req.rebalanceTimeoutMs }
    group.members.set(memberId, member)
    group.staticMembers.set(req.groupInstanceId!, memberId)
    if (group.leaderId === old.memberId) group.leaderId = memberId
    const sameProtocols = sameProtocolSet(old.protocols, req.protocols)
    if (group.state === 'Stable' && sameProtocols) {
      // Nothing changed for the group: hand back the current generation, no rebalance.
      this.scheduleHeartbeat(group, member)
      return Promise.resolve(this.joinResult(group, member))
    }
    member.protocols = req.protocols
    return this.awaitJoin(group, member)
  }

  private addMemberAndRebalance(group: Group, req: JoinRequest, memberId: string): Promise<JoinResult> {
    const member: Member = {
      memberId,
      groupInstanceId: req.groupInstanceId,
      clientId: req.clientId,
      clientHost: req.clientHost,
      sessionTimeoutMs: req.sessionTimeoutMs,
      rebalanceTimeoutMs: req.rebalanceTimeoutMs,
      protocolType: req.protocolType,
      protocols: req.protocols,
      assignment: EMPTY_BYTES,
      joinWaiter: null,
      syncWaiter: null,
      heartbeatTimer: null,
    }
    if (group.isEmpty) group.protocolType = req.protocolType
    group.members.set(memberId, member)
    if (req.groupInstanceId !== null) group.staticMembers.set(req.groupInstanceId, memberId)
    return this.awaitJoin(group, member)
  }

  private rejoin(group: Group, member: Member, req: JoinRequest): Promise<JoinResult> {
    const changed = !sameProtocolSet(member.protocols, req.protocols)
    member.sessionTimeoutMs = req.sessionTimeoutMs
    member.rebalanceTimeoutMs = req.rebalanceTimeoutMs
    member.protocols = req.protocols
    if (group.state === 'CompletingRebalance' && !changed) {
      // A retried JoinGroup of the generation in progress gets the same answer.
      return Promise.resolve(this.joinResult(group, member))
    }
    if (group.state === 'Stable' && !changed && member.memberId !== group.leaderId) {
      this.scheduleHeartbeat(group, member)
      return Promise.resolve(this.joinResult(group, member))
    }
    return this.awaitJoin(group, member)
  }

  /** Parks the member's JoinGroup until the rebalance completes, starting one if needed. */
  private awaitJoin(group: Group, member: Member): Promise<JoinResult> {
    return new Promise<JoinResult>((resolve) => {
      member.joinWaiter?.(joinError(ErrorCodes.UNKNOWN_MEMBER_ID, member.memberId))
      member.joinWaiter = resolve
      if (member.heartbeatTimer !== null) {
        clearTimeout(member.heartbeatTimer)
        member.heartbeatTimer = null
      }
      if (group.state !== 'PreparingRebalance') this.prepareRebalance(group, `${member.memberId} joined`)
      else this.tryCompleteJoin(group)
    })
  }

  private prepareRebalance(group: Group, reason: string): void {
    if (group.state === 'CompletingRebalance') {
      for (const m of group.members.values()) {
        m.assignment = EMPTY_BYTES
        const w = m.syncWaiter
        m.syncWaiter = null
        w?.(syncError(ErrorCodes.REBALANCE_IN_PROGRESS))
      }
    }
    const wasEmpty = group.state === 'Empty'
    group.state = 'PreparingRebalance'
    this.logger.debug(`group ${group.groupId}: preparing rebalance (${reason})`)
    const timeout = Math.max(group.maxRebalanceTimeoutMs(), 0)
    if (group.rebalanceTimer !== null) clearTimeout(group.rebalanceTimer)
    if (wasEmpty && this.initialDelay > 0) {
      // Kafka's InitialDelayedJoin: a new group waits a little for the rest of its members.
      group.initialDelayUntil = Date.now() + Math.min(timeout, this.initialDelay * 10)
      group.rebalanceTimer = setTimeout(() => this.onInitialDelay(group), Math.min(this.initialDelay, timeout))
    } else {
      group.initialDelayUntil = 0
      group.rebalanceTimer = setTimeout(() => this.completeJoin(group), timeout)
    }
    group.rebalanceTimer.unref()
  }

  private onInitialDelay(group: Group): void {
    group.rebalanceTimer = null
    group.initialDelayUntil = 0
    if (group.allMembersJoined()) {
      this.completeJoin(group)
      return
    }
    group.rebalanceTimer = setTimeout(() => this.completeJoin(group), group.maxRebalanceTimeoutMs())
    group.rebalanceTimer.unref()
  }

  private tryCompleteJoin(group: Group): void {
    if (group.state !== 'PreparingRebalance' || group.initialDelayUntil > 0) return
    if (group.allMembersJoined()) this.completeJoin(group)
  }

  private completeJoin(group: Group): void {
    if (group.state !== 'PreparingRebalance') return
    if (group.rebalanceTimer !== null) clearTimeout(group.rebalanceTimer)
    group.rebalanceTimer = null
    group.initialDelayUntil = 0
    // Members that did not rejoin within the rebalance timeout are out.
    for (const m of [...group.members.values()]) if (m.joinWaiter === null) this.dropMember(group, m)
    group.generationId++
    if (group.isEmpty) {
      group.state = 'Empty'
      group.protocolName = null
      group.leaderId = null
      return
    }
    group.protocolName = group.selectProtocol()
    if (group.leaderId === null || !group.members.has(group.leaderId)) group.leaderId = group.members.keys().next().value!
    group.state = 'CompletingRebalance'
    this.logger.debug(`group ${group.groupId}: generation ${group.generationId}, protocol ${group.protocolName}, leader ${group.leaderId}`)
    for (const m of group.members.values()) {
      const w = m.joinWaiter
      m.joinWaiter = null
      this.scheduleHeartbeat(group, m)
      w?.(this.joinResult(group, m))
    }
  }

  private joinResult(group: Group, member: Member): JoinResult {
    const isLeader = member.memberId === group.leaderId
    return {
      errorCode: ErrorCodes.NONE,
      generationId: group.generationId,
      protocolType: group.protocolType,
      protocolName: group.protocolName,
      leader: group.leaderId ?? '',
      memberId: member.memberId,
      members: isLeader
        ? [...group.members.values()].map((m) => ({
            memberId: m.memberId,
            groupInstanceId: m.groupInstanceId,
            metadata: m.protocols.find((p) => p.name === group.protocolName)?.metadata ?? EMPTY_BYTES,
          }))
        : [],
    }
  }

  private scheduleHeartbeat(group: Group, member: Member): void {
    if (member.heartbeatTimer !== null) clearTimeout(member.heartbeatTimer)
    member.heartbeatTimer = setTimeout(() => {
      member.heartbeatTimer = null
      if (group.members.get(member.memberId) === member && member.joinWaiter === null) {
        this.removeMember(group, member, `session timeout of ${member.sessionTimeoutMs} ms expired`)
      }
    }, member.sessionTimeoutMs)
    member.heartbeatTimer.unref()
  }

  private dropMember(group: Group, m: Member): void {
    if (m.heartbeatTimer !== null) clearTimeout(m.heartbeatTimer)
    m.heartbeatTimer = null
    group.members.delete(m.memberId)
    if (m.groupInstanceId !== null && group.staticMembers.get(m.groupInstanceId) === m.memberId) group.staticMembers.delete(m.groupInstanceId)
    const jw = m.joinWaiter
    const sw = m.syncWaiter
    m.joinWaiter = null
    m.syncWaiter = null
    jw?.(joinError(ErrorCodes.UNKNOWN_MEMBER_ID, m.memberId))
    sw?.(syncError(ErrorCodes.UNKNOWN_MEMBER_ID))
  }

  private removeMember(group: Group, m: Member, reason: string): void {
    this.dropMember(group, m)
    this.logger.debug(`group ${group.groupId}: member ${m.memberId} removed (${reason})`)
    switch (group.state) {
      case 'Stable':
      case 'CompletingRebalance':
        if (group.isEmpty) {
          group.state = 'Empty'
          group.generationId++
          group.protocolName = null
          group.leaderId = null
        } else {
          this.prepareRebalance(group, reason)
        }
        break
      case 'PreparingRebalance':
        if (group.isEmpty && group.pendingMembers.size === 0) this.completeJoin(group)
        else this.tryCompleteJoin(group)
        break
      default:
        break
    }
  }

  private fencedInstance(group: Group, memberId: string, groupInstanceId: string | null): number {
    if (groupInstanceId === null) return ErrorCodes.NONE
    const current = group.staticMembers.get(groupInstanceId)
    if (current !== undefined && current !== memberId) return ErrorCodes.FENCED_INSTANCE_ID
    return ErrorCodes.NONE
  }

  private validateMember(group: Group, ref: MemberRef): number {
    const fenced = this.fencedInstance(group, ref.memberId, ref.groupInstanceId)
    if (fenced !== ErrorCodes.NONE) return fenced
    if (!group.members.has(ref.memberId)) return ErrorCodes.UNKNOWN_MEMBER_ID
    if (ref.generationId !== group.generationId) return ErrorCodes.ILLEGAL_GENERATION
    return ErrorCodes.NONE
  }
}

function sameProtocolSet(a: readonly { name: string; metadata: Uint8Array }[], b: readonly { name: string; metadata: Uint8Array }[]): boolean {
  if (a.length !== b.length) return false
  for (let i = 0; i < a.length; i++) {
    if (a[i]!.name !== b[i]!.name || !Buffer.from(a[i]!.metadata).equals(Buffer.from(b[i]!.metadata))) return false
  }
  return true
}
