import {
  ErrorCodes,
  Metadata,
  ZERO_UUID,
  type MetadataResponse,
  type MetadataResponsePartition,
  type MetadataResponseTopic,
} from '@tidelog/protocol'
import type { BrokerContext } from '../context.js'
import { type Topic, invalidTopicName, isInternalTopic } from '../topics.js'
import { defineHandler } from './types.js'

// Kafka's "authorized operations not requested" sentinel (Integer.MIN_VALUE).
const OPS_NOT_REQUESTED = -2147483648

function describeTopic(broker: BrokerContext, t: Topic): MetadataResponseTopic {
  const partitions: MetadataResponsePartition[] = t.logs.map((log, i) => ({
    // The data directory failed: this replica is offline (KIP-112).
    errorCode: log.isOffline ? ErrorCodes.KAFKA_STORAGE_ERROR : ErrorCodes.NONE,
    partitionIndex: i,
    leaderId: broker.nodeId,
    leaderEpoch: 0,
    replicaNodes: [broker.nodeId],
    isrNodes: [broker.nodeId],
    offlineReplicas: log.isOffline ? [broker.nodeId] : [],
  }))
  return {
    errorCode: ErrorCodes.NONE,
    name: t.name,
    topicId: t.topicId,
    isInternal: t.isInternal,
    partitions,
    topicAuthorizedOperations: OPS_NOT_REQUESTED,
  }
}

function topicError(errorCode: number, name: string | null, topicId = ZERO_UUID): MetadataResponseTopic {
  return { errorCode, name, topicId, isInternal: false, partitions: [], topicAuthorizedOperations: OPS_NOT_REQUESTED }
}

/** Creates `name` when auto-creation is on and allowed by the request, or says why not. */
export function autoCreate(broker: BrokerContext, name: string, allowed: boolean): Topic | number {
  if (invalidTopicName(name) !== undefined) return ErrorCodes.INVALID_TOPIC_EXCEPTION
  if (!allowed || !broker.config.autoCreateTopics || isInternalTopic(name)) return ErrorCodes.UNKNOWN_TOPIC_OR_PARTITION
  // max.broker.partitions holds for auto-creation too; a failed creation reports its error, as Kafka (ZooKeeper mode) did.
  if (broker.topics.partitionBudgetError(broker.config.numPartitions) !== undefined) return ErrorCodes.POLICY_VIOLATION
  return broker.topics.create(name, broker.config.numPartitions)
}

/**
 * Metadata 0-12: this broker as the only node, leader of every partition, and
 * the requested topics (all of them for a null list, or an empty one before
 * v1), auto-created when allowed (allow_auto_topic_creation from v4). A topic
 * created here is returned ready at once: there is no replica to wait for.
 */
export const metadataHandler = defineHandler({
  api: Metadata,
  minVersion: 0,
  maxVersion: 12,
  handle(ctx, req): MetadataResponse {
    const broker = ctx.broker
    const v = ctx.version
    const all = req.topics === null || (v === 0 && req.topics.length === 0)
    const topics: MetadataResponseTopic[] = []
    if (all) {
      for (const t of broker.topics.all()) topics.push(describeTopic(broker, t))
    } else {
      const allowAuto = v < 4 || req.allowAutoTopicCreation !== false
      const seen = new Set<string>()
      for (const rt of req.topics!) {
        if (rt.name === null || rt.name === undefined) {
          // Lookup by id (v10+): no auto-creation for ids.
          const id = rt.topicId ?? ZERO_UUID
          if (seen.has(`#${id}`)) continue
          seen.add(`#${id}`)
          const t = id === ZERO_UUID ? undefined : broker.topics.getById(id)
          topics.push(t !== undefined ? describeTopic(broker, t) : topicError(ErrorCodes.UNKNOWN_TOPIC_ID, null, id))
          continue
        }
        if (seen.has(rt.name)) continue
        seen.add(rt.name)
        let t = broker.topics.get(rt.name)
        if (t === undefined) {
          const created = autoCreate(broker, rt.name, allowAuto)
          if (typeof created === 'number') {
            topics.push(topicError(created, rt.name))
            continue
          }
          t = created
        }
        topics.push(describeTopic(broker, t))
      }
    }
    return {
      throttleTimeMs: 0,
      brokers: [{ nodeId: broker.nodeId, host: broker.advertised.host, port: broker.advertised.port, rack: null }],
      clusterId: broker.clusterId,
      controllerId: broker.nodeId,
      topics,
      clusterAuthorizedOperations: OPS_NOT_REQUESTED,
    }
  },
  errorResponse(req, errorCode) {
    return {
      brokers: [],
      topics: (req.topics ?? []).map((t) => topicError(errorCode, t.name ?? null, t.topicId ?? ZERO_UUID)),
    }
  },
})
