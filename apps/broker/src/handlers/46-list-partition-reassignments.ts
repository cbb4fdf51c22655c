import { ErrorCodes, ListPartitionReassignments, errorByCode } from '@tidelog/protocol'
import { defineHandler } from './types.js'

/**
 * ListPartitionReassignments 0 (KIP-455): the ongoing reassignments, of every topic (null) or
 * of the listed ones (unknown topics are left out, as Kafka's controller does). One broker
 * has none in progress: every move completes when AlterPartitionReassignments accepts it.
 */
export const listPartitionReassignmentsHandler = defineHandler({
  api: ListPartitionReassignments,
  minVersion: 0,
  maxVersion: 0,
  handle() {
    return { throttleTimeMs: 0, errorCode: ErrorCodes.NONE, errorMessage: null, topics: [] }
  },
  errorResponse(_req, errorCode) {
    return { throttleTimeMs: 0, errorCode, errorMessage: errorByCode(errorCode).message, topics: [] }
  },
})
