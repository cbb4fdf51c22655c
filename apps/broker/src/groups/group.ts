/** The classic group protocol's states (Kafka's GroupState). */
export type GroupState = 'Empty' | 'PreparingRebalance' | 'CompletingRebalance' | 'Stable' | 'Dead'

export interface JoinResult {
  errorCode: number
  generationId: number
  protocolType: string | null
  protocolName: string | null
  leader: string
  memberId: string
  members: { memberId: string; groupInstanceId: string | null; metadata: Uint8Array }[]
}

export interface SyncResult {
  errorCode: number
  protocolType: string | null
  protocolName: string | null
  assignment: Uint8Array
}

export interface Member {
  memberId: string
  groupInstanceId: string | null
  clientId: string
  clientHost: string
  sessionTimeoutMs: number
  rebalanceTimeoutMs: number
  protocolType: string
  protocols: { name: string; metadata: Uint8Array }[]
  assignment: Uint8Array
  /** Set while the member waits for the rebalance to complete its JoinGroup. */
  joinWaiter: ((r: JoinResult) => void) | null
  /** Set while a follower waits for the leader's SyncGroup. */
  syncWaiter: ((r: SyncResult) => void) | null
  heartbeatTimer: NodeJS.Timeout | null
}

export const EMPTY_BYTES = new Uint8Array(0)

export class Group {
  state: GroupState = 'Empty'
  generationId = 0
  protocolType: string | null = null
  protocolName: string | null = null
  leaderId: string | null = null
  readonly members = new Map<string, Member>()
  /** group.instance.id -> member id (KIP-345 static membership). */
  readonly staticMembers = new Map<string, string>()
  /** Member ids handed out with MEMBER_ID_REQUIRED, not yet joined (KIP-394). */
  readonly pendingMembers = new Map<string, NodeJS.Timeout>()
  rebalanceTimer: NodeJS.Timeout | null = null
  /** Deadline after which the initial rebalance delay may not be extended further. */
  initialDelayUntil = 0

  constructor(readonly groupId: string) {}

  get isEmpty(): boolean {
    return this.members.size === 0
  }

  /** Protocol names every member supports. */
  candidateProtocols(): Set<string> {
    let common: Set<string> | undefined
    for (const m of this.members.values()) {
      const names = new Set(m.protocols.map((p) => p.name))
      common = common === undefined ? names : new Set([...common].filter((n) => names.has(n)))
    }
    return common ?? new Set()
  }

  /** Whether a member with these protocols could join (Kafka's supportsProtocols). */
  supportsProtocols(protocolType: string, names: readonly string[]): boolean {
    if (this.isEmpty) return protocolType !== '' && names.length > 0
    if (this.protocolType !== protocolType) return false
    const common = this.candidateProtocols()
    return names.some((n) => common.has(n))
  }

  /**
   * Each member votes for the first of its protocols that all members support;
   * the most voted wins (ties go to the earliest member's preference).
   */
  selectProtocol(): string {
    const candidates = this.candidateProtocols()
    const votes = new Map<string, number>()
    for (const m of this.members.values()) {
      const choice = m.protocols.find((p) => candidates.has(p.name))
      if (choice !== undefined) votes.set(choice.name, (votes.get(choice.name) ?? 0) + 1)
    }
    let best = ''
    let most = -1
    for (const [name, n] of votes) {
      if (n > most) {
        best = name
        most = n
      }
    }
    return best
  }

  allMembersJoined(): boolean {
    if (this.pendingMembers.size > 0) return false
    for (const m of this.members.values()) if (m.joinWaiter === null) return false
    return true
  }

  maxRebalanceTimeoutMs(): number {
    let max = 0
    for (const m of this.members.values()) max = Math.max(max, m.rebalanceTimeoutMs)
    return max
  }
}
