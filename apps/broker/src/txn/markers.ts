import { ErrorCodes } from '@tidelog/protocol'
import { KafkaStorageError, LogClosedError, type PartitionLog, ProducerStateError } from '../log/index.js'
import type { TopicRegistry } from '../topics.js'

/** One commit or abort marker (Kafka's EndTransactionMarker, written as a control batch). */
export interface TxnMarker {
  producerId: bigint
  producerEpoch: number
  commit: boolean
  /** -1 from kafka-transactions.sh abort, which does not know the coordinator's epoch. */
  coordinatorEpoch: number
  /** 2 when the transaction ran under KIP-890 part 2 (the marker's epoch is the bumped one). */
  transactionVersion: number
}

/** A log a marker went to, to fsync before answering. */
export type MarkerLog = PartitionLog

/**
 * This broker is its partitions' only replica and the coordinator of every
 * transactional id, so the coordinator epoch never changes: 0.
 */
export const COORDINATOR_EPOCH = 0

/** The result of writing one marker: Kafka's per-partition error of WriteTxnMarkers. */
export type MarkerOutcome = { errorCode: number; message?: string }

/**
 * Writes the marker into one partition. A partition that no longer exists has
 * nothing to end (Kafka drops markers for deleted partitions); a storage
 * failure is reported, and the coordinator tries again later.
 */
export function writeMarker(topics: TopicRegistry, topic: string, partition: number, marker: TxnMarker, toFlush: MarkerLog[]): MarkerOutcome {
  const log = topics.get(topic)?.logs[partition]
  if (log === undefined) return { errorCode: ErrorCodes.UNKNOWN_TOPIC_OR_PARTITION }
  try {
    log.appendTxnMarker({ ...marker, producerId: Number(marker.producerId) })
  } catch (err) {
    if (err instanceof ProducerStateError) return { errorCode: err.code, message: (err as Error).message }
    if (err instanceof KafkaStorageError) return { errorCode: ErrorCodes.KAFKA_STORAGE_ERROR, message: (err as Error).message }
    // Deleted while the transaction ran: nothing left to end.
    if (err instanceof LogClosedError) return { errorCode: ErrorCodes.UNKNOWN_TOPIC_OR_PARTITION, message: (err as Error).message }
    throw err
  }
  if (log.needsFlush && !toFlush.includes(log)) toFlush.push(log)
  return { errorCode: ErrorCodes.NONE }
}
