import { sleep, type Cluster, UnsupportedVersionError } from '@tidelog/client'
import { ErrorCodes, InitProducerId, ProtocolError, TidelogError } from '@tidelog/protocol'
import type { PartitionQueue } from './accumulator.js'
import { incrementSequence, type ProducerBatch } from './batch-builder.js'

const MAX_EPOCH = 0x7fff

/** Errors after which an idempotent producer cannot go on (Java's fatal errors for it). */
const FATAL = new Set<number>([
  ErrorCodes.CLUSTER_AUTHORIZATION_FAILED,
  ErrorCodes.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
  ErrorCodes.PRODUCER_FENCED,
  ErrorCodes.UNSUPPORTED_VERSION,
  ErrorCodes.UNSUPPORTED_FOR_MESSAGE_FORMAT,
])

export function isFatalForIdempotence(error: unknown): boolean {
  return (error instanceof ProtocolError && FATAL.has(error.code)) || error instanceof UnsupportedVersionError
}

type State = 'uninitialized' | 'initializing' | 'ready' | 'disabled' | 'fatal'

/**
 * The idempotent producer's state (the non-transactional half of Java's TransactionManager):
 * the producer id and epoch from InitProducerId, and per partition the sequence numbers that let
 * the broker drop a retried batch it already has and refuse one that would leave a gap.
 *
 * Sequences are assigned when a batch is first sent and kept on every retry. When a partition's
 * sequences can no longer be trusted (the broker lost the producer's state, a batch failed or
 * expired with an unknown outcome), the epoch is bumped locally and that partition's unfinished
 * batches are renumbered from 0: the broker accepts sequence 0 under a newer epoch, and nothing
 * already written is written again.
 */
export class Idempotence {
  private state: State
  producerId = -1n
  producerEpoch = -1
  fatalError: Error | undefined
  private epochBumpRequired = false
  private readonly rewrite = new Set<PartitionQueue>()
  private readonly unresolved = new Set<PartitionQueue>()
  private stopped = false

  constructor(
    enabled: boolean,
    private readonly explicit: boolean,
    private readonly cluster: Cluster,
    /** Called when the producer id arrives, fails, or idempotence turns out to be unavailable. */
    private readonly onChange: () => void,
    /**
     * A transactional producer: the producer id and epoch come from the transaction coordinator
     * (adopt()), and an epoch bump waits for the abort that must follow (KIP-360), never local.
     */
    private readonly transactional = false,
  ) {
    this.state = enabled ? 'uninitialized' : 'disabled'
  }

  get enabled(): boolean {
    return this.state !== 'disabled'
  }

  /** True when batches may be sent: idempotence is off, or the producer id is known. */
  ready(): boolean {
    if (this.state === 'ready' || this.state === 'disabled') return true
    if (this.state === 'uninitialized' && !this.transactional) this.init()
    return false
  }

  stop(): void {
    this.stopped = true
  }

  /** A producer id and epoch from the transaction coordinator (InitProducerId, or EndTxn v5 under KIP-890). */
  adopt(producerId: bigint, producerEpoch: number): void {
    this.producerId = producerId
    this.producerEpoch = producerEpoch
    this.epochBumpRequired = false
    this.rewrite.clear()
    if (this.state !== 'fatal') this.state = 'ready'
    this.onChange()
  }

  /** A transactional producer's partition sequences are no longer trusted: the next abort gets a new epoch. */
  get bumpRequested(): boolean {
    return this.epochBumpRequired
  }

  requestBump(): void {
    if (this.transactional) this.epochBumpRequired = true
  }

  // --- producer id -------------------------------------------------------------------------

  private init(): void {
    this.state = 'initializing'
    this.initProducerId().then(
      () => this.onChange(),
      (err: unknown) => {
        if (this.stopped) return
        this.state = 'fatal'
        this.fatalError = err instanceof Error ? err : new Error(String(err))
        this.cluster.logger.error({ err }, 'idempotent producer cannot start')
        this.onChange()
      },
    )
  }

  /**
   * InitProducerId without a transactional id, from any broker, until it succeeds or fails for
   * good. Batches meanwhile wait (and expire after deliveryTimeoutMs), as in Java.
   */
  private async initProducerId(): Promise<void> {
    for (let attempt = 0; !this.stopped; attempt++) {
      try {
        const conn = await this.cluster.anyConnection()
        if (!conn.versions.supports(InitProducerId)) {
          const err = new UnsupportedVersionError('InitProducerId', InitProducerId.apiKey, -1)
          err.message = `${conn.broker} does not support InitProducerId, which idempotence needs (Kafka 0.11+)`
          if (this.explicit) throw err
          // Left at its default, idempotence gives way to what the cluster can do (KIP-679).
          this.cluster.logger.warn({ broker: conn.broker }, 'broker does not support InitProducerId; idempotence disabled')
          this.state = 'disabled'
          return
        }
        const res = await conn.request(InitProducerId, { transactionalId: null, transactionTimeoutMs: 0x7fffffff, producerId: -1n, producerEpoch: -1 })
        if (res.errorCode !== ErrorCodes.NONE) throw new ProtocolError(res.errorCode, { api: 'InitProducerId', apiKey: InitProducerId.apiKey })
        this.producerId = res.producerId
        this.producerEpoch = res.producerEpoch
        this.state = 'ready'
        this.cluster.logger.debug({ producerId: String(res.producerId), producerEpoch: res.producerEpoch }, 'producer id assigned')
        return
      } catch (e) {
        if (this.stopped) return
        if (!(e instanceof TidelogError && e.retriable)) throw e
        this.cluster.logger.debug({ err: e, attempt }, 'InitProducerId failed, retrying')
        await sleep(this.cluster.retryBackoff.delay(attempt))
      }
    }
  }

  // --- per partition -----------------------------------------------------------------------

  private stale(q: PartitionQueue): boolean {
    return q.producerId !== this.producerId || q.producerEpoch !== this.producerEpoch
  }

  /**
   * Before a partition's batches are drained (Java's bumpIdempotentEpochAndResetIdIfNeeded):
   * settles partitions whose expired batches left their sequences unresolved, and performs an
   * epoch bump that was asked for.
   */
  beforeDrain(): void {
    if (this.state !== 'ready') return
    for (const q of this.unresolved) {
      if (q.inflight.length > 0) continue
      this.unresolved.delete(q)
      q.unresolvedSequence = -1
      // Resolved if a later batch was acknowledged (the broker had the expired one, or it
      // would have refused the later); otherwise the expired batch left a gap.
      if (q.nextSequence - q.lastAckedSequence !== 1) this.requestEpochBump(q)
    }
    if (!this.epochBumpRequired || this.transactional) return
    this.epochBumpRequired = false
    if (this.producerEpoch >= MAX_EPOCH) {
      // The epoch cannot grow: a new producer id instead; every partition restarts when idle.
      this.producerId = -1n
      this.producerEpoch = -1
      this.state = 'uninitialized'
      this.rewrite.clear()
      return
    }
    this.producerEpoch++
    this.cluster.logger.info({ producerId: String(this.producerId), producerEpoch: this.producerEpoch }, 'producer epoch bumped')
    for (const q of this.rewrite) this.startSequencesAtBeginning(q)
    this.rewrite.clear()
  }

  private requestEpochBump(q: PartitionQueue): void {
    this.epochBumpRequired = true
    this.rewrite.add(q)
  }

  /** Renumbers a partition's unfinished batches from 0 under the current epoch. */
  private startSequencesAtBeginning(q: PartitionQueue): void {
    let sequence = 0
    for (const b of q.inflight) {
      b.producerId = this.producerId
      b.producerEpoch = this.producerEpoch
      b.baseSequence = sequence
      b.sequenceReset = true
      b.encoded = undefined
      sequence = incrementSequence(sequence, b.count)
    }
    q.producerId = this.producerId
    q.producerEpoch = this.producerEpoch
    q.nextSequence = sequence
    q.lastAckedSequence = -1
    this.unresolved.delete(q)
    q.unresolvedSequence = -1
  }

  /**
   * Whether the partition's head batch may be drained (Java's shouldStopDrainBatchesForPartition,
   * inverted). A new batch waits while batches under an older epoch are unfinished or an
   * expired batch's sequence is unresolved; a retried batch goes only when it is the oldest
   * unfinished one, so retries go one at a time, in order, and never leave a gap.
   */
  canDrain(q: PartitionQueue, batch: ProducerBatch): boolean {
    if (batch.baseSequence >= 0) return q.inflight[0] === batch
    if (this.stale(q)) {
      if (q.inflight.length > 0) return false
      q.producerId = this.producerId
      q.producerEpoch = this.producerEpoch
      q.nextSequence = 0
      q.lastAckedSequence = -1
    }
    return q.unresolvedSequence < 0
  }

  /** Gives a batch being sent for the first time its producer id, epoch and sequence. */
  assign(q: PartitionQueue, batch: ProducerBatch): void {
    batch.producerId = this.producerId
    batch.producerEpoch = this.producerEpoch
    batch.baseSequence = q.nextSequence
    q.nextSequence = incrementSequence(q.nextSequence, batch.count)
    q.inflight.push(batch)
  }

  /** Takes back an assignment whose batch could not be encoded (it never reached a broker). */
  unassign(q: PartitionQueue, batch: ProducerBatch): void {
    if (q.inflight[q.inflight.length - 1] === batch) {
      q.inflight.pop()
      q.nextSequence = batch.baseSequence
    }
    batch.baseSequence = -1
  }

  /** A batch was split: its parts hold its sequence range, in its place. */
  replace(q: PartitionQueue, batch: ProducerBatch, parts: ProducerBatch[]): void {
    const i = q.inflight.indexOf(batch)
    if (i >= 0) q.inflight.splice(i, 1, ...parts)
  }

  private remove(q: PartitionQueue, batch: ProducerBatch): void {
    const i = q.inflight.indexOf(batch)
    if (i >= 0) q.inflight.splice(i, 1)
  }

  onAcked(q: PartitionQueue, batch: ProducerBatch): void {
    if (batch.baseSequence < 0) return
    const last = batch.lastSequence
    if (last > q.lastAckedSequence) q.lastAckedSequence = last
    this.remove(q, batch)
  }

  /**
   * A batch failed for good (Java's handleFailedBatch). When the broker said it did not write
   * the batch (`refused`), the sequences after it now have a gap: bump the epoch and renumber.
   * When nobody knows (it expired, or its request was lost), the partition's sequence is
   * unresolved until its other batches finish (Java's markSequenceUnresolved). Authorization
   * and fencing errors end the producer.
   */
  onFailed(q: PartitionQueue, batch: ProducerBatch, error: Error, refused: boolean): void {
    if (isFatalForIdempotence(error)) {
      this.state = 'fatal'
      this.fatalError ??= error
    }
    if (batch.baseSequence < 0) return
    this.remove(q, batch)
    if (this.transactional) {
      // Its sequence is spent either way; the abort that must follow renumbers under a new epoch.
      this.epochBumpRequired = true
      return
    }
    if (refused) {
      if (this.state === 'ready') this.requestEpochBump(q)
      return
    }
    const next = incrementSequence(batch.lastSequence, 1)
    if (next > q.unresolvedSequence) q.unresolvedSequence = next
    this.unresolved.add(q)
  }

  /**
   * The idempotence-specific part of Java's canRetry for a partition error. Returns undefined
   * when the ordinary rule (retriable per Kafka's table) applies.
   */
  canRetry(q: PartitionQueue, batch: ProducerBatch, code: number, logStartOffset: bigint): boolean | undefined {
    if (batch.baseSequence < 0) return undefined
    if (code === ErrorCodes.UNKNOWN_PRODUCER_ID) {
      // The broker lost this producer's state for the partition, typically because retention
      // deleted every batch it wrote. Without a log start offset, wait for one.
      if (logStartOffset < 0n) return true
      // Renumbered already: the other batches of the partition report the same loss.
      if (batch.sequenceReset) return true
      // In a transaction the batch fails and the transaction aborts with a new epoch (KIP-360).
      if (this.transactional) return false
      // Otherwise, whether the log head was deleted (lastAckedOffset < logStartOffset) or the
      // state was lost some other way, the idempotent producer renumbers under a new epoch
      // rather than reuse a (sequence, epoch) pair.
      this.requestEpochBump(q)
      return true
    }
    if (code === ErrorCodes.OUT_OF_ORDER_SEQUENCE_NUMBER) {
      const unresolved = q.unresolvedSequence >= 0
      // Not the next batch after the last acknowledged one: an earlier batch is being retried,
      // and this one will fit once it is in.
      if (!unresolved && (batch.sequenceReset || batch.baseSequence - q.lastAckedSequence !== 1)) return true
      // A real gap (or the batch right after an unresolved one): renumber; in a transaction, abort.
      if (this.transactional) return false
      if (!unresolved || batch.baseSequence === q.unresolvedSequence) this.requestEpochBump(q)
      return true
    }
    return undefined
  }
}
