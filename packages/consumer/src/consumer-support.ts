import { performance } from 'node:perf_hooks'
import type { Cluster } from '@tidelog/client'
import type { Delivery } from './delivery.js'
import type { GroupGeneration, RebalanceListener } from './types.js'

export interface SubscribeOptions {
  listener?: RebalanceListener
}

export interface CloseOptions {
  /**
   * Send LeaveGroup so the group rebalances at once. Default: true for dynamic members, false
   * for static ones (KIP-345: a static member that comes back within the session keeps its
   * partitions without a rebalance).
   */
  leaveGroup?: boolean
  /** Commit the processed offsets first (when auto-commit is on). Default true. */
  commit?: boolean
  /**
   * Java's close(Duration), default 30 s: the longest close() takes. The group's part (commit,
   * onPartitionsRevoked, LeaveGroup) gets at most requestTimeoutMs of it, as in Java; when time
   * is up, close() logs a warning, stops waiting and closes the connections.
   */
  timeoutMs?: number
}

export const NO_GENERATION: GroupGeneration = { generationId: -1, memberId: '', protocolName: null }
/** Java's KafkaConsumer.close() without a Duration. */
export const DEFAULT_CLOSE_TIMEOUT_MS = 30_000

/** Waits for `p` at most `ms`: true if it settled (a rejection is rethrown), false if time ran out (p goes on). */
export async function settlesWithin(p: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined
  // setTimeout treats anything past 2^31-1 ms (Infinity included) as 1 ms.
  const late = new Promise<boolean>((resolve) => (timer = setTimeout(resolve, Math.min(ms, 0x7fffffff), false)))
  try {
    return await Promise.race([p.then(() => true), late])
  } finally {
    clearTimeout(timer)
  }
}

/** Partition counts of these topics now (topics without metadata left out). */
export async function partitionCounts(cluster: Cluster, topics: string[]): Promise<Map<string, number>> {
  const out = new Map<string, number>()
  if (topics.length === 0) return out
  const { metadata } = await cluster.fetchMetadata(topics)
  for (const t of topics) {
    const n = metadata.partitionCount(t)
    if (n > 0) out.set(t, n)
  }
  return out
}

/** Topics matching the pattern now; they join the cluster's tracked topics, kept fresh with them. */
export async function matchPattern(cluster: Cluster, pattern: RegExp): Promise<string[]> {
  const { metadata } = await cluster.fetchMetadata(null)
  const out: string[] = []
  for (const t of metadata.topics.values()) {
    pattern.lastIndex = 0
    if (!t.isInternal && pattern.test(t.name)) out.push(t.name)
  }
  out.sort()
  if (out.length > 0) await cluster.refreshMetadata(out)
  return out
}

/**
 * What the periodic metadata check found for a subscription: a pattern matching other topics
 * now (with the new matches), or a subscribed or assigned topic whose partition count changed;
 * undefined when the member need not rejoin.
 */
export async function subscriptionChange(cluster: Cluster, pattern: RegExp | undefined, subscribed: readonly string[], assignedCounts: ReadonlyMap<string, number>): Promise<{ reason: string; topics?: string[] } | undefined> {
  if (pattern !== undefined) {
    const topics = await matchPattern(cluster, pattern)
    if (topics.join('\n') !== [...subscribed].sort().join('\n')) return { reason: 'the topics matching the subscription changed', topics }
  }
  const topics = [...new Set([...subscribed, ...assignedCounts.keys()])]
  const counts = await partitionCounts(cluster, topics)
  for (const t of topics) {
    if ((counts.get(t) ?? 0) !== (assignedCounts.get(t) ?? 0)) return { reason: `the partition count of ${t} changed` }
  }
  return undefined
}

/**
 * How long the application has gone without asking for records, for max.poll.interval.ms: a
 * handler holding a message counts its own time; a waiting iterator or a new poll is progress.
 */
export class PollClock {
  private lastPolls = -1
  private lastProgressAt = performance.now()

  reset(): void {
    this.lastProgressAt = performance.now()
  }

  idleMs(d: Delivery): number {
    const now = performance.now()
    if (d.holder !== undefined) return d.holder.heldMs()
    if (d.waiting || d.polls !== this.lastPolls) {
      this.lastPolls = d.polls
      this.lastProgressAt = now
      return 0
    }
    return now - this.lastProgressAt
  }
}
