import { StreamsException } from '../errors.js'

/** Java's KafkaStreams.State. */
export type KafkaStreamsState = 'CREATED' | 'REBALANCING' | 'RUNNING' | 'PENDING_SHUTDOWN' | 'NOT_RUNNING' | 'PENDING_ERROR' | 'ERROR'

/** Every allowed transition, in one table (Java's State.validTransition). */
export const STATE_TRANSITIONS: { readonly [S in KafkaStreamsState]: readonly KafkaStreamsState[] } = {
  CREATED: ['REBALANCING', 'PENDING_SHUTDOWN', 'PENDING_ERROR'],
  REBALANCING: ['RUNNING', 'PENDING_SHUTDOWN', 'PENDING_ERROR'],
  RUNNING: ['REBALANCING', 'PENDING_SHUTDOWN', 'PENDING_ERROR'],
  PENDING_SHUTDOWN: ['NOT_RUNNING'],
  NOT_RUNNING: [],
  PENDING_ERROR: ['ERROR'],
  ERROR: [],
}

export type StateListener = (newState: KafkaStreamsState, oldState: KafkaStreamsState) => void

export class StateMachine {
  private current: KafkaStreamsState = 'CREATED'
  listener: StateListener | undefined

  get state(): KafkaStreamsState {
    return this.current
  }

  /** Moves to `next`; false (and no change) when the table does not allow it, e.g. a second close(). */
  to(next: KafkaStreamsState): boolean {
    if (next === this.current) return true
    if (!STATE_TRANSITIONS[this.current].includes(next)) return false
    const old = this.current
    this.current = next
    this.listener?.(next, old)
    return true
  }

  /** Like to(), for transitions the caller relies on: an illegal one is a bug, reported as such. */
  must(next: KafkaStreamsState): void {
    if (!this.to(next)) throw new StreamsException(`KafkaStreams cannot go from ${this.current} to ${next}`)
  }
}
