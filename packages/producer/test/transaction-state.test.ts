/**
 * The transaction state machine against Java's TransactionManager.State.isTransitionValid,
 * written out here independently as Java writes it (a switch on the target), over every pair of
 * states and over seeded random walks.
 */
import { describe, expect, it } from 'vitest'
import { InvalidTxnStateError, ProducerFencedError, TransactionAbortableError } from '../src/errors.js'
import { isFatalForTransactions, isTransitionValid, TXN_STATES, TxnStateMachine, type TxnState } from '../src/transaction-state.js'
import { ErrorCodes, ProtocolError } from '@tidelog/protocol'

function javaIsTransitionValid(source: TxnState, target: TxnState): boolean {
  switch (target) {
    case 'UNINITIALIZED':
      return false
    case 'INITIALIZING':
      return source === 'UNINITIALIZED' || source === 'ABORTING_TRANSACTION'
    case 'READY':
      return source === 'INITIALIZING' || source === 'COMMITTING_TRANSACTION' || source === 'ABORTING_TRANSACTION'
    case 'IN_TRANSACTION':
      return source === 'READY'
    case 'COMMITTING_TRANSACTION':
      return source === 'IN_TRANSACTION'
    case 'ABORTING_TRANSACTION':
      return source === 'IN_TRANSACTION' || source === 'ABORTABLE_ERROR'
    case 'ABORTABLE_ERROR':
      return source === 'IN_TRANSACTION' || source === 'COMMITTING_TRANSACTION' || source === 'ABORTABLE_ERROR' || source === 'INITIALIZING'
    case 'FATAL_ERROR':
      return true
  }
}

/** mulberry32: a small seeded generator, so a failing walk can be replayed. */
function rng(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed)
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

describe('transaction state machine', () => {
  it('allows exactly the transitions Java allows, for every pair of states', () => {
    expect(TXN_STATES).toHaveLength(8)
    for (const from of TXN_STATES) for (const to of TXN_STATES) expect(isTransitionValid(from, to), `${from} -> ${to}`).toBe(javaIsTransitionValid(from, to))
  })

  it('random walks: illegal transitions are refused and change nothing; errors are kept; FATAL_ERROR is final', () => {
    for (let seed = 1; seed <= 200; seed++) {
      const next = rng(seed)
      const sm = new TxnStateMachine()
      for (let step = 0; step < 60; step++) {
        const before = sm.state
        const to = TXN_STATES[Math.floor(next() * TXN_STATES.length)]!
        const error = new Error(`step ${step}`)
        if (isTransitionValid(before, to)) {
          sm.transition(to, error)
          if (before === 'FATAL_ERROR') expect(sm.state).toBe('FATAL_ERROR')
          else expect(sm.state).toBe(to)
        } else {
          expect(() => sm.transition(to, error), `seed ${seed}: ${before} -> ${to}`).toThrow(InvalidTxnStateError)
          expect(sm.state).toBe(before)
        }
        expect(sm.hasError).toBe(sm.state === 'ABORTABLE_ERROR' || sm.state === 'FATAL_ERROR')
        if (sm.hasError) expect(sm.lastError).toBeInstanceOf(Error)
        if (sm.state === 'READY' || sm.state === 'IN_TRANSACTION') expect(sm.lastError).toBeUndefined()
      }
    }
  })

  it('classes errors as Java does: fencing, authorization and version errors are fatal, the rest abortable', () => {
    const fatal = ['PRODUCER_FENCED', 'INVALID_PRODUCER_EPOCH', 'TRANSACTIONAL_ID_AUTHORIZATION_FAILED', 'CLUSTER_AUTHORIZATION_FAILED', 'UNSUPPORTED_VERSION', 'INVALID_TXN_STATE'] as const
    for (const name of fatal) expect(isFatalForTransactions(new ProtocolError(ErrorCodes[name])), name).toBe(true)
    for (const name of ['TOPIC_AUTHORIZATION_FAILED', 'OUT_OF_ORDER_SEQUENCE_NUMBER', 'UNKNOWN_PRODUCER_ID', 'GROUP_AUTHORIZATION_FAILED', 'ILLEGAL_GENERATION'] as const) {
      expect(isFatalForTransactions(new ProtocolError(ErrorCodes[name])), name).toBe(false)
    }
    expect(isFatalForTransactions(new ProducerFencedError())).toBe(true)
    expect(isFatalForTransactions(new TransactionAbortableError(new Error('x')))).toBe(false)
  })
})
