import { DescribeTransactions, type DescribeTransactionsResponseTransactionState, ErrorCodes } from '@tidelog/protocol'
import { defineHandler } from './types.js'

function notFound(transactionalId: string, errorCode: number): DescribeTransactionsResponseTransactionState {
  return { errorCode, transactionalId, transactionState: '', transactionTimeoutMs: 0, transactionStartTimeMs: -1n, producerId: -1n, producerEpoch: -1, topics: [] }
}

/** DescribeTransactions 0 (KIP-664): what `kafka-transactions.sh describe` prints. */
export const describeTransactionsHandler = defineHandler({
  api: DescribeTransactions,
  minVersion: 0,
  maxVersion: 0,
  handle(ctx, req) {
    return {
      throttleTimeMs: 0,
      transactionStates: req.transactionalIds.map((id) => {
        const t = ctx.broker.txns.get(id)
        if (t === undefined) return notFound(id, ErrorCodes.TRANSACTIONAL_ID_NOT_FOUND)
        return {
          errorCode: ErrorCodes.NONE,
          transactionalId: id,
          transactionState: t.state,
          transactionTimeoutMs: t.timeoutMs,
          transactionStartTimeMs: BigInt(t.startTimestamp),
          producerId: t.producerId,
          producerEpoch: t.producerEpoch,
          topics: [...t.partitions].map(([topic, parts]) => ({ topic, partitions: [...parts].sort((a, b) => a - b) })),
        }
      }),
    }
  },
  errorResponse(req, errorCode) {
    return { throttleTimeMs: 0, transactionStates: req.transactionalIds.map((id) => notFound(id, errorCode)) }
  },
})
