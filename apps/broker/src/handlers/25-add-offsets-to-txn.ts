import { AddOffsetsToTxn, ErrorCodes } from '@tidelog/protocol'
import { fencedFor } from '../txn/errors.js'
import { defineHandler } from './types.js'

/**
 * AddOffsetsToTxn 0-4: the group's offsets join the transaction (Kafka adds
 * the group's __consumer_offsets partition); TxnOffsetCommit for it follows.
 */
export const addOffsetsToTxnHandler = defineHandler({
  api: AddOffsetsToTxn,
  minVersion: 0,
  maxVersion: 4,
  async handle(ctx, req) {
    if (req.groupId === '') return { throttleTimeMs: 0, errorCode: ErrorCodes.INVALID_GROUP_ID }
    const code = await ctx.broker.txns.add(req.transactionalId, req.producerId, req.producerEpoch, [], req.groupId, 1)
    return { throttleTimeMs: 0, errorCode: fencedFor(code, ctx.version, 2) }
  },
  errorResponse(_req, errorCode) {
    return { throttleTimeMs: 0, errorCode }
  },
})
