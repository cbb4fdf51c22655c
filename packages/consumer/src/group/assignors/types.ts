import type { TopicPartition } from '../../types.js'

/**
 * eager: every member gives up all its partitions before rejoining (stop the world).
 * cooperative (KIP-429): members keep their partitions while the group rebalances and give up
 * only those the new assignment moves, which are handed to their new owner one rebalance later.
 */
export type RebalanceProtocol = 'eager' | 'cooperative'

/** One member of the group as the leader sees it, from its JoinGroup subscription. */
export interface GroupMember {
  memberId: string
  groupInstanceId: string | null
  topics: string[]
  userData: Uint8Array | null
  /** What the member owned when it joined (subscription v1+; empty under eager rebalancing). */
  ownedPartitions: TopicPartition[]
  /** The generation its ownedPartitions come from (subscription v2+, or the assignor's user data); -1 if unknown. */
  generationId: number
  rackId: string | null
}

export interface AssignmentInput {
  members: GroupMember[]
  /** Partition counts of the subscribed topics that exist; topics missing here get no partitions. */
  partitionCounts: ReadonlyMap<string, number>
}

export interface AssignmentWithUserData {
  partitions: Map<string, TopicPartition[]>
  userData: ReadonlyMap<string, Uint8Array>
}

/**
 * A partition assignor (Java's ConsumerPartitionAssignor). The group leader runs the one the
 * group agreed on; `name` is what JoinGroup advertises, so members of other clients using the
 * same name must compute compatible assignments.
 */
export interface Assignor {
  readonly name: string
  /** The rebalance protocols it supports; default ['eager']. */
  readonly protocols?: readonly RebalanceProtocol[]
  /** User data for this member's subscription. */
  subscriptionUserData?(context: { topics: readonly string[]; generationId: number; ownedPartitions: readonly TopicPartition[] }): Uint8Array | null
  /** Partitions per member id; members left out get nothing. */
  assign(input: AssignmentInput): Map<string, TopicPartition[]>
  /**
   * Java's Assignment userData: when present the leader calls this instead of assign() and sends
   * each member its bytes beside its partitions (Kafka Streams' AssignmentInfo: standby tasks,
   * error codes). It may be async: Kafka Streams' leader looks up changelog end offsets to
   * compute each client's lag (KIP-441) before it places tasks.
   */
  assignWithUserData?(input: AssignmentInput): AssignmentWithUserData | Promise<AssignmentWithUserData>
  /** Java's ConsumerPartitionAssignor#onAssignment: this member's assignment, before onPartitionsAssigned. */
  onAssignment?(assignment: { partitions: TopicPartition[]; userData: Uint8Array | null; generationId: number }): void
}

/** Java's member order (AbstractPartitionAssignor.MemberInfo): static members first, by instance id, then by member id. */
export function compareMembers(a: Pick<GroupMember, 'memberId' | 'groupInstanceId'>, b: Pick<GroupMember, 'memberId' | 'groupInstanceId'>): number {
  const ai = a.groupInstanceId
  const bi = b.groupInstanceId
  if (ai !== null && bi !== null) return ai < bi ? -1 : ai > bi ? 1 : 0
  if (ai !== null) return -1
  if (bi !== null) return 1
  return a.memberId < b.memberId ? -1 : a.memberId > b.memberId ? 1 : 0
}

/** An empty list for every member, so members without partitions still get an assignment. */
export function emptyAssignment(members: readonly GroupMember[]): Map<string, TopicPartition[]> {
  const out = new Map<string, TopicPartition[]>()
  for (const m of members) out.set(m.memberId, [])
  return out
}
