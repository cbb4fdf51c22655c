import { ErrorCodes } from '@tidelog/protocol'

/**
 * PRODUCER_FENCED exists from KIP-588; a client of an older request version
 * does not know it and gets INVALID_PRODUCER_EPOCH instead, as KafkaApis maps
 * it. `firstVersion` is the request's first version that knows the code
 * (InitProducerId 4, AddPartitionsToTxn 2, AddOffsetsToTxn 2, EndTxn 2, TxnOffsetCommit 3).
 */
export function fencedFor(errorCode: number, version: number, firstVersion: number): number {
  return errorCode === ErrorCodes.PRODUCER_FENCED && version < firstVersion ? ErrorCodes.INVALID_PRODUCER_EPOCH : errorCode
}

/**
 * TRANSACTION_ABORTABLE (KIP-890 part 1, Kafka 3.8+) is what verification answers for a
 * partition or group that is not in the producer's open transaction. A client of a request
 * version older than the code's (`firstVersion`: Produce 11, AddPartitionsToTxn 5,
 * TxnOffsetCommit 4) gets INVALID_TXN_STATE instead, as Kafka's AddPartitionsToTxnManager maps
 * it for DEFAULT_ERROR callers.
 */
export function abortableFor(errorCode: number, version: number, firstVersion: number): number {
  return errorCode === ErrorCodes.TRANSACTION_ABORTABLE && version < firstVersion ? ErrorCodes.INVALID_TXN_STATE : errorCode
}
