import { ErrorCodes } from '@tidelog/protocol'
import { KafkaStorageError, type PartitionLog, ProducerStateError } from '../log/index.js'
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

/** What the coordinator needs of a partition log to end a transaction in it. */
export interface MarkerLog {
  appendTxnMarker(marker: { producerId: bigint; producerEpoch: number; commit: boolean; coordinatorEpoch: number; transactionVersion: number }, now?: number): unknown
  readonly needsFlush: boolean
  flush(): Promise<void>
}

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
  const target = markerLog(log)
  try {
    target.appendTxnMarker(marker)
  } catch (err) {
    if (err instanceof ProducerStateError) return { errorCode: err.code, message: (err as Error).message }
    if (err instanceof KafkaStorageError) return { errorCode: ErrorCodes.KAFKA_STORAGE_ERROR, message: (err as Error).message }
    throw err
  }
  if (target.needsFlush && !toFlush.includes(target)) toFlush.push(target)
  return { errorCode: ErrorCodes.NONE }
}

function markerLog(log: PartitionLog): MarkerLog {
  return log as unknown as MarkerLog
}
