import type { Cluster } from '@tidelog/client'
import { EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, lookupOffsets } from './offset-lookup.js'
import type { ResolvedConsumerOptions } from './options.js'
import type { PartitionState } from './positions.js'
import { tpKey, type TopicPartition, type TopicPartitionOffset } from './types.js'

/** Java's OffsetAndTimestamp for one partition; `offset` null when no record is at or after the time. */
export interface OffsetForTime extends TopicPartition {
  offset: bigint | null
  timestamp: bigint | null
  leaderEpoch: number
}

export interface LookupOptions {
  /** Java's Duration argument; default defaultApiTimeoutMs. */
  timeoutMs?: number
}

function timeout(options: ResolvedConsumerOptions, o: LookupOptions | undefined): number {
  const t = o?.timeoutMs ?? options.defaultApiTimeoutMs
  if (typeof t !== 'number' || !(t > 0)) throw new TypeError(`timeoutMs must be > 0, got ${String(t)}`)
  return t
}

function checkPartitions(partitions: readonly TopicPartition[]): void {
  if (!Array.isArray(partitions)) throw new TypeError('partitions must be an array of { topic, partition }')
  for (const p of partitions) {
    if (p === null || typeof p !== 'object' || typeof p.topic !== 'string' || p.topic === '' || !Number.isSafeInteger(p.partition) || p.partition < 0) {
      throw new TypeError(`not a topic partition: ${JSON.stringify(p)}`)
    }
  }
}

/**
 * Java's beginningOffsets / endOffsets: the log start, or the end (the high watermark; under
 * read_committed the last stable offset, as Java), by the shared ListOffsets lookup.
 */
export async function edgeOffsets(cluster: Cluster, options: ResolvedConsumerOptions, partitions: readonly TopicPartition[], which: 'earliest' | 'latest', o?: LookupOptions): Promise<TopicPartitionOffset[]> {
  checkPartitions(partitions)
  const ms = timeout(options, o)
  if (partitions.length === 0) return []
  await cluster.refreshMetadata([...new Set(partitions.map((p) => p.topic))])
  const ts = which === 'earliest' ? EARLIEST_TIMESTAMP : LATEST_TIMESTAMP
  const found = await lookupOffsets(cluster, partitions.map((p) => ({ topic: p.topic, partition: p.partition, timestamp: ts })), options.isolationLevel, ms)
  return partitions.map((p) => {
    const a = found.get(tpKey(p.topic, p.partition))!
    return { topic: p.topic, partition: p.partition, offset: a.offset, leaderEpoch: a.leaderEpoch }
  })
}

/** Java's offsetsForTimes: the first offset whose timestamp is at or after each partition's time. */
export async function offsetsForTimes(cluster: Cluster, options: ResolvedConsumerOptions, queries: readonly (TopicPartition & { timestamp: number | bigint | Date })[], o?: LookupOptions): Promise<OffsetForTime[]> {
  checkPartitions(queries)
  const ms = timeout(options, o)
  const times = queries.map((q) => {
    const t = q.timestamp instanceof Date ? BigInt(q.timestamp.getTime()) : typeof q.timestamp === 'number' && Number.isSafeInteger(q.timestamp) ? BigInt(q.timestamp) : q.timestamp
    // Java: "The target timestamp should always be non-negative" (IllegalArgumentException).
    if (typeof t !== 'bigint' || t < 0n) throw new TypeError(`offsetsForTimes() needs timestamps >= 0, got ${String(q.timestamp)} for ${q.topic}-${q.partition}`)
    return t
  })
  if (queries.length === 0) return []
  await cluster.refreshMetadata([...new Set(queries.map((p) => p.topic))])
  const found = await lookupOffsets(cluster, queries.map((q, i) => ({ topic: q.topic, partition: q.partition, timestamp: times[i]! })), options.isolationLevel, ms)
  return queries.map((q) => {
    const a = found.get(tpKey(q.topic, q.partition))!
    const none = a.offset < 0n
    return { topic: q.topic, partition: q.partition, offset: none ? null : a.offset, timestamp: none ? null : a.timestamp, leaderEpoch: none ? -1 : a.leaderEpoch }
  })
}

/**
 * Java's currentLag: from the last fetch response's high watermark (last stable offset under
 * read_committed) minus the position; no request. undefined until both are known.
 */
export function lagOf(s: PartitionState, isolationLevel: 0 | 1): bigint | undefined {
  if (!s.hasPosition) return undefined
  const end = isolationLevel === 1 ? s.lastStableOffset : s.highWatermark
  if (end < 0n) return undefined
  const lag = end - s.position
  return lag > 0n ? lag : 0n
}
