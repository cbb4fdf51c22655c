import {
  AddPartitionsToTxn,
  type AddPartitionsToTxnRequestTopic,
  type AddPartitionsToTxnResponse,
  type AddPartitionsToTxnResponseTopicResult,
  ErrorCodes,
} from '@tidelog/protocol'
import type { BrokerContext } from '../context.js'
import { abortableFor, fencedFor } from '../txn/errors.js'
import { defineHandler } from './types.js'

function results(topics: readonly AddPartitionsToTxnRequestTopic[], code: (topic: string, partition: number) => number): AddPartitionsToTxnResponseTopicResult[] {
  return topics.map((t) => ({ name: t.name, resultsByPartition: t.partitions.map((p) => ({ partitionIndex: p, partitionErrorCode: code(t.name, p) })) }))
}

/**
 * One transaction's add (or, v4+ verifyOnly, its KIP-890 check). Partitions
 * this broker does not host fail with UNKNOWN_TOPIC_OR_PARTITION and the rest
 * with OPERATION_NOT_ATTEMPTED, as KafkaApis answers before asking the coordinator.
 */
async function one(
  broker: BrokerContext,
  version: number,
  id: string,
  producerId: bigint,
  producerEpoch: number,
  topics: readonly AddPartitionsToTxnRequestTopic[],
  verifyOnly: boolean,
): Promise<AddPartitionsToTxnResponseTopicResult[]> {
  const exists = (t: string, p: number) => {
    const topic = broker.topics.get(t)
    return topic !== undefined && p >= 0 && p < topic.logs.length
  }
  if (topics.some((t) => t.partitions.some((p) => !exists(t.name, p)))) {
    return results(topics, (t, p) => (exists(t, p) ? ErrorCodes.OPERATION_NOT_ATTEMPTED : ErrorCodes.UNKNOWN_TOPIC_OR_PARTITION))
  }
  if (verifyOnly) return results(topics, (t, p) => abortableFor(broker.txns.verify(id, producerId, producerEpoch, t, p), version, 5))
  const code = await broker.txns.add(id, producerId, producerEpoch, topics.map((t) => ({ name: t.name, partitions: t.partitions })), null, 1)
  return results(topics, () => fencedFor(code, version, 2))
}

/**
 * AddPartitionsToTxn 0-5: one transaction from a client (v0-3, TV1's add
 * before the first produce to a partition), a batch by transactional id from
 * v4 (the inter-broker form, with verifyOnly for KIP-890 part 1).
 */
export const addPartitionsToTxnHandler = defineHandler({
  api: AddPartitionsToTxn,
  minVersion: 0,
  maxVersion: 5,
  async handle(ctx, req): Promise<AddPartitionsToTxnResponse> {
    if (ctx.version <= 3) {
      const topics = req.v3AndBelowTopics ?? []
      const r = await one(ctx.broker, ctx.version, req.v3AndBelowTransactionalId ?? '', req.v3AndBelowProducerId ?? -1n, req.v3AndBelowProducerEpoch ?? -1, topics, false)
      return { throttleTimeMs: 0, resultsByTopicV3AndBelow: r }
    }
    const resultsByTransaction = []
    for (const t of req.transactions ?? []) {
      resultsByTransaction.push({
        transactionalId: t.transactionalId,
        topicResults: await one(ctx.broker, ctx.version, t.transactionalId, t.producerId, t.producerEpoch, t.topics, t.verifyOnly),
      })
    }
    return { throttleTimeMs: 0, errorCode: ErrorCodes.NONE, resultsByTransaction }
  },
  errorResponse(req, errorCode, version) {
    if (version <= 3) return { throttleTimeMs: 0, resultsByTopicV3AndBelow: results(req.v3AndBelowTopics ?? [], () => errorCode) }
    return { throttleTimeMs: 0, errorCode, resultsByTransaction: [] }
  },
})
