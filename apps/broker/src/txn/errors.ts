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
