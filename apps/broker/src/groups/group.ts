import { randomUUID } from 'node:crypto'
import { ErrorCodes, decodeConsumerProtocolSubscription } from '@tidelog/protocol'

/**
 * The states of a classic consumer group, named as Kafka names them (they are
 * what DescribeGroups and ListGroups report).
 */
export const GroupState = {
  Empty: 'Empty',
  PreparingRebalance: 'PreparingRebalance',
  CompletingRebalance: 'CompletingRebalance',
  Stable: 'Stable',
  Dead: 'Dead',
} as const
export type GroupState = (typeof GroupState)[keyof typeof GroupState]

// Kafka's allowed transitions, by target state.
const VALID_PREVIOUS: Record<GroupState, readonly GroupState[]> = {
  Empty: ['PreparingRebalance'],
  PreparingRebalance: ['Stable', 'CompletingRebalance', 'Empty'],
  CompletingRebalance: ['PreparingRebalance'],
  Stable: ['CompletingRebalance'],
  Dead: ['Stable', 'PreparingRebalance', 'CompletingRebalance', 'Empty', 'Dead'],
}

/** The protocol type of Java's ConsumerProtocol, whose subscriptions the coordinator can read. */
export const CONSUMER_PROTOCOL_TYPE = 'consumer'

const EMPTY = Buffer.alloc(0)

export interface GroupProtocol {
  readonly name: string
  readonly metadata: Uint8Array
}

export interface JoinMember {
  memberId: string
  groupInstanceId: string | null
  metadata: Uint8Array
}

export interface JoinResult {
  errorCode: number
  memberId: string
  generationId: number
  protocolType: string | null
  protocolName: string | null
  leader: string
  skipAssignment: boolean
  /** Every member's metadata for the chosen protocol, for the leader only. */
  members: JoinMember[]
}

export interface SyncResult {
  errorCode: number
  protocolType: string | null
  protocolName: string | null
  assignment: Uint8Array
}

export function joinError(memberId: string, errorCode: number): JoinResult {
  return { errorCode, memberId, generationId: -1, protocolType: null, protocolName: null, leader: '', skipAssignment: false, members: [] }
}

export function syncError(errorCode: number): SyncResult {
  return { errorCode, protocolType: null, protocolName: null, assignment: EMPTY }
}

export class GroupMember {
  /** Assigned by the leader in SyncGroup; empty until then. */
  assignment: Uint8Array = EMPTY
  /** Set while a JoinGroup of this member waits for the rebalance to complete. */
  awaitingJoin: ((r: JoinResult) => void) | null = null
  /** Set while a SyncGroup of this member waits for the leader's assignment. */
  awaitingSync: ((r: SyncResult) => void) | null = null
  /**
   * Joined in the current rebalance and not yet answered: such a member is
   * expired after the new-member timeout even while it waits (it cannot
   * heartbeat without knowing its generation).
   */
  isNew = false
  /** When the session expires unless the member shows signs of life. */
  heartbeatDeadline = 0
  /** @internal the coordinator's expiry timer for this member, and when it fires. */
  timer: NodeJS.Timeout | undefined = undefined
  timerAt = 0

  constructor(
    public memberId: string,
    readonly groupInstanceId: string | null,
    readonly clientId: string,
    readonly clientHost: string,
    public rebalanceTimeoutMs: number,
    public sessionTimeoutMs: number,
    readonly protocolType: string,
    public protocols: readonly GroupProtocol[],
  ) {}

  get isStatic(): boolean {
    return this.groupInstanceId !== null
  }

  metadata(protocol: string): Uint8Array {
    for (const p of this.protocols) if (p.name === protocol) return p.metadata
    return EMPTY
  }

  /** Same protocols, in the same order, with the same metadata bytes. */
  matches(protocols: readonly GroupProtocol[]): boolean {
    if (protocols.length !== this.protocols.length) return false
    for (let i = 0; i < protocols.length; i++) {
      const a = protocols[i]!
      const b = this.protocols[i]!
      if (a.name !== b.name || !Buffer.from(a.metadata.buffer, a.metadata.byteOffset, a.metadata.byteLength).equals(b.metadata)) return false
    }
    return true
  }

  /** The member's most preferred protocol among `candidates`. */
  vote(candidates: ReadonlySet<string>): string | undefined {
    for (const p of this.protocols) if (candidates.has(p.name)) return p.name
    return undefined
  }
}

export interface MemberSummary {
  memberId: string
  groupInstanceId: string | null
  clientId: string
  clientHost: string
  metadata: Uint8Array
  assignment: Uint8Array
}

export interface GroupSummary {
  state: GroupState
  protocolType: string
  protocol: string
  members: MemberSummary[]
}

/** The distinct protocol names a member offers (duplicates must not count twice). */
function protocolNames(protocols: readonly GroupProtocol[]): Set<string> {
  const s = new Set<string>()
  for (const p of protocols) s.add(p.name)
  return s
}

/**
 * One classic group: its state machine, members, generation, chosen protocol
 * and leader, as Kafka's GroupMetadata keeps them. Pure bookkeeping: timers,
 * persistence and the answers to clients belong to the coordinator.
 */
export class Group {
  private _state: GroupState
  /** When the group entered its current state (ms). */
  stateTimestamp: number
  protocolType: string | null = null
  protocolName: string | null = null
  generationId = 0
  leaderId: string | null = null
  /** Insertion order matters: a departing leader is replaced by the oldest member. */
  readonly members = new Map<string, GroupMember>()
  /** group.instance.id -> member id (KIP-345). */
  readonly staticMembers = new Map<string, string>()
  /**
   * Member ids handed out with MEMBER_ID_REQUIRED (KIP-394) whose rejoin is
   * awaited, with their expiry timers.
   */
  readonly pendingMembers = new Map<string, NodeJS.Timeout | undefined>()
  /** Members that have not sent SyncGroup for the current generation. */
  readonly pendingSyncMembers = new Set<string>()
  /** How many members support each protocol; the candidates are those all members support. */
  private readonly supportedProtocols = new Map<string, number>()
  private numAwaitingJoin = 0
  /**
   * Topics the members subscribe to, when the protocol is Java's consumer
   * protocol and every subscription could be read; undefined when unknown.
   */
  subscribedTopics: ReadonlySet<string> | undefined = undefined
  /** A member joined during the initial rebalance, so the initial delay may be extended. */
  newMemberAdded = false

  /** @internal the coordinator's rebalance (join) timer and its kind. */
  joinTimer: NodeJS.Timeout | undefined = undefined
  joinInitial = false
  joinDelayMs = 0
  joinRemainingMs = 0
  /** @internal the coordinator's pending-sync timer. */
  syncTimer: NodeJS.Timeout | undefined = undefined

  constructor(
    readonly groupId: string,
    now: number,
    initialState: GroupState = GroupState.Empty,
  ) {
    this._state = initialState
    this.stateTimestamp = now
  }

  get state(): GroupState {
    return this._state
  }

  is(state: GroupState): boolean {
    return this._state === state
  }

  transitionTo(state: GroupState, now: number): void {
    if (!VALID_PREVIOUS[state].includes(this._state)) {
      throw new Error(`group ${this.groupId} cannot move from ${this._state} to ${state}`)
    }
    this._state = state
    this.stateTimestamp = now
  }

  get size(): number {
    return this.members.size
  }

  has(memberId: string): boolean {
    return this.members.has(memberId)
  }

  get(memberId: string): GroupMember | undefined {
    return this.members.get(memberId)
  }

  isLeader(memberId: string): boolean {
    return this.leaderId === memberId
  }

  get isConsumerGroup(): boolean {
    return this.protocolType === CONSUMER_PROTOCOL_TYPE
  }

  /** PreparingRebalance may be entered from here. */
  get canRebalance(): boolean {
    return VALID_PREVIOUS.PreparingRebalance.includes(this._state)
  }

  get numAwaiting(): number {
    return this.numAwaitingJoin
  }

  /** Every member has rejoined and no member id handed out is still awaited. */
  get hasAllMembersJoined(): boolean {
    return this.members.size === this.numAwaitingJoin && this.pendingMembers.size === 0
  }

  /** The longest rebalance timeout among the members bounds a rebalance. */
  get rebalanceTimeoutMs(): number {
    let t = 0
    for (const m of this.members.values()) if (m.rebalanceTimeoutMs > t) t = m.rebalanceTimeoutMs
    return t
  }

  currentStaticMemberId(groupInstanceId: string): string | undefined {
    return this.staticMembers.get(groupInstanceId)
  }

  /** A new member id: the client id (or the instance id) and a random uuid, as Kafka forms it. */
  generateMemberId(clientId: string, groupInstanceId: string | null): string {
    return `${groupInstanceId ?? clientId}-${randomUUID()}`
  }

  add(member: GroupMember, callback: ((r: JoinResult) => void) | null): void {
    if (member.groupInstanceId !== null) {
      if (this.staticMembers.has(member.groupInstanceId)) {
        throw new Error(`static member ${member.groupInstanceId} is already in group ${this.groupId}`)
      }
      this.staticMembers.set(member.groupInstanceId, member.memberId)
    }
    if (this.members.size === 0) this.protocolType = member.protocolType
    this.leaderId ??= member.memberId
    this.members.set(member.memberId, member)
    this.countProtocols(member.protocols, 1)
    member.awaitingJoin = callback
    if (callback !== null) this.numAwaitingJoin++
    this.pendingMembers.delete(member.memberId)
  }

  remove(memberId: string): GroupMember | undefined {
    const member = this.members.get(memberId)
    if (member !== undefined) {
      this.members.delete(memberId)
      this.countProtocols(member.protocols, -1)
      if (member.awaitingJoin !== null) this.numAwaitingJoin--
      if (member.groupInstanceId !== null) this.staticMembers.delete(member.groupInstanceId)
    }
    if (this.isLeader(memberId)) {
      const first = this.members.keys().next()
      this.leaderId = first.done === true ? null : first.value
    }
    this.pendingMembers.delete(memberId)
    this.pendingSyncMembers.delete(memberId)
    return member
  }

  /**
   * When the leader did not rejoin, any member that did becomes leader. False
   * when there is no leader or nobody rejoined.
   */
  maybeElectNewJoinedLeader(): boolean {
    if (this.leaderId === null) return false
    const leader = this.members.get(this.leaderId)
    if (leader !== undefined && leader.awaitingJoin !== null) return true
    for (const [id, m] of this.members) {
      if (m.awaitingJoin !== null) {
        this.leaderId = id
        return true
      }
    }
    return false
  }

  /**
   * Moves a static member to a new member id (its instance rejoined without
   * knowing it). A request of the old id still waiting is fenced.
   */
  replaceStaticMember(groupInstanceId: string, oldMemberId: string, newMemberId: string): GroupMember {
    const member = this.members.get(oldMemberId)
    if (member === undefined) throw new Error(`cannot replace unknown member ${oldMemberId} of group ${this.groupId}`)
    this.members.delete(oldMemberId)
    this.maybeInvokeJoin(member, joinError(oldMemberId, ErrorCodes.FENCED_INSTANCE_ID))
    this.maybeInvokeSync(member, syncError(ErrorCodes.FENCED_INSTANCE_ID))
    member.memberId = newMemberId
    this.members.set(newMemberId, member)
    if (this.isLeader(oldMemberId)) this.leaderId = newMemberId
    if (this.pendingSyncMembers.delete(oldMemberId)) this.pendingSyncMembers.add(newMemberId)
    this.staticMembers.set(groupInstanceId, newMemberId)
    return member
  }

  /** New protocols, timeouts and waiting JoinGroup for an existing member. */
  updateMember(
    member: GroupMember,
    protocols: readonly GroupProtocol[],
    rebalanceTimeoutMs: number,
    sessionTimeoutMs: number,
    callback: ((r: JoinResult) => void) | null,
  ): void {
    this.countProtocols(member.protocols, -1)
    member.protocols = protocols
    this.countProtocols(protocols, 1)
    member.rebalanceTimeoutMs = rebalanceTimeoutMs
    member.sessionTimeoutMs = sessionTimeoutMs
    if (callback !== null && member.awaitingJoin === null) this.numAwaitingJoin++
    else if (callback === null && member.awaitingJoin !== null) this.numAwaitingJoin--
    member.awaitingJoin = callback
  }

  /** Answers the member's waiting JoinGroup, if any. */
  maybeInvokeJoin(member: GroupMember, result: JoinResult): boolean {
    const cb = member.awaitingJoin
    if (cb === null) return false
    member.awaitingJoin = null
    this.numAwaitingJoin--
    cb(result)
    return true
  }

  /** Answers the member's waiting SyncGroup, if any. */
  maybeInvokeSync(member: GroupMember, result: SyncResult): boolean {
    const cb = member.awaitingSync
    if (cb === null) return false
    member.awaitingSync = null
    cb(result)
    return true
  }

  /**
   * Whether a member offering `protocols` of `protocolType` may join: the
   * first member needs both; later ones need the group's type and at least one
   * protocol every current member supports.
   */
  supportsProtocols(protocolType: string, protocols: readonly GroupProtocol[]): boolean {
    if (this.is(GroupState.Empty)) return protocolType !== '' && protocols.length > 0
    if (this.protocolType !== protocolType) return false
    const n = this.members.size
    for (const p of protocols) if ((this.supportedProtocols.get(p.name) ?? 0) === n) return true
    return false
  }

  /**
   * The protocol for the next generation: among those every member supports,
   * each member votes for the one it ranks highest and the most votes win
   * (ties go to the one voted for first).
   */
  selectProtocol(): string {
    const n = this.members.size
    const candidates = new Set<string>()
    for (const [name, count] of this.supportedProtocols) if (count === n) candidates.add(name)
    const votes = new Map<string, number>()
    let best: string | undefined
    let bestVotes = 0
    for (const m of this.members.values()) {
      const v = m.vote(candidates)
      if (v === undefined) continue
      const c = (votes.get(v) ?? 0) + 1
      votes.set(v, c)
      if (c > bestVotes) {
        best = v
        bestVotes = c
      }
    }
    if (best === undefined) throw new Error(`group ${this.groupId} has no protocol all members support`)
    return best
  }

  /**
   * Starts the next generation: CompletingRebalance with a chosen protocol, or
   * Empty when nobody is left.
   */
  initNextGeneration(now: number): void {
    this.generationId++
    if (this.members.size > 0) {
      this.protocolName = this.selectProtocol()
      this.subscribedTopics = this.computeSubscribedTopics()
      this.transitionTo(GroupState.CompletingRebalance, now)
    } else {
      this.protocolName = null
      this.subscribedTopics = this.computeSubscribedTopics()
      this.transitionTo(GroupState.Empty, now)
    }
    this.pendingSyncMembers.clear()
  }

  /**
   * For consumer groups, the union of the members' subscribed topics, read
   * from the subscriptions of the chosen protocol. Unknown (undefined) when a
   * subscription cannot be read, so callers err on the side of "subscribed".
   */
  computeSubscribedTopics(): ReadonlySet<string> | undefined {
    if (!this.isConsumerGroup) return undefined
    if (this.members.size === 0) return new Set()
    if (this.protocolName === null) return undefined
    const topics = new Set<string>()
    try {
      for (const m of this.members.values()) {
        for (const t of decodeConsumerProtocolSubscription(m.metadata(this.protocolName)).topics) topics.add(t)
      }
    } catch {
      return undefined
    }
    return topics
  }

  isSubscribedToTopic(topic: string): boolean {
    return this.subscribedTopics === undefined || this.subscribedTopics.has(topic)
  }

  /** What the leader receives: each member's id, instance id and metadata for the chosen protocol. */
  currentMemberMetadata(): JoinMember[] {
    const protocol = this.protocolName ?? ''
    const out: JoinMember[] = []
    for (const m of this.members.values()) out.push({ memberId: m.memberId, groupInstanceId: m.groupInstanceId, metadata: m.metadata(protocol) })
    return out
  }

  /** DescribeGroups: metadata and assignments only once the group is Stable. */
  summary(): GroupSummary {
    const stable = this.is(GroupState.Stable) && this.protocolName !== null
    const members: MemberSummary[] = []
    for (const m of this.members.values()) {
      members.push({
        memberId: m.memberId,
        groupInstanceId: m.groupInstanceId,
        clientId: m.clientId,
        clientHost: m.clientHost,
        metadata: stable ? m.metadata(this.protocolName!) : EMPTY,
        assignment: stable ? m.assignment : EMPTY,
      })
    }
    return { state: this._state, protocolType: this.protocolType ?? '', protocol: stable ? this.protocolName! : '', members }
  }

  private countProtocols(protocols: readonly GroupProtocol[], delta: number): void {
    for (const name of protocolNames(protocols)) {
      const c = (this.supportedProtocols.get(name) ?? 0) + delta
      if (c === 0) this.supportedProtocols.delete(name)
      else this.supportedProtocols.set(name, c)
    }
  }
}
