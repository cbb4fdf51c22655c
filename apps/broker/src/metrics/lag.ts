import type { BrokerContext } from '../context.js'

export interface PartitionLag {
  topic: string
  partition: number
  /** The group's committed offset, -1 when it has none. */
  committed: number
  /** The partition's high watermark (what a read_uncommitted consumer can reach). */
  highWatermark: number
  /** highWatermark - committed, as kafka-consumer-groups.sh prints LAG; null without a commit. */
  lag: number | null
}

/**
 * Lag per committed partition of one group, computed as kafka-consumer-groups.sh does
 * (log end offset minus committed offset, never negative). A partition whose topic is
 * gone has no end offset and is left out, as the Java tool shows it with LAG "-".
 */
export function groupLag(broker: BrokerContext, groupId: string): PartitionLag[] {
  const out: PartitionLag[] = []
  for (const t of broker.groups.fetchOffsets(groupId, null)) {
    const topic = broker.topics.get(t.name)
    for (const p of t.partitions) {
      const log = topic?.logs[p.partition]
      if (log === undefined || log.isClosed) continue
      const hw = log.highWatermark
      const committed = Number(p.offset)
      out.push({ topic: t.name, partition: p.partition, committed, highWatermark: hw, lag: committed < 0 ? null : Math.max(0, hw - committed) })
    }
  }
  out.sort((a, b) => (a.topic === b.topic ? a.partition - b.partition : a.topic < b.topic ? -1 : 1))
  return out
}
