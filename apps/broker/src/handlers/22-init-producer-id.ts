import { ErrorCodes, InitProducerId } from '@tidelog/protocol'
import { defineHandler } from './types.js'

/**
 * InitProducerId 0-5 for idempotent producers (the Java client's default): a
 * fresh producer id with epoch 0 every time, as Kafka answers a request without
 * a transactional id. Transactions are not served: a transactional id is
 * refused with TRANSACTIONAL_ID_AUTHORIZATION_FAILED.
 */
export const initProducerIdHandler = defineHandler({
  api: InitProducerId,
  minVersion: 0,
  maxVersion: 5,
  handle(ctx, req) {
    if (req.transactionalId !== null) {
      return { throttleTimeMs: 0, errorCode: ErrorCodes.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, producerId: -1n, producerEpoch: -1 }
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
