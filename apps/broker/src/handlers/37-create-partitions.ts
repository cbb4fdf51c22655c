import { CreatePartitions, ErrorCodes } from '@tidelog/protocol'
import { TOO_MANY_PARTITIONS_PER_REQUEST } from '../topics.js'
import { defineHandler } from './types.js'

/**
 * CreatePartitions 0-3: grows a topic; new partitions can only live on this
 * broker. What one request may add is capped as CreateTopics is (KRaft caps only
 * topic creation; growing a topic allocates the same), and the total by
 * max.broker.partitions.
 */
export const createPartitionsHandler = defineHandler({
  api: CreatePartitions,
  minVersion: 0,
  maxVersion: 3,
  handle(ctx, req) {
    const broker = ctx.broker
    let requested = 0
    for (const t of req.topics) {
      const topic = broker.topics.get(t.name)
      if (topic !== undefined && t.count > topic.logs.length) requested += t.count - topic.logs.length
    }
    if (requested > broker.config.maxPartitionsPerRequest) {
      const results = req.topics.map((t) => ({ name: t.name, errorCode: ErrorCodes.POLICY_VIOLATION, errorMessage: TOO_MANY_PARTITIONS_PER_REQUEST }))
      return { throttleTimeMs: 0, results }
    }
    // Hosted before this request, plus what its earlier topics were granted (created or, with validate_only, not).
    let counted = broker.topics.partitionCount
    const results = req.topics.map((t) => {
      const fail = (errorCode: number, errorMessage: string | null) => ({ name: t.name, errorCode, errorMessage })
      const topic = broker.topics.get(t.name)
      if (topic === undefined) return fail(ErrorCodes.UNKNOWN_TOPIC_OR_PARTITION, `topic ${t.name} does not exist`)
      const current = topic.logs.length
      // Kafka's own messages (ReplicationControlManager), which tools print as is.
      if (t.count === current) return fail(ErrorCodes.INVALID_PARTITIONS, `Topic already has ${current} partition(s).`)
      if (t.count < current) {
        return fail(ErrorCodes.INVALID_PARTITIONS, `The topic ${t.name} currently has ${current} partition(s); ${t.count} would not be an increase.`)
      }
      const additional = t.count - current
      if (t.assignments !== null) {
        if (t.assignments.length !== additional) {
          return fail(
            ErrorCodes.INVALID_REPLICA_ASSIGNMENT,
            `Attempted to add ${additional} additional partition(s), but only ${t.assignments.length} assignment(s) were specified.`,
          )
        }
        if (t.assignments.some((a) => a.brokerIds.length !== 1 || a.brokerIds[0] !== broker.nodeId)) {
          return fail(ErrorCodes.INVALID_REPLICA_ASSIGNMENT, `new partitions can only be assigned to broker ${broker.nodeId}`)
        }
      }
      const overBudget = broker.topics.partitionBudgetError(additional, counted)
      if (overBudget !== undefined) return fail(ErrorCodes.POLICY_VIOLATION, overBudget)
      // KIP-599: the partitions added, after every other check (validate_only too).
      const throttled = ctx.mutations?.charge(additional)
      if (throttled !== undefined) return fail(throttled.errorCode, throttled.errorMessage)
      counted += additional
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
