import type { Cluster, Logger } from '@tidelog/client'
import { ErrorCodes, ProtocolError } from '@tidelog/protocol'
import { Committer, type CommitIdentity } from './committer.js'
import { CommitFailedError } from './errors.js'
import type { ConsumerCoordinator } from './group/coordinator.js'
import type { CoordinatorLink } from './group/coordinator-link.js'
import type { ResolvedConsumerOptions } from './options.js'
import type { Assignment, PartitionState } from './positions.js'
import { tpKey, type TopicPartition, type TopicPartitionOffset } from './types.js'

export interface CommitsHost {
  readonly options: ResolvedConsumerOptions
  readonly assignment: Assignment
  readonly logger: Logger
  /** True once close() has begun (auto-commit stops; close commits itself). */
  closing(): boolean
  /** The group membership, if subscribe() created one. */
  coordinator(): ConsumerCoordinator | undefined
  /** True while the consumer is subscribed (not assign()ed). */
  subscribed(): boolean
  onCommitted(offsets: TopicPartitionOffset[]): void
}

/**
 * The consumer's side of group commits: which identity a commit carries (Java's
 * generationIfStable), what a fenced commit does to the membership, and which offsets count as
 * processed for auto-commit. Exists only with a groupId.
 */
export class ConsumerCommits {
  readonly committer: Committer
  private autoCommitTimer: NodeJS.Timeout | undefined

  constructor(cluster: Cluster, link: CoordinatorLink, private readonly host: CommitsHost) {
    this.committer = new Committer(cluster, link, {
      identity: () => this.identity(),
      onGenerationError: (code, who) => this.onGenerationError(code, who),
    })
  }

  /** Commits `offsets` (or what the function gives when the commit's turn comes) and records them. */
  async commit(offsets: TopicPartitionOffset[] | (() => TopicPartitionOffset[]), timeoutMs = this.host.options.defaultApiTimeoutMs): Promise<TopicPartitionOffset[]> {
    const done = await this.committer.commit(offsets, timeoutMs)
    this.record(done)
    return done
  }

  /** Commits the processed offsets of these partitions not yet committed (at-least-once auto-commit). */
  async commitProcessed(states: readonly PartitionState[], timeoutMs?: number): Promise<void> {
    await this.commit(() => processed(states), timeoutMs)
  }

  /** at-most-once: commits a chunk's end before its first message is handed out. */
  async commitAhead(s: PartitionState, offset: bigint): Promise<void> {
    const epoch = s.epoch
    await this.commit([{ topic: s.topic, partition: s.partition, offset, leaderEpoch: s.lastEpoch }])
    if (s.epoch === epoch && offset > s.acked) s.acked = offset
  }

  /** The group's committed offsets for partitions (-1n where none is committed). */
  async committed(partitions: readonly TopicPartition[]): Promise<TopicPartitionOffset[]> {
    const found = await this.committer.fetch(partitions, this.host.options.defaultApiTimeoutMs)
    return partitions.map((p) => {
      const c = found.get(tpKey(p.topic, p.partition))
      return { topic: p.topic, partition: p.partition, offset: c?.offset ?? -1n, metadata: c?.metadata ?? null, leaderEpoch: c?.leaderEpoch ?? -1 }
    })
  }

  /**
   * Java's auto.commit.interval.ms: commits processed offsets periodically, but not while the
   * member is between generations (the commit would be fenced and only delay the rejoin).
   */
  startAutoCommit(): void {
    const { options, assignment, logger } = this.host
    if (this.autoCommitTimer !== undefined || !options.autoCommit) return
    this.autoCommitTimer = setInterval(() => {
      if (this.host.closing()) return
      if (this.host.subscribed() && this.host.coordinator()?.membership.state !== 'stable') return
      void this.commitProcessed(assignment.list()).catch((err) => logger.warn({ err }, 'auto-commit failed'))
    }, options.autoCommitIntervalMs)
    this.autoCommitTimer.unref()
  }

  stopAutoCommit(): void {
    if (this.autoCommitTimer !== undefined) clearInterval(this.autoCommitTimer)
  }

  private record(done: readonly TopicPartitionOffset[]): void {
    if (done.length === 0) return
    for (const o of done) {
      const s = this.host.assignment.get(o.topic, o.partition)
      if (s !== undefined) s.committed = o.offset
    }
    this.host.onCommitted(done as TopicPartitionOffset[])
  }

  private identity(): CommitIdentity | Error {
    const c = this.host.coordinator()
    if (!this.host.subscribed() || c === undefined) return { generationId: -1, memberId: '', groupInstanceId: null }
    const m = c.membership
    // Java's generationIfStable: between JoinGroup and SyncGroup the coordinator answers
    // REBALANCE_IN_PROGRESS, which would only ask for yet another rebalance.
    if (m.state === 'stable' && m.hasGeneration) return { generationId: m.generationId, memberId: m.memberId, groupInstanceId: this.host.options.groupInstanceId }
    if (m.state === 'joining' || m.state === 'syncing') return new ProtocolError(ErrorCodes.REBALANCE_IN_PROGRESS, { api: 'OffsetCommit', groupId: c.groupId })
    return new CommitFailedError('this member is not in a generation of the group', ErrorCodes.UNKNOWN_MEMBER_ID)
  }

  private onGenerationError(code: number, who: CommitIdentity): void {
    const c = this.host.coordinator()
    // A commit sent in a generation that has since been replaced says nothing about the new one.
    if (c === undefined || c.membership.generationId !== who.generationId || c.membership.memberId !== who.memberId) return
    if (code === ErrorCodes.UNKNOWN_MEMBER_ID) c.membership.resetGeneration(false)
    else if (code === ErrorCodes.ILLEGAL_GENERATION) c.membership.resetGeneration(true)
    c.requestRejoin(`a commit was answered ${code}`)
  }
}

/** Processed offsets not yet committed. */
function processed(states: Iterable<PartitionState>): TopicPartitionOffset[] {
  const out: TopicPartitionOffset[] = []
  for (const s of states) {
    if (!s.hasPosition || s.acked < 0n) continue
    // Never behind what this consumer committed itself (an explicit commit() may be ahead).
    if (s.committed >= 0n && s.acked <= s.committed) continue
    out.push({ topic: s.topic, partition: s.partition, offset: s.acked, leaderEpoch: s.lastEpoch })
  }
  return out
}
