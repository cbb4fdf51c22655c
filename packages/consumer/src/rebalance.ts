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
  /** Commits the processed offsets of the partitions (auto-commit), if that applies. */
  commitProcessed(states: PartitionState[]): Promise<void>
  /** Looks up positions for partitions that have none. */
  resolvePositions(): void
  isClosing(): boolean
  emit(event: string, payload: { partitions: TopicPartition[]; generation: GroupGeneration }): void
}

/**
 * What a change of assignment does to the consumer, in Java's order: revocation (stop
 * delivering, let the application finish the message it holds, run the listener, commit what
 * was processed, drop), loss (no waiting, no commit: the partitions may already be another
 * member's), assignment (add, run the listener, look positions up).
 */
export class Rebalance {
  constructor(private readonly d: RebalanceDeps) {}

  async revoke(partitions: TopicPartition[], generation: GroupGeneration, waitForAck: boolean, commit: boolean): Promise<void> {
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
    const now = d.currentGeneration()
    if (now !== undefined && generation.generationId >= 0 && now !== generation.generationId) {
      // The generation ended while the application finished its message (poll timeout, session
      // expiry): the partitions are lost, not revoked, and nothing may be committed for them.
      await this.lose(partitions, generation)
      return
    }
    const list = sortPartitions([...states].map((s) => s.toJSON()))
    await this.callListener('onPartitionsRevoked', list, generation)
    if (commit) await d.commitProcessed([...states]).catch((err) => d.logger.warn({ err }, 'committing revoked partitions failed'))
    d.assignment.remove(list)
    d.fetcher.purge()
    d.emit('partitions.revoked', { partitions: list, generation })
  }

  async lose(partitions: TopicPartition[], generation: GroupGeneration): Promise<void> {
    const d = this.d
    const states = partitions.map((tp) => d.assignment.get(tp.topic, tp.partition)).filter((s): s is PartitionState => s !== undefined)
    if (states.length === 0) return
    for (const s of states) s.revoking = true
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
