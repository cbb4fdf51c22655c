import { AdminError, type Admin as NativeAdmin } from '@tidelog/client'
import { ProtocolError, errorByCode } from '@tidelog/protocol'
import { KafkaJSAggregateError, KafkaJSAlterPartitionReassignmentsError, KafkaJSNonRetriableError, toKafkaJSError } from './errors.js'

export interface PartitionReassignment {
  topic: string
  partitionAssignment: { partition: number; replicas: number[] }[]
}

export interface ListPartitionReassignmentsResponse {
  topics: { name: string; partitions: { partition: number; replicas: number[]; addingReplicas: number[]; removingReplicas: number[] }[] }[]
}

// kafkajs' checks, in its order and with its messages (admin/index.js), so bad arguments fail alike.
function checkTopics(topics: unknown, field: 'partitionAssignment' | 'partitions'): void {
  if (!topics || !Array.isArray(topics)) throw new KafkaJSNonRetriableError(`Invalid topics array ${String(topics)}`)
  if (topics.some((t: { topic?: unknown }) => typeof t?.topic !== 'string')) throw new KafkaJSNonRetriableError('Invalid topics array, the topic names have to be a valid string')
  if (new Set(topics.map((t: { topic: string }) => t.topic)).size < topics.length) throw new KafkaJSNonRetriableError('Invalid topics array, it cannot have multiple entries for the same topic')
  for (const t of topics as Record<string, unknown>[]) {
    const list = t[field]
    if (field === 'partitions') {
      if (!list || !Array.isArray(list)) throw new KafkaJSNonRetriableError(`Invalid partition array: ${String(list)} for topic: ${String(t.topic)}`)
      if (list.some((p) => typeof p !== 'number' || p < 0)) {
        throw new KafkaJSNonRetriableError(`Invalid partition array: ${String(list)} for topic: ${String(t.topic)}. The partition indices have to be a valid number greater than 0.`)
      }
      continue
    }
    if (!list || !Array.isArray(list)) throw new KafkaJSNonRetriableError(`Invalid partitions array: ${String(list)} for topic: ${String(t.topic)}`)
    for (const { partition, replicas } of list as { partition?: unknown; replicas?: unknown }[]) {
      if (typeof partition !== 'number' || partition < 0) throw new KafkaJSNonRetriableError(`Invalid partitions index: ${String(partition)} for topic: ${String(t.topic)}`)
      const at = `for topic: ${String(t.topic)} on partition: ${partition}`
      if (!replicas || !Array.isArray(replicas)) throw new KafkaJSNonRetriableError(`Invalid replica assignment: ${String(replicas)} ${at}`)
      if (replicas.some((r) => typeof r !== 'number' || r < 0)) throw new KafkaJSNonRetriableError(`Invalid replica assignment: ${String(replicas)} ${at}. Replicas must be a non negative number`)
    }
  }
}

// kafkajs builds these errors from the code alone (createErrorFromCode): its message, not the broker's.
const fromCode = (e: ProtocolError) => ({ message: errorByCode(e.code).message, type: e.type, code: e.code, retriable: e.retriable })

/** kafkajs' admin.alterPartitionReassignments: per-partition failures in a KafkaJSAggregateError of KafkaJSAlterPartitionReassignmentsError. */
export async function alterPartitionReassignments(admin: NativeAdmin, request: { topics: PartitionReassignment[]; timeout?: number }): Promise<void> {
  checkTopics(request?.topics, 'partitionAssignment')
  const targets = request.topics.flatMap((t) => t.partitionAssignment.map((p) => ({ topic: t.topic, partition: p.partition, targetReplicas: p.replicas })))
  try {
    await admin.alterPartitionReassignments(targets, request.timeout === undefined ? undefined : { timeoutMs: request.timeout })
  } catch (e) {
    if (e instanceof ProtocolError) throw new KafkaJSAlterPartitionReassignmentsError(fromCode(e))
    if (e instanceof AdminError && e.errors.every((x) => x instanceof ProtocolError && x.partition !== undefined)) {
      throw new KafkaJSAggregateError(
        'Errors altering partition reassignments',
        (e.errors as ProtocolError[]).map((x) => new KafkaJSAlterPartitionReassignmentsError(fromCode(x), x.topic, x.partition)),
      )
    }
    throw toKafkaJSError(e)
  }
}

/** kafkajs' admin.listPartitionReassignments: the moves in progress, of `topics` or of all (null). */
export async function listPartitionReassignments(admin: NativeAdmin, request: { topics?: { topic: string; partitions: number[] }[] | null; timeout?: number } = {}): Promise<ListPartitionReassignmentsResponse> {
  const topics = request.topics ?? null
  if (topics) checkTopics(topics, 'partitions')
  try {
    const list = await admin.listPartitionReassignments(topics?.flatMap((t) => t.partitions.map((partition) => ({ topic: t.topic, partition }))), request.timeout === undefined ? undefined : { timeoutMs: request.timeout })
    const byTopic = new Map<string, ListPartitionReassignmentsResponse['topics'][number]>()
    for (const r of list) {
      let t = byTopic.get(r.topic)
      if (t === undefined) byTopic.set(r.topic, (t = { name: r.topic, partitions: [] }))
      t.partitions.push({ partition: r.partition, replicas: r.replicas, addingReplicas: r.addingReplicas, removingReplicas: r.removingReplicas })
    }
    return { topics: [...byTopic.values()] }
  } catch (e) {
    throw toKafkaJSError(e)
  }
}
