import { ErrorCodes, ListTransactions } from '@tidelog/protocol'
import { TxnState, parseTxnState } from '../txn/state.js'
import { defineHandler } from './types.js'

/**
 * ListTransactions 0-1 (KIP-664; v1's duration filter from KIP-994): every
 * transactional id, filtered by state names (unknown names are echoed back),
 * producer ids, and (v1) transactions open longer than the given duration.
 */
export const listTransactionsHandler = defineHandler({
  api: ListTransactions,
  minVersion: 0,
  maxVersion: 1,
  handle(ctx, req) {
    const states = new Set<TxnState>()
    const unknownStateFilters: string[] = []
    for (const name of req.stateFilters) {
      const s = parseTxnState(name)
      if (s === undefined) unknownStateFilters.push(name)
      else states.add(s)
    }
    const producerIds = new Set(req.producerIdFilters)
    const duration = ctx.version >= 1 ? Number(req.durationFilter ?? -1n) : -1
    const now = Date.now()
    // Only unknown names given: nothing can match (Kafka lists nothing rather than everything).
    const none = unknownStateFilters.length > 0 && states.size === 0
    const transactionStates = none
      ? []
      : ctx.broker.txns
          .list()
          .filter((t) => states.size === 0 || states.has(t.state))
          .filter((t) => producerIds.size === 0 || producerIds.has(t.producerId))
          .filter((t) => duration < 0 || (t.startTimestamp >= 0 && now - t.startTimestamp > duration))
          .map((t) => ({ transactionalId: t.transactionalId, producerId: t.producerId, transactionState: t.state }))
    return { throttleTimeMs: 0, errorCode: ErrorCodes.NONE, unknownStateFilters, transactionStates }
  },
  errorResponse(_req, errorCode) {
    return { throttleTimeMs: 0, errorCode, unknownStateFilters: [], transactionStates: [] }
  },
})
