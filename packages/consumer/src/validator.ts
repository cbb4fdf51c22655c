import { isRetriable, isStaleMetadataError, sleep, UnsupportedVersionError, type Cluster, type ClusterMetadata } from '@tidelog/client'
import { ErrorCodes, OffsetForLeaderEpoch, ProtocolError, type OffsetForLeaderEpochRequestOffsetForLeaderTopic } from '@tidelog/protocol'
import { OffsetOutOfRangeError } from './errors.js'
import type { ResolvedConsumerOptions } from './options.js'
import type { Assignment, PartitionState } from './positions.js'
import type { TopicPartition } from './types.js'

/** Java's CONSUMER_REPLICA_ID in OffsetForLeaderEpoch v3+. */
const CONSUMER_REPLICA_ID = -1
/** OffsetForLeaderEpoch v3 is the first a consumer may use (Java's hasUsableOffsetForLeaderEpochVersion). */
const MIN_VERSION = 3

/**
 * The log was truncated below the consumer's position (an unclean leader election, or a leader
 * change that lost unreplicated records) and autoOffsetReset is 'none' (Java's
 * LogTruncationException). `divergentOffset` is the first offset known to diverge from what was
 * consumed, when the broker knows it. Seek the partition to go on.
 */
export class LogTruncationError extends OffsetOutOfRangeError {
  readonly divergentOffset: { offset: bigint; leaderEpoch: number } | undefined
  constructor(tp: TopicPartition, position: bigint, divergent: { offset: bigint; leaderEpoch: number } | undefined) {
    super(tp.topic, tp.partition, position)
    this.divergentOffset = divergent
    this.message =
      `the log of ${tp.topic}-${tp.partition} was truncated below the position ${position}` +
      (divergent === undefined ? ' (no divergent offset known)' : ` (diverges at offset ${divergent.offset}, leader epoch ${divergent.leaderEpoch})`) +
      ' and autoOffsetReset is none'
  }
}

export interface ValidatorHooks {
  /** The position's epoch is unknown to the leader: reset per autoOffsetReset (or raise). */
  onOffsetOutOfRange(state: PartitionState, offset: bigint): void
  onPartitionError(state: PartitionState, error: Error): void
  /** Some partitions finished validating: fetch them again. */
  wake(): void
  /** Buffered data of partitions being validated may be truncated: drop it. */
  purge(): void
}

interface Asked {
  state: PartitionState
  epoch: number
  position: bigint
  offsetEpoch: number
  currentLeaderEpoch: number
}

/**
 * KIP-320 position validation. A position carries the leader epoch of the record it follows
 * (PartitionState.lastEpoch: the last delivered record's, or the committed one's). When the
 * partition's leader epoch in the metadata is not the one the position was last checked
 * against (a leader change, FENCED_LEADER_EPOCH and a refresh, a seek to a committed offset),
 * the partition stops fetching and OffsetForLeaderEpoch asks the leader where that epoch ends:
 * an end below the position means the log was truncated under the consumer, which then seeks
 * to the end offset (the first offset known to diverge), or resets per autoOffsetReset when the
 * epoch is unknown, or raises LogTruncationError with 'none', as Java's SubscriptionState does.
 */
export class PositionValidator {
  stopped = false
  private running = false
  private again = false

  constructor(
    private readonly cluster: Cluster,
    private readonly options: ResolvedConsumerOptions,
    private readonly assignment: Assignment,
    private readonly hooks: ValidatorHooks,
  ) {}

  /**
   * Called before a partition is fetched: returns true if it must wait for validation (which
   * this starts). Partitions whose position has no epoch, or whose leader epoch is unknown
   * (brokers before Metadata v7), have nothing to validate.
   */
  check(s: PartitionState, metadata: ClusterMetadata): boolean {
    if (s.validating) return true
    const e = metadata.partition(s.topic, s.partition)?.leaderEpoch ?? -1
    if (e < 0 || e === s.validatedLeaderEpoch) return false
    if (s.lastEpoch < 0) {
      s.validatedLeaderEpoch = e
      return false
    }
    s.validating = true
    s.invalidateFetches()
    this.hooks.purge()
    this.run()
    return true
  }

  private run(): void {
    this.again = true
    if (this.running || this.stopped) return
    this.running = true
    void this.loop().finally(() => {
      this.running = false
    })
  }

  private async loop(): Promise<void> {
    for (let attempt = 0; this.again && !this.stopped; ) {
      this.again = false
      const pending = this.assignment.list().filter((s) => s.validating)
      if (pending.length === 0) return
      let retry = false
      try {
        retry = await this.validate(pending)
      } catch (err) {
        this.cluster.logger.warn({ err }, 'validating positions failed')
        retry = true
      }
      this.hooks.wake()
      if (retry) {
        this.again = true
        await sleep(this.cluster.retryBackoff.delay(attempt++))
        await this.cluster.refreshMetadata().catch(() => undefined)
      } else {
        attempt = 0
      }
    }
  }

  /** One round: one request per leader. Returns whether some partition must be asked again. */
  private async validate(states: PartitionState[]): Promise<boolean> {
    const metadata = this.cluster.metadata
    const byLeader = new Map<number, Asked[]>()
    let retry = false
    for (const s of states) {
      const p = metadata.partition(s.topic, s.partition)
      if (p === undefined || p.leader < 0 || !metadata.brokers.has(p.leader)) {
        retry = true
        continue
      }
      let list = byLeader.get(p.leader)
      if (list === undefined) byLeader.set(p.leader, (list = []))
      list.push({ state: s, epoch: s.epoch, position: s.position, offsetEpoch: s.lastEpoch, currentLeaderEpoch: p.leaderEpoch })
    }
    const results = await Promise.all([...byLeader].map(([nodeId, asked]) => this.ask(nodeId, asked)))
    return retry || results.includes(true)
  }

  private async ask(nodeId: number, asked: Asked[]): Promise<boolean> {
    const topics = new Map<string, OffsetForLeaderEpochRequestOffsetForLeaderTopic>()
    for (const a of asked) {
      let t = topics.get(a.state.topic)
      if (t === undefined) topics.set(a.state.topic, (t = { topic: a.state.topic, partitions: [] }))
      t.partitions.push({ partition: a.state.partition, currentLeaderEpoch: a.currentLeaderEpoch, leaderEpoch: a.offsetEpoch })
    }
    let res
    try {
      res = await this.cluster.send(nodeId, OffsetForLeaderEpoch, { replicaId: CONSUMER_REPLICA_ID, topics: [...topics.values()] }, { minVersion: MIN_VERSION })
    } catch (err) {
      if (err instanceof UnsupportedVersionError) {
        // Java skips validation against brokers without a usable version.
        for (const a of asked) if (this.current(a)) this.done(a)
        return false
      }
      this.cluster.handleError(err)
      if (!isRetriable(err)) {
        for (const a of asked) if (this.current(a)) this.fail(a, err as Error)
        return false
      }
      this.cluster.logger.debug({ err, nodeId }, 'OffsetForLeaderEpoch failed, retrying')
      return true
    }
    let retry = false
    const answered = new Set<PartitionState>()
    for (const t of res.topics) {
      for (const p of t.partitions) {
        const a = asked.find((x) => x.state.topic === t.topic && x.state.partition === p.partition)
        if (a === undefined) continue
        answered.add(a.state)
        if (!this.current(a)) continue
        if (p.errorCode !== ErrorCodes.NONE) {
          const error = new ProtocolError(p.errorCode, { api: 'OffsetForLeaderEpoch', apiKey: OffsetForLeaderEpoch.apiKey, topic: t.topic, partition: p.partition })
          // FENCED / UNKNOWN_LEADER_EPOCH, NOT_LEADER...: newer metadata, then ask again.
          if (isStaleMetadataError(error) || error.retriable) {
            retry = true
            continue
          }
          this.fail(a, error)
          continue
        }
        this.complete(a, p.leaderEpoch ?? -1, p.endOffset)
      }
    }
    for (const a of asked) if (!answered.has(a.state) && this.current(a)) retry = true
    return retry
  }

  /** Whether the partition still waits for this answer (no seek, reset or revoke since). */
  private current(a: Asked): boolean {
    return this.assignment.isCurrent(a.state) && a.state.validating && a.state.epoch === a.epoch && a.state.position === a.position
  }

  private complete(a: Asked, leaderEpoch: number, endOffset: bigint): void {
    const s = a.state
    const tp = s.toJSON()
    const reset = this.options.autoOffsetReset
    if (endOffset < 0n || leaderEpoch < 0) {
      // The leader knows no epoch at or below the position's: nothing to compare with.
      s.validating = false
      this.cluster.logger.info({ ...tp, position: a.position, reset }, 'log truncation detected, no divergent offset known (KIP-320)')
      if (reset === 'none') this.hooks.onPartitionError(s, new LogTruncationError(tp, a.position, undefined))
      else this.hooks.onOffsetOutOfRange(s, a.position)
      return
    }
    if (endOffset < a.position) {
      this.cluster.logger.info({ ...tp, position: a.position, endOffset, leaderEpoch, reset }, 'log truncation detected (KIP-320)')
      if (reset === 'none') {
        s.validating = false
        this.hooks.onPartitionError(s, new LogTruncationError(tp, a.position, { offset: endOffset, leaderEpoch }))
        return
      }
      // Java's seekValidated: go on from the first offset known to diverge. The group's committed
      // offset may lie beyond it, in the lost records: auto-commit may now commit below it.
      s.seek(endOffset, leaderEpoch)
      s.committed = -1n
    }
    this.done(a)
  }

  private done(a: Asked): void {
    a.state.validating = false
    a.state.validatedLeaderEpoch = a.currentLeaderEpoch
  }

  private fail(a: Asked, error: Error): void {
    a.state.validating = false
    this.hooks.onPartitionError(a.state, error)
  }
}
