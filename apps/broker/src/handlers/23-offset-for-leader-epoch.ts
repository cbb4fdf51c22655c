import { ErrorCodes, OffsetForLeaderEpoch } from '@tidelog/protocol'
import { defineHandler } from './types.js'

// Every batch is written with leader epoch 0: one broker, never a new leader.
const EPOCH = 0

/**
 * OffsetForLeaderEpoch 2-4 (KIP-101, KIP-320): the end offset of the largest
 * epoch at or below the one asked, which here is always epoch 0 ending at the
 * log end; a current epoch other than 0 is fenced or unknown, as Kafka answers.
 */
export const offsetForLeaderEpochHandler = defineHandler({
  api: OffsetForLeaderEpoch,
  minVersion: 2,
  maxVersion: 4,
  handle(ctx, req) {
    const broker = ctx.broker
    return {
      throttleTimeMs: 0,
      topics: req.topics.map((t) => {
        const topic = broker.topics.get(t.topic)
        return {
          topic: t.topic,
          partitions: t.partitions.map((p) => {
            const log = topic?.logs[p.partition]
            const current = p.currentLeaderEpoch ?? -1
            const fail = (errorCode: number) => ({ errorCode, partition: p.partition, leaderEpoch: -1, endOffset: -1n })
            if (log === undefined) return fail(ErrorCodes.UNKNOWN_TOPIC_OR_PARTITION)
            if (current >= 0 && current < EPOCH) return fail(ErrorCodes.FENCED_LEADER_EPOCH)
            if (current > EPOCH) return fail(ErrorCodes.UNKNOWN_LEADER_EPOCH)
            if (p.leaderEpoch < EPOCH) return { errorCode: ErrorCodes.NONE, partition: p.partition, leaderEpoch: -1, endOffset: -1n }
            return { errorCode: ErrorCodes.NONE, partition: p.partition, leaderEpoch: EPOCH, endOffset: BigInt(log.logEndOffset) }
          }),
        }
      }),
    }
  },
  errorResponse(req, errorCode) {
    return {
      throttleTimeMs: 0,
      topics: req.topics.map((t) => ({ topic: t.topic, partitions: t.partitions.map((p) => ({ errorCode, partition: p.partition, leaderEpoch: -1, endOffset: -1n })) })),
    }
  },
})
