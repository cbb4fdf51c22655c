import { IllegalStateError } from '../errors.js'
import type { GroupGeneration } from '../types.js'

/**
 * A member's place in the classic group protocol (Java's MemberState, plus the end states):
 * - unjoined: not a member (initially, after leaving, after losing the membership);
 * - joining: JoinGroup sent, waiting for the group to form (PREPARING_REBALANCE);
 * - syncing: joined, waiting for SyncGroup's assignment (COMPLETING_REBALANCE);
 * - stable: has its assignment, heartbeating;
 * - leaving: LeaveGroup sent;
 * - failed: the coordinator refused the member for good (e.g. FENCED_INSTANCE_ID);
 * - closed.
 */
export type MemberState = 'unjoined' | 'joining' | 'syncing' | 'stable' | 'leaving' | 'failed' | 'closed'

const TRANSITIONS: Record<MemberState, readonly MemberState[]> = {
  unjoined: ['joining', 'leaving', 'failed', 'closed'],
  // joining -> joining: MEMBER_ID_REQUIRED and retriable errors send JoinGroup again.
  joining: ['joining', 'syncing', 'unjoined', 'leaving', 'failed', 'closed'],
  syncing: ['stable', 'joining', 'unjoined', 'leaving', 'failed', 'closed'],
  stable: ['joining', 'unjoined', 'leaving', 'failed', 'closed'],
  leaving: ['unjoined', 'failed', 'closed'],
  failed: ['closed'],
  closed: [],
}

export const NO_GENERATION = -1

/** The state, the generation it belongs to, and why a rejoin is due. */
export class Membership {
  private current: MemberState = 'unjoined'
  generationId = NO_GENERATION
  memberId = ''
  protocolName: string | null = null
  leaderId = ''
  /** Set when the member must (re)join; the reason is sent in JoinGroup v8+. */
  rejoinReason: string | undefined = 'initial join'
  /** Called on every transition (for logs and events). */
  onTransition: ((from: MemberState, to: MemberState) => void) | undefined

  get state(): MemberState {
    return this.current
  }

  transition(to: MemberState): void {
    const from = this.current
    if (!TRANSITIONS[from].includes(to)) throw new IllegalStateError(`group member cannot go from ${from} to ${to}`)
    this.current = to
    this.onTransition?.(from, to)
  }

  /** Whether offsets committed now are attributed to a live generation. */
  get hasGeneration(): boolean {
    return this.generationId !== NO_GENERATION && this.memberId !== ''
  }

  /** Heartbeats are sent between JoinGroup's answer and leaving (Java: not while unjoined or joining). */
  get heartbeats(): boolean {
    return this.current === 'syncing' || this.current === 'stable'
  }

  get isTerminal(): boolean {
    return this.current === 'failed' || this.current === 'closed'
  }

  requestRejoin(reason: string): void {
    if (this.rejoinReason === undefined) this.rejoinReason = reason
  }

  /**
   * Forgets the generation after the coordinator said it is over. The member id survives an
   * ILLEGAL_GENERATION (the coordinator still knows the member) but not UNKNOWN_MEMBER_ID.
   */
  resetGeneration(keepMemberId: boolean): void {
    this.generationId = NO_GENERATION
    this.protocolName = null
    this.leaderId = ''
    if (!keepMemberId) this.memberId = ''
  }

  snapshot(): GroupGeneration {
    return { generationId: this.generationId, memberId: this.memberId, protocolName: this.protocolName }
  }
}
