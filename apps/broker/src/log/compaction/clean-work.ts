import { closeSync, fsyncSync, mkdirSync, openSync, readSync, rmSync, utimesSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { LOG_OVERHEAD, RECORD_BATCH_OVERHEAD } from '@tidelog/protocol'
import { readTxnMarker } from '../control-batch.js'
import { BATCH_LENGTH_AT } from '../format.js'
import { LogSegment } from '../segment.js'
import type { AbortedTxn } from '../txn-index.js'
import { OffsetMap } from './offset-map.js'
import { parseRecords, readStoredBatch, rebuildBatch, recordsSection, type StoredBatch } from './records.js'
import { MANIFEST, type SwapManifest, cleanedDirName } from './swap.js'
import { Throttler } from './throttler.js'
import { TxnTracker } from './txn-tracker.js'

// The cleaner's CPU and I/O work, run in the cleaner's worker thread (cleaner-worker.ts):
// reading segments, building the key map, filtering batches and writing the cleaned
// segment with its indexes. Synchronous file calls are right here: they block only this
// thread. The broker's thread keeps the log's state and does the swap (clean-log.ts).

const READ_CHUNK = 1024 * 1024
const WRITE_CHUNK = 256 * 1024

/** A segment as the worker reads it: its file, and the bytes of it that are whole batches now. */
export interface SegmentRef {
  base: number
  /** The last offset the segment holds. */
  last: number
  path: string
  size: number
}

/** What one cleaning of one log needs to know, sent by the broker's thread at its start. */
export interface CleanJob {
  dir: string
  firstDirty: number
  /** The dirty segments, which the key map is built from. */
  dirty: SegmentRef[]
  /**
   * The first uncleanable offset (exclusive end of the dirty section): the lowest of the active
   * segment's base, the last stable offset and the min.compaction.lag.ms boundary. It may fall
   * inside a dirty segment (the LSO does): the map stops there and batches from it on are kept.
   */
  upperBound: number
  /** Aborted transactions whose markers are at or past the first dirty segment (for the map), and all of them (for the rewrite). */
  abortedFromDirty: AbortedTxn[]
  abortedAll: AbortedTxn[]
  /** producer id -> the last offset of its last batch: that batch stays (empty if need be). */
  lastBatches: [number, number][]
  now: number
  deleteRetentionMs: number
  indexIntervalBytes: number
  dedupeBufferSize: number
  loadFactor: number
  /** log.cleaner.io.max.bytes.per.second (Infinity: no throttle). */
  maxBytesPerSecond: number
  /** Int32 flag: the broker's thread sets it to abandon the job (the log closed, the broker stops). */
  cancel: SharedArrayBuffer
}

export interface MapResult {
  /** The new first dirty offset: one past the last batch the key map covers. */
  endOffset: number
  bytesRead: number
  /** The map filled before the dirty section ended (the rest waits for the next pass). */
  full: boolean
  bufferUtilization: number
}

export interface GroupRequest {
  members: SegmentRef[]
  /** The newest replaced segment's mtime (retention by time falls back to a file's age). */
  mtimeMs: number
}

export interface GroupResult {
  manifest: SwapManifest
  bytesRead: number
  bytesWritten: number
  recordsRemoved: number
}

/** The broker's thread asked the job to stop. */
export class CleaningAborted extends Error {
  readonly code = 'CLEANING_ABORTED'
}

/**
 * The batches of a segment file, read in chunks of about 1 MiB into one reused
 * buffer; a yielded batch is valid until the next is asked for.
 */
function* batchesOf(ref: SegmentRef, onRead: (bytes: number) => void): Generator<Buffer> {
  const fd = openSync(ref.path, 'r')
  try {
    let scratch = Buffer.allocUnsafe(READ_CHUNK)
    let pos = 0
    while (pos + RECORD_BATCH_OVERHEAD <= ref.size) {
      const want = Math.min(scratch.length, ref.size - pos)
      let got = 0
      while (got < want) {
        const n = readSync(fd, scratch, got, want - got, pos + got)
        if (n === 0) break
        got += n
      }
      if (got < LOG_OVERHEAD) return
      const first = LOG_OVERHEAD + scratch.readInt32BE(BATCH_LENGTH_AT)
      if (first < RECORD_BATCH_OVERHEAD || pos + first > ref.size) return
      if (first > got) {
        // A batch larger than the buffer: grow it and read again.
        scratch = Buffer.allocUnsafe(first)
        continue
      }
      onRead(got)
      let p = 0
      while (p + LOG_OVERHEAD <= got) {
        const size = LOG_OVERHEAD + scratch.readInt32BE(p + BATCH_LENGTH_AT)
        if (size < RECORD_BATCH_OVERHEAD || p + size > got) break
        yield scratch.subarray(p, p + size)
        p += size
      }
      pos += p
    }
  } finally {
    closeSync(fd)
  }
}

/** One log's cleaning, as the worker holds it between the broker thread's calls. */
export class CleanSession {
  private readonly cancel: Int32Array
  private readonly throttler: Throttler
  private readonly map: OffsetMap
  private readonly tracker: TxnTracker
  private readonly lastBatches: Map<number, number>
  private keptTxns: AbortedTxn[] = []
  /** One past the last offset the key map covers (buildMap's endOffset): batches from it on are past the map. */
  private covered = -1

  constructor(private readonly job: CleanJob) {
    this.cancel = new Int32Array(job.cancel)
    this.throttler = new Throttler(job.maxBytesPerSecond, this.cancel)
    this.map = new OffsetMap(job.dedupeBufferSize, job.loadFactor)
    this.tracker = new TxnTracker(job.abortedAll)
    this.lastBatches = new Map(job.lastBatches)
  }

  private checkDone(): void {
    if (Atomics.load(this.cancel, 0) !== 0) throw new CleaningAborted('cleaning abandoned')
  }

  /**
   * The latest offset of every key in the dirty section (Kafka's buildOffsetMap),
   * skipping aborted transactional data and markers. When the map fills, it
   * stops there, and the pass cleans only up to the last batch it covered.
   */
  async buildMap(): Promise<MapResult> {
    const { map, job } = this
    const tracker = new TxnTracker(job.abortedFromDirty)
    let bytesRead = 0
    const onRead = (n: number): void => {
      bytesRead += n
      this.throttler.maybeThrottle(n)
    }
    let full = false
    outer: for (const seg of job.dirty) {
      for (const raw of batchesOf(seg, onRead)) {
        this.checkDone()
        const b = readStoredBatch(raw)
        if (b.lastOffset < job.firstDirty) continue
        // Kafka cleans up to the first uncleanable offset, even inside a segment (an open transaction's start).
        if (b.baseOffset >= job.upperBound) {
          map.latestOffset = Math.max(map.latestOffset, job.upperBound - 1)
          break outer
        }
        if (b.isControl) {
          tracker.onMarker(b.producerId, b.lastOffset, b.recordCount > 0 ? readTxnMarker(raw)?.commit : undefined, [])
        } else if (!(b.isTransactional && tracker.onDataBatch(b.producerId, b.lastOffset))) {
          const data = await recordsSection(b)
          for (const r of parseRecords(b, data)) {
            if (r.keyLen < 0 || r.offset < job.firstDirty) continue
            // A pass takes at least one whole batch, or a map smaller than a batch would never advance.
            if (map.isFull && map.latestOffset >= job.firstDirty) full = true
            if (full) break outer
            map.put(data, r.keyAt, r.keyAt + r.keyLen, r.offset)
          }
        }
        map.latestOffset = b.lastOffset
        if (map.isFull) full = true
        if (full) break
      }
      if (full) break
      // A segment read to its end is covered whole, even where its last batches were emptied.
      map.latestOffset = Math.max(map.latestOffset, Math.min(seg.last, job.upperBound - 1))
    }
    const endOffset = map.latestOffset < 0 ? job.firstDirty : Math.max(job.firstDirty, map.latestOffset + 1)
    this.covered = endOffset
    return { endOffset, bytesRead, full, bufferUtilization: map.utilization }
  }

  /**
   * One batch through Kafka's cleaner rules: the batch as it is, a smaller one,
   * an empty one (the last batch of a live producer keeps its header so its
   * sequence survives), or nothing. A record stays when it is its key's latest
   * and is a value, or a tombstone whose delete horizon has not passed; the
   * first cleaning that keeps a tombstone (or an emptied transaction's marker)
   * stamps the batch with the horizon now + delete.retention.ms (KIP-534).
   */
  private async filterBatch(b: StoredBatch, raw: Buffer): Promise<{ out: Buffer | undefined; removed: number }> {
    const { now, deleteRetentionMs } = this.job
    if (b.baseOffset >= this.covered) {
      // Past the map (Kafka's pastLatestOffset): kept as it is. The transactions it belongs to are
      // still followed, so an aborted one's marker and .txnindex entry stay with its data.
      if (b.isControl) this.tracker.onMarker(b.producerId, b.lastOffset, b.recordCount > 0 ? readTxnMarker(raw)?.commit : undefined, this.keptTxns)
      else if (b.isTransactional) this.tracker.onDataBatch(b.producerId, b.lastOffset)
      return { out: raw, removed: 0 }
    }
    if (b.isControl) {
      const commit = b.recordCount > 0 ? readTxnMarker(raw)?.commit : undefined
      const canDiscard = this.tracker.onMarker(b.producerId, b.lastOffset, commit, this.keptTxns)
      if (canDiscard && b.deleteHorizon >= 0 && b.deleteHorizon <= now) return { out: undefined, removed: b.recordCount }
      if (canDiscard && b.deleteHorizon < 0 && commit !== undefined) {
        const data = await recordsSection(b)
        return { out: await rebuildBatch(b, data, parseRecords(b, data), now + deleteRetentionMs), removed: 0 }
      }
      return { out: raw, removed: 0 }
    }
    const retainEmpty = b.producerId >= 0 && this.lastBatches.get(b.producerId) === b.lastOffset
    const empty = async (): Promise<Buffer | undefined> => (retainEmpty ? rebuildBatch(b, Buffer.alloc(0), [], -1) : undefined)
    if (b.isTransactional && this.tracker.onDataBatch(b.producerId, b.lastOffset)) return { out: await empty(), removed: b.recordCount }
    const data = await recordsSection(b)
    const records = parseRecords(b, data)
    if (records.length === 0) return { out: retainEmpty ? raw : undefined, removed: 0 }
    const retainDeletes = b.deleteHorizon < 0 || now < b.deleteHorizon
    const kept = records.filter((r) => {
      // Kafka's cleaner drops records without a key: they cannot be compacted.
      if (r.keyLen < 0) return false
      const latest = this.map.get(data, r.keyAt, r.keyAt + r.keyLen)
      return (latest < 0 || r.offset >= latest) && (r.hasValue || retainDeletes)
    })
    const removed = records.length - kept.length
    const needHorizon = b.deleteHorizon < 0 && kept.some((r) => !r.hasValue)
    if (removed === 0 && !needHorizon) return { out: raw, removed }
    if (kept.length === 0) return { out: await empty(), removed }
    return { out: await rebuildBatch(b, data, kept, needHorizon ? now + deleteRetentionMs : -1), removed }
  }

  /**
   * Rewrites a group of consecutive segments into `<base>.cleaned/` (segment,
   * indexes, manifest), fsynced: step 1 of the swap (swap.ts). The broker's
   * thread commits it.
   */
  async cleanGroup(req: GroupRequest): Promise<GroupResult> {
    const { job } = this
    const base = req.members[0]!.base
    const tmp = join(job.dir, cleanedDirName(base))
    rmSync(tmp, { recursive: true, force: true })
    mkdirSync(tmp)
    const result: GroupResult = { manifest: { base, members: req.members.map((m) => m.base), files: [] }, bytesRead: 0, bytesWritten: 0, recordsRemoved: 0 }
    const out = LogSegment.create(tmp, base, job.indexIntervalBytes, job.now)
    this.keptTxns = []
    try {
      let pending: Buffer[] = []
      let pendingBytes = 0
      const drain = (): void => {
        if (pendingBytes === 0) return
        const buf = Buffer.concat(pending, pendingBytes)
        pending = []
        pendingBytes = 0
        out.append(buf, buf.length, job.now)
        result.bytesWritten += buf.length
        this.throttler.maybeThrottle(buf.length)
      }
      const onRead = (n: number): void => {
        result.bytesRead += n
        this.throttler.maybeThrottle(n)
      }
      for (const seg of req.members) {
        for (const raw of batchesOf(seg, onRead)) {
          this.checkDone()
          const { out: kept, removed } = await this.filterBatch(readStoredBatch(raw), raw)
          result.recordsRemoved += removed
          if (kept === undefined) continue
          // The read buffer is reused: copy what stays.
          pending.push(kept === raw ? Buffer.from(raw) : kept)
          pendingBytes += kept.length
          if (pendingBytes >= WRITE_CHUNK) drain()
        }
      }
      drain()
      for (const t of this.keptTxns) out.txnIndex.append(t)
      out.onBecomeInactive()
      out.flushSync()
      out.close()
    } catch (err) {
      out.abandon()
      rmSync(tmp, { recursive: true, force: true })
      throw err
    }
    result.manifest.files = [out.logPath, out.offsetIndex.path, out.timeIndex.path, ...(out.txnIndex.isEmpty ? [] : [out.txnIndex.path])].map((p) => p.slice(tmp.length + 1))
    writeFileSync(join(tmp, MANIFEST), JSON.stringify(result.manifest))
    const mtime = req.mtimeMs / 1000
    utimesSync(out.logPath, mtime, mtime)
    const fd = openSync(tmp, 'r')
    try {
      fsyncSync(fd)
    } finally {
      closeSync(fd)
    }
    return result
  }
}
