import { DeleteRecords, ErrorCodes } from '@tidelog/protocol'
import { OffsetOutOfRangeError } from '../log/index.js'
import { defineHandler } from './types.js'

/**
 * DeleteRecords 0-2: moves each partition's log start offset (-1 means the high
 * watermark) and drops the segments wholly below it; answers the new low
 * watermark once the log-start-offset checkpoint holds it.
 */
export const deleteRecordsHandler = defineHandler({
  api: DeleteRecords,
  minVersion: 0,
  maxVersion: 2,
  async handle(ctx, req) {
    const broker = ctx.broker
    let moved = false
    const topics = req.topics.map((t) => {
      const topic = broker.topics.get(t.name)
      return {
        name: t.name,
        partitions: t.partitions.map((p) => {
          const log = topic?.logs[p.partitionIndex]
          if (log === undefined) return { partitionIndex: p.partitionIndex, lowWatermark: -1n, errorCode: ErrorCodes.UNKNOWN_TOPIC_OR_PARTITION }
          const offset = p.offset === -1n ? log.highWatermark : Number(p.offset)
          try {
            const before = log.logStartOffset
            const low = log.deleteRecordsBefore(offset)
            if (low !== before) moved = true
            return { partitionIndex: p.partitionIndex, lowWatermark: BigInt(low), errorCode: ErrorCodes.NONE }
          } catch (err) {
            if (!(err instanceof OffsetOutOfRangeError)) throw err
            return { partitionIndex: p.partitionIndex, lowWatermark: -1n, errorCode: ErrorCodes.OFFSET_OUT_OF_RANGE }
          }
        }),
      }
    })
    if (moved) await broker.logs.checkpoint()
    return { throttleTimeMs: 0, topics }
  },
  errorResponse(req, errorCode) {
    return {
      throttleTimeMs: 0,
      topics: req.topics.map((t) => ({ name: t.name, partitions: t.partitions.map((p) => ({ partitionIndex: p.partitionIndex, lowWatermark: -1n, errorCode })) })),
    }
  },
})
