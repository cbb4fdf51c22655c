import { UnsupportedVersionError } from '@tidelog/client'
import { ErrorCodes, ProtocolError } from '@tidelog/protocol'
import { InvalidTxnStateError, ProducerFencedError, TransactionAbortableError } from './errors.js'

/** The transactional producer's states: Java's TransactionManager.State (without KIP-939's PREPARED_TRANSACTION). */
export type TxnState =
  | 'UNINITIALIZED'
  | 'INITIALIZING'
  | 'READY'
  | 'IN_TRANSACTION'
  | 'COMMITTING_TRANSACTION'
  | 'ABORTING_TRANSACTION'
  | 'ABORTABLE_ERROR'
  | 'FATAL_ERROR'

/**
 * Every legal transition, target -> the states it may be entered from, as Java's
 * State.isTransitionValid. INITIALIZING from ABORTING_TRANSACTION is the epoch bump after an
 * abort that followed a sequence error (KIP-360); ABORTABLE_ERROR from COMMITTING_TRANSACTION is
 * a commit whose last records failed; FATAL_ERROR is reachable from everywhere.
 */
export const TRANSITIONS: Readonly<Record<TxnState, readonly TxnState[]>> = {
  UNINITIALIZED: [],
  INITIALIZING: ['UNINITIALIZED', 'ABORTING_TRANSACTION'],
  READY: ['INITIALIZING', 'COMMITTING_TRANSACTION', 'ABORTING_TRANSACTION'],
  IN_TRANSACTION: ['READY'],
  COMMITTING_TRANSACTION: ['IN_TRANSACTION'],
  ABORTING_TRANSACTION: ['IN_TRANSACTION', 'ABORTABLE_ERROR'],
  ABORTABLE_ERROR: ['IN_TRANSACTION', 'COMMITTING_TRANSACTION', 'ABORTABLE_ERROR', 'INITIALIZING'],
  FATAL_ERROR: ['UNINITIALIZED', 'INITIALIZING', 'READY', 'IN_TRANSACTION', 'COMMITTING_TRANSACTION', 'ABORTING_TRANSACTION', 'ABORTABLE_ERROR', 'FATAL_ERROR'],
}

export const TXN_STATES = Object.keys(TRANSITIONS) as TxnState[]

export function isTransitionValid(from: TxnState, to: TxnState): boolean {
  return TRANSITIONS[to].includes(from)
}

/** The state machine alone: it refuses an illegal transition with InvalidTxnStateError and keeps the error that led to an error state. */
export class TxnStateMachine {
  state: TxnState = 'UNINITIALIZED'
  /** Why the state is ABORTABLE_ERROR or FATAL_ERROR. */
  lastError: Error | undefined

  transition(to: TxnState, error?: Error): void {
    if (!isTransitionValid(this.state, to)) throw new InvalidTxnStateError(`invalid transaction state transition from ${this.state} to ${to}`)
    // A fatal error stays the reason: nothing after it is more telling.
    if (this.state === 'FATAL_ERROR') return
    this.state = to
    if (to === 'ABORTABLE_ERROR' || to === 'FATAL_ERROR') this.lastError = error
    else if (to !== 'ABORTING_TRANSACTION') this.lastError = undefined
  }

  get hasError(): boolean {
    return this.state === 'ABORTABLE_ERROR' || this.state === 'FATAL_ERROR'
  }
}

/** Codes after which a transactional producer cannot go on (Java's fatalError cases). */
const FATAL = new Set<number>([
  ErrorCodes.PRODUCER_FENCED,
  ErrorCodes.INVALID_PRODUCER_EPOCH,
  ErrorCodes.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
  ErrorCodes.CLUSTER_AUTHORIZATION_FAILED,
  ErrorCodes.UNSUPPORTED_VERSION,
  ErrorCodes.UNSUPPORTED_FOR_MESSAGE_FORMAT,
  ErrorCodes.INVALID_TXN_STATE,
  ErrorCodes.INVALID_TRANSACTION_TIMEOUT,
])

/** Whether an error ends a transactional producer (else the transaction can be aborted and the producer goes on). */
export function isFatalForTransactions(error: unknown): boolean {
  if (error instanceof ProducerFencedError || error instanceof UnsupportedVersionError) return true
  if (isTransactionAbortable(error)) return false
  return error instanceof ProtocolError && FATAL.has(error.code)
}

/**
 * The error a transactional producer reports for a broker's error: INVALID_PRODUCER_EPOCH
 * means fencing for a transactional producer (Java turns it into ProducerFencedException).
 */
export function txnError(error: Error): Error {
  if (error instanceof ProducerFencedError) return error
  if (error instanceof ProtocolError && (error.code === ErrorCodes.PRODUCER_FENCED || error.code === ErrorCodes.INVALID_PRODUCER_EPOCH)) {
    return new ProducerFencedError({ api: error.api, apiKey: error.apiKey, topic: error.topic, partition: error.partition, message: error.serverMessage }, { cause: error })
  }
  return error
}

/**
 * The errors after which a failed batch ends the producer (Java's maybeTransitionToErrorState);
 * every other batch error, INVALID_TXN_STATE and TRANSACTION_ABORTABLE included (KIP-890: what a
 * partition that is not in the transaction answers), only makes the transaction abortable.
 */
const FATAL_FOR_BATCH = new Set<number>([
  ErrorCodes.PRODUCER_FENCED,
  ErrorCodes.INVALID_PRODUCER_EPOCH,
  ErrorCodes.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
  ErrorCodes.CLUSTER_AUTHORIZATION_FAILED,
  ErrorCodes.UNSUPPORTED_VERSION,
])

export function isFatalForBatch(error: unknown): boolean {
  if (error instanceof ProducerFencedError || error instanceof UnsupportedVersionError) return true
  return error instanceof ProtocolError && !(error instanceof TransactionAbortableError) && FATAL_FOR_BATCH.has(error.code)
}

/** KIP-890's TRANSACTION_ABORTABLE: the transaction can only be aborted; never retried, never fatal. */
export function isTransactionAbortable(error: unknown): boolean {
  return error instanceof TransactionAbortableError || (error instanceof ProtocolError && error.code === ErrorCodes.TRANSACTION_ABORTABLE)
}

/** Sequence errors that leave the partition's numbering unknown: the abort that follows bumps the epoch (KIP-360). */
export function needsEpochBump(error: unknown): boolean {
  return error instanceof ProtocolError && (error.code === ErrorCodes.OUT_OF_ORDER_SEQUENCE_NUMBER || error.code === ErrorCodes.UNKNOWN_PRODUCER_ID || error.code === ErrorCodes.INVALID_PRODUCER_ID_MAPPING)
}
