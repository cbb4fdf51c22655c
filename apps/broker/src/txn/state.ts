/**
 * A transactional id's state, named as Kafka's TransactionState (the names
 * DescribeTransactions and ListTransactions carry, and kafka-transactions.sh
 * prints).
 */
export enum TxnState {
  Empty = 'Empty',
  Ongoing = 'Ongoing',
  PrepareCommit = 'PrepareCommit',
  PrepareAbort = 'PrepareAbort',
  CompleteCommit = 'CompleteCommit',
  CompleteAbort = 'CompleteAbort',
  Dead = 'Dead',
  PrepareEpochFence = 'PrepareEpochFence',
}

export const TXN_STATES: readonly TxnState[] = Object.values(TxnState)

/**
 * Every legal transition, the one table the coordinator consults: target ->
 * the states it may be entered from (Kafka's TransactionState.validPreviousStates).
 * PrepareAbort from Empty/Complete* exists for KIP-890 part 2, where an abort
 * with nothing open still bumps the epoch; PrepareEpochFence is the fencing
 * step of InitProducerId (or a timeout) on an open TV1 transaction.
 */
export const VALID_PREVIOUS_STATES: Readonly<Record<TxnState, readonly TxnState[]>> = Object.freeze({
  [TxnState.Empty]: [TxnState.Empty, TxnState.CompleteCommit, TxnState.CompleteAbort],
  [TxnState.Ongoing]: [TxnState.Ongoing, TxnState.Empty, TxnState.CompleteCommit, TxnState.CompleteAbort],
  [TxnState.PrepareCommit]: [TxnState.Ongoing],
  [TxnState.PrepareAbort]: [TxnState.Ongoing, TxnState.PrepareEpochFence, TxnState.Empty, TxnState.CompleteCommit, TxnState.CompleteAbort],
  [TxnState.CompleteCommit]: [TxnState.PrepareCommit],
  [TxnState.CompleteAbort]: [TxnState.PrepareAbort],
  [TxnState.Dead]: [TxnState.Empty, TxnState.CompleteCommit, TxnState.CompleteAbort],
  [TxnState.PrepareEpochFence]: [TxnState.Ongoing],
})

export function canTransition(from: TxnState, to: TxnState): boolean {
  return VALID_PREVIOUS_STATES[to].includes(from)
}

/** A transition the table does not allow: a coordinator bug, never a client error. */
export class IllegalTxnTransitionError extends Error {
  constructor(
    readonly transactionalId: string,
    readonly from: TxnState,
    readonly to: TxnState,
  ) {
    super(`transactional id ${transactionalId}: illegal transition ${from} -> ${to}`)
    this.name = 'IllegalTxnTransitionError'
  }
}

/** States in which no transaction is open (a new one may begin, the id may expire). */
export function isIdle(s: TxnState): boolean {
  return s === TxnState.Empty || s === TxnState.CompleteCommit || s === TxnState.CompleteAbort
}

export function isPreparing(s: TxnState): boolean {
  return s === TxnState.PrepareCommit || s === TxnState.PrepareAbort
}

/** A state name from a ListTransactions filter, matched as Kafka does (exact names). */
export function parseTxnState(name: string): TxnState | undefined {
  return (TXN_STATES as readonly string[]).includes(name) ? (name as TxnState) : undefined
}
