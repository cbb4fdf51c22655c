import { ErrorCodes, WriteTxnMarkers, type WriteTxnMarkersResponse } from '@tidelog/protocol'
import { type MarkerLog, writeMarker } from '../txn/markers.js'
import { defineHandler } from './types.js'

/**
 * WriteTxnMarkers 1 (Kafka 4.0 dropped v0, KIP-896): markers written as asked. Kafka's coordinators send it
 * to partition leaders; here the coordinator writes its own markers directly,
 * so this is what `kafka-transactions.sh abort` sends to end a transaction
 * left hanging in a partition (coordinator epoch -1 allowed). Each marker's
 * partitions are appended before the first await, then fsynced as the flush
 * policy asks.
 */
export const writeTxnMarkersHandler = defineHandler({
  api: WriteTxnMarkers,
  minVersion: 1,
  maxVersion: 1,
  async handle(ctx, req): Promise<WriteTxnMarkersResponse> {
    const toFlush: MarkerLog[] = []
    const markers = req.markers.map((m) => ({
      producerId: m.producerId,
      topics: m.topics.map((t) => ({
        name: t.name,
        partitions: t.partitionIndexes.map((p) => {
          const marker = { producerId: m.producerId, producerEpoch: m.producerEpoch, commit: m.transactionResult, coordinatorEpoch: m.coordinatorEpoch, transactionVersion: 1 }
          return { partitionIndex: p, errorCode: writeMarker(ctx.broker.topics, t.name, p, marker, toFlush).errorCode }
        }),
      })),
    }))
    try {
      await Promise.all(toFlush.map((l) => l.flush()))
    } catch (err) {
      ctx.broker.logger.error(`WriteTxnMarkers: fsync failed: ${String(err)}`)
      for (const m of markers) for (const t of m.topics) for (const p of t.partitions) if (p.errorCode === ErrorCodes.NONE) p.errorCode = ErrorCodes.KAFKA_STORAGE_ERROR
    }
    return { markers }
  },
  errorResponse(req, errorCode) {
    return {
      markers: req.markers.map((m) => ({
        producerId: m.producerId,
        topics: m.topics.map((t) => ({ name: t.name, partitions: t.partitionIndexes.map((partitionIndex) => ({ partitionIndex, errorCode })) })),
      })),
    }
  },
})
