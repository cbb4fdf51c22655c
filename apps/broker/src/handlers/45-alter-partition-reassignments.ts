import { AlterPartitionReassignments, ErrorCodes, errorByCode, type AlterPartitionReassignmentsRequestReassignablePartition } from '@tidelog/protocol'
import type { BrokerContext } from '../context.js'
import { defineHandler } from './types.js'

type Outcome = { errorCode: number; errorMessage: string | null }
const ok: Outcome = { errorCode: ErrorCodes.NONE, errorMessage: null }
const invalid = (errorMessage: string): Outcome => ({ errorCode: ErrorCodes.INVALID_REPLICA_ASSIGNMENT, errorMessage })

/**
 * Kafka's check of a manual assignment (ReplicationControlManager.validateManualPartitionAssignment),
 * over the sorted ids as Kafka walks them: an unknown broker is named before a repeated one.
 */
function checkReplicas(replicas: readonly number[], nodeId: number): Outcome {
  if (replicas.length === 0) return invalid('The manual partition assignment includes an empty replica list.')
  const sorted = [...replicas].sort((a, b) => a - b)
  let prev: number | undefined
  for (const id of sorted) {
    if (id !== nodeId) return invalid(`The manual partition assignment includes broker ${id}, but no such broker is registered.`)
    if (id === prev) return invalid(`The manual partition assignment includes the broker ${prev} more than once.`)
    prev = id
  }
  return ok
}

function alter(broker: BrokerContext, topicName: string, p: AlterPartitionReassignmentsRequestReassignablePartition): Outcome {
  const topic = broker.topics.get(topicName)
  if (topic === undefined) return { errorCode: ErrorCodes.UNKNOWN_TOPIC_OR_PARTITION, errorMessage: `Unable to find a topic named ${topicName}.` }
  if (p.partitionIndex < 0 || p.partitionIndex >= topic.logs.length) {
    return { errorCode: ErrorCodes.UNKNOWN_TOPIC_OR_PARTITION, errorMessage: `Unable to find partition ${topicName}:${p.partitionIndex}.` }
  }
  // Cancelling: with one broker no reassignment is ever pending (each completes at once).
  if (p.replicas === null) return { errorCode: ErrorCodes.NO_REASSIGNMENT_IN_PROGRESS, errorMessage: errorByCode(ErrorCodes.NO_REASSIGNMENT_IN_PROGRESS).message }
  // The only valid target is [this broker], the replica set it already has: Kafka's controller
  // writes no change record for it and answers NONE, the reassignment done.
  return checkReplicas(p.replicas, broker.nodeId)
}

/**
 * AlterPartitionReassignments 0 (KIP-455) as a single-node KRaft cluster answers it: per
 * partition, Kafka's errors and messages; a move to [nodeId] completes at once.
 */
export const alterPartitionReassignmentsHandler = defineHandler({
  api: AlterPartitionReassignments,
  minVersion: 0,
  maxVersion: 0,
  handle(ctx, req) {
    return {
      throttleTimeMs: 0,
      errorCode: ErrorCodes.NONE,
      errorMessage: null,
      responses: req.topics.map((t) => ({ name: t.name, partitions: t.partitions.map((p) => ({ partitionIndex: p.partitionIndex, ...alter(ctx.broker, t.name, p) })) })),
    }
  },
  // As Java's AlterPartitionReassignmentsRequest.getErrorResponse: the error at the top and on every partition.
  errorResponse(req, errorCode) {
    const errorMessage = errorByCode(errorCode).message
    return {
      throttleTimeMs: 0,
      errorCode,
      errorMessage,
      responses: (req?.topics ?? []).map((t) => ({ name: t.name, partitions: t.partitions.map((p) => ({ partitionIndex: p.partitionIndex, errorCode, errorMessage })) })),
    }
  },
})
