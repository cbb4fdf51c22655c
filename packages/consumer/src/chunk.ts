import {
  CorruptRecordError,
  LOG_OVERHEAD,
  RECORD_BATCH_OVERHEAD,
  batchSizeAt,
  decodeRecordBatch,
  decodeRecordBatchAsync,
  type FetchResponseAbortedTransaction,
  type Record,
  type RecordBatch,
} from '@tidelog/protocol'
import type { PartitionState } from './positions.js'

const MAGIC_OFFSET = 16
const LAST_OFFSET_DELTA_OFFSET = 23
const ATTRIBUTES_OFFSET = 21
const COMPRESSION_MASK = 0x07
/** Kafka's smallest legacy message after its length field. */
const MIN_LEGACY_LENGTH = 14
/** Control record types (the key's second int16): KIP-98's transaction markers. */
const CONTROL_ABORT = 0

/**
 * Where the next fetch starts after `records`: one past the last offset of the last complete
 * batch (a response may end in a partial batch, cut at max_bytes), or -1n if there is none.
 * Only headers are read. Legacy (magic 0/1) entries carry their last offset at their start.
 */
export function nextOffsetAfter(records: Buffer): bigint {
  let next = -1n
  for (let pos = 0; ; ) {
    const size = batchSizeAt(records, pos)
    if (size < 0 || size > records.length - pos) return next
    if (size < LOG_OVERHEAD + MIN_LEGACY_LENGTH) throw new CorruptRecordError(`record batch of ${size} bytes is below the minimum`, pos)
    const magic = records[pos + MAGIC_OFFSET]
    if (magic === 2) {
      if (size < RECORD_BATCH_OVERHEAD) throw new CorruptRecordError(`record batch of ${size} bytes is smaller than its header`, pos)
      next = records.readBigInt64BE(pos) + BigInt(records.readInt32BE(pos + LAST_OFFSET_DELTA_OFFSET)) + 1n
    } else {
      next = records.readBigInt64BE(pos) + 1n
    }
    pos += size
  }
}

/**
 * One partition's records from one fetch response, read lazily as the application consumes
 * them: a batch is decoded (and decompressed) only when delivery reaches it, so the buffer
 * holds the compact fetched bytes. Records before the partition's position (a batch that
 * started earlier), control batches and, under read_committed, batches of aborted
 * transactions are skipped, moving the position past them (Java's CompletedFetch rules).
 */
export class Chunk {
  readonly bytes: number
  /** Set while reading the current batch, for the messages built from it. */
  leaderEpoch = -1
  timestampType: 0 | 1 = 0
  private pos = 0
  private iter: Iterator<Record> | null = null
  /** One past the current batch's last offset. */
  private batchNext = -1n
  private readonly aborted: FetchResponseAbortedTransaction[] | null
  private abortedIndex = 0
  private abortedProducers: Set<bigint> | null = null

  constructor(
    readonly state: PartitionState,
    /** state.fetchEpoch when fetched; a different one now means the data is stale. */
    readonly fetchEpoch: number,
    /** One past the last offset of the last complete batch. */
    readonly endOffset: bigint,
    readonly records: Buffer,
    readonly highWatermark: bigint,
    readonly lastStableOffset: bigint,
    readonly logStartOffset: bigint,
    aborted: FetchResponseAbortedTransaction[] | null | undefined,
    private readonly readCommitted: boolean,
    private readonly verifyCrc: boolean,
    private readonly maxDecompressedBytes: number | undefined,
    /** Shared with the other chunks of the same response (buffer accounting). */
    readonly share: { chunks: number; bytes: number } = { chunks: 1, bytes: records.length },
  ) {
    this.bytes = records.length
    this.aborted = readCommitted && aborted != null && aborted.length > 0 ? aborted.slice().sort((a, b) => (a.firstOffset < b.firstOffset ? -1 : a.firstOffset > b.firstOffset ? 1 : 0)) : null
  }

  /**
   * The same records in a buffer of their own (not yet read from), so this chunk's response
   * frame, shared with other partitions' chunks, need not stay in memory while it waits.
   */
  copy(): Chunk {
    const records = Buffer.from(this.records)
    return new Chunk(this.state, this.fetchEpoch, this.endOffset, records, this.highWatermark, this.lastStableOffset, this.logStartOffset, this.aborted, this.readCommitted, this.verifyCrc, this.maxDecompressedBytes)
  }

  get isStale(): boolean {
    return this.state.fetchEpoch !== this.fetchEpoch
  }

  /**
   * The next record at or after the position; null when the chunk is exhausted; a promise when
   * a batch needs asynchronous decompression first (call again once it settles). The caller
   * moves the position past each record it delivers.
   */
  next(): Record | null | Promise<void> {
    const s = this.state
    for (;;) {
      const it = this.iter
      if (it !== null) {
        const r = it.next()
        if (r.done !== true) {
          if (r.value.offset < s.position) continue
          return r.value
        }
        this.iter = null
        s.skipTo(this.batchNext)
      }
      const step = this.advance()
      if (step === false) return null
      if (step !== true) return step
    }
  }

  /** Moves to the next batch worth reading: true when one is ready or skipped, false at the end. */
  private advance(): boolean | Promise<void> {
    const records = this.records
    const pos = this.pos
    const size = batchSizeAt(records, pos)
    if (size < 0 || size > records.length - pos) return false
    if (size < LOG_OVERHEAD + MIN_LEGACY_LENGTH) throw new CorruptRecordError(`record batch of ${size} bytes is below the minimum`, pos)
    const s = this.state
    const magic = records[pos + MAGIC_OFFSET]
    const v2 = magic === 2
    if (v2 && size < RECORD_BATCH_OVERHEAD) throw new CorruptRecordError(`record batch of ${size} bytes is smaller than its header`, pos)
    const base = records.readBigInt64BE(pos)
    const next = v2 ? base + BigInt(records.readInt32BE(pos + LAST_OFFSET_DELTA_OFFSET)) + 1n : base + 1n
    this.pos = pos + size
    // Wholly before the position (the fetch started inside an earlier batch): not even decoded.
    if (next <= s.position) return true
    this.batchNext = next
    if (v2 && (records.readInt16BE(pos + ATTRIBUTES_OFFSET) & COMPRESSION_MASK) !== 0) {
      return decodeRecordBatchAsync(records, pos, this.decodeOptions()).then((b) => this.enter(b))
    }
    this.enter(decodeRecordBatch(records, pos, this.decodeOptions()))
    return true
  }

  private decodeOptions(): { verifyCrc: boolean; maxDecompressedBytes?: number } {
    return this.maxDecompressedBytes === undefined ? { verifyCrc: this.verifyCrc } : { verifyCrc: this.verifyCrc, maxDecompressedBytes: this.maxDecompressedBytes }
  }

  private enter(batch: RecordBatch): void {
    if (this.readCommitted && batch.producerId >= 0n) {
      const lastOffset = this.batchNext - 1n
      const aborted = this.aborted
      // Transactions that aborted and began at or before this batch (KIP-98 read_committed).
      while (aborted !== null && this.abortedIndex < aborted.length && aborted[this.abortedIndex]!.firstOffset <= lastOffset) {
        ;(this.abortedProducers ??= new Set()).add(aborted[this.abortedIndex++]!.producerId)
      }
      if (batch.isControl) {
        if (isAbortMarker(batch)) this.abortedProducers?.delete(batch.producerId)
      } else if (batch.isTransactional && this.abortedProducers?.has(batch.producerId) === true) {
        this.state.skipTo(this.batchNext)
        return
      }
    }
    if (batch.isControl) {
      this.state.skipTo(this.batchNext)
      return
    }
    this.leaderEpoch = batch.magic === 2 ? batch.partitionLeaderEpoch : -1
    this.timestampType = batch.timestampType
    this.iter = batch[Symbol.iterator]()
  }
}

function isAbortMarker(batch: RecordBatch): boolean {
  for (const r of batch) {
    const key = r.key
    // Key: int16 version, int16 type.
    return key !== null && key.length >= 4 && key.readInt16BE(2) === CONTROL_ABORT
  }
  return false
}
