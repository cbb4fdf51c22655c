import { dirname } from 'node:path'
import {
  CorruptRecordError,
  InvalidRecordError,
  LOG_OVERHEAD,
  RECORD_BATCH_OVERHEAD,
  setBaseOffset,
  setPartitionLeaderEpoch,
} from '@tidelog/protocol'
import type { Logger } from '../logger.js'
import { silentLogger } from '../logger.js'
import { LogDirState } from './dir-failure.js'
import { LogClosedError, OffsetOutOfRangeError } from './errors.js'
import { type LogFileSystem, defaultFileSystem, fsyncDirAsync } from './file-system.js'
import {
  BATCH_LENGTH_AT,
  BASE_SEQUENCE_AT,
  LAST_OFFSET_DELTA_AT,
  MAX_TIMESTAMP_AT,
  PRODUCER_EPOCH_AT,
  PRODUCER_ID_AT,
  readInt64,
  stampLogAppendTime,
  wholeBatches,
} from './format.js'
import { isControlAt, isTransactionalAt, encodeTxnMarkerBatch } from './control-batch.js'
import { DEFAULT_PRODUCER_ID_EXPIRATION_MS, ProducerStateManager, type ProducerView, type TxnMarker, lastSeqOf } from './producer-state.js'
import { replayProducerState } from './producer-replay.js'
import type { AbortedTxn } from './txn-index.js'
import { loadSegments } from './log-loader.js'
import { segmentsToDelete } from './retention.js'
import type { OpenFileLimiter } from './open-files.js'
import { LogSegment } from './segment.js'
import {
  type AppendOptions,
  type AppendResult,
  type BatchRead,
  type CommittedReadResult,
  DEFAULT_LOG_CONFIG,
  type LogConfig,
  type PartitionLogOptions,
  type ReadResult,
  type RecoveryReport,
} from './log-types.js'

export { DEFAULT_LOG_CONFIG }
export type { AppendOptions, AppendResult, BatchRead, CommittedReadResult, LogConfig, PartitionLogOptions, ReadResult, RecoveryReport }


const EMPTY = Buffer.alloc(0)

/**
 * The log of one partition: a directory of segments, the offsets they hold,
 * appends, reads, rolling, retention and recovery. Appends are synchronous
 * (one write per produce request, straight into the page cache), so offsets
 * are assigned in call order without locks; reads of the batch bytes are
 * asynchronous. Offsets are plain numbers: a log would need 2^53 records to
 * outgrow them.
 */
export class PartitionLog {
  readonly dir: string
  readonly topic: string
  readonly partition: number
  config: LogConfig
  /** Oldest first; the last is the active segment. Never empty. */
  readonly segments: LogSegment[]
  private _logStartOffset: number
  /** Everything below it is fsynced. */
  recoveryPoint: number
  /** The log start offset moved since the last checkpoint. */
  logStartOffsetDirty = false
  /** Messages appended since the last completed flush. */
  unflushedMessages = 0
  lastFlushTime: number
  /** Called after every append (wakes long-polling fetches). */
  onAppend: ((log: PartitionLog) => void) | undefined
  readonly recovery: RecoveryReport
  /** Idempotent producers' epochs and recent sequences (KIP-98). */
  readonly producers = new ProducerStateManager()
  private readonly logger: Logger
  private closed = false
  private endAtDiscard = 0
  private flushRunning: Promise<void> | null = null
  private flushQueued: Promise<void> | null = null
  readonly fs: LogFileSystem
  readonly dirState: LogDirState
  /**
   * A segment file (or the partition directory itself) was created since the
   * last flush: its directory entry is durable only once the directory is
   * fsynced, so the next flush does that, as Kafka's LocalLog.flush does.
   */
  private dirSyncPending = false
  private parentSyncPending = false
  /** The last producer-state snapshot write (they are written in order, off the event loop). */
  private snapshotting: Promise<void> = Promise.resolve()
  readonly producerIdExpirationMs: number
  readonly files: OpenFileLimiter | undefined

  private constructor(opts: PartitionLogOptions, segments: LogSegment[], recovery: RecoveryReport, now: number) {
    this.dir = opts.dir
    this.topic = opts.topic
    this.partition = opts.partition
    this.config = { ...DEFAULT_LOG_CONFIG, ...opts.config }
    this.segments = segments
    this.logger = opts.logger ?? silentLogger
    this.recovery = recovery
    const leo = this.logEndOffset
    this._logStartOffset = Math.min(Math.max(opts.logStartOffset ?? 0, segments[0]!.baseOffset), leo)
    this.recoveryPoint = opts.clean === true ? leo : Math.min(opts.recoveryPoint ?? 0, leo)
    this.lastFlushTime = now
    this.fs = opts.fs ?? defaultFileSystem
    this.dirState = opts.dirState ?? new LogDirState(dirname(opts.dir), this.logger)
    this.producerIdExpirationMs = opts.producerIdExpirationMs ?? DEFAULT_PRODUCER_ID_EXPIRATION_MS
    this.files = opts.files
  }

  /**
   * Forgets idempotent producers whose last batch is producer.id.expiration.ms
   * old or older (Kafka's removeExpiredProducers); such a producer that comes
   * back starts afresh at whatever sequence it sends. Returns how many went.
   */
  removeExpiredProducers(now = Date.now()): number {
    return this.producers.removeExpired(now, this.producerIdExpirationMs)
  }

  /** The data directory went offline after a storage failure: every call answers KAFKA_STORAGE_ERROR. */
  get isOffline(): boolean {
    return this.dirState.offline
  }

  /**
   * Opens (or creates) the partition directory, recovering its segments as
   * loadSegments describes, then rebuilds the producer state.
   */
  static open(opts: PartitionLogOptions): PartitionLog {
    const now = opts.now ?? Date.now()
    const { segments, report, created, hadSegments } = loadSegments(opts, { ...DEFAULT_LOG_CONFIG, ...opts.config }, now)
    const log = new PartitionLog(opts, segments, report, now)
    log.dirSyncPending = created || !hadSegments
    log.parentSyncPending = created
    if (report.recoveredSegments > 0) log.recoveryPoint = log.logEndOffset
    log.loadProducerState()
    log.removeExpiredProducers(now)
    return log
  }

  /**
   * Producer state from the snapshot, then from the headers of the batches
   * after it (all of them when the snapshot is missing or ahead of a truncated log).
   */
  private loadProducerState(): void {
    let from = this.producers.loadSnapshot(this.dir)
    if (from < 0 || from > this.logEndOffset) {
      this.producers.clear()
      from = this.segments[0]!.baseOffset
    }
    replayProducerState(this.segments, this.segmentIndexFor(from), from, this.producers)
  }

  get active(): LogSegment {
    return this.segments[this.segments.length - 1]!
  }

  get logStartOffset(): number {
    return this._logStartOffset
  }

  get logEndOffset(): number {
    // A discarded log (topic deleted while a fetch or list-offsets held it) keeps its last end offset.
    return this.segments.length > 0 ? this.active.nextOffset : this.endAtDiscard
  }

  /** A single replica: everything appended is committed. */
  get highWatermark(): number {
    return this.logEndOffset
  }

  /**
   * The first offset of the earliest open transaction, else the high
   * watermark (KIP-98): read_committed consumers read below it. Never below
   * the log start offset (DeleteRecords may pass an open transaction, as in
   * Kafka's maybeIncrementFirstUnstableOffset).
   */
  get lastStableOffset(): number {
    const hw = this.highWatermark
    const first = this.producers.firstUnstableOffset()
    return first < 0 ? hw : Math.min(hw, Math.max(first, this._logStartOffset))
  }

  /** Every producer known to this partition (DescribeProducers, kafka-transactions.sh find-hanging). */
  producerStates(): ProducerView[] {
    return this.producers.views()
  }

  /** Bytes in all segments. */
  get size(): number {
    let n = 0
    for (const s of this.segments) n += s.size
    return n
  }

  get isClosed(): boolean {
    return this.closed
  }

  /**
   * Appends whole record batches (a produce request's `records` for this
   * partition, already validated by the caller) with one write: each batch's
   * baseOffset and partitionLeaderEpoch are patched in place and the bytes are
   * stored exactly as sent. Throws CorruptRecordError when the bytes are not a
   * sequence of whole batches, InvalidRecordError when they hold no records.
   */
  append(buf: Buffer, opts: AppendOptions = {}): AppendResult {
    if (this.closed) throw new LogClosedError(`log ${this.topic}-${this.partition}`)
    this.dirState.check()
    const now = opts.now ?? Date.now()
    let count = 0
    let p = 0
    while (p < buf.length) {
      if (buf.length - p < RECORD_BATCH_OVERHEAD) throw new CorruptRecordError(`${buf.length - p} trailing bytes are not a record batch`, p)
      const size = LOG_OVERHEAD + buf.readInt32BE(p + BATCH_LENGTH_AT)
      if (size < RECORD_BATCH_OVERHEAD || size > buf.length - p) {
        throw new CorruptRecordError(`record batch length ${size - LOG_OVERHEAD} does not fit the ${buf.length - p} bytes left`, p)
      }
      const delta = buf.readInt32BE(p + LAST_OFFSET_DELTA_AT)
      if (delta < 0) throw new InvalidRecordError(`record batch has lastOffsetDelta ${delta}`, p)
      // Markers go through appendTxnMarker, which checks and applies them to the producer state.
      if (isControlAt(buf, p)) throw new InvalidRecordError('control batches are written by appendTxnMarker only', p)
      count += delta + 1
      p += size
    }
    if (count === 0) throw new InvalidRecordError('no record batches to append', 0)

    // A produce carries one batch (v3+): check its producer's sequence first.
    if (p === LOG_OVERHEAD + buf.readInt32BE(BATCH_LENGTH_AT)) {
      const producerId = readInt64(buf, PRODUCER_ID_AT)
      if (producerId >= 0) {
        const firstSeq = buf.readInt32BE(BASE_SEQUENCE_AT)
        const dup = this.producers.check(producerId, buf.readInt16BE(PRODUCER_EPOCH_AT), firstSeq, lastSeqOf(firstSeq, count - 1), isTransactionalAt(buf, 0))
        if (dup !== undefined) {
          return { baseOffset: dup.firstOffset, lastOffset: dup.lastOffset, logAppendTime: -1, logStartOffset: this._logStartOffset, count: 0, duplicate: true }
        }
      }
    }

    const baseOffset = this.logEndOffset
    const stamp = opts.logAppendTime === true
    const next = this.write(buf, count, now, opts.leaderEpoch ?? 0, stamp).next
    for (p = 0; p < buf.length; ) {
      const producerId = readInt64(buf, p + PRODUCER_ID_AT)
      if (producerId >= 0) {
        const firstOffset = readInt64(buf, p)
        const delta = buf.readInt32BE(p + LAST_OFFSET_DELTA_AT)
        const firstSeq = buf.readInt32BE(p + BASE_SEQUENCE_AT)
        this.producers.update(
          producerId,
          buf.readInt16BE(p + PRODUCER_EPOCH_AT),
          { firstSeq, lastSeq: lastSeqOf(firstSeq, delta), firstOffset, lastOffset: firstOffset + delta },
          readInt64(buf, p + MAX_TIMESTAMP_AT),
          isTransactionalAt(buf, p),
        )
      }
      p += LOG_OVERHEAD + buf.readInt32BE(p + BATCH_LENGTH_AT)
    }
    this.unflushedMessages += count
    this.onAppend?.(this)
    return { baseOffset, lastOffset: next - 1, logAppendTime: stamp ? now : -1, logStartOffset: this._logStartOffset, count, duplicate: false }
  }

  /**
   * Writes one transaction marker (a control batch, as Kafka's
   * EndTransactionMarker) and ends the producer's open transaction here; an
   * abort is added to the segment's aborted-transaction index. The marker is
   * checked first as Kafka's appendEndTxnMarker does (ProducerStateError with
   * INVALID_PRODUCER_EPOCH or TRANSACTION_COORDINATOR_FENCED); one for a
   * producer with no open transaction is still written and moves nothing.
   * Wakes long-polling fetches, since the last stable offset may move.
   */
  appendTxnMarker(marker: TxnMarker, now = Date.now()): AppendResult {
    if (this.closed) throw new LogClosedError(`log ${this.topic}-${this.partition}`)
    this.dirState.check()
    this.producers.checkMarker(marker)
    const buf = encodeTxnMarkerBatch(marker, now)
    const { seg } = this.write(buf, 1, now, 0, false)
    const offset = seg.lastOffset
    const done = this.producers.applyMarker(marker.producerId, marker.producerEpoch, marker.coordinatorEpoch, marker.commit, offset, now)
    if (done?.aborted === true) {
      const unstable = this.producers.firstUnstableOffset()
      try {
        if (seg.txnIndex.append({ producerId: done.producerId, firstOffset: done.firstOffset, lastOffset: done.lastOffset, lastStableOffset: unstable >= 0 ? unstable : offset + 1 })) this.dirSyncPending = true
      } catch (err) {
        throw this.dirState.fail(err, `write to ${seg.txnIndex.path}`)
      }
    }
    this.unflushedMessages += 1
    this.onAppend?.(this)
    return { baseOffset: offset, lastOffset: offset, logAppendTime: -1, logStartOffset: this._logStartOffset, count: 1, duplicate: false }
  }

  /** Assigns offsets from the log end to whole batches and writes them with one call; returns the segment and the next offset. */
  private write(buf: Buffer, count: number, now: number, leaderEpoch: number, stamp: boolean): { seg: LogSegment; next: number } {
    const baseOffset = this.logEndOffset
    let seg: LogSegment
    try {
      seg = this.maybeRoll(buf.length, now, baseOffset + count - 1)
    } catch (err) {
      throw this.dirState.fail(err, `rolling ${this.topic}-${this.partition}`)
    }
    let next = baseOffset
    for (let p = 0; p < buf.length; ) {
      const size = LOG_OVERHEAD + buf.readInt32BE(p + BATCH_LENGTH_AT)
      setBaseOffset(buf, p, BigInt(next))
      setPartitionLeaderEpoch(buf, p, leaderEpoch)
      if (stamp) stampLogAppendTime(buf, p, size, now)
      next += buf.readInt32BE(p + LAST_OFFSET_DELTA_AT) + 1
      p += size
    }
    try {
      seg.append(buf, buf.length, now)
    } catch (err) {
      throw this.dirState.fail(err, `write to ${seg.logPath}`)
    }
    return { seg, next }
  }

  /** True when the flush.messages policy wants an fsync before acknowledging. */
  get needsFlush(): boolean {
    return this.unflushedMessages >= this.config.flushMessages
  }

  /**
   * Reads whole batches starting with the one that holds `offset`, up to
   * `maxBytes` (at least the first batch, however large, when `minOneBatch`),
   * from one segment, as Kafka does; a read never carries a partial batch.
   * Throws OffsetOutOfRangeError outside [logStartOffset, logEndOffset].
   * Nothing at or past `maxOffset` (a batch boundary: the last stable offset
   * for read_committed) is returned.
   */
  async read(offset: number, maxBytes: number, minOneBatch = true, maxOffset = Infinity): Promise<ReadResult> {
    if (this.closed) throw new LogClosedError(`log ${this.topic}-${this.partition}`)
    this.dirState.check()
    const leo = this.logEndOffset
    const start = this._logStartOffset
    if (offset < start || offset > leo) throw new OffsetOutOfRangeError(offset, start, leo)
    const result: ReadResult = { records: EMPTY, highWatermark: leo, lastStableOffset: this.lastStableOffset, logStartOffset: start, logEndOffset: leo }
    if (offset >= Math.min(leo, maxOffset)) return result
    for (let i = this.segmentIndexFor(offset); i < this.segments.length; i++) {
      const seg = this.segments[i]!
      let end = seg.size
      if (maxOffset < seg.nextOffset) end = seg.locate(maxOffset, end)?.position ?? end
      const loc = seg.locate(offset, end)
      if (loc === undefined) continue
      // Only the bytes the response carries are read: whole batches up to maxBytes,
      // or the first batch alone when it is larger and the caller must make progress (KIP-74).
      let stop = seg.wholeBatchesEnd(loc.position, maxBytes, end)
      if (stop === loc.position) {
        if (!minOneBatch || loc.position + loc.size > end) return result
        stop = loc.position + loc.size
      }
      const bytes = await seg.read(loc.position, stop - loc.position)
      // Deleted during the read: answer as for a deleted partition, not with its last bytes.
      if (this.closed) throw new LogClosedError(`log ${this.topic}-${this.partition}`)
      result.records = bytes.length === stop - loc.position ? bytes : wholeBatches(bytes)
      return result
    }
    return result
  }

  /**
   * A read_committed read (KIP-98): batches below the last stable offset, and
   * the aborted transactions overlapping the offsets returned, which the
   * consumer uses to drop aborted records.
   */
  async readCommitted(offset: number, maxBytes: number, minOneBatch = true): Promise<CommittedReadResult> {
    if (this.closed) throw new LogClosedError(`log ${this.topic}-${this.partition}`)
    const r = await this.read(offset, maxBytes, minOneBatch, this.lastStableOffset)
    let upper = offset
    for (let p = 0; p + LOG_OVERHEAD <= r.records.length; p += LOG_OVERHEAD + r.records.readInt32BE(p + BATCH_LENGTH_AT)) {
      upper = readInt64(r.records, p) + r.records.readInt32BE(p + LAST_OFFSET_DELTA_AT) + 1
    }
    return { ...r, abortedTransactions: upper > offset ? this.abortedTransactions(offset, upper) : [] }
  }

  /**
   * Aborted transactions overlapping [fetchOffset, upperBoundOffset), from the
   * segment holding fetchOffset on until an entry's last stable offset shows
   * no later one can overlap (Kafka's collectAbortedTransactions).
   */
  abortedTransactions(fetchOffset: number, upperBoundOffset: number): AbortedTxn[] {
    const out: AbortedTxn[] = []
    for (let i = this.segmentIndexFor(fetchOffset); i < this.segments.length; i++) {
      if (this.segments[i]!.txnIndex.collect(fetchOffset, upperBoundOffset, out)) break
    }
    return out
  }

  /**
   * The first batch whose maxTimestamp is >= `timestamp` (ListOffsets by time;
   * the caller finds the record inside it), or undefined if every record is older.
   */
  async findBatchByTimestamp(timestamp: number): Promise<BatchRead | undefined> {
    for (const seg of this.segments) {
      if (seg.maxTimestamp < timestamp || seg.nextOffset <= this._logStartOffset) continue
      const end = seg.size
      const loc = seg.findByTimestamp(timestamp, end)
      if (loc === undefined) continue
      const batch = await seg.read(loc.position, loc.size)
      return { batch, baseOffset: loc.baseOffset, lastOffset: loc.lastOffset, maxTimestamp: loc.maxTimestamp }
    }
    return undefined
  }

  /** The batch holding the largest timestamp (ListOffsets MAX_TIMESTAMP, KIP-734), the earliest on ties. */
  async batchWithMaxTimestamp(): Promise<BatchRead | undefined> {
    let best: LogSegment | undefined
    for (const seg of this.segments) {
      if (seg.offsetOfMaxTimestamp < 0 || seg.nextOffset <= this._logStartOffset) continue
      if (best === undefined || seg.maxTimestamp > best.maxTimestamp) best = seg
    }
    if (best === undefined) return undefined
    const end = best.size
    const loc = best.locate(best.offsetOfMaxTimestamp, end)
    if (loc === undefined) return undefined
    const batch = await best.read(loc.position, loc.size)
    return { batch, baseOffset: loc.baseOffset, lastOffset: loc.lastOffset, maxTimestamp: loc.maxTimestamp }
  }

  /**
   * DeleteRecords: moves the log start offset up to `offset` (which may not be
   * past the high watermark) and deletes the segments wholly below it.
   * Returns the new log start offset (the low watermark).
   */
  deleteRecordsBefore(offset: number, now = Date.now()): number {
    if (this.closed) throw new LogClosedError(`log ${this.topic}-${this.partition}`)
    const hw = this.highWatermark
    if (offset < 0 || offset > hw) throw new OffsetOutOfRangeError(offset, this._logStartOffset, hw)
    if (offset > this._logStartOffset) {
      this._logStartOffset = offset
      this.logStartOffsetDirty = true
      this.deleteOldSegments(now)
    }
    return this._logStartOffset
  }

  /**
   * Applies retention (time, size, log start offset). When the active segment
   * itself has expired, a new one is rolled first so it can go too, as Kafka
   * does. Returns the number of segments deleted.
   */
  deleteOldSegments(now = Date.now()): number {
    if (this.closed || this.dirState.offline) return 0
    const policy = this.config.cleanupDelete ? this.config : { retentionMs: -1, retentionBytes: -1 } // compact alone: only DeleteRecords
    const decision = segmentsToDelete(this.segments, policy, now, this._logStartOffset, this.lastStableOffset)
    if (decision.count === 0) return 0
    if (decision.count === this.segments.length) this.roll(now)
    const doomed = this.segments.splice(0, decision.count)
    for (const s of doomed) s.delete()
    const first = this.segments[0]!.baseOffset
    if (first > this._logStartOffset) {
      this._logStartOffset = first
      this.logStartOffsetDirty = true
    }
    if (this.recoveryPoint < first) this.recoveryPoint = first
    this.logger.info(
      `${this.topic}-${this.partition}: deleted ${doomed.length} segment(s) (${decision.reason}); log start offset ${this._logStartOffset}`,
    )
    return doomed.length
  }

  /** Starts a new active segment at the log end offset (no-op while the active one is empty). */
  roll(now = Date.now()): LogSegment {
    const old = this.active
    if (old.isEmpty) return old
    old.onBecomeInactive()
    const seg = LogSegment.create(this.dir, this.logEndOffset, this.config.indexIntervalBytes, now, this.fs, this.files)
    this.segments.push(seg)
    this.dirSyncPending = true
    // As Kafka does on roll: sync the finished segment in the background, which
    // also moves the recovery point to the new segment.
    const flushed = this.flush()
    flushed.catch((err: unknown) => this.logger.error(`${this.topic}-${this.partition}: flush after roll failed: ${String(err)}`))
    // As Kafka does at roll: a producer-state snapshot bounds the replay after a crash.
    // Taken now, written off the event loop once what lies below it (batches and
    // .txnindex entries) is fsynced: a snapshot that outlives a power loss then never
    // lets replay skip a batch or an abort that was lost.
    const snap = this.producers.writeSnapshotAsync(this.fs, this.dir, seg.baseOffset, Promise.all([this.snapshotting, flushed]))
    this.snapshotting = snap.catch((err: unknown) => {
      if (!this.closed) this.dirState.fail(err, `writing the producer-state snapshot of ${this.topic}-${this.partition}`)
    })
    return seg
  }

  /**
   * fsyncs every segment with unsynced data and moves the recovery point to the
   * log end offset seen when the flush began. Concurrent calls share the work:
   * a call made while a flush runs waits for one more flush after it.
   */
  flush(): Promise<void> {
    // Never retry an fsync after a failure: the kernel may have dropped the dirty
    // pages and report success for data that is gone.
    if (this.dirState.offline) return Promise.reject(this.dirState.fail(undefined, 'flush'))
    if (this.flushRunning !== null) {
      this.flushQueued ??= this.flushRunning.then(
        () => {
          this.flushQueued = null
          return this.flush()
        },
        () => {
          this.flushQueued = null
          return this.flush()
        },
      )
      return this.flushQueued
    }
    const run = this.doFlush()
    this.flushRunning = run.finally(() => {
      this.flushRunning = null
    })
    return this.flushRunning
  }

  private async doFlush(): Promise<void> {
    const target = this.logEndOffset
    const messages = this.unflushedMessages
    const syncDir = this.dirSyncPending
    const syncParent = this.parentSyncPending
    this.dirSyncPending = false
    this.parentSyncPending = false
    try {
      for (const s of this.segments.filter((seg) => seg.dirty)) await s.flush()
      if (syncDir) await fsyncDirAsync(this.fs, this.dir)
      if (syncParent) await fsyncDirAsync(this.fs, dirname(this.dir))
    } catch (err) {
      if (!this.closed) throw this.dirState.fail(err, `fsync of ${this.topic}-${this.partition}`) // discarded: its directory went with it
    }
    if (target > this.recoveryPoint) this.recoveryPoint = target
    this.unflushedMessages = Math.max(0, this.unflushedMessages - messages)
    this.lastFlushTime = Date.now()
  }

  /** Settles once every producer-state snapshot started so far is written (they run off the event loop). */
  snapshotsWritten(): Promise<void> {
    return this.snapshotting
  }

  /** Flushes, writes the indexes and closes every segment (files stay). */
  async close(): Promise<void> {
    if (this.closed) return
    if (!this.dirState.offline) {
      await this.flush().catch(() => {})
      await this.snapshotting
    }
    this.closed = true
    if (this.dirState.offline) {
      // Write nothing more to a failed directory: release the descriptors only.
      for (const s of this.segments) s.abandon()
      throw this.dirState.fail(undefined, 'close')
    }
    this.active.onBecomeInactive()
    this.producers.writeSnapshot(this.dir, this.logEndOffset, true, this.fs)
    for (const s of this.segments) s.close()
  }

  /**
   * Stops the log for a topic deletion, leaving its files for the caller to
   * rename aside and remove; readers holding a segment finish first.
   */
  discard(): void {
    if (this.segments.length > 0) this.endAtDiscard = this.active.nextOffset
    this.closed = true
    for (const s of this.segments.splice(0)) s.discard()
  }

  private maybeRoll(incoming: number, now: number, lastOffset: number): LogSegment {
    const seg = this.active
    if (seg.isEmpty) return seg
    const rollFrom = seg.firstBatchTimestamp >= 0 && seg.firstBatchTimestamp <= now ? seg.firstBatchTimestamp : seg.createdAt
    if (
      seg.size + incoming > this.config.segmentBytes ||
      now - rollFrom > this.config.segmentMs ||
      // Index entries hold offsets relative to the segment base as int32.
      lastOffset - seg.baseOffset > 0x7fffffff
    ) {
      return this.roll(now)
    }
    return seg
  }

  /** Index of the last segment whose base offset is <= `offset` (0 if none). */
  private segmentIndexFor(offset: number): number {
    const segs = this.segments
    let lo = 0
    let hi = segs.length - 1
    let found = 0
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1
      if (segs[mid]!.baseOffset <= offset) {
        found = mid
        lo = mid + 1
      } else {
        hi = mid - 1
      }
    }
    return found
  }
}
