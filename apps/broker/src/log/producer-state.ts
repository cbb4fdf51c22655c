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
 */
export const PRODUCER_SNAPSHOT_VERSION = 1

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

/**
 * Per-partition state of idempotent producers (KIP-98): each producer's epoch
 * and its last five batches. A new epoch must start at sequence 0, then every
 * batch must continue at last + 1; a batch equal to one of the last five is a
 * retry and is answered with its original offsets. The state is rebuilt from
 * the log's batch headers, starting from a snapshot written at roll and close.
 */
export class ProducerStateManager {
  private readonly producers = new Map<number, ProducerEntry>()

  get size(): number {
    return this.producers.size
  }

  /**
   * Checks a batch about to be appended. Returns the earlier batch it
   * duplicates, or undefined when it may be appended; throws ProducerStateError
   * for a stale epoch or a sequence gap.
   */
  check(producerId: number, epoch: number, firstSeq: number, lastSeq: number): ProducerBatch | undefined {
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
      return undefined
    }
    for (const b of entry.batches) if (b.firstSeq === firstSeq && b.lastSeq === lastSeq) return b
    const last = entry.batches[entry.batches.length - 1]
    const expected = last === undefined ? 0 : nextSeq(last.lastSeq)
    if (firstSeq !== expected) {
      throw new ProducerStateError(ErrorCodes.OUT_OF_ORDER_SEQUENCE_NUMBER, `producer ${producerId} sent sequence ${firstSeq}, expected ${expected}`)
    }
    return undefined
  }

  /**
   * Records an appended batch whose largest timestamp is `timestamp` (also used
   * while replaying the log, so it never throws).
   */
  update(producerId: number, epoch: number, batch: ProducerBatch, timestamp: number): void {
    let entry = this.producers.get(producerId)
    if (entry === undefined || epoch > entry.epoch) {
      entry = { epoch, batches: [], lastTimestamp: timestamp }
      this.producers.set(producerId, entry)
    } else if (epoch < entry.epoch) {
      return
    }
    entry.lastTimestamp = timestamp
    entry.batches.push(batch)
    if (entry.batches.length > MAX_BATCHES_PER_PRODUCER) entry.batches.shift()
  }

  clear(): void {
    this.producers.clear()
  }

  /**
   * Forgets producers whose last batch is at least `expirationMs` older than
   * `now` (Kafka's removeExpiredProducers), so the state does not grow with
   * every producer that ever wrote. Returns how many were removed.
   */
  removeExpired(now: number, expirationMs: number): number {
    let n = 0
    for (const [pid, e] of this.producers) {
      if (now - e.lastTimestamp >= expirationMs) {
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
    ])
    return JSON.stringify({ version: PRODUCER_SNAPSHOT_VERSION, offset, producers })
  }

  /** Writes the state as of `offset` (the log end it reflects), atomically. */
  writeSnapshot(dir: string, offset: number, durable: boolean, fs?: LogFileSystem): void {
    writeFileAtomicSync(join(dir, PRODUCER_SNAPSHOT), this.snapshotText(offset), durable, fs)
  }

  /**
   * The same off the event loop: the state is taken now, and written on the
   * libuv pool once `after` settles (so writes to one directory stay in
   * order). Not fsynced: a lost snapshot only means a longer replay.
   */
  writeSnapshotAsync(fs: LogFileSystem, dir: string, offset: number, after: Promise<unknown>): Promise<void> {
    const text = this.snapshotText(offset)
    return after.then(
      () => writeFileAtomicWith(fs, join(dir, PRODUCER_SNAPSHOT), text, false),
      () => writeFileAtomicWith(fs, join(dir, PRODUCER_SNAPSHOT), text, false),
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
    if (version !== PRODUCER_SNAPSHOT_VERSION) return -1
    if (typeof parsed.offset !== 'number' || !Array.isArray(parsed.producers)) return -1
    this.producers.clear()
    for (const p of parsed.producers as [number, number, [number, number, number, number][], number?][]) {
      if (!Array.isArray(p) || !Array.isArray(p[2])) continue
      this.producers.set(p[0], {
        epoch: p[1],
        batches: p[2].map(([firstSeq, lastSeq, firstOffset, lastOffset]) => ({ firstSeq, lastSeq, firstOffset, lastOffset })),
        // Snapshots from before expiration was tracked: the clock starts at load.
        lastTimestamp: typeof p[3] === 'number' ? p[3] : now,
      })
    }
    return parsed.offset
  }
}
