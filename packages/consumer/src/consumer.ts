import { EventEmitter } from 'node:events'
import { ClientClosedError, Cluster, Deadline } from '@tidelog/client'
import { groupMetadataOf, type ConsumerGroupMetadata } from './group-metadata.js'
import { ConsumerCommits } from './commits.js'
export type { SubscribeOptions, CloseOptions } from './consumer-support.js'
import { DEFAULT_CLOSE_TIMEOUT_MS, NO_GENERATION, PollClock, matchPattern, partitionCounts, settlesWithin, subscriptionChange, type CloseOptions, type SubscribeOptions } from './consumer-support.js'
import { Delivery, DeliveryIterator } from './delivery.js'
import { IllegalStateError, OffsetOutOfRangeError } from './errors.js'
import { Fetcher } from './fetcher.js'
import { resolveAssignors } from './group/assignors/index.js'
import { ConsumerCoordinator } from './group/coordinator.js'
import { CoordinatorLink } from './group/coordinator-link.js'
import { Mutex } from './lock.js'
import { PositionResolver } from './position-resolver.js'
import { Rebalance } from './rebalance.js'
import { Runner } from './runner/runner.js'
import type { RunOptions } from './runner/types.js'
import { DecodingIterator, type DecodingHooks } from './runner/iterate.js'
import { ReceiveTracingIterator } from './tracing.js'
import { MessageDecoder, type DeserializationErrorPolicy } from './serdes.js'
import { edgeOffsets, lagOf, offsetsForTimes, type LookupOptions, type OffsetForTime } from './offsets-api.js'
import { resolveOptions, type ConsumerOptions, type ResolvedConsumerOptions } from './options.js'
import { Assignment, type PartitionState } from './positions.js'
import { sortPartitions, tpKey, type Batch, type GroupGeneration, type Message, type RebalanceListener, type TopicPartition, type TopicPartitionOffset } from './types.js'

/**
 * A Kafka consumer. Subscribe (with a groupId) to share topics with the group's other members,
 * or assign() partitions by hand; then iterate messages (`for await (const m of consumer)`) or
 * batches (`consumer.batches()`).
 *
 * Delivery is at-least-once by default: a message counts as processed when the application
 * asks for the next one (or for the next batch, after a batch), and auto-commit (every
 * autoCommitIntervalMs, on revocation and on close) commits only processed offsets. Leaving the
 * loop (break, throw) leaves the last message unprocessed; commit() commits everything handed
 * out so far, the message in hand included. With `delivery: 'at-most-once'` each fetched chunk's
 * end is committed before its first message is handed out. One loop (messages or batches) reads
 * at a time; another one is refused with IllegalStateError until it has ended.
 *
 * Events: 'group.joined', 'partitions.assigned', 'partitions.revoked', 'partitions.lost'
 * ({ partitions, generation }), 'offsets.committed' ({ offsets }), 'member.state' ({ from, to }).
 */
export class Consumer<K = Buffer, V = Buffer> extends EventEmitter {
  readonly cluster: Cluster
  readonly options: ResolvedConsumerOptions
  private readonly assignment = new Assignment()
  private readonly fetcher: Fetcher
  private readonly delivery: Delivery
  private readonly link: CoordinatorLink | undefined
  private readonly commits: ConsumerCommits | undefined
  private readonly lock = new Mutex()
  private readonly assignorList
  private coordinator: ConsumerCoordinator | undefined
  private mode: 'none' | 'subscribed' | 'assigned' = 'none'
  private topics: string[] = []
  private pattern: RegExp | undefined
  private listener: RebalanceListener | undefined
  private metadataTimer: NodeJS.Timeout | undefined
  private readonly resolver: PositionResolver
  private readonly rebalance: Rebalance
  private readonly pollClock = new PollClock()
  private closing: Promise<void> | undefined
  /** Set once close() is past the group's part and closes the connections. */
  private disconnecting = false
  private readonly decoder: MessageDecoder<K, V>
  private readonly onDeserializationError: DeserializationErrorPolicy
  private runner: Runner<K, V> | undefined
  private lastPeakConcurrency = 0

  constructor(options: ConsumerOptions<K, V>) {
    super()
    this.options = resolveOptions(options)
    this.decoder = new MessageDecoder(options.keyDeserializer, options.valueDeserializer)
    const policy = options.onDeserializationError ?? 'stop'
    if (policy !== 'stop' && policy !== 'skip') throw new TypeError(`onDeserializationError must be 'stop' or 'skip', got ${String(policy)}`)
    this.onDeserializationError = policy
    this.assignorList = resolveAssignors(options.assignors)
    // Java's consumer default (allow.auto.create.topics); the broker's own setting still decides.
    this.cluster = new Cluster({ ...options, allowAutoTopicCreation: options.allowAutoTopicCreation ?? true })
    this.fetcher = new Fetcher(this.cluster, this.options, this.assignment, {
      onOffsetOutOfRange: (s, offset) => this.offsetOutOfRange(s, offset),
      onPartitionError: (s, err) => this.halt(s, err),
    })
    this.delivery = new Delivery(this.fetcher, {
      commitAhead: this.options.delivery === 'at-most-once' ? (s, offset) => this.commitAhead(s, offset) : undefined,
      onHalt: (s, err) => this.halt(s, err, false),
    })
    const groupId = this.options.groupId
    if (groupId !== undefined) {
      this.link = new CoordinatorLink(this.cluster, groupId)
      this.commits = new ConsumerCommits(this.cluster, this.link, {
        options: this.options,
        assignment: this.assignment,
        logger: this.cluster.logger,
        closing: () => this.closing !== undefined,
        coordinator: () => this.coordinator,
        subscribed: () => this.mode === 'subscribed',
        onCommitted: (offsets) => this.emit('offsets.committed', { offsets }),
      })
    }
    this.resolver = new PositionResolver(this.cluster, this.options, this.assignment, this.commits?.committer, this.fetcher, this.delivery)
    this.rebalance = new Rebalance({
      assignment: this.assignment,
      fetcher: this.fetcher,
      delivery: this.delivery,
      logger: this.cluster.logger,
      listener: () => this.listener,
      currentGeneration: () => this.coordinator?.membership.generationId,
      commitProcessed: (states, timeoutMs) => (this.options.autoCommit ? this.commitProcessed(states, timeoutMs) : Promise.resolve()),
      resolvePositions: () => void this.resolver.run(),
      isClosing: () => this.closing !== undefined,
      emit: (event, payload) => this.emit(event, payload),
    })
  }

  // --- subscription and assignment ---------------------------------------------------------

  /**
   * Joins the group for these topics (or every topic matching the pattern, checked again at
   * each metadata refresh). Resolves once the subscription is registered; the group is joined
   * in the background and messages flow once partitions are assigned.
   */
  async subscribe(topics: string | string[] | RegExp, options: SubscribeOptions = {}): Promise<void> {
    this.ensureOpen()
    if (this.mode === 'assigned') throw new IllegalStateError('subscribe() cannot be mixed with assign(); call assign([]) first')
    if (this.link === undefined) throw new IllegalStateError('subscribe() needs a groupId')
    this.listener = options.listener ?? this.listener
    if (topics instanceof RegExp) {
      this.pattern = topics
      this.topics = await matchPattern(this.cluster, topics)
    } else {
      const list = typeof topics === 'string' ? [topics] : topics
      if (list.length === 0 || list.some((t) => typeof t !== 'string' || t === '')) throw new TypeError('subscribe() needs topic names')
      this.pattern = undefined
      this.topics = [...new Set(list)]
      await this.cluster.refreshMetadata(this.topics)
    }
    this.mode = 'subscribed'
    this.pollClock.reset()
    if (this.coordinator === undefined) {
      this.coordinator = this.createCoordinator()
      this.coordinator.start()
    } else {
      this.coordinator.requestRejoin('the subscription changed')
    }
    this.startTimers()
  }

  /** The topics subscribed to (a pattern's current matches). */
  subscription(): string[] {
    return this.mode === 'subscribed' ? this.topics.slice() : []
  }

  /** Leaves the group (revoking, with auto-commit committing) and forgets the subscription. */
  async unsubscribe(): Promise<void> {
    this.ensureOpen()
    const c = this.coordinator
    if (c === undefined) return
    this.coordinator = undefined
    c.stop()
    await this.lock.run(async () => {
      const owned = this.owned()
      if (owned.length > 0) await this.rebalance.revoke(owned, c.membership.snapshot(), true, c.membership.hasGeneration ? this.options.defaultApiTimeoutMs : undefined)
    })
    await c.leave('the consumer unsubscribed', true)
    c.dispose()
    this.mode = 'none'
    this.topics = []
    this.pattern = undefined
  }

  /**
   * Consumes exactly these partitions, outside any group membership (Java's assign()). With a
   * groupId, positions start from the group's committed offsets and commit() works.
   */
  assign(partitions: readonly TopicPartition[]): void {
    this.ensureOpen()
    if (this.mode === 'subscribed') throw new IllegalStateError('assign() cannot be mixed with subscribe(); call unsubscribe() first')
    const wanted = new Map(partitions.map((p) => [tpKey(p.topic, p.partition), { topic: p.topic, partition: p.partition }]))
    const removed = this.assignment.list().filter((s) => !wanted.has(s.key))
    if (removed.length > 0) {
      if (this.options.autoCommit && this.commits !== undefined) void this.commitProcessed(removed).catch((err) => this.cluster.logger.warn({ err }, 'commit of unassigned partitions failed'))
      this.assignment.remove(removed)
      this.fetcher.purge()
    }
    this.assignment.add([...wanted.values()])
    this.mode = wanted.size > 0 ? 'assigned' : 'none'
    this.topics = [...new Set([...wanted.values()].map((p) => p.topic))]
    this.startTimers()
    void this.cluster
      .refreshMetadata(this.topics)
      .catch((err) => this.cluster.logger.warn({ err }, 'metadata for assigned partitions failed'))
      .then(() => this.resolver.run())
  }

  /** The partitions assigned now. */
  assigned(): TopicPartition[] {
    return sortPartitions(this.owned())
  }

  // --- iteration ---------------------------------------------------------------------------

  [Symbol.asyncIterator](): AsyncIterableIterator<Message<K, V>> {
    return this.messages()
  }

  /** Messages, like `for await (const m of consumer)`; aborting `signal` ends a waiting loop with its reason (Java's wakeup()). */
  messages(options: { signal?: AbortSignal } = {}): AsyncIterableIterator<Message<K, V>> {
    const raw = new DeliveryIterator<Message>(this.delivery, (d) => d.nextMessage(), () => this.coordinator?.polled(), options.signal)
    const it = this.decoder.raw ? (raw as unknown as AsyncIterableIterator<Message<K, V>>) : new DecodingIterator(raw, this.iterateHooks())
    return new ReceiveTracingIterator(it, this.cluster.clientId, this.options.groupId)
  }

  /** Batches: the next records of one partition at a time, as fetched; `signal` as for messages(). */
  batches(options: { signal?: AbortSignal } = {}): AsyncIterableIterator<Batch<K, V>> {
    const raw = new DeliveryIterator<Batch>(this.delivery, (d) => d.nextBatch(), () => this.coordinator?.polled(), options.signal)
    return this.decoder.raw ? (raw as unknown as AsyncIterableIterator<Batch<K, V>>) : new DecodingIterator(raw, this.iterateHooks())
  }

  private iterateHooks(): DecodingHooks<K, V> {
    const rewind = (topic: string, partition: number, offset: bigint): void => {
      const s = this.assignment.get(topic, partition)
      if (s === undefined) return
      s.seek(offset, s.lastEpoch)
      this.afterSeek()
    }
    return { decoder: this.decoder, policy: this.onDeserializationError, logger: this.cluster.logger, rewind }
  }

  /**
   * Runs handlers over the consumed records until stop(), the signal, close() or an error
   * ('stop' policy): each partition in offset order, up to partitionsConsumedConcurrently
   * partitions at once. Resolves when stopped; rejects with the error that stopped it. One
   * reader at a time: an iterator and run() exclude each other.
   */
  run(options: RunOptions<K, V>): Promise<void> {
    try {
      this.ensureOpen()
      if (this.runner !== undefined) throw new IllegalStateError('run() is already running: stop() it first')
      const o = this.options
      const runner = new Runner<K, V>(
        {
          options: o, logger: this.cluster.logger, backoff: this.cluster.retryBackoff, fetcher: this.fetcher, assignment: this.assignment,
          delivery: this.delivery, decoder: this.decoder, onDeserializationError: this.onDeserializationError, hasGroup: this.commits !== undefined,
          polled: () => this.coordinator?.polled(),
          commitAhead: o.delivery === 'at-most-once' ? (s, offset) => this.commitAhead(s, offset) : undefined,
          commitProcessed: () => (o.autoCommit ? this.commitProcessed(this.assignment.list()) : Promise.resolve()),
          commit: (offsets) => this.commit(offsets), halt: (s, err) => this.halt(s, err, false), pause: (tps) => this.pause(tps), resume: (tps) => this.resume(tps),
        },
        options,
      )
      this.runner = runner
      return runner.run().finally(() => {
        this.lastPeakConcurrency = runner.peakConcurrency
        if (this.runner === runner) this.runner = undefined
      })
    } catch (err) {
      return Promise.reject(err)
    }
  }

  /** Stops run(): handlers running now finish, processed offsets are committed (auto-commit); run() resolves. */
  async stop(): Promise<void> {
    const r = this.runner
    if (r === undefined) return
    r.stop()
    await r.run().catch(() => undefined)
  }

  /** The most handlers run() has had running at once (partitionsConsumedConcurrently bounds it). */
  get peakHandlerConcurrency(): number {
    return this.runner?.peakConcurrency ?? this.lastPeakConcurrency
  }

  // --- positions -----------------------------------------------------------------------------

  /** The next offset to deliver for an assigned partition (undefined while it is looked up). */
  position(tp: TopicPartition): bigint | undefined {
    const s = this.state(tp)
    return s.hasPosition ? s.position : undefined
  }

  /** Moves an assigned partition's position; the next message from it has this offset. */
  seek(target: TopicPartitionOffset): void {
    const s = this.state(target)
    if (typeof target.offset !== 'bigint' || target.offset < 0n) throw new TypeError('seek() needs a non-negative bigint offset')
    s.seek(target.offset, target.leaderEpoch ?? -1)
    // Auto-commit may now commit an offset below the last commit: the application chose it.
    s.committed = -1n
    this.afterSeek()
  }

  seekToBeginning(partitions?: readonly TopicPartition[]): Promise<void> {
    return this.seekTo(partitions, 'earliest')
  }

  seekToEnd(partitions?: readonly TopicPartition[]): Promise<void> {
    return this.seekTo(partitions, 'latest')
  }

  /**
   * Moves to the first record with a timestamp at or after `timestamp` (ms since the epoch); a
   * partition with no such record moves to its end.
   */
  seekToTimestamp(timestamp: number | bigint | Date, partitions?: readonly TopicPartition[]): Promise<void> {
    const t = timestamp instanceof Date ? BigInt(timestamp.getTime()) : BigInt(timestamp)
    if (t < 0n) throw new TypeError('seekToTimestamp() needs a timestamp >= 0')
    return this.seekTo(partitions, { timestamp: t })
  }

  private async seekTo(partitions: readonly TopicPartition[] | undefined, kind: 'earliest' | 'latest' | { timestamp: bigint }): Promise<void> {
    const states = partitions === undefined ? this.assignment.list() : partitions.map((p) => this.state(p))
    for (const s of states) {
      s.requestReset(kind)
      s.committed = -1n
    }
    this.afterSeek()
    await this.resolver.run()
  }

  private afterSeek(): void {
    this.fetcher.purge()
    this.fetcher.wake()
    this.delivery.wake()
  }

  /** Stops fetching and delivering these partitions until resume(); their positions stay. */
  pause(partitions: readonly TopicPartition[]): void {
    for (const p of partitions) {
      const s = this.state(p)
      s.paused = true
      if (s.hasPosition) s.invalidateFetches()
    }
    this.fetcher.purge()
  }

  resume(partitions: readonly TopicPartition[]): void {
    for (const p of partitions) this.state(p).paused = false
    this.fetcher.wake()
  }

  paused(): TopicPartition[] {
    return sortPartitions(this.assignment.list().filter((s) => s.paused).map((s) => s.toJSON()))
  }

  /** Record bytes fetched and waiting to be delivered (bounded by maxBufferedBytes plus one response). */
  get bufferedBytes(): number {
    return this.fetcher.bufferedBytes
  }

  /** The most record bytes ever buffered at once. */
  get peakBufferedBytes(): number {
    return this.fetcher.peakBufferedBytes
  }

  /** The group generation this member is in, if any. */
  get generation(): GroupGeneration | undefined {
    const m = this.coordinator?.membership
    return m === undefined || !m.hasGeneration ? undefined : m.snapshot()
  }

  /** Java's groupMetadata(): this member's group, generation and ids, for sendOffsetsToTransaction() (KIP-447). */
  groupMetadata(): ConsumerGroupMetadata {
    return groupMetadataOf(this.options.groupId, this.options.groupInstanceId, this.mode === 'subscribed' ? this.coordinator?.membership : undefined)
  }

  private state(tp: TopicPartition): PartitionState {
    const s = this.assignment.get(tp.topic, tp.partition)
    if (s === undefined) throw new IllegalStateError(`${tp.topic}-${tp.partition} is not assigned to this consumer`)
    return s
  }

  private owned(): TopicPartition[] {
    return this.assignment.list().map((s) => s.toJSON())
  }

  // --- offsets -------------------------------------------------------------------------------

  /**
   * Commits offsets to the group: by default the position of every assigned partition (all
   * messages handed out so far, as Java's commitSync()); or exactly the offsets given (each the
   * next offset to consume).
   */
  async commit(offsets?: readonly TopicPartitionOffset[]): Promise<void> {
    this.ensureConnected()
    const commits = this.commits
    if (commits === undefined) throw new IllegalStateError('commit() needs a groupId')
    await commits.commit(offsets !== undefined ? offsets.map((o) => ({ ...o })) : () => this.positions())
  }

  /**
   * Java's commitAsync(): the offsets (default: every assigned partition's position, taken now)
   * are committed in call order after any commit already asked for, so a later commit always
   * wins. The promise gives the offsets committed; with a callback, errors go to it instead and
   * the promise resolves either way (as Java's OffsetCommitCallback).
   */
  commitAsync(offsets?: readonly TopicPartitionOffset[], callback?: (error: Error | null, offsets: TopicPartitionOffset[]) => void): Promise<TopicPartitionOffset[]> {
    const commits = this.commits
    let p: Promise<TopicPartitionOffset[]>
    if (commits === undefined) p = Promise.reject(new IllegalStateError('commitAsync() needs a groupId'))
    else if (this.disconnecting) p = Promise.reject(new ClientClosedError('consumer'))
    else p = commits.commit(offsets !== undefined ? offsets.map((o) => ({ ...o })) : this.positions())
    if (callback === undefined) return p
    return p.then(
      (done) => (callback(null, done), done),
      (err: unknown) => (callback(err instanceof Error ? err : new Error(String(err)), []), []),
    )
  }

  /** Java's beginningOffsets(): each partition's log start offset. */
  beginningOffsets(partitions: readonly TopicPartition[], options?: LookupOptions): Promise<TopicPartitionOffset[]> {
    return edgeOffsets(this.cluster, this.options, partitions, 'earliest', options)
  }

  /** Java's endOffsets(): the high watermark, or the last stable offset under read_committed. */
  endOffsets(partitions: readonly TopicPartition[], options?: LookupOptions): Promise<TopicPartitionOffset[]> {
    return edgeOffsets(this.cluster, this.options, partitions, 'latest', options)
  }

  /** Java's offsetsForTimes(): per partition the first offset at or after its timestamp (null: none). */
  offsetsForTimes(queries: readonly (TopicPartition & { timestamp: number | bigint | Date })[], options?: LookupOptions): Promise<OffsetForTime[]> {
    return offsetsForTimes(this.cluster, this.options, queries, options)
  }

  /**
   * Java's currentLag(): records between the position and the end the last fetch response gave
   * (high watermark, or LSO under read_committed), without a request; undefined while unknown.
   */
  lag(tp: TopicPartition): bigint | undefined {
    return lagOf(this.state(tp), this.options.isolationLevel)
  }

  /** Java's enforceRebalance(): asks the group to rebalance (the member rejoins at once). */
  enforceRebalance(reason = 'the application asked for a rebalance'): void {
    this.ensureOpen()
    const c = this.coordinator
    if (c === undefined || this.mode !== 'subscribed') throw new IllegalStateError('enforceRebalance() needs a subscription (subscribe() with a groupId)')
    c.requestRejoin(reason)
  }

  /** The group's committed offsets for partitions (-1n where none is committed). */
  async committed(partitions: readonly TopicPartition[]): Promise<TopicPartitionOffset[]> {
    this.ensureConnected()
    if (this.commits === undefined) throw new IllegalStateError('committed() needs a groupId')
    return this.commits.committed(partitions)
  }

  /** Every committable partition's position: all messages handed out so far (commitSync()). */
  private positions(): TopicPartitionOffset[] {
    return this.assignment.list().filter((s) => this.rebalance.committable(s)).map((s) => ({ topic: s.topic, partition: s.partition, offset: s.position, leaderEpoch: s.lastEpoch }))
  }

  private commitProcessed(states: readonly PartitionState[], timeoutMs?: number): Promise<void> {
    return this.commits?.commitProcessed(states, timeoutMs) ?? Promise.resolve()
  }

  private commitAhead(s: PartitionState, offset: bigint): Promise<void> {
    return this.commits?.commitAhead(s, offset) ?? Promise.resolve()
  }

  // --- position problems -----------------------------------------------------------------------

  private offsetOutOfRange(s: PartitionState, offset: bigint): void {
    const reset = this.options.autoOffsetReset
    this.cluster.logger.info({ topic: s.topic, partition: s.partition, offset, reset }, 'fetch offset out of range')
    if (reset === 'none') {
      this.halt(s, new OffsetOutOfRangeError(s.topic, s.partition, offset))
      return
    }
    s.requestReset(reset)
    this.fetcher.purge()
    void this.resolver.run()
  }

  private halt(s: PartitionState, error: unknown, notify = true): void {
    s.halted = true
    s.invalidateFetches()
    this.fetcher.purge()
    this.cluster.logger.warn({ err: error, topic: s.topic, partition: s.partition }, 'partition stopped: seek it to go on')
    if (notify) this.delivery.fail(error instanceof Error ? error : new Error(String(error)))
  }

  // --- the group -------------------------------------------------------------------------------

  private createCoordinator(): ConsumerCoordinator {
    return new ConsumerCoordinator(this.cluster, this.link!, this.options, this.assignorList, {
      topics: () => this.topics,
      owned: () => this.owned(),
      // Java bounds the commit before a rebalance by the rebalance timeout (onJoinPrepare).
      revoke: (partitions, generation) => this.lock.run(() => this.rebalance.revoke(partitions, generation, true, this.options.rebalanceTimeoutMs)),
      lose: (partitions, generation) => {
        // A revocation waiting for the application to finish a message must not hold this up.
        this.delivery.abandon()
        return this.lock.run(() => this.rebalance.lose(partitions, generation))
      },
      assign: (partitions, generation) => this.lock.run(() => this.rebalance.assign(partitions, generation)),
      partitionCounts: (topics) => partitionCounts(this.cluster, topics),
      pollIdleMs: () => this.pollClock.idleMs(this.delivery),
      onFatal: (error) => this.onGroupFatal(error),
      onStateChange: (from, to) => this.emit('member.state', { from, to }),
      onJoined: (info) => this.emit('group.joined', info),
    })
  }

  private onGroupFatal(error: Error): void {
    this.delivery.fail(error)
    const owned = this.owned()
    if (owned.length > 0) void this.lock.run(() => this.rebalance.lose(owned, this.coordinator?.membership.snapshot() ?? NO_GENERATION))
  }

  /** Auto-commit, and the metadata check that notices new partitions or newly matching topics. */
  private startTimers(): void {
    this.commits?.startAutoCommit()
    if (this.metadataTimer === undefined && this.mode === 'subscribed') {
      this.metadataTimer = setInterval(() => void this.checkMetadata(), this.cluster.metadataMaxAgeMs)
      this.metadataTimer.unref()
    }
  }

  private async checkMetadata(): Promise<void> {
    const c = this.coordinator
    if (c === undefined || this.mode !== 'subscribed' || this.closing !== undefined) return
    try {
      const change = await subscriptionChange(this.cluster, this.pattern, this.topics, c.assignedTopicCounts)
      if (change === undefined) return
      if (change.topics !== undefined) this.topics = change.topics
      c.requestRejoin(change.reason)
    } catch (err) {
      this.cluster.logger.debug({ err }, 'metadata check failed')
    }
  }

  // --- closing ---------------------------------------------------------------------------------

  /**
   * Stops, in Java's order: commits processed offsets (auto-commit), revokes the partitions
   * (listener), leaves the group, closes the connections; all within `timeoutMs` (30 s).
   * Iterators end; a message in hand counts as unprocessed.
   */
  close(options: CloseOptions = {}): Promise<void> {
    if (this.closing !== undefined) return this.closing
    const timeoutMs = options.timeoutMs ?? DEFAULT_CLOSE_TIMEOUT_MS
    if (typeof timeoutMs !== 'number' || !(timeoutMs >= 0)) return Promise.reject(new TypeError(`close() needs timeoutMs >= 0, got ${String(timeoutMs)}`))
    this.closing = this.shutdown(options, timeoutMs)
    return this.closing
  }

  private async shutdown(options: CloseOptions, timeoutMs: number): Promise<void> {
    const deadline = new Deadline(timeoutMs)
    this.commits?.stopAutoCommit()
    if (this.metadataTimer !== undefined) clearInterval(this.metadataTimer)
    this.delivery.abandon()
    this.delivery.closed = true
    this.delivery.wake()
    // run() ends: handlers running now finish before the revocation's commit (it waits for them).
    this.runner?.stop()
    this.resolver.stopped = true
    // Java bounds the coordinator's close (commit, listener, LeaveGroup) by min(timeout, request.timeout.ms).
    const group = new Deadline(Math.min(timeoutMs, this.options.requestTimeoutMs))
    const runner = this.runner
    try {
      // Handlers running now finish first, so the commit below includes them.
      if (runner !== undefined) await settlesWithin(runner.run().catch(() => undefined), group.remaining())
      if (!(await settlesWithin(this.leaveOnClose(options, group), group.remaining()))) {
        this.cluster.logger.warn({ groupId: this.options.groupId, timeoutMs }, 'close: committing and leaving the group did not finish in time')
      }
    } finally {
      this.disconnecting = true
      this.coordinator?.dispose()
      await settlesWithin(this.fetcher.stop(), deadline.remaining())
      if (!(await settlesWithin(this.cluster.close(), deadline.remaining()))) this.cluster.logger.warn({ timeoutMs }, 'close: connections still busy at the deadline')
    }
  }

  private async leaveOnClose(options: CloseOptions, group: Deadline): Promise<void> {
    const commit = options.commit !== false
    const c = this.coordinator
    if (c !== undefined) {
      c.stop()
      await this.lock.run(async () => {
        const owned = this.owned()
        if (owned.length === 0) return
        if (c.membership.hasGeneration) await this.rebalance.revoke(owned, c.membership.snapshot(), false, commit ? group.remaining() : undefined)
        else await this.rebalance.lose(owned, c.membership.snapshot())
      })
      if (options.leaveGroup ?? !c.isStatic) await c.leave('the consumer is closing', true, Math.max(1, group.remaining()))
    } else if (commit && this.options.autoCommit && this.commits !== undefined && this.assignment.size > 0) {
      await this.commitProcessed(this.assignment.list(), group.remaining()).catch((err) => this.cluster.logger.warn({ err }, 'commit on close failed'))
    }
  }

  private ensureOpen(): void {
    if (this.closing !== undefined) throw new ClientClosedError('consumer')
  }

  /** Commits and offset reads also work in a revocation listener that close() runs, as in Java. */
  private ensureConnected(): void {
    if (this.disconnecting) throw new ClientClosedError('consumer')
  }
}
