import { ErrorCodes } from '@tidelog/protocol'
import type { OffsetsStore } from '../groups/offsets-store.js'
import type { Logger } from '../logger.js'
import type { ProducerIdAllocator } from '../producer-ids.js'
import type { TopicRegistry } from '../topics.js'
import { COORDINATOR_EPOCH, type MarkerLog, type TxnMarker, writeMarker } from './markers.js'
import { IllegalTxnTransitionError, TxnState, canTransition, isIdle, isPreparing } from './state.js'
import { type StoredTxn, type TransactionStore, copyTxn } from './store.js'

export interface TxnCoordinatorOptions {
  /** Kafka's transaction.max.timeout.ms. */
  maxTimeoutMs: number
  /** Kafka's transactional.id.expiration.ms. */
  idExpirationMs: number
  /** Kafka's transaction.abort.timed.out.transaction.cleanup.interval.ms. */
  abortIntervalMs: number
  /** Kafka's transaction.remove.expired.transaction.cleanup.interval.ms. */
  removeIntervalMs: number
}

/** The largest epoch a producer may use: at it, the next bump takes a new producer id (Kafka's isEpochExhausted). */
const MAX_EPOCH = 32767
const NO_PRODUCER_ID = -1n
/** How soon markers that could not be written (a storage error) are tried again. */
const MARKER_RETRY_MS = 1000

export type InitResult = { errorCode: number; producerId: bigint; producerEpoch: number }
export type EndResult = InitResult

export interface TopicPartitions {
  name: string
  partitions: readonly number[]
}

/** A transactional id's state as DescribeTransactions and ListTransactions show it. */
export interface TxnView {
  transactionalId: string
  state: TxnState
  producerId: bigint
  producerEpoch: number
  timeoutMs: number
  startTimestamp: number
  partitions: ReadonlyMap<string, ReadonlySet<number>>
}

/**
 * The transaction coordinator of a single broker, which coordinates every
 * transactional id: Kafka's TransactionCoordinator and TransactionStateManager
 * (KIP-98), with KIP-360 producer recovery, KIP-447 fencing by the group, and
 * KIP-890 (verification of transactional produces; transaction version 2,
 * where Produce adds partitions and every EndTxn bumps the epoch). Every state
 * change goes through `transition`, checked against the one table in state.ts,
 * and is in the transaction log before anything acts on it. Markers are
 * written in the same turn as the prepare record, so a client rarely sees
 * CONCURRENT_TRANSACTIONS; a crash between the two completes the transaction at
 * the next start.
 */
export class TransactionCoordinator {
  private readonly txns = new Map<string, StoredTxn>()
  /** Ids with an operation waiting on a producer id (Kafka's pendingState): others get CONCURRENT_TRANSACTIONS. */
  private readonly busy = new Set<string>()
  private readonly timers: NodeJS.Timeout[] = []
  private retryTimer: NodeJS.Timeout | undefined
  private closed = false

  constructor(
    private readonly store: TransactionStore,
    private readonly producerIds: ProducerIdAllocator,
    private readonly topics: TopicRegistry,
    private readonly offsets: OffsetsStore,
    private readonly logger: Logger,
    private readonly opts: TxnCoordinatorOptions,
  ) {
    for (const [id, t] of store.all()) this.txns.set(id, copyTxn(t))
  }

  /**
   * After a restart: transactions that were preparing complete (their markers
   * are written again; a marker already there is written twice, which readers
   * treat as one), a fence in progress becomes its abort, and open
   * transactions are left for the timeout check to abort. Then the timers start.
   */
  start(): void {
    for (const [id, t] of this.txns) {
      if (t.state === TxnState.PrepareEpochFence) {
        const next = copyTxn(t)
        this.transition(id, next, TxnState.PrepareAbort, Date.now())
        this.store.put(id, next)
        this.txns.set(id, next)
        this.completeMarkers(id, next)
      } else if (isPreparing(t.state)) {
        this.logger.info(`transactional id ${id}: completing its ${t.state} after restart`)
        this.completeMarkers(id, t)
      }
    }
    const abort = setInterval(() => this.abortTimedOut(), this.opts.abortIntervalMs)
    const expire = setInterval(() => this.removeExpired(), this.opts.removeIntervalMs)
    abort.unref()
    expire.unref()
    this.timers.push(abort, expire)
  }

  close(): void {
    this.closed = true
    for (const t of this.timers) clearInterval(t)
    if (this.retryTimer !== undefined) clearTimeout(this.retryTimer)
  }

  get(id: string): TxnView | undefined {
    const t = this.txns.get(id)
    return t === undefined ? undefined : view(id, t)
  }

  list(): TxnView[] {
    return [...this.txns].map(([id, t]) => view(id, t))
  }

  // --- InitProducerId ---------------------------------------------------------------------

  async initProducerId(id: string, timeoutMs: number, expected: { producerId: bigint; producerEpoch: number }): Promise<InitResult> {
    const fail = (errorCode: number): InitResult => ({ errorCode, producerId: -1n, producerEpoch: -1 })
    if (id === '') return fail(ErrorCodes.INVALID_REQUEST)
    if (timeoutMs <= 0 || timeoutMs > this.opts.maxTimeoutMs) return fail(ErrorCodes.INVALID_TRANSACTION_TIMEOUT)
    if (this.closed) return fail(ErrorCodes.COORDINATOR_NOT_AVAILABLE)
    if (this.busy.has(id)) return fail(ErrorCodes.CONCURRENT_TRANSACTIONS)
    const now = Date.now()
    let t = this.txns.get(id)
    if (t === undefined) {
      const producerId = await this.allocate(id)
      if (typeof producerId === 'number') return fail(producerId)
      if (this.txns.has(id)) return fail(ErrorCodes.CONCURRENT_TRANSACTIONS)
      t = {
        producerId,
        prevProducerId: NO_PRODUCER_ID,
        nextProducerId: NO_PRODUCER_ID,
        producerEpoch: 0,
        lastProducerEpoch: -1,
        timeoutMs,
        state: TxnState.Empty,
        partitions: new Map(),
        groups: new Set(),
        startTimestamp: -1,
        lastUpdateTimestamp: now,
        clientTransactionVersion: 1,
      }
      const created = t
      const error = await this.persist(id, created)
      return error !== ErrorCodes.NONE ? fail(error) : { errorCode: ErrorCodes.NONE, producerId: created.producerId, producerEpoch: created.producerEpoch }
    }
    const recovering = expected.producerId !== NO_PRODUCER_ID
    if (recovering) {
      // KIP-360: the producer names the id and epoch it last had; a retry of a bump that already happened gets the bumped ones.
      const isCurrent = expected.producerId === t.producerId && expected.producerEpoch === t.producerEpoch
      const isRetry =
        expected.producerEpoch === t.lastProducerEpoch && (expected.producerId === t.producerId || expected.producerId === t.prevProducerId)
      if (isRetry && isIdle(t.state)) return { errorCode: ErrorCodes.NONE, producerId: t.producerId, producerEpoch: t.producerEpoch }
      if (!isCurrent) return fail(ErrorCodes.PRODUCER_FENCED)
    }
    switch (t.state) {
      case TxnState.PrepareCommit:
      case TxnState.PrepareAbort:
      case TxnState.PrepareEpochFence:
        return fail(ErrorCodes.CONCURRENT_TRANSACTIONS)
      case TxnState.Ongoing: {
        // The new producer fences the old: its open transaction is aborted under a bumped epoch, and the
        // caller retries (Kafka answers CONCURRENT_TRANSACTIONS while the abort completes).
        const r = await this.abortOpen(id, t, now)
        return fail(r === ErrorCodes.NONE ? ErrorCodes.CONCURRENT_TRANSACTIONS : r)
      }
      case TxnState.Dead:
        return fail(ErrorCodes.CONCURRENT_TRANSACTIONS)
      default:
        break
    }
    const next = copyTxn(t)
    if (t.producerEpoch >= MAX_EPOCH - 1) {
      const producerId = await this.allocate(id)
      if (typeof producerId === 'number') return fail(producerId)
      if (this.txns.get(id) !== t) return fail(ErrorCodes.CONCURRENT_TRANSACTIONS)
      next.prevProducerId = t.producerId
      next.producerId = producerId
      next.producerEpoch = 0
      next.lastProducerEpoch = t.producerEpoch
    } else {
      next.lastProducerEpoch = t.producerEpoch
      next.producerEpoch = t.producerEpoch + 1
    }
    next.timeoutMs = timeoutMs
    next.lastUpdateTimestamp = now
    this.transition(id, next, TxnState.Empty, now)
    const error = await this.persist(id, next)
    return error !== ErrorCodes.NONE ? fail(error) : { errorCode: ErrorCodes.NONE, producerId: next.producerId, producerEpoch: next.producerEpoch }
  }

  // --- AddPartitionsToTxn, AddOffsetsToTxn, and the implicit adds of TV2 -------------------------

  /** The error Kafka's checks give a request naming this producer, or NONE. */
  private checkProducer(t: StoredTxn | undefined, producerId: bigint, producerEpoch: number): number {
    if (t === undefined || t.producerId !== producerId) return ErrorCodes.INVALID_PRODUCER_ID_MAPPING
    if (t.producerEpoch !== producerEpoch) return ErrorCodes.PRODUCER_FENCED
    if (isPreparing(t.state) || t.state === TxnState.PrepareEpochFence || t.state === TxnState.Dead) return ErrorCodes.CONCURRENT_TRANSACTIONS
    return ErrorCodes.NONE
  }

  /**
   * Adds partitions and/or a group to the transaction, beginning it if none is
   * open. `version` 2 when the add was implicit (Produce v12, TxnOffsetCommit v5).
   */
  async add(id: string, producerId: bigint, producerEpoch: number, partitions: readonly TopicPartitions[], group: string | null, version: number): Promise<number> {
    const error = this.addNow(id, producerId, producerEpoch, partitions, group, version)
    if (error !== ErrorCodes.NONE) return error
    return this.durable(id)
  }

  /**
   * True while an add for `id` would be answered CONCURRENT_TRANSACTIONS
   * because its last transaction is still completing (markers being written,
   * an epoch being fenced): what Produce v12 waits out (KIP-890).
   */
  completing(id: string): boolean {
    if (this.busy.has(id)) return true
    const t = this.txns.get(id)
    return t !== undefined && (isPreparing(t.state) || t.state === TxnState.PrepareEpochFence)
  }

  /**
   * The add, applied and appended to the transaction log synchronously (a
   * Produce must append its batches before its first await); await
   * `durable()` before answering.
   */
  addNow(id: string, producerId: bigint, producerEpoch: number, partitions: readonly TopicPartitions[], group: string | null, version: number): number {
    const t = this.txns.get(id)
    if (this.busy.has(id)) return ErrorCodes.CONCURRENT_TRANSACTIONS
    const error = this.checkProducer(t, producerId, producerEpoch)
    if (error !== ErrorCodes.NONE) return error
    const missing = partitions.some((tp) => tp.partitions.some((p) => t!.partitions.get(tp.name)?.has(p) !== true))
    if (t!.state === TxnState.Ongoing && !missing && (group === null || t!.groups.has(group))) return ErrorCodes.NONE
    const now = Date.now()
    const next = copyTxn(t!)
    if (next.state !== TxnState.Ongoing) {
      next.startTimestamp = now
      next.clientTransactionVersion = version
    }
    for (const tp of partitions) {
      let set = next.partitions.get(tp.name)
      if (set === undefined) next.partitions.set(tp.name, (set = new Set()))
      for (const p of tp.partitions) set.add(p)
    }
    if (group !== null) next.groups.add(group)
    this.transition(id, next, TxnState.Ongoing, now)
    try {
      this.store.put(id, next)
    } catch (err) {
      this.logger.error(`transactional id ${id}: cannot write the transaction log: ${(err as Error).message}`)
      return ErrorCodes.COORDINATOR_NOT_AVAILABLE
    }
    this.txns.set(id, next)
    return ErrorCodes.NONE
  }

  /** NONE once the transaction log is as durable as the flush policy asks. */
  async durable(id: string): Promise<number> {
    try {
      await this.store.durable()
      return ErrorCodes.NONE
    } catch (err) {
      this.logger.error(`transactional id ${id}: fsync of the transaction log failed: ${(err as Error).message}`)
      return ErrorCodes.COORDINATOR_NOT_AVAILABLE
    }
  }

  /**
   * KIP-890 part 1: one error per partition for a transactional Produce <= 11
   * (or AddPartitionsToTxn v4+ verifyOnly): NONE when it is in the open
   * transaction of this producer.
   */
  verify(id: string, producerId: bigint, producerEpoch: number, topic: string, partition: number): number {
    const t = this.txns.get(id)
    const error = this.busy.has(id) ? ErrorCodes.CONCURRENT_TRANSACTIONS : this.checkProducer(t, producerId, producerEpoch)
    if (error !== ErrorCodes.NONE) return error
    // Kafka 3.8+ (KIP-890): TRANSACTION_ABORTABLE, which callers map down for old request versions (abortableFor).
    return t!.state === TxnState.Ongoing && t!.partitions.get(topic)?.has(partition) === true ? ErrorCodes.NONE : ErrorCodes.TRANSACTION_ABORTABLE
  }

  /** TV1 TxnOffsetCommit: the group must have been added by AddOffsetsToTxn (its __consumer_offsets partition verified, in Kafka). */
  verifyGroup(id: string, producerId: bigint, producerEpoch: number, group: string): number {
    const t = this.txns.get(id)
    const error = this.busy.has(id) ? ErrorCodes.CONCURRENT_TRANSACTIONS : this.checkProducer(t, producerId, producerEpoch)
    if (error !== ErrorCodes.NONE) return error
    return t!.state === TxnState.Ongoing && t!.groups.has(group) ? ErrorCodes.NONE : ErrorCodes.TRANSACTION_ABORTABLE
  }

  // --- EndTxn ----------------------------------------------------------------------------------

  /** EndTxn; `tv2` when the client sent v5 (KIP-890 part 2: the epoch is bumped at every end and returned). */
  async endTxn(id: string, producerId: bigint, producerEpoch: number, commit: boolean, tv2: boolean): Promise<EndResult> {
    const t = this.txns.get(id)
    const fail = (errorCode: number): EndResult => ({ errorCode, producerId: -1n, producerEpoch: -1 })
    const ok = (s: StoredTxn): EndResult => ({ errorCode: ErrorCodes.NONE, producerId: s.producerId, producerEpoch: s.producerEpoch })
    if (t === undefined) return fail(ErrorCodes.INVALID_PRODUCER_ID_MAPPING)
    if (this.busy.has(id)) return fail(ErrorCodes.CONCURRENT_TRANSACTIONS)
    const wanted = commit ? TxnState.CompleteCommit : TxnState.CompleteAbort
    const preparing = commit ? TxnState.PrepareCommit : TxnState.PrepareAbort
    if (!tv2) {
      if (t.producerId !== producerId) return fail(ErrorCodes.INVALID_PRODUCER_ID_MAPPING)
      if (t.producerEpoch !== producerEpoch) return fail(ErrorCodes.PRODUCER_FENCED)
      if (t.state === TxnState.Ongoing) return this.end(id, t, commit, false)
      // A retry of the end that already happened is answered as it was; the other end is a wrong transition.
      if (t.state === wanted) return ok(t)
      if (t.state === preparing || t.state === TxnState.PrepareEpochFence) return fail(ErrorCodes.CONCURRENT_TRANSACTIONS)
      return fail(ErrorCodes.INVALID_TXN_STATE)
    }
    const isRetry = producerEpoch === t.lastProducerEpoch && (producerId === t.producerId || producerId === t.prevProducerId) && t.state !== TxnState.Ongoing
    if (producerId !== t.producerId && !isRetry) return fail(ErrorCodes.INVALID_PRODUCER_ID_MAPPING)
    if (producerEpoch !== t.producerEpoch && !isRetry) return fail(ErrorCodes.PRODUCER_FENCED)
    switch (t.state) {
      case TxnState.Ongoing:
        return this.end(id, t, commit, true)
      case TxnState.PrepareCommit:
      case TxnState.PrepareAbort:
        return fail(t.state === preparing && isRetry ? ErrorCodes.CONCURRENT_TRANSACTIONS : ErrorCodes.INVALID_TXN_STATE)
      case TxnState.CompleteCommit:
      case TxnState.CompleteAbort:
      case TxnState.Empty:
        if (isRetry && t.state === wanted) return ok(t)
        // KIP-890: an abort with nothing open still bumps the epoch, fencing whatever the client lost track of.
        if (!commit && !isRetry) return this.end(id, t, false, true)
        return fail(ErrorCodes.INVALID_TXN_STATE)
      default:
        return fail(ErrorCodes.CONCURRENT_TRANSACTIONS)
    }
  }

  /** Prepare, markers, complete: the end of a transaction, whoever asked for it. */
  private async end(id: string, t: StoredTxn, commit: boolean, bump: boolean): Promise<EndResult> {
    const now = Date.now()
    const next = copyTxn(t)
    if (bump) {
      if (t.producerEpoch >= MAX_EPOCH - 1) {
        // The markers take the last epoch; the client continues under a new producer id from epoch 0.
        const producerId = await this.allocate(id)
        if (typeof producerId === 'number') return { errorCode: producerId, producerId: -1n, producerEpoch: -1 }
        if (this.txns.get(id) !== t) return { errorCode: ErrorCodes.CONCURRENT_TRANSACTIONS, producerId: -1n, producerEpoch: -1 }
        next.nextProducerId = producerId
      }
      next.lastProducerEpoch = t.producerEpoch
      next.producerEpoch = t.producerEpoch + 1
      next.clientTransactionVersion = 2
    }
    next.lastUpdateTimestamp = now
    this.transition(id, next, commit ? TxnState.PrepareCommit : TxnState.PrepareAbort, now)
    try {
      this.store.put(id, next)
    } catch (err) {
      this.logger.error(`transactional id ${id}: cannot write the transaction log: ${(err as Error).message}`)
      return { errorCode: ErrorCodes.COORDINATOR_NOT_AVAILABLE, producerId: -1n, producerEpoch: -1 }
    }
    this.txns.set(id, next)
    const flushes = this.completeMarkers(id, next)
    try {
      await Promise.all([this.store.durable(), ...flushes])
    } catch (err) {
      this.logger.error(`transactional id ${id}: fsync failed: ${(err as Error).message}`)
      return { errorCode: ErrorCodes.COORDINATOR_NOT_AVAILABLE, producerId: -1n, producerEpoch: -1 }
    }
    const now2 = this.txns.get(id)!
    return { errorCode: ErrorCodes.NONE, producerId: now2.producerId, producerEpoch: now2.producerEpoch }
  }

  /**
   * Writes the markers of a prepared transaction into each partition and ends
   * its groups' pending offsets, then records Complete*. If a partition's log
   * cannot take its marker, the transaction stays prepared and is retried.
   * Returns the fsyncs the flush policy asks for.
   */
  private completeMarkers(id: string, t: StoredTxn): Promise<void>[] {
    const commit = t.state === TxnState.PrepareCommit
    const marker: TxnMarker = {
      producerId: t.producerId,
      producerEpoch: t.producerEpoch,
      commit,
      coordinatorEpoch: COORDINATOR_EPOCH,
      transactionVersion: t.clientTransactionVersion,
    }
    const toFlush: MarkerLog[] = []
    const left = new Map<string, Set<number>>()
    for (const [topic, parts] of t.partitions) {
      for (const p of parts) {
        const r = writeMarker(this.topics, topic, p, marker, toFlush)
        if (r.errorCode === ErrorCodes.KAFKA_STORAGE_ERROR) {
          let s = left.get(topic)
          if (s === undefined) left.set(topic, (s = new Set()))
          s.add(p)
        } else if (r.errorCode !== ErrorCodes.NONE) {
          this.logger.warn(`transactional id ${id}: no marker for ${topic}-${p}: ${r.message ?? r.errorCode}`)
        }
      }
    }
    const flushes = toFlush.map((l) => l.flush())
    const groupsLeft = new Set<string>()
    for (const g of t.groups) {
      try {
        this.offsets.completePending(g, t.producerId, commit)
      } catch (err) {
        this.logger.error(`transactional id ${id}: cannot end the offsets of group ${g}: ${(err as Error).message}`)
        groupsLeft.add(g)
      }
    }
    const next = copyTxn(t)
    if (left.size > 0 || groupsLeft.size > 0) {
      // Only what is still owed is retried; the prepare record stays as written.
      next.partitions = left
      next.groups = groupsLeft
      this.txns.set(id, next)
      this.scheduleRetry()
      return flushes
    }
    const now = Date.now()
    next.partitions = new Map()
    next.groups = new Set()
    next.startTimestamp = -1
    next.lastUpdateTimestamp = now
    if (next.nextProducerId !== NO_PRODUCER_ID) {
      next.prevProducerId = next.producerId
      next.producerId = next.nextProducerId
      next.nextProducerId = NO_PRODUCER_ID
      next.producerEpoch = 0
    }
    this.transition(id, next, commit ? TxnState.CompleteCommit : TxnState.CompleteAbort, now)
    try {
      this.store.put(id, next)
      this.txns.set(id, next)
    } catch (err) {
      this.logger.error(`transactional id ${id}: cannot record its completion: ${(err as Error).message}`)
      this.scheduleRetry()
    }
    return flushes
  }

  private scheduleRetry(): void {
    if (this.retryTimer !== undefined || this.closed) return
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined
      for (const [id, t] of this.txns) if (isPreparing(t.state)) this.completeMarkers(id, t)
    }, MARKER_RETRY_MS)
    this.retryTimer.unref()
  }

  /** Aborts an open transaction from the coordinator's side (fencing InitProducerId, timeout). */
  private async abortOpen(id: string, t: StoredTxn, now: number): Promise<number> {
    if (t.clientTransactionVersion >= 2) return (await this.end(id, t, false, true)).errorCode
    // TV1: the epoch is bumped first (PrepareEpochFence), so the markers fence the old producer in every partition.
    const fenced = copyTxn(t)
    if (t.producerEpoch < MAX_EPOCH) {
      fenced.lastProducerEpoch = t.producerEpoch
      fenced.producerEpoch = t.producerEpoch + 1
    }
    fenced.lastUpdateTimestamp = now
    this.transition(id, fenced, TxnState.PrepareEpochFence, now)
    try {
      this.store.put(id, fenced)
    } catch (err) {
      this.logger.error(`transactional id ${id}: cannot write the transaction log: ${(err as Error).message}`)
      return ErrorCodes.COORDINATOR_NOT_AVAILABLE
    }
    this.txns.set(id, fenced)
    return (await this.end(id, fenced, false, false)).errorCode
  }

  // --- timers --------------------------------------------------------------------------------------

  /** Aborts every open transaction past its timeout; returns how many (tests call it directly). */
  abortTimedOut(now = Date.now()): number {
    let n = 0
    for (const [id, t] of [...this.txns]) {
      if (t.state !== TxnState.Ongoing || this.busy.has(id) || t.startTimestamp < 0 || now - t.startTimestamp <= t.timeoutMs) continue
      n++
      this.logger.info(`transactional id ${id}: aborting the transaction open for ${now - t.startTimestamp} ms (timeout ${t.timeoutMs} ms)`)
      this.abortOpen(id, t, now).catch((err: unknown) => this.logger.error(`transactional id ${id}: timeout abort failed: ${String(err)}`))
    }
    return n
  }

  /** Forgets transactional ids idle for transactional.id.expiration.ms (Kafka: -> Dead, then a tombstone). */
  removeExpired(now = Date.now()): number {
    let n = 0
    for (const [id, t] of [...this.txns]) {
      if (!isIdle(t.state) || this.busy.has(id) || now - t.lastUpdateTimestamp < this.opts.idExpirationMs) continue
      if (!canTransition(t.state, TxnState.Dead)) continue
      try {
        this.store.remove(id)
      } catch (err) {
        this.logger.error(`transactional id ${id}: cannot expire: ${(err as Error).message}`)
        continue
      }
      this.txns.delete(id)
      n++
    }
    if (n > 0) this.logger.info(`expired ${n} transactional id(s)`)
    return n
  }

  // --- internals -----------------------------------------------------------------------------------

  /** Moves `t` (a copy not yet stored) to `to`, if the table allows it; the caller stores it. */
  private transition(id: string, t: StoredTxn, to: TxnState, now: number): void {
    if (!canTransition(t.state, to)) throw new IllegalTxnTransitionError(id, t.state, to)
    t.state = to
    t.lastUpdateTimestamp = now
  }

  /** Stores `t` as the id's state; NONE once it is as durable as the flush policy asks. */
  private async persist(id: string, t: StoredTxn): Promise<number> {
    try {
      this.store.put(id, t)
    } catch (err) {
      this.logger.error(`transactional id ${id}: cannot write the transaction log: ${(err as Error).message}`)
      return ErrorCodes.COORDINATOR_NOT_AVAILABLE
    }
    this.txns.set(id, t)
    return this.durable(id)
  }

  private async allocate(id: string): Promise<bigint | number> {
    this.busy.add(id)
    try {
      return BigInt(await this.producerIds.allocate())
    } catch {
      return ErrorCodes.COORDINATOR_NOT_AVAILABLE
    } finally {
      this.busy.delete(id)
    }
  }
}

function view(id: string, t: StoredTxn): TxnView {
  return {
    transactionalId: id,
    state: t.state,
    producerId: t.producerId,
    producerEpoch: t.producerEpoch,
    timeoutMs: t.timeoutMs,
    startTimestamp: t.startTimestamp,
    partitions: t.partitions,
  }
}
