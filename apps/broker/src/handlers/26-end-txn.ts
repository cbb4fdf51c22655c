import { EndTxn } from '@tidelog/protocol'
import { fencedFor } from '../txn/errors.js'
import { defineHandler } from './types.js'

/**
 * EndTxn 0-5: commit or abort. v5 is KIP-890 part 2 (transaction version 2):
 * the epoch is bumped at every end and the producer id and epoch to continue
 * with are returned.
 */
export const endTxnHandler = defineHandler({
  api: EndTxn,
  minVersion: 0,
  maxVersion: 5,
  async handle(ctx, req) {
    const tv2 = ctx.version >= 5
    const r = await ctx.broker.txns.endTxn(req.transactionalId, req.producerId, req.producerEpoch, req.committed, tv2)
    const errorCode = fencedFor(r.errorCode, ctx.version, 2)
    return tv2 ? { throttleTimeMs: 0, errorCode, producerId: r.producerId, producerEpoch: r.producerEpoch } : { throttleTimeMs: 0, errorCode }
  },
  errorResponse(_req, errorCode, version) {
    return version >= 5 ? { throttleTimeMs: 0, errorCode, producerId: -1n, producerEpoch: -1 } : { throttleTimeMs: 0, errorCode }
  },
})
