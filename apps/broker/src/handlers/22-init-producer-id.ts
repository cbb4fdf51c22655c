import { ErrorCodes, InitProducerId } from '@tidelog/protocol'
import { fencedFor } from '../txn/errors.js'
import { defineHandler } from './types.js'

/**
 * InitProducerId 0-5. Without a transactional id (the idempotent producer): a
 * fresh producer id with epoch 0 every time, as Kafka answers. With one: the
 * transaction coordinator's id and epoch, bumped at every call so the previous
 * producer of that id is fenced (KIP-98), resumable with the producer's last
 * id and epoch from v3 (KIP-360).
 */
export const initProducerIdHandler = defineHandler({
  api: InitProducerId,
  minVersion: 0,
  maxVersion: 5,
  async handle(ctx, req) {
    if (req.transactionalId !== null) {
      const r = await ctx.broker.txns.initProducerId(req.transactionalId, req.transactionTimeoutMs, {
        producerId: req.producerId ?? -1n,
        producerEpoch: req.producerEpoch ?? -1,
      })
      return { throttleTimeMs: 0, errorCode: fencedFor(r.errorCode, ctx.version, 4), producerId: r.producerId, producerEpoch: r.producerEpoch }
    }
    // The id block is made durable off the event loop; a failed write is a storage error.
    return ctx.broker.producerIds.allocate().then(
      (id) => ({ throttleTimeMs: 0, errorCode: ErrorCodes.NONE, producerId: BigInt(id), producerEpoch: 0 }),
      () => ({ throttleTimeMs: 0, errorCode: ErrorCodes.KAFKA_STORAGE_ERROR, producerId: -1n, producerEpoch: -1 }),
    )
  },
  errorResponse(_req, errorCode) {
    return { throttleTimeMs: 0, errorCode, producerId: -1n, producerEpoch: -1 }
  },
})
