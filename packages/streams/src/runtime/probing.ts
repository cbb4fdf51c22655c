import { Machine } from './state.js'

/** Whether this thread has a probing rebalance to trigger (KIP-441). */
export type ProbingState = 'IDLE' | 'SCHEDULED'

/** Every transition of the schedule, in one table: an assignment sets or clears it; triggering clears it. */
export const PROBING_TRANSITIONS: { readonly [S in ProbingState]: readonly ProbingState[] } = {
  IDLE: ['SCHEDULED'],
  SCHEDULED: ['IDLE', 'SCHEDULED'],
}

/**
 * The member side of Java's probing rebalance (StreamsPartitionAssignor#onAssignment keeps
 * AssignmentInfo.nextRebalanceMs; StreamThread#runOnce calls enforceRebalance once it is due): the
 * leader gives the time to one thread while warm-up replicas catch up, and the rebalance it
 * triggers lets the leader move the tasks whose warm-ups are now caught up. Each assignment
 * replaces the schedule: one without a time means no warm-ups are pending any more.
 */
export class ProbingSchedule {
  readonly machine = new Machine(PROBING_TRANSITIONS, 'IDLE', 'probing rebalance schedule')
  private at = Number.POSITIVE_INFINITY
  /** Probing rebalances this thread triggered (tests and metrics). */
  triggered = 0

  onAssignment(nextRebalanceMs: number | undefined): void {
    this.at = nextRebalanceMs ?? Number.POSITIVE_INFINITY
    this.machine.must(nextRebalanceMs === undefined ? 'IDLE' : 'SCHEDULED')
  }

  /** True once when the scheduled time has come: the caller rejoins the group. */
  due(now: number): boolean {
    if (this.machine.state !== 'SCHEDULED' || now < this.at) return false
    this.at = Number.POSITIVE_INFINITY
    this.machine.must('IDLE')
    this.triggered++
    return true
  }
}
