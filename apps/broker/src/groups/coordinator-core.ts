import { ErrorCodes } from '@tidelog/protocol'
import type { Logger } from '../logger.js'
import { type Group, type GroupMember, GroupState, joinError, syncError } from './group.js'
import { toStoredGroup } from './group-records.js'
import type { OffsetsStore } from './offsets-store.js'
import { type CoordinatorOptions, DEFAULT_COORDINATOR_OPTIONS, NEW_MEMBER_JOIN_TIMEOUT_MS } from './types.js'

/**
 * The state every part of the group coordinator shares, and the member
 * sessions: who is in which group, when each member's session ends, and how a
 * member leaves. The coordinator is layered (this base, then
 * coordinator-membership.ts for JoinGroup/SyncGroup/Heartbeat/LeaveGroup,
 * then coordinator.ts for offsets, admin requests and lifecycle) only to keep
 * each file readable; it is one object, as Kafka's GroupCoordinator is.
 */
export abstract class GroupCoordinatorBase {
  protected readonly groups = new Map<string, Group>()
  protected readonly opts: Readonly<Required<CoordinatorOptions>>
  protected closed = false

  constructor(
    readonly offsets: OffsetsStore,
    protected readonly logger: Logger,
    opts: CoordinatorOptions = {},
  ) {
    this.opts = { ...DEFAULT_COORDINATOR_OPTIONS, ...definedOnly(opts) }
  }

  /**
   * The group, with every member whose session deadline has passed expired
   * first. Expiry is timer-driven, but a timer may fire late on a loaded
   * machine; every operation that reads or changes membership goes through
   * here, so its answer is what it would be had the timers fired on time
   * (librdkafka's 0081 deletes a group one session timeout after its static
   * member stopped, and must not see NON_EMPTY_GROUP).
   */
  protected liveGroup(groupId: string, now = Date.now()): Group | undefined {
    const group = this.groups.get(groupId)
    if (group !== undefined) this.expireDueMembers(group, now)
    return group
  }

  /** A member leaving (on request or by expiry) may end or complete a rebalance: the membership layer decides. */
  protected abstract removeMemberAndUpdateGroup(group: Group, member: GroupMember, reason: string): void

  /**
   * Takes a member out of the group, answering whatever request of it still
   * waits (UNKNOWN_MEMBER_ID: if the client is still there, it joins again).
   */
  protected dropMember(group: Group, member: GroupMember): void {
    group.maybeInvokeJoin(member, joinError('', ErrorCodes.UNKNOWN_MEMBER_ID))
    group.maybeInvokeSync(member, syncError(ErrorCodes.UNKNOWN_MEMBER_ID))
    this.clearMemberTimer(member)
    group.remove(member.memberId)
  }

  // --- sessions ----------------------------------------------------------------------------

  /**
   * Moves the member's session deadline. One timer per member, re-armed only
   * when it fires early, so a heartbeat costs no timer churn.
   */
  protected scheduleHeartbeat(group: Group, member: GroupMember, timeoutMs: number): void {
    if (this.closed) return
    const now = Date.now()
    member.heartbeatDeadline = now + timeoutMs
    if (member.timer !== undefined) {
      if (member.timerAt <= member.heartbeatDeadline) return
      clearTimeout(member.timer)
    }
    this.armMemberTimer(group, member, timeoutMs)
  }

  protected armMemberTimer(group: Group, member: GroupMember, delayMs: number): void {
    member.timerAt = Date.now() + delayMs
    member.timer = setTimeout(() => this.onMemberTimer(group, member), delayMs)
    member.timer.unref()
  }

  protected onMemberTimer(group: Group, member: GroupMember): void {
    member.timer = undefined
    if (this.closed || group.is(GroupState.Dead) || group.get(member.memberId) !== member) return
    const now = Date.now()
    const left = member.heartbeatDeadline - now
    if (left > 0) this.armMemberTimer(group, member, left)
    else this.maybeExpireMember(group, member, now)
  }

  /** The lazy half of session expiry (see liveGroup): the timer's decision, taken early. */
  protected expireDueMembers(group: Group, now: number): void {
    if (this.closed || group.is(GroupState.Dead)) return
    for (const member of [...group.members.values()]) {
      if (member.heartbeatDeadline <= now && group.get(member.memberId) === member) this.maybeExpireMember(group, member, now)
    }
  }

  protected maybeExpireMember(group: Group, member: GroupMember, now: number): void {
    if (member.heartbeatDeadline > now) return
    // Waiting in a rebalance counts as alive (the rebalance has its own timeouts), except for
    // members that joined in it and were never answered.
    if (!member.isNew && (member.awaitingJoin !== null || member.awaitingSync !== null)) return
    this.removeMemberAndUpdateGroup(group, member, `session timeout (${member.isNew ? NEW_MEMBER_JOIN_TIMEOUT_MS : member.sessionTimeoutMs} ms) expired`)
  }

  protected clearMemberTimer(member: GroupMember): void {
    if (member.timer !== undefined) clearTimeout(member.timer)
    member.timer = undefined
  }

  protected validateMember(group: Group, memberId: string, groupInstanceId: string | null): number {
    if (groupInstanceId !== null) {
      const current = group.currentStaticMemberId(groupInstanceId)
      if (current === undefined) return ErrorCodes.UNKNOWN_MEMBER_ID
      // KIP-345: another process took this instance id over; the old one must stop.
      if (current !== memberId) return ErrorCodes.FENCED_INSTANCE_ID
      return ErrorCodes.NONE
    }
    return group.has(memberId) ? ErrorCodes.NONE : ErrorCodes.UNKNOWN_MEMBER_ID
  }

  // --- persistence ---------------------------------------------------------------------------

  protected storeGroup(group: Group, assignments?: ReadonlyMap<string, Uint8Array>): void {
    this.offsets.storeGroup(group.groupId, toStoredGroup(group, assignments))
  }

  protected storeGroupQuietly(group: Group): void {
    try {
      this.storeGroup(group)
    } catch (err) {
      // An empty generation that is not recorded only means the previous one reloads after a
      // restart, and its members then expire: harmless.
      this.logger.warn(`group ${group.groupId}: cannot persist generation ${group.generationId}: ${(err as Error).message}`)
    }
  }
}

function definedOnly<T extends object>(o: T): Partial<T> {
  const out: Partial<T> = {}
  for (const [k, v] of Object.entries(o)) if (v !== undefined) (out as Record<string, unknown>)[k] = v
  return out
}
