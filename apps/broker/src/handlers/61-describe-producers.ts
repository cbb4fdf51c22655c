import { DescribeProducers, type DescribeProducersResponsePartitionResponse, ErrorCodes } from '@tidelog/protocol'
import { defineHandler } from './types.js'

/**
 * DescribeProducers 0 (KIP-664): the producers a partition's log tracks, with
 * the first offset of each one's open transaction, which
 * `kafka-transactions.sh describe-producers` and `find-hanging` read.
 */
export const describeProducersHandler = defineHandler({
  api: DescribeProducers,
  minVersion: 0,
  maxVersion: 0,
  handle(ctx, req) {
    return {
      throttleTimeMs: 0,
      topics: req.topics.map((t) => ({
        name: t.name,
        partitions: t.partitionIndexes.map((p): DescribeProducersResponsePartitionResponse => {
          const log = ctx.broker.topics.get(t.name)?.logs[p]
          if (log === undefined) return { partitionIndex: p, errorCode: ErrorCodes.UNKNOWN_TOPIC_OR_PARTITION, errorMessage: null, activeProducers: [] }
          return {
            partitionIndex: p,
            errorCode: ErrorCodes.NONE,
            errorMessage: null,
            activeProducers: log.producerStates().map((s) => ({
              producerId: BigInt(s.producerId),
              producerEpoch: s.producerEpoch,
              lastSequence: s.lastSequence,
              lastTimestamp: BigInt(s.lastTimestamp),
              coordinatorEpoch: s.coordinatorEpoch,
              currentTxnStartOffset: BigInt(s.currentTxnStartOffset),
            })),
          }
        }),
      })),
    }
  },
  errorResponse(req, errorCode) {
    return {
      throttleTimeMs: 0,
      topics: req.topics.map((t) => ({ name: t.name, partitions: t.partitionIndexes.map((partitionIndex) => ({ partitionIndex, errorCode, errorMessage: null, activeProducers: [] })) })),
    }
  },
})
