import {
  RECORD_BATCH_OVERHEAD,
  encodeRecordBatch,
  encodeRecordBatchAsync,
  type CompressionType,
  type RecordInput,
} from '@tidelog/protocol'
import type { PartitionQueue } from './accumulator.js'
import type { Delivery } from './delivery.js'
import { recordSize, type ProducerRecord } from './record.js'

/**
 * Where a batch is in its life. Open: taking records. Ready: closed and queued, never sent.
 * InFlight: in a Produce request awaiting its answer. Retrying: queued again after a retriable
 * failure (keeps its sequence numbers). Acked and Failed are final: every record's promise
 * slot has been settled, and a late answer for the batch is ignored.
 */
export const BatchState = {
  Open: 0,
  Ready: 1,
  InFlight: 2,
  Retrying: 3,
  Acked: 4,
  Failed: 5,
} as const
export type BatchState = (typeof BatchState)[keyof typeof BatchState]

/** Sequence numbers wrap to 0 after 2^31 - 1, as Java's DefaultRecordBatch.incrementSequence. */
export function incrementSequence(sequence: number, increment: number): number {
  return sequence > 0x7fffffff - increment ? increment - (0x7fffffff - sequence) - 1 : sequence + increment
}

/** A flush() waiting for a set of batches. */
export interface FlushWaiter {
  remaining: number
  resolve: () => void
}

/**
 * One partition's batch: the records as given (encoded once, when first sent), and for each
 * record the send() call and slot its result goes to.
 */
export class ProducerBatch {
  state: BatchState = BatchState.Open
  readonly queue: PartitionQueue
  readonly topic: string
  readonly partition: number
  readonly createdAt: number
  /** The records, in the order they were appended. */
  records: ProducerRecord[] = []
  /**
   * Where results go, as runs: records runStart[r] .. runStart[r + 1] - 1 belong to owners[r],
   * at consecutive slots from runSlot[r]. A send() of many records makes one run per batch
   * instead of two array entries per record.
   */
  owners: Delivery[] = []
  runStart: number[] = []
  runSlot: number[] = []
  private lastSlot = -2
  /** Estimated uncompressed size of the records (memory accounting and batch filling). */
  bytes = 0
  /**
   * While every timestamp the producer assigned in this batch is the same millisecond (`now`)
   * and none was given as a Date, the encoder takes the records as they are and `stamps` is not
   * kept. Otherwise `stamps` holds every record's timestamp, and the records are wrapped with
   * theirs at encode time.
   */
  stamps: number[] | undefined
  now = -1
  encoded: Buffer | undefined
  /** Send attempts so far, and when the next may start. */
  attempts = 0
  retryAt = 0
  lastError: Error | undefined
  producerId = -1n
  producerEpoch = -1
  baseSequence = -1
  /** The sequence was rewritten after an epoch bump (Java's sequenceHasBeenReset). */
  sequenceReset = false
  flushWaiters: FlushWaiter[] | undefined

  constructor(queue: PartitionQueue, now: number) {
    this.queue = queue
    this.topic = queue.topic
    this.partition = queue.partition
    this.createdAt = now
  }

  get count(): number {
    return this.records.length
  }

  get lastSequence(): number {
    return incrementSequence(this.baseSequence, this.records.length - 1)
  }

  /** `stamp` is the record's timestamp; `assigned` says the producer chose it (no timestamp given). */
  add(record: ProducerRecord, stamp: number, assigned: boolean, size: number, owner: Delivery, slot: number): void {
    const stamps = this.stamps
    if (stamps !== undefined) {
      stamps.push(stamp)
    } else if (assigned) {
      if (this.now < 0) this.now = stamp
      else if (stamp !== this.now) this.keepStamps().push(stamp)
    } else if (typeof record.timestamp !== 'number' && typeof record.timestamp !== 'bigint') {
      this.keepStamps().push(stamp)
    }
    const n = this.records.length
    if (slot !== this.lastSlot + 1 || this.owners[this.owners.length - 1] !== owner) {
      this.owners.push(owner)
      this.runStart.push(n)
      this.runSlot.push(slot)
    }
    this.lastSlot = slot
    this.records.push(record)
    this.bytes += size
  }

  /** Switches to keeping every timestamp, filling in those of the records added so far. */
  private keepStamps(): number[] {
    const stamps = this.records.map((r) => (r.timestamp === undefined || r.timestamp === null ? this.now : Number(r.timestamp)))
    this.stamps = stamps
    return stamps
  }

  /** Record i's timestamp in ms. */
  timestampOf(i: number): number {
    if (this.stamps !== undefined) return this.stamps[i]!
    const t = this.records[i]!.timestamp
    return t === undefined || t === null ? this.now : Number(t)
  }

  /** Whether `size` more bytes fit under `limit` at the given compression ratio (an empty batch takes anything). */
  hasRoomFor(size: number, limit: number, ratio: number): boolean {
    return this.records.length === 0 || RECORD_BATCH_OVERHEAD + (this.bytes + size) * ratio <= limit
  }

  isFull(limit: number, ratio: number): boolean {
    return RECORD_BATCH_OVERHEAD + this.bytes * ratio >= limit
  }

  /** The batch's expected size on the wire. */
  estimatedSize(ratio: number): number {
    return this.encoded !== undefined ? this.encoded.length : RECORD_BATCH_OVERHEAD + Math.ceil(this.bytes * ratio)
  }

  private input(compression: CompressionType) {
    const stamps = this.stamps
    const records: RecordInput[] = stamps === undefined ? (this.records as RecordInput[]) : this.records.map((r, i) => ({ key: r.key, value: r.value, headers: r.headers, timestamp: stamps[i]! }))
    return {
      records,
      compression,
      producerId: this.producerId,
      producerEpoch: this.producerEpoch,
      baseSequence: this.baseSequence,
      now: this.now < 0 ? undefined : this.now,
    }
  }

  /** Encodes with the batch's current producer id, epoch and sequence. */
  encode(compression: CompressionType): Buffer {
    return (this.encoded = encodeRecordBatch(this.input(compression)))
  }

  /** encode() for codecs that compress asynchronously. */
  async encodeAsync(compression: CompressionType): Promise<Buffer> {
    return (this.encoded = await encodeRecordBatchAsync(this.input(compression)))
  }

  /**
   * Splits the batch into batches of about `limit` bytes (uncompressed, at least one record
   * each), after the broker refused it as too large (Java's ProducerBatch.split). The parts keep
   * the records' order, their timestamps, where their results go, and, when the batch held
   * sequence numbers, consecutive slices of its sequence range under the same producer id and
   * epoch, so the broker sees no gap.
   */
  split(limit: number): ProducerBatch[] {
    const parts: ProducerBatch[] = []
    let part: ProducerBatch | undefined
    const n = this.records.length
    for (let r = 0; r < this.owners.length; r++) {
      const from = this.runStart[r]!
      const to = r + 1 < this.owners.length ? this.runStart[r + 1]! : n
      for (let i = from; i < to; i++) {
        const record = this.records[i]!
        const size = recordSize(record)
        if (part === undefined || !part.hasRoomFor(size, limit, 1)) {
          part = new ProducerBatch(this.queue, this.createdAt)
          part.state = BatchState.Retrying
          part.attempts = this.attempts
          part.lastError = this.lastError
          parts.push(part)
        }
        const stamp = this.timestampOf(i)
        const t = record.timestamp
        part.add(record, stamp, t === undefined || t === null, size, this.owners[r]!, this.runSlot[r]! + i - from)
      }
    }
    if (this.baseSequence >= 0) {
      let sequence = this.baseSequence
      for (const p of parts) {
        p.producerId = this.producerId
        p.producerEpoch = this.producerEpoch
        p.baseSequence = sequence
        p.sequenceReset = this.sequenceReset
        sequence = incrementSequence(sequence, p.count)
      }
    }
    return parts
  }

  /** Drops what only an unfinished batch needs, once every record has its result. */
  release(): void {
    this.records = []
    this.stamps = undefined
    this.owners = []
    this.runStart = []
    this.runSlot = []
    this.encoded = undefined
  }
}

/**
 * Java's CompressionRatioEstimator: batches fill by their estimated compressed size, starting
 * from a ratio of 1 and learning from every batch encoded: quickly upwards (a batch that came
 * out larger than estimated risks oversized requests), slowly downwards.
 */
export class CompressionRatio {
  value = 1

  observe(uncompressed: number, compressed: number): void {
    if (uncompressed <= 0) return
    const observed = compressed / uncompressed
    if (observed > this.value) this.value = Math.max(this.value + 0.05, observed)
    else if (observed < this.value) this.value = Math.max(this.value - 0.005, observed)
  }
}
