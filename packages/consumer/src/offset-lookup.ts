import { Deadline, isRetriable, isStaleMetadataError, sleep, type Cluster } from '@tidelog/client'
import { ErrorCodes, ListOffsets, ProtocolError, type ListOffsetsRequestTopic } from '@tidelog/protocol'
import { tpKey, type TopicPartition } from './types.js'

/** ListOffsets' special timestamps. */
export const LATEST_TIMESTAMP = -1n
export const EARLIEST_TIMESTAMP = -2n

export interface OffsetQuery extends TopicPartition {
  /** A time in ms since the epoch, or LATEST_TIMESTAMP / EARLIEST_TIMESTAMP. */
  timestamp: bigint
}

export interface OffsetAnswer {
  /** -1n when no record has a timestamp at or after the one asked for. */
  offset: bigint
  timestamp: bigint
  leaderEpoch: number
  /** The partition leader epoch the request was sent with (KIP-320): the answer is valid for it. */
  currentLeaderEpoch: number
}

/**
 * ListOffsets for many partitions: one request per leader, partitions whose leader moved (or is
 * unknown) asked again after a metadata refresh, until the deadline (Java's OffsetFetcher).
 */
export async function lookupOffsets(cluster: Cluster, queries: readonly OffsetQuery[], isolationLevel: 0 | 1, timeoutMs: number): Promise<Map<string, OffsetAnswer>> {
  const out = new Map<string, OffsetAnswer>()
  const deadline = new Deadline(timeoutMs)
  let pending = queries.slice()
  for (let attempt = 0; pending.length > 0; attempt++) {
    const metadata = cluster.metadata
    const byLeader = new Map<number, OffsetQuery[]>()
    const again: OffsetQuery[] = []
    let lastError: Error | undefined
    for (const q of pending) {
      const leader = metadata.leader(q.topic, q.partition)
      if (leader === undefined) {
        again.push(q)
        lastError = new ProtocolError(ErrorCodes.LEADER_NOT_AVAILABLE, { api: 'ListOffsets', topic: q.topic, partition: q.partition })
        continue
      }
      let list = byLeader.get(leader.nodeId)
      if (list === undefined) byLeader.set(leader.nodeId, (list = []))
      list.push(q)
    }
    await Promise.all(
      [...byLeader].map(async ([nodeId, list]) => {
        const topics = new Map<string, ListOffsetsRequestTopic>()
        for (const q of list) {
          let t = topics.get(q.topic)
          if (t === undefined) topics.set(q.topic, (t = { name: q.topic, partitions: [] }))
          t.partitions.push({
            partitionIndex: q.partition,
            currentLeaderEpoch: metadata.partition(q.topic, q.partition)?.leaderEpoch ?? -1,
            timestamp: q.timestamp,
          })
        }
        try {
          const res = await cluster.send(nodeId, ListOffsets, { replicaId: -1, isolationLevel, topics: [...topics.values()] }, { minVersion: isolationLevel === 1 ? 2 : 1 })
          const answered = new Set<string>()
          for (const t of res.topics) {
            for (const p of t.partitions) {
              const key = tpKey(t.name, p.partitionIndex)
              answered.add(key)
              if (p.errorCode === ErrorCodes.NONE) {
                const currentLeaderEpoch = metadata.partition(t.name, p.partitionIndex)?.leaderEpoch ?? -1
                out.set(key, { offset: p.offset ?? -1n, timestamp: p.timestamp ?? -1n, leaderEpoch: p.leaderEpoch ?? -1, currentLeaderEpoch })
                continue
              }
              const error = new ProtocolError(p.errorCode, { api: 'ListOffsets', apiKey: ListOffsets.apiKey, topic: t.name, partition: p.partitionIndex })
              if (!error.retriable && !isStaleMetadataError(error)) throw error
              lastError = error
              again.push(list.find((q) => q.topic === t.name && q.partition === p.partitionIndex)!)
            }
          }
          for (const q of list) if (!answered.has(tpKey(q.topic, q.partition))) again.push(q)
        } catch (err) {
          if (!isRetriable(err)) throw err
          lastError = err as Error
          for (const q of list) if (!out.has(tpKey(q.topic, q.partition)) && !again.includes(q)) again.push(q)
        }
      }),
    )
    pending = again
    if (pending.length === 0) break
    const delay = cluster.retryBackoff.delay(attempt)
    if (deadline.passedAfter(delay)) throw lastError ?? new ProtocolError(ErrorCodes.REQUEST_TIMED_OUT, { api: 'ListOffsets' })
    await sleep(delay)
    await cluster.refreshMetadata().catch(() => undefined)
  }
  return out
}
