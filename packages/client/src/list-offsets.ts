import { ListOffsets, ProtocolError, type ListOffsetsRequestTopic } from '@tidelog/protocol'
import type { Cluster } from './cluster.js'
import type { ClusterMetadata } from './metadata.js'

/** ListOffsets' special timestamps (KIP-734 added max-timestamp in v7). */
export const LATEST_TIMESTAMP = -1n
export const EARLIEST_TIMESTAMP = -2n
export const MAX_TIMESTAMP = -3n

export interface OffsetQuery {
  topic: string
  partition: number
  /** A time in ms since the epoch, or LATEST_TIMESTAMP / EARLIEST_TIMESTAMP / MAX_TIMESTAMP. */
  timestamp: bigint
}

export interface ListedOffset {
  topic: string
  partition: number
  /** -1n when no record has a timestamp at or after the one asked for. */
  offset: bigint
  /** The record's timestamp for timestamp and max-timestamp lookups, else -1n. */
  timestamp: bigint
  leaderEpoch: number
  /** The partition leader epoch the request was sent with: the answer holds for it (KIP-320). */
  currentLeaderEpoch: number
}

/**
 * One ListOffsets request to the leader `nodeId` for `queries`, shared by Admin.listOffsets and
 * the consumer's position lookups (each keeps its own retry policy). Each partition carries the
 * leader epoch from `metadata` so a leader with other leadership refuses with
 * FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH (KIP-320). Returns, per `key(topic, partition)`,
 * the answer or the partition's ProtocolError; partitions the broker left out are absent.
 */
export async function listOffsetsOnNode(
  cluster: Cluster,
  nodeId: number,
  metadata: ClusterMetadata,
  queries: readonly OffsetQuery[],
  isolationLevel: 0 | 1,
  key: (topic: string, partition: number) => string,
): Promise<Map<string, ListedOffset | ProtocolError>> {
  const topics = new Map<string, ListOffsetsRequestTopic>()
  const epochs = new Map<string, number>()
  let maxTimestamp = false
  for (const q of queries) {
    let t = topics.get(q.topic)
    if (t === undefined) topics.set(q.topic, (t = { name: q.topic, partitions: [] }))
    const currentLeaderEpoch = metadata.partition(q.topic, q.partition)?.leaderEpoch ?? -1
    epochs.set(key(q.topic, q.partition), currentLeaderEpoch)
    t.partitions.push({ partitionIndex: q.partition, currentLeaderEpoch, timestamp: q.timestamp })
    if (q.timestamp === MAX_TIMESTAMP) maxTimestamp = true
  }
  // v1 has single offsets; read_committed needs v2; max-timestamp v7.
  const minVersion = maxTimestamp ? 7 : isolationLevel === 1 ? 2 : 1
  const res = await cluster.send(nodeId, ListOffsets, { replicaId: -1, isolationLevel, topics: [...topics.values()] }, { minVersion })
  const out = new Map<string, ListedOffset | ProtocolError>()
  for (const t of res.topics) {
    for (const p of t.partitions) {
      const k = key(t.name, p.partitionIndex)
      if (!epochs.has(k)) continue
      out.set(
        k,
        p.errorCode !== 0
          ? new ProtocolError(p.errorCode, { api: 'ListOffsets', apiKey: ListOffsets.apiKey, topic: t.name, partition: p.partitionIndex })
          : { topic: t.name, partition: p.partitionIndex, offset: p.offset ?? -1n, timestamp: p.timestamp ?? -1n, leaderEpoch: p.leaderEpoch ?? -1, currentLeaderEpoch: epochs.get(k)! },
      )
    }
  }
  return out
}
