import { DeleteTopics, ErrorCodes, ZERO_UUID, type DeleteTopicsResponseDeletableTopicResult } from '@tidelog/protocol'
import type { BrokerContext } from '../context.js'
import type { Topic } from '../topics.js'
import { defineHandler } from './types.js'

/** Starts the deletion; resolves at its commit (topics.json without the topic is durable). */
function remove(broker: BrokerContext, topic: Topic): Promise<void> {
  const committed = broker.topics.delete(topic)
  // As Kafka does, a deleted topic's committed offsets go with it.
  const offsets = broker.groups.offsets
  for (const g of offsets.groupIds()) {
    const parts = offsets.groupOffsets(g).get(topic.name)
    if (parts !== undefined) offsets.deleteOffsets(g, [...parts.keys()].map((partition) => ({ topic: topic.name, partition })))
  }
  return committed
}

/** DeleteTopics 1-6: by name, or from v6 by topic id. */
export const deleteTopicsHandler = defineHandler({
  api: DeleteTopics,
  minVersion: 1,
  maxVersion: 6,
  handle(ctx, req) {
    const broker = ctx.broker
    const responses: DeleteTopicsResponseDeletableTopicResult[] = []
    const commits: Promise<void>[] = []
    if (ctx.version >= 6) {
      for (const t of req.topics ?? []) {
        const byId = t.topicId !== ZERO_UUID
        const topic = byId ? broker.topics.getById(t.topicId) : t.name !== null ? broker.topics.get(t.name) : undefined
        if (topic === undefined) {
          responses.push({ name: t.name, topicId: t.topicId, errorCode: byId ? ErrorCodes.UNKNOWN_TOPIC_ID : ErrorCodes.UNKNOWN_TOPIC_OR_PARTITION, errorMessage: null })
          continue
        }
        // KIP-599: a deleted topic's partitions count against the controller mutation quota.
        const throttled = ctx.mutations?.charge(topic.logs.length)
        if (throttled !== undefined) {
          responses.push({ name: topic.name, topicId: topic.topicId, ...throttled })
          continue
        }
        const result: DeleteTopicsResponseDeletableTopicResult = { name: topic.name, topicId: topic.topicId, errorCode: ErrorCodes.NONE, errorMessage: null }
        commits.push(remove(broker, topic).catch(() => void (result.errorCode = ErrorCodes.KAFKA_STORAGE_ERROR)))
        responses.push(result)
      }
    } else {
      for (const name of req.topicNames ?? []) {
        const topic = broker.topics.get(name)
        if (topic === undefined) {
          responses.push({ name, errorCode: ErrorCodes.UNKNOWN_TOPIC_OR_PARTITION, errorMessage: null })
          continue
        }
        const throttled = ctx.mutations?.charge(topic.logs.length)
        if (throttled !== undefined) {
          responses.push({ name, ...throttled })
          continue
        }
        const result: DeleteTopicsResponseDeletableTopicResult = { name, errorCode: ErrorCodes.NONE, errorMessage: null }
        commits.push(remove(broker, topic).catch(() => void (result.errorCode = ErrorCodes.KAFKA_STORAGE_ERROR)))
        responses.push(result)
      }
    }
    // Acknowledged at the commit point: a crash before it renames the partitions back on restart.
    return Promise.all(commits).then(() => ({ throttleTimeMs: 0, responses }))
  },
  errorResponse(req, errorCode, version) {
    const responses =
      version >= 6
        ? (req.topics ?? []).map((t) => ({ name: t.name, topicId: t.topicId, errorCode, errorMessage: null }))
        : (req.topicNames ?? []).map((name) => ({ name, errorCode, errorMessage: null }))
    return { throttleTimeMs: 0, responses }
  },
})
