import { AlterPartitionReassignments, ErrorCodes, ListPartitionReassignments, ProtocolError } from '@tidelog/protocol'
import { retry } from '../retry.js'
import { type AdminContext, type Outcomes, perItem } from './engine.js'

/** Java's `Map<TopicPartition, Optional<NewPartitionReassignment>>` entry: `targetReplicas` null cancels a pending move. */
export interface PartitionReassignmentTarget {
  topic: string
  partition: number
  targetReplicas: number[] | null
}

/** Java's PartitionReassignment, for one partition being moved. */
export interface PartitionReassignment {
  topic: string
  partition: number
  /** The replica set now: the old replicas and the ones being added. */
  replicas: number[]
  addingReplicas: number[]
  removingReplicas: number[]
}

const tpKey = (topic: string, partition: number): string => `${topic}:${partition}`

/**
 * AlterPartitionReassignments (45, KIP-455): starts (or with null cancels) each partition's
 * move; each fails on its own with Kafka's error (INVALID_REPLICA_ASSIGNMENT,
 * NO_REASSIGNMENT_IN_PROGRESS, UNKNOWN_TOPIC_OR_PARTITION) and the broker's message, in an
 * AdminError listing the failures, as Java's AlterPartitionReassignmentsResult futures do.
 */
export async function alterPartitionReassignments(ctx: AdminContext, targets: readonly PartitionReassignmentTarget[], options: { timeoutMs?: number } = {}): Promise<void> {
  if (targets.length === 0) return
  const timeoutMs = options.timeoutMs ?? ctx.timeoutMs
  await perItem(
    ctx,
    'alterPartitionReassignments',
    targets,
    (t) => tpKey(t.topic, t.partition),
    async (pending) => {
      const byTopic = new Map<string, PartitionReassignmentTarget[]>()
      for (const t of pending) byTopic.set(t.topic, [...(byTopic.get(t.topic) ?? []), t])
      const conn = await ctx.cluster.anyConnection()
      const res = await conn.request(AlterPartitionReassignments, {
        timeoutMs,
        topics: [...byTopic].map(([name, list]) => ({ name, partitions: list.map((t) => ({ partitionIndex: t.partition, replicas: t.targetReplicas })) })),
      })
      const api = { api: 'AlterPartitionReassignments', apiKey: AlterPartitionReassignments.apiKey }
      if (res.errorCode !== ErrorCodes.NONE) throw new ProtocolError(res.errorCode, { ...api, message: res.errorMessage })
      const out: Outcomes<true> = new Map()
      for (const t of res.responses) {
        for (const p of t.partitions) {
          out.set(tpKey(t.name, p.partitionIndex), p.errorCode === ErrorCodes.NONE ? true : new ProtocolError(p.errorCode, { ...api, topic: t.name, partition: p.partitionIndex, message: p.errorMessage }))
        }
      }
      return out
    },
    // Java completes each partition's future with its error, retriable or not (UNKNOWN_TOPIC_OR_PARTITION
    // included); only a failure of the whole request is tried again.
    { timeoutMs, retriable: () => false },
  )
}

/**
 * ListPartitionReassignments (46): the moves in progress, of the given partitions or of all
 * (Java's listPartitionReassignments()); partitions not being moved are left out.
 */
export async function listPartitionReassignments(
  ctx: AdminContext,
  partitions?: readonly { topic: string; partition: number }[],
  options: { timeoutMs?: number } = {},
): Promise<PartitionReassignment[]> {
  const timeoutMs = options.timeoutMs ?? ctx.timeoutMs
  let topics: { name: string; partitionIndexes: number[] }[] | null = null
  if (partitions !== undefined) {
    const byTopic = new Map<string, number[]>()
    for (const p of partitions) byTopic.set(p.topic, [...(byTopic.get(p.topic) ?? []), p.partition])
    topics = [...byTopic].map(([name, partitionIndexes]) => ({ name, partitionIndexes }))
  }
  return retry(
    async () => {
      const conn = await ctx.cluster.anyConnection()
      const res = await conn.request(ListPartitionReassignments, { timeoutMs, topics })
      if (res.errorCode !== ErrorCodes.NONE) throw new ProtocolError(res.errorCode, { api: 'ListPartitionReassignments', apiKey: ListPartitionReassignments.apiKey, message: res.errorMessage })
      return res.topics.flatMap((t) =>
        t.partitions.map((p) => ({ topic: t.name, partition: p.partitionIndex, replicas: p.replicas, addingReplicas: p.addingReplicas, removingReplicas: p.removingReplicas })),
      )
    },
    { timeoutMs, backoff: ctx.cluster.retryBackoff, onRetry: (e) => ctx.cluster.handleError(e) },
  )
}
