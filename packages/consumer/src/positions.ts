import { tpKey, type TopicPartition } from './types.js'

/** How a partition without a usable position gets one. */
export type ResetKind = 'committed' | 'earliest' | 'latest' | 'none' | { timestamp: bigint }

/**
 * Everything the consumer knows about one assigned partition. Three offsets matter:
 * - position: the next offset to hand to the application (Java's position()); it moves as
 *   messages are delivered and over records that are never delivered (control records,
 *   aborted transactions, compaction gaps);
 * - fetchOffset: the next offset to fetch, ahead of position by what is buffered (prefetch);
 * - acked: the offset up to which the application has finished processing; at-least-once
 *   auto-commits commit this one.
 * `epoch` changes whenever the position is set from outside (seek, reset, re-assignment), so
 * lookups and acknowledgements from before are ignored; `fetchEpoch` changes with it and also
 * when fetched data is thrown away (pause), so fetches and buffered data from before are dropped.
 */
export class PartitionState implements TopicPartition {
  readonly key: string
  position = -1n
  fetchOffset = -1n
  acked = -1n
  /** The offset this consumer last committed or found committed; -1n when unknown. */
  committed = -1n
  /** Leader epoch of the last delivered record (committed with its offset, KIP-320). */
  lastEpoch = -1
  epoch = 0
  fetchEpoch = 0
  /** Why there is no position yet; undefined once there is one. */
  reset: ResetKind | undefined = 'committed'
  paused = false
  /** Stopped by an error the application was given (corrupt data, no offset); a seek clears it. */
  halted = false
  /** Being revoked: nothing more is delivered from it. */
  revoking = false
  /** consumer.run(): the partition's queue is full; it is not fetched until the handler drains it. */
  held = false
  /** A fetch covering this partition is in flight. */
  inFlight = false
  /** Set when a fetch error says the leader moved; cleared when fresh metadata arrives. */
  awaitingMetadata = false
  highWatermark = -1n
  lastStableOffset = -1n
  logStartOffset = -1n
  /**
   * Retriable fetch errors in a row, and the performance.now() before which the partition is not
   * fetched again: Java's retry.backoff.ms, exponential up to retry.backoff.max.ms (KIP-580), so
   * a sick broker answering errors at once is not fetched from in a hot loop.
   */
  fetchFailures = 0
  retryAt = 0
  /** KIP-392: the replica the leader told us to fetch from (-1: the leader), until preferredReplicaUntil. */
  preferredReplica = -1
  preferredReplicaUntil = 0
  /**
   * KIP-320: the partition leader epoch (from the metadata) the position was last validated
   * against, -1 when never; while `validating`, OffsetForLeaderEpoch checks the position for
   * truncation and nothing is fetched.
   */
  validatedLeaderEpoch = -1
  validating = false

  constructor(
    readonly topic: string,
    readonly partition: number,
  ) {
    this.key = tpKey(topic, partition)
  }

  get hasPosition(): boolean {
    return this.reset === undefined
  }

  /** Fetchable: has a position, is not paused or being revoked, and waits for no metadata. */
  get fetchable(): boolean {
    return this.reset === undefined && !this.paused && !this.revoking && !this.awaitingMetadata && !this.halted && !this.validating && !this.held
  }

  /** Throws away what is fetched or being fetched: the next fetch starts at the position. */
  invalidateFetches(): void {
    this.fetchEpoch++
    this.fetchOffset = this.position
  }

  /** Sets the position from outside (seek, lookup result): buffered and in-flight data is stale. */
  seek(offset: bigint, leaderEpoch = -1): void {
    this.epoch++
    this.position = offset
    this.invalidateFetches()
    this.acked = offset
    this.lastEpoch = leaderEpoch
    this.reset = undefined
    this.halted = false
    // A position from outside is checked against the leader before use when it has an epoch (KIP-320).
    this.validatedLeaderEpoch = -1
    this.validating = false
  }

  /** Forgets the position; it will be looked up again as `kind` says. */
  requestReset(kind: ResetKind): void {
    this.epoch++
    this.fetchEpoch++
    this.reset = kind
    this.halted = false
    this.validating = false
  }

  /** Moves position past records that are not delivered; acked follows when nothing is pending. */
  skipTo(offset: bigint): void {
    if (offset <= this.position) return
    if (this.acked === this.position) this.acked = offset
    this.position = offset
  }

  toJSON(): TopicPartition {
    return { topic: this.topic, partition: this.partition }
  }
}

/** The assigned partitions, by "topic:partition". */
export class Assignment {
  private readonly states = new Map<string, PartitionState>()

  get size(): number {
    return this.states.size
  }

  get(topic: string, partition: number): PartitionState | undefined {
    return this.states.get(tpKey(topic, partition))
  }

  has(topic: string, partition: number): boolean {
    return this.states.has(tpKey(topic, partition))
  }

  all(): IterableIterator<PartitionState> {
    return this.states.values()
  }

  list(): PartitionState[] {
    return [...this.states.values()]
  }

  /** Adds partitions not yet assigned; returns the new states. */
  add(partitions: readonly TopicPartition[]): PartitionState[] {
    const added: PartitionState[] = []
    for (const p of partitions) {
      const key = tpKey(p.topic, p.partition)
      if (this.states.has(key)) continue
      const s = new PartitionState(p.topic, p.partition)
      this.states.set(key, s)
      added.push(s)
    }
    return added
  }

  /** Removes partitions; returns the states removed (their epoch is bumped so queued data is dropped). */
  remove(partitions: readonly TopicPartition[]): PartitionState[] {
    const removed: PartitionState[] = []
    for (const p of partitions) {
      const key = tpKey(p.topic, p.partition)
      const s = this.states.get(key)
      if (s === undefined) continue
      this.states.delete(key)
      s.epoch++
      s.fetchEpoch++
      s.revoking = true
      removed.push(s)
    }
    return removed
  }

  clear(): PartitionState[] {
    return this.remove(this.list())
  }

  /** Whether `s` is still the live state of its partition (not removed and re-added since). */
  isCurrent(s: PartitionState): boolean {
    return this.states.get(s.key) === s
  }
}
