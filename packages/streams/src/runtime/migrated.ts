import { CommitFailedError } from '@tidelog/consumer'
import { ProtocolError } from '@tidelog/client'
import { ProducerFencedError, TransactionAbortableError } from '@tidelog/producer'
import { ErrorCodes } from '@tidelog/protocol'

/**
 * Errors after which Java's EOS-v2 TaskManager aborts the transaction and revives its tasks
 * instead of killing the thread: TaskMigratedException (a fenced producer, a stale group
 * generation) and the abortable transaction errors (KIP-1050).
 */
const MIGRATED_CODES = new Set<number>([
  ErrorCodes.INVALID_PRODUCER_EPOCH,
  ErrorCodes.PRODUCER_FENCED,
  ErrorCodes.ILLEGAL_GENERATION,
  ErrorCodes.UNKNOWN_MEMBER_ID,
  ErrorCodes.FENCED_INSTANCE_ID,
  ErrorCodes.REBALANCE_IN_PROGRESS,
  ErrorCodes.TRANSACTION_ABORTABLE,
])

export function isTaskMigrated(e: unknown): boolean {
  for (let cur = e, depth = 0; cur !== undefined && cur !== null && depth < 5; cur = (cur as { cause?: unknown }).cause, depth++) {
    if (cur instanceof ProducerFencedError || cur instanceof TransactionAbortableError || cur instanceof CommitFailedError) return true
    if (cur instanceof ProtocolError && MIGRATED_CODES.has(cur.code)) return true
  }
  return false
}
