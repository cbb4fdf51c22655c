import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { ErrorCodes, TidelogError } from '@tidelog/protocol'
import { writeFileAtomicSync } from './checkpoint.js'
import { type LogFileSystem, writeFileAtomicWith } from './file-system.js'
import { UnsupportedFormatError } from './errors.js'

export const PRODUCER_SNAPSHOT = 'producer-state.snapshot'
/**
 * The snapshot layout this release writes. One without a version is read as
 * version 1; a newer one stops startup (UnsupportedFormatError) instead of
 * being dropped as damage, so a later release can change the layout.
 * Version 2 adds each producer's coordinator epoch and the first offset of its
 * open transaction (KIP-98); version 1 snapshots load with neither.
 */
export const PRODUCER_SNAPSHOT_VERSION = 2

/** Kafka keeps the metadata of this many recent batches per producer for duplicate detection. */
export const MAX_BATCHES_PER_PRODUCER = 5

export interface ProducerBatch {
  firstSeq: number
  lastSeq: number
  firstOffset: number
  lastOffset: number
}

interface ProducerEntry {
  epoch: number
  /** Oldest first, at most MAX_BATCHES_PER_PRODUCER. */
  batches: ProducerBatch[]
  /** maxTimestamp of its last batch: what producer.id.expiration.ms is measured from, as in Kafka. */
  lastTimestamp: number
  /** Epoch of the transaction coordinator that wrote its last marker; -1 before any. */
  coordinatorEpoch: number
  /** First offset of its open transaction in this partition, -1 when none is open. */
  txnFirstOffset: number
}

/** One producer as DescribeProducers (61) reports it. */
export interface ProducerView {
  producerId: number
  producerEpoch: number
  /** -1 when no batch of the current epoch is remembered. */
  lastSequence: number
  lastTimestamp: number
  coordinatorEpoch: number
  /** -1 if no transaction is open. */
  currentTxnStartOffset: number
}

/** A transaction a marker ended in this partition (Kafka's CompletedTxn). */
export interface CompletedTxn {
  producerId: number
  firstOffset: number
  /** The marker's offset. */
  lastOffset: number
  aborted: boolean
}

/** The transaction marker fields the log checks (Kafka's EndTransactionMarker plus the request's version). */
export interface TxnMarker {
  producerId: number
  producerEpoch: number
  commit: boolean
  coordinatorEpoch: number
  /** The WriteTxnMarkers transaction version: 2 and up is KIP-890's, where the marker carries the bumped epoch. */
  transactionVersion: number
}

/** Kafka's producer.id.expiration.ms default (KIP-854): one day. */
export const DEFAULT_PRODUCER_ID_EXPIRATION_MS = 86_400_000
/** Kafka's producer.id.expiration.check.interval.ms default: ten minutes. */
export const DEFAULT_PRODUCER_ID_EXPIRATION_CHECK_INTERVAL_MS = 600_000

/** A produce that breaks the idempotent producer's rules; carries Kafka's error code. */
export class ProducerStateError extends TidelogError {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message)
  }
}

const INT32_MAX = 0x7fffffff

/** The sequence after `seq` (sequences wrap from 2^31-1 to 0). */
function nextSeq(seq: number): number {
  return seq === INT32_MAX ? 0 : seq + 1
}

export function lastSeqOf(firstSeq: number, lastOffsetDelta: number): number {
  return (firstSeq + lastOffsetDelta) % (INT32_MAX + 1)
}

/** A producer's transaction in one partition: none open, or open from a first offset. */
type TxnState = 'none' | 'open'
type TxnEvent = 'batch' | 'transactionalBatch' | 'marker'

/**
 * Every transition of a producer's transaction in a partition (Kafka's
 * ProducerAppendInfo): a transactional batch opens it, a marker ends it, and a
 * plain idempotent batch while it is open is refused.
 */
const TXN_TRANSITIONS: Readonly<Record<TxnState, Readonly<Record<TxnEvent, TxnState | 'INVALID_TXN_STATE'>>>> = {
  none: { batch: 'none', transactionalBatch: 'open', marker: 'none' },
  open: { batch: 'INVALID_TXN_STATE', transactionalBatch: 'open', marker: 'none' },
}

function txnState(e: ProducerEntry): TxnState {
  return e.txnFirstOffset >= 0 ? 'open' : 'none'
}

/**
 * Per-partition state of idempotent producers (KIP-98): each producer's epoch
 * and its last five batches. A new epoch must start at sequence 0, then every
 * batch must continue at last + 1; a batch equal to one of the last five is a
 * retry and is answered with its original offsets. The state is rebuilt from
 * the log's batch headers, starting from a snapshot written at roll and close.
 */
export class ProducerStateManager {
  private readonly producers = new Map<number, ProducerEntry>()
  /** Producers with an open transaction here, to their first offset: what the last stable offset is computed from. */
  private readonly ongoing = new Map<number, number>()

  get size(): number {
    return this.producers.size
  }

  /**
   * Checks a batch about to be appended. Returns the earlier batch it
   * duplicates, or undefined when it may be appended; throws ProducerStateError
   * for a stale epoch or a sequence gap, and INVALID_TXN_STATE for a
   * non-transactional batch from a producer whose transaction is open here
   * (Kafka's ProducerAppendInfo.appendDataBatch).
   */
  check(producerId: number, epoch: number, firstSeq: number, lastSeq: number, transactional = false): ProducerBatch | undefined {
    const entry = this.producers.get(producerId)
    // A producer with no state here (new, expired by producer.id.expiration.ms, or whose
    // batches retention removed) may start at any sequence, as Kafka accepts since KIP-360.
    if (entry === undefined) return undefined
    if (epoch < entry.epoch) {
      throw new ProducerStateError(ErrorCodes.INVALID_PRODUCER_EPOCH, `producer ${producerId} epoch ${epoch} is older than the current epoch ${entry.epoch}`)
    }
    if (epoch > entry.epoch) {
      if (firstSeq !== 0) {
        throw new ProducerStateError(ErrorCodes.OUT_OF_ORDER_SEQUENCE_NUMBER, `producer ${producerId} epoch ${epoch} must start at sequence 0, not ${firstSeq}`)
      }
    } else {
      for (const b of entry.batches) if (b.firstSeq === firstSeq && b.lastSeq === lastSeq) return b
      const last = entry.batches[entry.batches.length - 1]
      const expected = last === undefined ? 0 : nextSeq(last.lastSeq)
      if (firstSeq !== expected) {
        throw new ProducerStateError(ErrorCodes.OUT_OF_ORDER_SEQUENCE_NUMBER, `producer ${producerId} sent sequence ${firstSeq}, expected ${expected}`)
      }
    }
    if (TXN_TRANSITIONS[txnState(entry)][transactional ? 'transactionalBatch' : 'batch'] === 'INVALID_TXN_STATE') {
      throw new ProducerStateError(
        ErrorCodes.INVALID_TXN_STATE,
        `producer ${producerId} sent a non-transactional batch while its transaction from offset ${entry.txnFirstOffset} is open`,
      )
    }
    return undefined
  }

  /**
   * Records an appended batch whose largest timestamp is `timestamp` (also used
   * while replaying the log, so it never throws). A transactional batch opens
   * its producer's transaction at its first offset unless one is open already.
   */
  update(producerId: number, epoch: number, batch: ProducerBatch, timestamp: number, transactional = false): void {
    let entry = this.producers.get(producerId)
    if (entry === undefined) {
      entry = { epoch, batches: [], lastTimestamp: timestamp, coordinatorEpoch: -1, txnFirstOffset: -1 }
      this.producers.set(producerId, entry)
    } else if (epoch > entry.epoch) {
      // A new epoch forgets the batches but not an open transaction (Kafka's maybeUpdateProducerEpoch).
      entry.epoch = epoch
      entry.batches = []
    } else if (epoch < entry.epoch) {
      return
    }
    entry.lastTimestamp = timestamp
    entry.batches.push(batch)
    if (entry.batches.length > MAX_BATCHES_PER_PRODUCER) entry.batches.shift()
    const from = txnState(entry)
    if (from === 'none' && TXN_TRANSITIONS.none[transactional ? 'transactionalBatch' : 'batch'] === 'open') {
      entry.txnFirstOffset = batch.firstOffset
      this.ongoing.set(producerId, batch.firstOffset)
    }
  }

  /**
   * Checks a transaction marker before it is written, as Kafka's
   * appendEndTxnMarker: an epoch older than the producer's (for transaction
   * version 2, not newer, since the coordinator bumps it for every marker,
   * KIP-890; a repeat of the last marker is let through, KAFKA-19999) is
   * INVALID_PRODUCER_EPOCH, a coordinator epoch older than the last marker's
   * is TRANSACTION_COORDINATOR_FENCED.
   */
  checkMarker(m: TxnMarker): void {
    const entry = this.producers.get(m.producerId)
    if (entry === undefined) return
    const stale = m.transactionVersion >= 2 ? m.producerEpoch <= entry.epoch : m.producerEpoch < entry.epoch
    if (stale && !(m.transactionVersion >= 2 && m.producerEpoch === entry.epoch && entry.txnFirstOffset < 0)) {
      throw new ProducerStateError(
        ErrorCodes.INVALID_PRODUCER_EPOCH,
        `transaction marker epoch ${m.producerEpoch} of producer ${m.producerId} is ${m.transactionVersion >= 2 ? 'not newer than' : 'older than'} its epoch ${entry.epoch} (transaction version ${m.transactionVersion})`,
      )
    }
    if (entry.coordinatorEpoch > m.coordinatorEpoch) {
      throw new ProducerStateError(
        ErrorCodes.TRANSACTION_COORDINATOR_FENCED,
        `transaction marker of producer ${m.producerId} carries coordinator epoch ${m.coordinatorEpoch}, older than ${entry.coordinatorEpoch}`,
      )
    }
  }

  /**
   * Applies a written marker at `offset`: ends the producer's open transaction
   * (returned, when there was one) and takes its epoch and coordinator epoch.
   * Never throws (replay uses it too).
   */
  applyMarker(producerId: number, epoch: number, coordinatorEpoch: number, commit: boolean, offset: number, timestamp: number): CompletedTxn | undefined {
    let entry = this.producers.get(producerId)
    if (entry === undefined) {
      entry = { epoch, batches: [], lastTimestamp: timestamp, coordinatorEpoch, txnFirstOffset: -1 }
      this.producers.set(producerId, entry)
      return undefined
    }
    if (epoch !== entry.epoch) {
      entry.epoch = epoch
      entry.batches = []
    }
    entry.coordinatorEpoch = coordinatorEpoch
    entry.lastTimestamp = timestamp
    const first = entry.txnFirstOffset
    if (txnState(entry) === 'none') return undefined
    entry.txnFirstOffset = -1
    this.ongoing.delete(producerId)
    return { producerId, firstOffset: first, lastOffset: offset, aborted: !commit }
  }

  /** First offset of the earliest open transaction, or -1 when none is open. */
  firstUnstableOffset(): number {
    let min = -1
    for (const first of this.ongoing.values()) if (min < 0 || first < min) min = first
    return min
  }

  /** Open transactions: producer id to first offset. */
  get openTransactions(): ReadonlyMap<number, number> {
    return this.ongoing
  }

  /** Each producer's last batch's last offset: the cleaner keeps that batch (empty if need be) so sequences survive compaction, as Kafka does. */
  lastBatchOffsets(): Map<number, number> {
    const out = new Map<number, number>()
    for (const [producerId, e] of this.producers) {
      const last = e.batches[e.batches.length - 1]
      if (last !== undefined) out.set(producerId, last.lastOffset)
    }
    return out
  }

  /** Every producer, for DescribeProducers. */
  views(): ProducerView[] {
    const out: ProducerView[] = []
    for (const [producerId, e] of this.producers) {
      const last = e.batches[e.batches.length - 1]
      out.push({
        producerId,
        producerEpoch: e.epoch,
        lastSequence: last === undefined ? -1 : last.lastSeq,
        lastTimestamp: e.lastTimestamp,
        coordinatorEpoch: e.coordinatorEpoch,
        currentTxnStartOffset: e.txnFirstOffset,
      })
    }
    return out
  }

  clear(): void {
    this.producers.clear()
    this.ongoing.clear()
  }

  /**
   * Forgets producers whose last batch is at least `expirationMs` older than
   * `now` (Kafka's removeExpiredProducers), so the state does not grow with
   * every producer that ever wrote; one with an open transaction stays, as in
   * Kafka's isProducerExpired. Returns how many were removed.
   */
  removeExpired(now: number, expirationMs: number): number {
    let n = 0
    for (const [pid, e] of this.producers) {
      if (e.txnFirstOffset < 0 && now - e.lastTimestamp >= expirationMs) {
        this.producers.delete(pid)
        n++
      }
    }
    return n
  }

  private snapshotText(offset: number): string {
    const producers = [...this.producers].map(([pid, e]) => [
      pid,
      e.epoch,
      e.batches.map((b) => [b.firstSeq, b.lastSeq, b.firstOffset, b.lastOffset]),
      e.lastTimestamp,
      e.coordinatorEpoch,
      e.txnFirstOffset,
    ])
    return JSON.stringify({ version: PRODUCER_SNAPSHOT_VERSION, offset, producers })
  }

  /** Writes the state as of `offset` (the log end it reflects), atomically. */
  writeSnapshot(dir: string, offset: number, durable: boolean, fs?: LogFileSystem): void {
    writeFileAtomicSync(join(dir, PRODUCER_SNAPSHOT), this.snapshotText(offset), durable, fs)
  }

  /**
   * The same off the event loop: the state is taken now, and written on the
   * libuv pool once `after` resolves (so writes to one directory stay in
   * order, after the data they describe is durable); not at all when it
   * rejects (the flush failed and the directory is offline). Not fsynced: a
   * lost snapshot only means a longer replay.
   */
  writeSnapshotAsync(fs: LogFileSystem, dir: string, offset: number, after: Promise<unknown>): Promise<void> {
    const text = this.snapshotText(offset)
    return after.then(
      () => writeFileAtomicWith(fs, join(dir, PRODUCER_SNAPSHOT), text, false),
      () => undefined,
    )
  }

  /**
   * Loads a snapshot; returns the offset it reflects, or -1 when there is none
   * (or it is unreadable: the log is replayed instead). Throws
   * UnsupportedFormatError for a snapshot written by a newer release.
   */
  loadSnapshot(dir: string, now = Date.now()): number {
    const path = join(dir, PRODUCER_SNAPSHOT)
    let parsed: { version?: unknown; offset?: unknown; producers?: unknown }
    try {
      parsed = JSON.parse(readFileSync(path, 'utf8')) as typeof parsed
    } catch {
      return -1
    }
    if (parsed === null || typeof parsed !== 'object') return -1
    const version = parsed.version ?? 1
    if (typeof version === 'number' && Number.isInteger(version) && version > PRODUCER_SNAPSHOT_VERSION) {
      throw new UnsupportedFormatError(path, version, PRODUCER_SNAPSHOT_VERSION)
    }
    if (version !== 1 && version !== 2) return -1
    if (typeof parsed.offset !== 'number' || !Array.isArray(parsed.producers)) return -1
    this.clear()
    type Row = [number, number, [number, number, number, number][], number?, number?, number?]
    for (const p of parsed.producers as Row[]) {
      if (!Array.isArray(p) || !Array.isArray(p[2])) continue
      const txnFirstOffset = typeof p[5] === 'number' ? p[5] : -1
      this.producers.set(p[0], {
        epoch: p[1],
        batches: p[2].map(([firstSeq, lastSeq, firstOffset, lastOffset]) => ({ firstSeq, lastSeq, firstOffset, lastOffset })),
        // Snapshots from before expiration was tracked: the clock starts at load.
        lastTimestamp: typeof p[3] === 'number' ? p[3] : now,
        coordinatorEpoch: typeof p[4] === 'number' ? p[4] : -1,
        txnFirstOffset,
      })
      if (txnFirstOffset >= 0) this.ongoing.set(p[0], txnFirstOffset)
    }
    return parsed.offset
  }
}
