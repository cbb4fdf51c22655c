import type { Logger } from '@tidelog/client'
import type { Delivery } from './delivery.js'
import type { Fetcher } from './fetcher.js'
import type { Assignment, PartitionState } from './positions.js'
import { sortPartitions, type GroupGeneration, type RebalanceListener, type TopicPartition } from './types.js'

export interface RebalanceDeps {
  assignment: Assignment
  fetcher: Fetcher
  delivery: Delivery
  logger: Logger
  listener(): RebalanceListener | undefined
  /** The generation the member is in now (-1 when none); a revocation for an older one is a loss. */
  currentGeneration(): number | undefined
  /** Commits the processed offsets of the partitions (auto-commit), if that applies, within timeoutMs. */
  commitProcessed(states: PartitionState[], timeoutMs: number): Promise<void>
  /** Looks up positions for partitions that have none. */
  resolvePositions(): void
  isClosing(): boolean
  emit(event: string, payload: { partitions: TopicPartition[]; generation: GroupGeneration }): void
}

/**
 * What a change of assignment does to the consumer, in Java's order: revocation (stop
 * delivering, let the application finish the message it holds, commit what was processed, run
 * the listener, drop), loss (no waiting, no commit: the partitions may already be another
 * member's), assignment (add, run the listener, look positions up).
 */
export class Rebalance {
  /** Partitions being dropped as lost: nothing may be committed for them any more. */
  private readonly lost = new WeakSet<PartitionState>()

  constructor(private readonly d: RebalanceDeps) {}

  /**
   * Whether commit() may include the partition: every assigned one with a position, those being
   * revoked too (Java's commitSync() in onPartitionsRevoked commits them), but not lost ones.
   */
  committable(s: PartitionState): boolean {
    return s.hasPosition && !this.lost.has(s)
  }

  /**
   * Revokes partitions of `generation`. `commitTimeoutMs` (undefined: no commit) bounds the
   * auto-commit of their processed offsets, which comes before onPartitionsRevoked as in Java's
   * ConsumerCoordinator (onJoinPrepare commits, then invokes the listener; close() commits, then
   * onLeavePrepare invokes it): the listener finds those offsets committed, and the partitions
   * still assigned, so it can read positions or commit offsets of its own.
   */
  async revoke(partitions: TopicPartition[], generation: GroupGeneration, waitForAck: boolean, commitTimeoutMs: number | undefined): Promise<void> {
    const d = this.d
    const states = new Set<PartitionState>()
    for (const tp of partitions) {
      const s = d.assignment.get(tp.topic, tp.partition)
      if (s === undefined) continue
      s.revoking = true
      states.add(s)
    }
    if (states.size === 0) return
    d.fetcher.purge()
    if (waitForAck && !d.isClosing()) await d.delivery.waitForAck(states)
    // The generation ended while the application finished its message (poll timeout, session
    // expiry): the partitions are lost, not revoked, and nothing may be committed for them.
    if (this.generationOver(generation)) return this.lose(partitions, generation)
    if (commitTimeoutMs !== undefined) {
      await d.commitProcessed([...states], commitTimeoutMs).catch((err) => d.logger.warn({ err }, 'committing revoked partitions failed'))
      // A commit answered ILLEGAL_GENERATION or UNKNOWN_MEMBER_ID ended the generation: Java then
      // invokes onPartitionsLost rather than onPartitionsRevoked.
      if (this.generationOver(generation)) return this.lose(partitions, generation)
    }
    const list = sortPartitions([...states].map((s) => s.toJSON()))
    await this.callListener('onPartitionsRevoked', list, generation)
    d.assignment.remove(list)
    d.fetcher.purge()
    d.emit('partitions.revoked', { partitions: list, generation })
  }

  private generationOver(generation: GroupGeneration): boolean {
    const now = this.d.currentGeneration()
    return now !== undefined && generation.generationId >= 0 && now !== generation.generationId
  }

  async lose(partitions: TopicPartition[], generation: GroupGeneration): Promise<void> {
    const d = this.d
    const states = partitions.map((tp) => d.assignment.get(tp.topic, tp.partition)).filter((s): s is PartitionState => s !== undefined)
    if (states.length === 0) return
    for (const s of states) {
      s.revoking = true
      this.lost.add(s)
    }
    d.fetcher.purge()
    d.delivery.abandonFrom(new Set(states))
    const list = sortPartitions(states.map((s) => s.toJSON()))
    // Java's default onPartitionsLost calls onPartitionsRevoked.
    await this.callListener(d.listener()?.onPartitionsLost !== undefined ? 'onPartitionsLost' : 'onPartitionsRevoked', list, generation)
    d.assignment.remove(list)
    d.fetcher.purge()
    d.emit('partitions.lost', { partitions: list, generation })
  }

  async assign(partitions: TopicPartition[], generation: GroupGeneration): Promise<void> {
    const d = this.d
    if (d.isClosing()) return
    d.assignment.add(partitions)
    const list = sortPartitions(partitions.slice())
    // Java calls onPartitionsAssigned after every rebalance, even with nothing new.
    await this.callListener('onPartitionsAssigned', list, generation)
    d.emit('partitions.assigned', { partitions: list, generation })
    d.resolvePositions()
  }

  private async callListener(name: keyof RebalanceListener, partitions: TopicPartition[], generation: GroupGeneration): Promise<void> {
    const listener = this.d.listener()
    const fn = listener?.[name]
    if (fn === undefined) return
    try {
      await fn.call(listener, partitions, generation)
    } catch (err) {
      // Java hands listener exceptions to poll(); so do we, and the rebalance goes on.
      this.d.logger.error({ err, listener: name }, 'rebalance listener failed')
      this.d.delivery.fail(err instanceof Error ? err : new Error(String(err)))
    }
  }
}
