import { CreatePartitions, ErrorCodes } from '@tidelog/protocol'
import { defineHandler } from './types.js'

/** CreatePartitions 0-3: grows a topic; new partitions can only live on this broker. */
export const createPartitionsHandler = defineHandler({
  api: CreatePartitions,
  minVersion: 0,
  maxVersion: 3,
  handle(ctx, req) {
    const broker = ctx.broker
    const results = req.topics.map((t) => {
      const fail = (errorCode: number, errorMessage: string) => ({ name: t.name, errorCode, errorMessage })
      const topic = broker.topics.get(t.name)
      if (topic === undefined) return fail(ErrorCodes.UNKNOWN_TOPIC_OR_PARTITION, `topic ${t.name} does not exist`)
      const current = topic.logs.length
      if (t.count <= current) {
        return fail(ErrorCodes.INVALID_PARTITIONS, `topic ${t.name} has ${current} partitions; the new count must be larger`)
      }
      if (t.assignments !== null) {
        if (t.assignments.length !== t.count - current) {
          return fail(ErrorCodes.INVALID_REPLICA_ASSIGNMENT, `expected ${t.count - current} assignments, got ${t.assignments.length}`)
        }
        if (t.assignments.some((a) => a.brokerIds.length !== 1 || a.brokerIds[0] !== broker.nodeId)) {
          return fail(ErrorCodes.INVALID_REPLICA_ASSIGNMENT, `new partitions can only be assigned to broker ${broker.nodeId}`)
        }
      }
      if (!req.validateOnly) broker.topics.addPartitions(topic, t.count)
      return { name: t.name, errorCode: ErrorCodes.NONE, errorMessage: null }
    })
    // Acknowledged once topics.json records the new counts.
    return broker.topics.persisted().then(
      () => ({ throttleTimeMs: 0, results }),
      () => ({ throttleTimeMs: 0, results: results.map((r) => (r.errorCode === ErrorCodes.NONE ? { ...r, errorCode: ErrorCodes.KAFKA_STORAGE_ERROR } : r)) }),
    )
  },
  errorResponse(req, errorCode) {
    return { throttleTimeMs: 0, results: req.topics.map((t) => ({ name: t.name, errorCode, errorMessage: null })) }
  },
})
