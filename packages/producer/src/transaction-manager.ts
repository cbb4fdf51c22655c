import { ClientClosedError, ExponentialBackoff, isRetriable, retry, type Cluster, type Connection, type CoordinatorType } from '@tidelog/client'
import {
  AddOffsetsToTxn,
  AddPartitionsToTxn,
  EndTxn,
  ErrorCodes,
  InitProducerId,
  Produce,
  ProtocolError,
  TxnOffsetCommit,
  type ApiDefinition,
} from '@tidelog/protocol'
import type { PartitionQueue } from './accumulator.js'
import { InvalidTxnStateError, TransactionAbortableError, TransactionAbortedError, TransactionTimeoutError } from './errors.js'
import type { Idempotence } from './idempotence.js'
import { within } from './within.js'
import { isFatalForBatch, isFatalForTransactions, isTransactionAbortable, needsEpochBump, txnError, TxnStateMachine, type TxnState } from './transaction-state.js'

/** Java's ConsumerGroupMetadata, as `consumer.groupMetadata()` returns it (KIP-447). */
export interface ConsumerGroupMetadata {
  groupId: string
  generationId: number
  memberId: string
  groupInstanceId: string | null
}

/** An offset to commit with the transaction: the next offset to consume, as for consumer.commit(). */
export interface TransactionOffset {
  topic: string
  partition: number
  offset: bigint
  metadata?: string | null
  leaderEpoch?: number
}

export interface TransactionOptions {
  transactionalId: string
  transactionTimeoutMs: number
  maxBlockMs: number
}

/** The hooks into the producer that a transaction needs. */
export interface TransactionHost {
  /** Sends everything queued and resolves when each record has completed (Java's flush before commit). */
  flush(): Promise<void>
  /** Runs the sender, e.g. after partitions were added or batches must fail. */
  wake(): void
}

// KIP-890's second transaction protocol: Produce v12 adds partitions, EndTxn v5 bumps the epoch.
const TV2_PRODUCE = 12
const TV2_END_TXN = 5
const TV2_TXN_OFFSET_COMMIT = 5
const TV1_PRODUCE_MAX = 11
const TV1_END_TXN_MAX = 4
const TV1_TXN_OFFSET_COMMIT_MAX = 4
// AddPartitionsToTxn v4+ is the brokers' batched verification form; clients use v0-3.
const CLIENT_ADD_PARTITIONS_MAX = 3
/**
 * Java's TransactionManager.ADD_PARTITIONS_RETRY_BACKOFF_MS: the wait before asking again when
 * the first AddPartitionsToTxn of a transaction meets CONCURRENT_TRANSACTIONS, i.e. the previous
 * transaction's markers are still being written (TV1; under TV2 the broker waits itself,
 * add.partitions.to.txn.retry.backoff.ms). Java calls it a stopgap until KAFKA-5482.
 */
export const ADD_PARTITIONS_RETRY_BACKOFF_MS = 20

/** Errors the TxnOffsetCommit handler turns into an abortable CommitFailed, as Java's. */
const GROUP_FENCED = new Set<number>([ErrorCodes.UNKNOWN_MEMBER_ID, ErrorCodes.ILLEGAL_GENERATION, ErrorCodes.FENCED_INSTANCE_ID, ErrorCodes.GROUP_AUTHORIZATION_FAILED])

/**
 * The transactional half of Java's TransactionManager: the state machine (transaction-state.ts),
 * the coordinator requests (InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn, EndTxn,
 * TxnOffsetCommit) and the rules that tie them to the sender. The producer id and the
 * per-partition sequences stay in Idempotence, which this feeds.
 *
 * Which protocol: TV2 (KIP-890) where the coordinator's ApiVersions finalizes transaction.version
 * >= 2 and offers EndTxn v5 and Produce v12; else TV1, which adds every partition with
 * AddPartitionsToTxn before its first batch is sent and every group with AddOffsetsToTxn.
 */
export class TransactionManager {
  readonly sm = new TxnStateMachine()
  readonly transactionalId: string
  /** KIP-890 transaction version 2, decided by initTransactions(). */
  tv2 = false
  /** TV1: partitions the coordinator has in the current transaction, and those waiting to be added. */
  private readonly added = new Set<PartitionQueue>()
  private readonly toAdd = new Set<PartitionQueue>()
  private adding: Promise<void> | undefined
  /** Something reached the coordinator or a leader in this transaction, so it needs an EndTxn (Java's transactionStarted). */
  private started = false
  /** initTransactions, commitTransaction or abortTransaction still running after its caller timed out: the next call of the same waits for it. */
  private pending: { op: string; done: Promise<void> } | undefined
  private readonly stopper = new AbortController()
  /** Java's TxnRequestHandler waits a fixed retry.backoff.ms between tries, not KIP-580's growing backoff. */
  private readonly backoff: ExponentialBackoff

  constructor(
    private readonly options: TransactionOptions,
    private readonly cluster: Cluster,
    private readonly idem: Idempotence,
    private readonly host: TransactionHost,
  ) {
    this.transactionalId = options.transactionalId
    this.backoff = new ExponentialBackoff(cluster.retryBackoff.initialMs, cluster.retryBackoff.initialMs, 2, 0)
  }

  get state(): TxnState {
    return this.sm.state
  }

  /** The highest Produce version for transactional batches: v12 only under TV2. */
  get produceMaxVersion(): number | undefined {
    return this.tv2 ? undefined : TV1_PRODUCE_MAX
  }

  stop(): void {
    this.stopper.abort(new ClientClosedError('producer'))
  }

  // --- the public operations ---------------------------------------------------------------

  initTransactions(): Promise<void> {
    return this.run('initTransactions', ['UNINITIALIZED'], () => this.initProducerId(false))
  }

  beginTransaction(): void {
    this.failIfPending('beginTransaction')
    this.failIfError()
    if (this.sm.state !== 'READY') throw new InvalidTxnStateError(this.sm.state === 'UNINITIALIZED' ? 'call initTransactions() before beginTransaction()' : `beginTransaction() in state ${this.sm.state}: a transaction is already in progress`)
    this.sm.transition('IN_TRANSACTION')
    this.started = false
    this.added.clear()
    this.toAdd.clear()
  }

  /** Why send() must refuse records now (Java's failIfNotReadyForSend), or undefined. */
  sendError(): Error | undefined {
    const s = this.sm.state
    if (s === 'IN_TRANSACTION') return undefined
    if (s === 'FATAL_ERROR') return this.sm.lastError
    if (s === 'ABORTABLE_ERROR') return new TransactionAbortableError(this.sm.lastError)
    if (s === 'UNINITIALIZED' || s === 'INITIALIZING') return new InvalidTxnStateError('call initTransactions() before send() on a transactional producer')
    return new InvalidTxnStateError(`send() in state ${s}: call beginTransaction() first`)
  }

  async sendOffsetsToTransaction(offsets: readonly TransactionOffset[], group: ConsumerGroupMetadata): Promise<void> {
    this.failIfPending('sendOffsetsToTransaction')
    this.failIfError()
    if (this.sm.state !== 'IN_TRANSACTION') throw new InvalidTxnStateError(`sendOffsetsToTransaction() in state ${this.sm.state}: call beginTransaction() first`)
    if (group === null || typeof group !== 'object' || typeof group.groupId !== 'string' || group.groupId === '') {
      throw new TypeError('sendOffsetsToTransaction() needs the consumer group metadata (consumer.groupMetadata())')
    }
    if (offsets.length === 0) return
    try {
      if (!this.tv2) {
        await this.toTxnCoordinator(AddOffsetsToTxn, { maxVersion: 4 }, () => ({ ...this.ids(), groupId: group.groupId }), (res) => res.errorCode)
      }
      this.started = true
      await this.txnOffsetCommit(offsets, group)
    } catch (e) {
      throw this.onError(e as Error)
    }
  }

  commitTransaction(): Promise<void> {
    return this.run('commitTransaction', ['IN_TRANSACTION'], async () => {
      this.sm.transition('COMMITTING_TRANSACTION')
      try {
        await this.host.flush()
        // A record that failed during the flush made the transaction abortable (onBatchFailed).
        if (this.sm.state !== 'COMMITTING_TRANSACTION') throw this.sm.state === 'FATAL_ERROR' ? this.sm.lastError : new TransactionAbortableError(this.sm.lastError)
        await this.endTxn(true)
        this.sm.transition('READY')
      } catch (e) {
        throw this.onError(e as Error)
      }
    })
  }

  abortTransaction(): Promise<void> {
    return this.run('abortTransaction', ['IN_TRANSACTION', 'ABORTABLE_ERROR'], async () => {
      this.sm.transition('ABORTING_TRANSACTION')
      try {
        // Queued records fail with TransactionAbortedError (blockedError); in-flight ones finish.
        this.host.wake()
        await this.host.flush()
        if (this.sm.state === 'FATAL_ERROR') throw this.sm.lastError
        await this.endTxn(false)
        if (this.idem.bumpRequested) {
          // A sequence error left partitions' numbering unknown: a new epoch from the coordinator (KIP-360).
          this.sm.transition('INITIALIZING')
          await this.initProducerId(true)
        } else {
          this.sm.transition('READY')
        }
      } catch (e) {
        throw this.onError(e as Error)
      }
    })
  }

  /** A transaction is open that close() should end (Java aborts it on a graceful close). */
  get hasOngoingTransaction(): boolean {
    return this.started && (this.sm.state === 'IN_TRANSACTION' || this.sm.state === 'ABORTABLE_ERROR')
  }

  // --- the sender's hooks ------------------------------------------------------------------

  /** Queued batches must fail now: with the abortable error, or because the transaction is being aborted. */
  blockedError(): Error | undefined {
    const s = this.sm.state
    if (s === 'ABORTING_TRANSACTION') return new TransactionAbortedError()
    if (s === 'ABORTABLE_ERROR') return new TransactionAbortableError(this.sm.lastError)
    return undefined
  }

  /**
   * Whether a partition's batch may be sent: always under TV2 (Produce v12 adds the partition);
   * under TV1 once AddPartitionsToTxn added it, which this asks for.
   */
  mayDrain(q: PartitionQueue): boolean {
    if (this.tv2) {
      this.started = true
      return true
    }
    if (this.added.has(q)) return true
    const s = this.sm.state
    if (s === 'IN_TRANSACTION' || s === 'COMMITTING_TRANSACTION') {
      this.toAdd.add(q)
      this.adding ??= this.addPartitions().finally(() => {
        this.adding = undefined
        this.host.wake()
      })
    }
    return false
  }

  /** A batch failed for good: the transaction can only abort (or the producer is finished). */
  onBatchFailed(error: Error): void {
    if (error instanceof TransactionAbortedError || this.sm.state === 'ABORTING_TRANSACTION') return
    this.onError(error, true)
  }

  // --- requests ----------------------------------------------------------------------------

  private ids(): { transactionalId: string; producerId: bigint; producerEpoch: number } {
    return { transactionalId: this.transactionalId, producerId: this.idem.producerId, producerEpoch: this.idem.producerEpoch }
  }

  /** InitProducerId through the coordinator; with `bump`, for the producer id and epoch it has (KIP-360, v3+). */
  private async initProducerId(bump: boolean): Promise<void> {
    if (!bump) this.sm.transition('INITIALIZING')
    let conn!: Connection
    const res = await this.toTxnCoordinator(
      InitProducerId,
      { minVersion: bump ? 3 : 0 },
      () => ({
        transactionalId: this.transactionalId,
        transactionTimeoutMs: this.options.transactionTimeoutMs,
        producerId: bump ? this.idem.producerId : -1n,
        producerEpoch: bump ? this.idem.producerEpoch : -1,
      }),
      (r) => r.errorCode,
      (c) => (conn = c),
    )
    const tv = conn.versions.features.get('transaction.version') ?? 0
    // Java's isTransactionV2Enabled: the finalized feature, and the versions that carry it.
    this.tv2 = tv >= 2 && conn.versions.supports(EndTxn, TV2_END_TXN) && conn.versions.supports(TxnOffsetCommit, TV2_TXN_OFFSET_COMMIT) && conn.versions.supports(Produce, TV2_PRODUCE)
    this.idem.adopt(res.producerId, res.producerEpoch)
    this.cluster.logger.info({ transactionalId: this.transactionalId, producerId: String(res.producerId), producerEpoch: res.producerEpoch, transactionVersion: this.tv2 ? 2 : 1 }, 'transactional producer initialized')
    this.sm.transition('READY')
  }

  private async endTxn(committed: boolean): Promise<void> {
    if (!this.started) return
    const res = await this.toTxnCoordinator(
      EndTxn,
      this.tv2 ? { minVersion: TV2_END_TXN } : { maxVersion: TV1_END_TXN_MAX },
      () => ({ ...this.ids(), committed }),
      (r) => r.errorCode,
    )
    // KIP-890: every EndTxn v5 bumps the epoch (or hands out a new producer id when it ran out).
    if (this.tv2 && res.producerId !== undefined && res.producerId >= 0n && res.producerEpoch !== undefined && res.producerEpoch >= 0) {
      this.idem.adopt(res.producerId, res.producerEpoch)
    }
    this.started = false
  }

  /** TV1: adds the waiting partitions to the transaction, until none waits or the transaction failed. */
  private async addPartitions(): Promise<void> {
    // One request for every partition this run of the sender found new, not one each.
    await Promise.resolve()
    while (this.toAdd.size > 0 && (this.sm.state === 'IN_TRANSACTION' || this.sm.state === 'COMMITTING_TRANSACTION')) {
      const batch = [...this.toAdd]
      const topics = new Map<string, number[]>()
      for (const q of batch) {
        let list = topics.get(q.topic)
        if (list === undefined) topics.set(q.topic, (list = []))
        list.push(q.partition)
      }
      try {
        await this.toTxnCoordinator(
          AddPartitionsToTxn,
          { maxVersion: CLIENT_ADD_PARTITIONS_MAX },
          () => {
            const ids = this.ids()
            return {
              v3AndBelowTransactionalId: ids.transactionalId,
              v3AndBelowProducerId: ids.producerId,
              v3AndBelowProducerEpoch: ids.producerEpoch,
              v3AndBelowTopics: [...topics].map(([name, partitions]) => ({ name, partitions })),
            }
          },
          (res) => {
            // The first error that is not OPERATION_NOT_ATTEMPTED (set on the rest of a request with one bad partition).
            let code: number = ErrorCodes.NONE
            for (const t of res.resultsByTopicV3AndBelow ?? []) {
              for (const p of t.resultsByPartition) {
                if (p.partitionErrorCode !== ErrorCodes.NONE && (code === ErrorCodes.NONE || code === ErrorCodes.OPERATION_NOT_ATTEMPTED)) code = p.partitionErrorCode
              }
            }
            return code
          },
          undefined,
          // Only while nothing is in the transaction yet: the previous one is still completing (Java's maybeOverrideRetryBackoffMs).
          (e) => (e instanceof ProtocolError && e.code === ErrorCodes.CONCURRENT_TRANSACTIONS && this.added.size === 0 ? ADD_PARTITIONS_RETRY_BACKOFF_MS : undefined),
        )
      } catch (e) {
        if (!this.stopper.signal.aborted) this.onError(e as Error)
        return
      }
      for (const q of batch) {
        this.toAdd.delete(q)
        this.added.add(q)
      }
      this.started = true
      this.host.wake()
    }
  }

  /**
   * TxnOffsetCommit to the group's coordinator, retrying the partitions that answered with a
   * retriable error. Under TV2, v5 adds the offsets partition to the transaction itself, and
   * CONCURRENT_TRANSACTIONS there means the previous transaction's markers are still being
   * written: asked again after 20 ms, the pace Kafka's brokers keep for the same implicit add
   * (add.partitions.to.txn.retry.backoff.ms) and Java's for the first AddPartitionsToTxn. Java
   * waits retry.backoff.ms here, which made every copied transaction on Kafka 4.4 wait 100 ms.
   */
  private async txnOffsetCommit(offsets: readonly TransactionOffset[], group: ConsumerGroupMetadata): Promise<void> {
    let left = offsets.slice()
    await this.withCoordinator(group.groupId, 'group', this.options.maxBlockMs, async (conn) => {
      const byTopic = new Map<string, TransactionOffset[]>()
      for (const o of left) {
        let list = byTopic.get(o.topic)
        if (list === undefined) byTopic.set(o.topic, (list = []))
        list.push(o)
      }
      const res = await conn.request(
        TxnOffsetCommit,
        {
          ...this.ids(),
          groupId: group.groupId,
          generationId: group.generationId,
          memberId: group.memberId,
          groupInstanceId: group.groupInstanceId,
          topics: [...byTopic].map(([name, list]) => ({
            name,
            partitions: list.map((o) => ({ partitionIndex: o.partition, committedOffset: o.offset, committedLeaderEpoch: o.leaderEpoch ?? -1, committedMetadata: o.metadata ?? '' })),
          })),
        },
        // Above v4 within a transaction only under TV2, where v5 also adds the group (KIP-890).
        this.tv2 ? { minVersion: TV2_TXN_OFFSET_COMMIT, maxVersion: TV2_TXN_OFFSET_COMMIT } : { maxVersion: TV1_TXN_OFFSET_COMMIT_MAX },
      )
      const again: TransactionOffset[] = []
      let retriable: ProtocolError | undefined
      for (const t of res.topics) {
        for (const p of t.partitions) {
          if (p.errorCode === ErrorCodes.NONE) continue
          const err = new ProtocolError(p.errorCode, { api: 'TxnOffsetCommit', apiKey: TxnOffsetCommit.apiKey, topic: t.name, partition: p.partitionIndex, groupId: group.groupId })
          if (!err.retriable) throw GROUP_FENCED.has(p.errorCode) ? new TransactionAbortableError(err) : err
          retriable = err
          const o = left.find((x) => x.topic === t.name && x.partition === p.partitionIndex)
          if (o !== undefined) again.push(o)
        }
      }
      left = again
      if (retriable !== undefined) throw retriable
    }, (e) => (this.tv2 && e instanceof ProtocolError && e.code === ErrorCodes.CONCURRENT_TRANSACTIONS ? ADD_PARTITIONS_RETRY_BACKOFF_MS : undefined))
  }

  /** A request to the transaction coordinator, with its error code checked, retried as the code allows. */
  private toTxnCoordinator<Req, Res>(
    api: ApiDefinition<Req, Res>,
    versions: { minVersion?: number; maxVersion?: number },
    body: () => Req,
    codeOf: (res: Res) => number,
    onConnection?: (conn: Connection) => void,
    delayFor?: (error: unknown) => number | undefined,
  ): Promise<Res> {
    return this.withCoordinator(
      this.transactionalId,
      'transaction',
      Infinity,
      async (conn) => {
        const res = await conn.request(api, body(), versions)
        const code = codeOf(res)
        if (code !== ErrorCodes.NONE) throw new ProtocolError(code, { api: api.name, apiKey: api.apiKey })
        onConnection?.(conn)
        return res
      },
      delayFor,
    )
  }

  /**
   * Runs `fn` against the coordinator of `key` until it succeeds, retrying retriable errors with
   * the client's backoff and finding the coordinator again after NOT_COORDINATOR and the like.
   */
  private withCoordinator<T>(key: string, type: CoordinatorType, timeoutMs: number, fn: (conn: Connection) => Promise<T>, delayFor?: (error: unknown) => number | undefined): Promise<T> {
    return retry(
      async () => {
        if (this.stopper.signal.aborted) throw this.stopper.signal.reason
        const broker = await this.cluster.findCoordinator(key, type)
        return fn(await this.cluster.connectionToBroker(broker))
      },
      {
        timeoutMs,
        backoff: this.backoff,
        delayFor,
        signal: this.stopper.signal,
        retriable: (e) => !this.stopper.signal.aborted && isRetriable(e),
        onRetry: (e, attempt, delayMs) => {
          if (e instanceof ProtocolError && (e.code === ErrorCodes.NOT_COORDINATOR || e.code === ErrorCodes.COORDINATOR_NOT_AVAILABLE)) this.cluster.invalidateCoordinator(key, type)
          else if (!(e instanceof ProtocolError)) this.cluster.invalidateCoordinator(key, type)
          this.cluster.logger.debug({ err: e, transactionalId: this.transactionalId, api: e instanceof ProtocolError ? e.api : undefined, attempt, delayMs }, 'transactional request failed, retrying')
        },
      },
    )
  }

  // --- rules -------------------------------------------------------------------------------

  /**
   * Moves to FATAL_ERROR or ABORTABLE_ERROR for an error and returns what the caller sees:
   * ProducerFencedError for fencing, the error itself when fatal, else TransactionAbortableError.
   * `batch`: a produced batch failed, which ends the producer for fewer errors than a
   * coordinator's answer does (Java's maybeTransitionToErrorState against its handlers' rules).
   */
  private onError(raw: Error, batch = false): Error {
    if (raw instanceof InvalidTxnStateError) return raw
    const error = txnError(raw)
    if (this.sm.state === 'FATAL_ERROR') return this.sm.lastError ?? error
    if (error instanceof ClientClosedError) return error
    if (batch ? isFatalForBatch(error) : isFatalForTransactions(error)) {
      this.sm.transition('FATAL_ERROR', error)
      this.idem.fatalError ??= error
      this.host.wake()
      return error
    }
    if (needsEpochBump(error)) this.idem.requestBump()
    const abortable = error instanceof TransactionAbortableError ? error : new TransactionAbortableError(error)
    const s = this.sm.state
    if (s === 'IN_TRANSACTION' || s === 'COMMITTING_TRANSACTION' || s === 'ABORTABLE_ERROR') {
      this.sm.transition('ABORTABLE_ERROR', abortable.cause as Error)
      this.host.wake()
      return abortable
    }
    if (s === 'INITIALIZING' && isTransactionAbortable(error)) {
      // InitProducerId v5+ may answer TRANSACTION_ABORTABLE (KIP-890): abortable there too, as Java's InitProducerIdHandler.
      this.sm.transition('ABORTABLE_ERROR', abortable.cause as Error)
      return abortable
    }
    if (s === 'INITIALIZING') {
      // Java: an InitProducerId that cannot succeed ends the producer.
      this.sm.transition('FATAL_ERROR', error)
      this.idem.fatalError ??= error
      return error
    }
    // Aborting: the abort itself failed; it may be called again.
    return error
  }

  private failIfError(): void {
    if (this.sm.state === 'FATAL_ERROR') throw this.sm.lastError
    if (this.sm.state === 'ABORTABLE_ERROR') throw new TransactionAbortableError(this.sm.lastError)
  }

  private failIfPending(op: string): void {
    if (this.pending !== undefined) throw new InvalidTxnStateError(`${op}() while ${this.pending.op}() is still running: call ${this.pending.op}() again to wait for it`)
  }

  /**
   * Starts `op` (or waits for the same op still running from an earlier call that timed out)
   * and waits for it up to maxBlockMs (Java's TransactionalRequestResult.await).
   */
  private async run(op: string, from: readonly TxnState[], start: () => Promise<void>): Promise<void> {
    let pending = this.pending
    if (pending !== undefined && pending.op !== op) this.failIfPending(op)
    if (pending === undefined) {
      if (this.sm.state === 'FATAL_ERROR') throw this.sm.lastError
      if (!from.includes(this.sm.state)) {
        if (this.sm.state === 'ABORTABLE_ERROR') throw new TransactionAbortableError(this.sm.lastError)
        throw new InvalidTxnStateError(`${op}() in state ${this.sm.state}`)
      }
      const done = start()
      pending = { op, done }
      this.pending = pending
      const mine = pending
      done.then(
        () => {
          if (this.pending === mine) this.pending = undefined
        },
        () => {
          if (this.pending === mine) this.pending = undefined
        },
      )
    }
    if (!(await within(pending.done, this.options.maxBlockMs))) throw new TransactionTimeoutError(`${op}()`, this.options.maxBlockMs)
  }
}
