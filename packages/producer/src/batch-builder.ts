import {
  CompressionError,
  CompressionType,
  RECORD_BATCH_OVERHEAD,
  TidelogError,
  compress,
  compressionName,
  crc32c,
  decodeRecordBatch,
  getCodec,
} from '@tidelog/protocol'
import type { PartitionQueue } from './accumulator.js'
import type { Delivery } from './delivery.js'
import { RECORD_FRAMING, recordSize } from './record.js'
import { writeRecord, type RecordParts, type RecordSink } from './record-writer.js'

// Where the magic-2 batch header keeps what the producer fills in when it sends the batch.
const ATTRIBUTES_OFFSET = 21
const CRC_OFFSET = 17
/** Record batch attributes bit 4 (KIP-98). */
const TRANSACTIONAL_BIT = 0x10
/** The smallest first buffer of a batch; it doubles as the batch fills. */
const MIN_INITIAL_BYTES = 512

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

const EMPTY = Buffer.alloc(0)

/** A flush() waiting for a set of batches. */
export interface FlushWaiter {
  remaining: number
  resolve: () => void
}

/**
 * One partition's batch: its records, written as bytes the moment send() takes them (the
 * caller's objects are never held), and for each record the send() call and slot its result
 * goes to. Sending it adds the header (producer id, sequence, CRC) and compresses.
 */
export class ProducerBatch implements RecordSink {
  state: BatchState = BatchState.Open
  readonly queue: PartitionQueue
  readonly topic: string
  readonly partition: number
  readonly createdAt: number
  /** Header space, then the records section up to `pos`; allocated with the first record. */
  buf: Buffer = EMPTY
  pos = RECORD_BATCH_OVERHEAD
  /** Every record's timestamp (ms), in order: the records' metadata and the header need them. */
  stamps: number[] = []
  private maxTimestamp = -Infinity
  /** `buf` itself became the encoded batch once (uncompressed): it must not be written again. */
  private encodedInPlace = false
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
  encoded: Buffer | undefined
  /** Send attempts so far, and when the next may start. */
  attempts = 0
  retryAt = 0
  lastError: Error | undefined
  producerId = -1n
  producerEpoch = -1
  baseSequence = -1
  /** Part of a transaction: the batch header's isTransactional bit (KIP-98). */
  transactional = false
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
    return this.stamps.length
  }

  get lastSequence(): number {
    return incrementSequence(this.baseSequence, this.stamps.length - 1)
  }

  /** Writes a record (checked by recordSize(), which gave `size`) with timestamp `stamp` (ms). */
  add(record: RecordParts, stamp: number, size: number, owner: Delivery, slot: number): void {
    const n = this.stamps.length
    // As large as the partition's last batch came out: busy partitions rarely grow a buffer,
    // and a sparse one (a record now and then) does not hold a batch-sized buffer per record.
    if (n === 0) this.buf = Buffer.allocUnsafe(Math.max(MIN_INITIAL_BYTES, this.queue.lastBatchBytes, RECORD_BATCH_OVERHEAD + 2 * size))
    writeRecord(this, record, n === 0 ? 0 : stamp - this.stamps[0]!, n, size - RECORD_FRAMING)
    this.stamps.push(stamp)
    if (stamp > this.maxTimestamp) this.maxTimestamp = stamp
    if (slot !== this.lastSlot + 1 || this.owners[this.owners.length - 1] !== owner) {
      this.owners.push(owner)
      this.runStart.push(n)
      this.runSlot.push(slot)
    }
    this.lastSlot = slot
    this.bytes += size
  }

  /** Record i's timestamp in ms. */
  timestampOf(i: number): number {
    return this.stamps[i]!
  }

  /** Whether `size` more bytes fit under `limit` at the given compression ratio (an empty batch takes anything). */
  hasRoomFor(size: number, limit: number, ratio: number): boolean {
    return this.stamps.length === 0 || RECORD_BATCH_OVERHEAD + (this.bytes + size) * ratio <= limit
  }

  isFull(limit: number, ratio: number): boolean {
    return RECORD_BATCH_OVERHEAD + this.bytes * ratio >= limit
  }

  /** The batch's expected size on the wire. */
  estimatedSize(ratio: number): number {
    return this.encoded !== undefined ? this.encoded.length : RECORD_BATCH_OVERHEAD + Math.ceil(this.bytes * ratio)
  }

  /** The header, over `out`'s records section, with the batch's current producer id, epoch and sequence. */
  private finish(out: Buffer, codec: number): Buffer {
    const n = this.stamps.length
    out.writeBigInt64BE(0n, 0)
    out.writeInt32BE(out.length - 12, 8)
    out.writeInt32BE(-1, 12)
    out[16] = 2
    out.writeInt16BE(this.transactional ? codec | TRANSACTIONAL_BIT : codec, ATTRIBUTES_OFFSET)
    out.writeInt32BE(n - 1, 23)
    out.writeBigInt64BE(BigInt(this.stamps[0]!), 27)
    out.writeBigInt64BE(BigInt(this.maxTimestamp), 35)
    out.writeBigInt64BE(this.producerId, 43)
    out.writeInt16BE(this.producerEpoch, 51)
    out.writeInt32BE(this.baseSequence, 53)
    out.writeInt32BE(n, 57)
    out.writeUInt32BE(crc32c(out, ATTRIBUTES_OFFSET, out.length) >>> 0, CRC_OFFSET)
    return out
  }

  /** The records section, uncompressed; taking it ends the batch's appends. */
  private body(): Buffer {
    this.queue.lastBatchBytes = this.pos
    return this.buf.subarray(RECORD_BATCH_OVERHEAD, this.pos)
  }

  private withCompressed(codec: number, compressed: Uint8Array): Buffer {
    const out = Buffer.allocUnsafe(RECORD_BATCH_OVERHEAD + compressed.length)
    out.set(compressed, RECORD_BATCH_OVERHEAD)
    return (this.encoded = this.finish(out, codec))
  }

  /** Encodes with the batch's current producer id, epoch and sequence. */
  encode(compression: CompressionType): Buffer {
    if (compression === CompressionType.None) {
      this.queue.lastBatchBytes = this.pos
      // The first time, the header goes in front of the records where they are: no copy. A
      // batch encoded again (new sequence after an epoch bump) gets a copy, since a request
      // may still hold the first bytes (e.g. deferred while the broker throttles).
      if (!this.encodedInPlace) {
        this.encodedInPlace = true
        return (this.encoded = this.finish(this.buf.subarray(0, this.pos), compression))
      }
      const out = Buffer.allocUnsafe(this.pos)
      this.buf.copy(out, RECORD_BATCH_OVERHEAD, RECORD_BATCH_OVERHEAD, this.pos)
      return (this.encoded = this.finish(out, compression))
    }
    const compressed = compress(compression, this.body())
    if (!(compressed instanceof Uint8Array)) {
      void compressed.catch(() => undefined)
      throw new CompressionError(`${compressionName(compression)} compresses asynchronously here: the sender must use encodeAsync`)
    }
    return this.withCompressed(compression, compressed)
  }

  /** encode() for codecs that compress asynchronously (or can: compressAsync, on the libuv pool). */
  async encodeAsync(compression: CompressionType): Promise<Buffer> {
    if (compression === CompressionType.None) return this.encode(compression)
    const codec = getCodec(compression)
    let compressed: Uint8Array
    try {
      compressed = await (codec.compressAsync !== undefined ? codec.compressAsync(this.body()) : compress(compression, this.body()))
    } catch (e) {
      if (e instanceof TidelogError) throw e
      throw new CompressionError(`${compressionName(compression)}: ${(e as Error)?.message ?? String(e)}`, { cause: e })
    }
    return this.withCompressed(compression, compressed)
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
    const n = this.stamps.length
    // Rare (the broker refused the batch as too large): read the records back from the bytes.
    const out = Buffer.allocUnsafe(this.pos)
    this.buf.copy(out, RECORD_BATCH_OVERHEAD, RECORD_BATCH_OVERHEAD, this.pos)
    const records = [...decodeRecordBatch(this.finish(out, CompressionType.None))]
    for (let r = 0; r < this.owners.length; r++) {
      const from = this.runStart[r]!
      const to = r + 1 < this.owners.length ? this.runStart[r + 1]! : n
      for (let i = from; i < to; i++) {
        const record = records[i]!
        const size = recordSize(record)
        if (part === undefined || !part.hasRoomFor(size, limit, 1)) {
          part = new ProducerBatch(this.queue, this.createdAt)
          part.state = BatchState.Retrying
          part.attempts = this.attempts
          part.lastError = this.lastError
          parts.push(part)
        }
        part.add(record, this.stamps[i]!, size, this.owners[r]!, this.runSlot[r]! + i - from)
      }
    }
    if (this.baseSequence >= 0) {
      let sequence = this.baseSequence
      for (const p of parts) {
        p.producerId = this.producerId
        p.producerEpoch = this.producerEpoch
        p.baseSequence = sequence
        p.sequenceReset = this.sequenceReset
        p.transactional = this.transactional
        sequence = incrementSequence(sequence, p.count)
      }
    }
    return parts
  }

  /** Drops what only an unfinished batch needs, once every record has its result. */
  release(): void {
    this.buf = EMPTY
    this.stamps = []
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
