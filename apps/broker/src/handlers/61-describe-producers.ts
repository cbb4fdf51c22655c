import { DescribeProducers, type DescribeProducersResponsePartitionResponse, ErrorCodes } from '@tidelog/protocol'
import type { PartitionLog } from '../log/index.js'
import { defineHandler } from './types.js'

/** One producer as the partition's producer state keeps it (numbers or bigints, as the log stores them). */
interface ProducerView {
  producerId: bigint | number
  producerEpoch: number
  lastSequence: number
  lastTimestamp: bigint | number
  coordinatorEpoch: number
  /** -1 when the producer has no open transaction in the partition. */
  currentTxnStartOffset: bigint | number
}

function producersOf(log: PartitionLog): readonly ProducerView[] {
  return (log as unknown as { producerStates(): readonly ProducerView[] }).producerStates()
}

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
            activeProducers: producersOf(log).map((s) => ({
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
