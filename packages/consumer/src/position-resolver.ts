import { isRetriable, sleep, type Cluster } from '@tidelog/client'
import type { Committer } from './committer.js'
import type { Delivery } from './delivery.js'
import { NoOffsetForPartitionError } from './errors.js'
import type { Fetcher } from './fetcher.js'
import { EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, lookupOffsets, type OffsetQuery } from './offset-lookup.js'
import type { ResolvedConsumerOptions } from './options.js'
import type { Assignment, PartitionState } from './positions.js'

/**
 * Gives every partition that needs one a position: the group's committed offset (OffsetFetch),
 * else autoOffsetReset; or the earliest / latest / timestamp offset a seek asked for
 * (ListOffsets). One run at a time; a request during a run makes it go round again, and
 * lookups whose partition moved on meanwhile (seek, revoke) are dropped.
 */
export class PositionResolver {
  private running: Promise<void> | undefined
  private again = false
  stopped = false

  constructor(
    private readonly cluster: Cluster,
    private readonly options: ResolvedConsumerOptions,
    private readonly assignment: Assignment,
    private readonly committer: Committer | undefined,
    private readonly fetcher: Fetcher,
    private readonly delivery: Delivery,
  ) {}

  /** Resolves once every lookup requested before (or during) the call is done. */
  run(): Promise<void> {
    if (this.running !== undefined) {
      this.again = true
      return this.running
    }
    const run = this.loop().finally(() => {
      this.running = undefined
      this.fetcher.wake()
    })
    this.running = run
    return run
  }

  private async loop(): Promise<void> {
    for (let attempt = 0; ; ) {
      this.again = false
      const need = this.assignment.list().filter((s) => s.reset !== undefined && !s.halted)
      if (need.length === 0 || this.stopped) return
      try {
        await this.resolve(need)
        attempt = 0
      } catch (err) {
        if (!isRetriable(err)) {
          for (const s of need) if (this.assignment.isCurrent(s) && s.reset !== undefined) s.halted = true
          this.delivery.fail(err as Error)
          return
        }
        this.cluster.logger.warn({ err }, 'looking up positions failed, retrying')
        await sleep(this.cluster.retryBackoff.delay(attempt++))
        this.again = true
      }
      if (!this.again) return
    }
  }

  private async resolve(states: PartitionState[]): Promise<void> {
    const epochs = new Map(states.map((s) => [s, s.epoch]))
    const live = (s: PartitionState): boolean => epochs.get(s) === s.epoch && this.assignment.isCurrent(s)
    const fromGroup = states.filter((s) => s.reset === 'committed')
    if (fromGroup.length > 0) {
      const found = this.committer !== undefined ? await this.committer.fetch(fromGroup, this.options.defaultApiTimeoutMs) : new Map()
      for (const s of fromGroup) {
        if (!live(s)) continue
        const c = found.get(s.key)
        if (c !== undefined && c.offset >= 0n) {
          s.seek(c.offset, c.leaderEpoch)
          s.committed = c.offset
          epochs.set(s, s.epoch)
        } else {
          s.reset = this.options.autoOffsetReset
        }
      }
    }
    const none = states.filter((s) => live(s) && s.reset === 'none')
    if (none.length > 0) {
      for (const s of none) s.halted = true
      this.delivery.fail(new NoOffsetForPartitionError(none.map((s) => s.toJSON())))
    }
    const queries: OffsetQuery[] = []
    const asked: PartitionState[] = []
    for (const s of states) {
      const r = s.reset
      if (!live(s) || r === undefined || r === 'committed' || r === 'none') continue
      asked.push(s)
      queries.push({ topic: s.topic, partition: s.partition, timestamp: r === 'earliest' ? EARLIEST_TIMESTAMP : r === 'latest' ? LATEST_TIMESTAMP : r.timestamp })
    }
    if (queries.length === 0) return
    const answers = await lookupOffsets(this.cluster, queries, this.options.isolationLevel, this.options.defaultApiTimeoutMs)
    for (const s of asked) {
      if (!live(s)) continue
      const a = answers.get(s.key)
      if (a === undefined) continue
      if (a.offset < 0n) {
        // No record at or after the timestamp: Java's offsetsForTimes says null; we go to the end.
        s.requestReset('latest')
        this.again = true
        continue
      }
      s.seek(a.offset, a.leaderEpoch)
      // The leader answered at this epoch (it fences stale ones, KIP-320): nothing to validate.
      s.validatedLeaderEpoch = a.currentLeaderEpoch
    }
  }
}
