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

/** Java's StreamThread.State. */
export type StreamThreadState = 'CREATED' | 'STARTING' | 'PARTITIONS_REVOKED' | 'PARTITIONS_ASSIGNED' | 'RUNNING' | 'PENDING_SHUTDOWN' | 'DEAD'

/** Java's StreamThread.State table (a thread may re-enter the rebalance states: eager rebalances repeat). */
export const THREAD_STATE_TRANSITIONS: { readonly [S in StreamThreadState]: readonly StreamThreadState[] } = {
  CREATED: ['STARTING', 'PENDING_SHUTDOWN'],
  STARTING: ['PARTITIONS_REVOKED', 'PARTITIONS_ASSIGNED', 'PENDING_SHUTDOWN'],
  PARTITIONS_REVOKED: ['PARTITIONS_REVOKED', 'PARTITIONS_ASSIGNED', 'PENDING_SHUTDOWN'],
  PARTITIONS_ASSIGNED: ['PARTITIONS_REVOKED', 'PARTITIONS_ASSIGNED', 'RUNNING', 'PENDING_SHUTDOWN'],
  RUNNING: ['PARTITIONS_REVOKED', 'PARTITIONS_ASSIGNED', 'RUNNING', 'PENDING_SHUTDOWN'],
  PENDING_SHUTDOWN: ['DEAD'],
  DEAD: [],
}

export type StateListener = (newState: KafkaStreamsState, oldState: KafkaStreamsState) => void

/** A state machine over one of the tables above. */
export class Machine<S extends string> {
  private current: S
  listener: ((next: S, old: S) => void) | undefined

  constructor(private readonly table: { readonly [K in S]: readonly S[] }, initial: S, private readonly what: string) {
    this.current = initial
  }

  get state(): S {
    return this.current
  }

  /** Moves to `next`; false (and no change) when the table does not allow it, e.g. a second close(). */
  to(next: S): boolean {
    if (next === this.current) return true
    if (!this.table[this.current].includes(next)) return false
    const old = this.current
    this.current = next
    this.listener?.(next, old)
    return true
  }

  /** Like to(), for transitions the caller relies on: an illegal one is a bug, reported as such. */
  must(next: S): void {
    if (!this.to(next)) throw new StreamsException(`${this.what} cannot go from ${this.current} to ${next}`)
  }
}

export class StateMachine extends Machine<KafkaStreamsState> {
  constructor() {
    super(STATE_TRANSITIONS, 'CREATED', 'KafkaStreams')
  }
}
