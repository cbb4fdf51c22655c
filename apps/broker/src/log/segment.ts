import { fstatSync, read, readSync } from 'node:fs'
import { join } from 'node:path'
import { LOG_OVERHEAD, RECORD_BATCH_OVERHEAD } from '@tidelog/protocol'
import {
  BATCH_LENGTH_AT,
  INDEX_SUFFIX,
  LAST_OFFSET_DELTA_AT,
  LOG_SUFFIX,
  MAX_TIMESTAMP_AT,
  TIME_INDEX_SUFFIX,
  WALK_HEADER_BYTES,
  readInt64,
  segmentFileName,
} from './format.js'
import { type LogFileSystem, defaultFileSystem, fsyncAsync } from './file-system.js'
import { OffsetIndex } from './offset-index.js'
import type { Evictable, OpenFileLimiter } from './open-files.js'
import { TimeIndex } from './time-index.js'
import { TXN_INDEX_SUFFIX, TransactionIndex } from './txn-index.js'

/** Where a batch sits in a segment. */
export interface BatchLocation {
  position: number
  size: number
  baseOffset: number
  lastOffset: number
  maxTimestamp: number
}

// Header walks are synchronous, so one scratch buffer serves them all.
const SCRATCH = Buffer.allocUnsafe(64 * 1024)

/**
 * A window of a segment file in SCRATCH, refilled from the file as a walk moves
 * past it. Reads are sized by `chunk`: small for a lookup that stops within an
 * index interval, large for sequential walks.
 */
class Window {
  private start = 0
  private len = 0
  constructor(
    private readonly fd: number,
    private readonly end: number,
    private readonly chunk: number,
  ) {}

  /** Index in SCRATCH of `position`, with `n` bytes readable there, or -1 if the file ends first. */
  load(position: number, n: number): number {
    if (position >= this.start && position + n <= this.start + this.len) return position - this.start
    const want = Math.min(this.end - position, Math.max(n, this.chunk), SCRATCH.length)
    if (want < n) return -1
    let got = 0
    while (got < want) {
      const r = readSync(this.fd, SCRATCH, got, want - got, position + got)
      if (r === 0) break
      got += r
    }
    this.start = position
    this.len = got
    return got >= n ? 0 : -1
  }
}

/**
 * One segment: `<base>.log` with its `.index` and `.timeindex`. The log file
 * descriptor stays open for the segment's life; reads take a reference so a
 * segment deleted by retention while a fetch is reading it keeps its
 * descriptor (and, on POSIX, its unlinked data) until the last reader is done.
 */
export class LogSegment implements Evictable {
  readonly logPath: string
  /** Bytes in the .log file. */
  size: number
  /** One past the last offset in the segment (the base offset while empty). */
  nextOffset: number
  /** Largest batch maxTimestamp, -1 while unknown. */
  maxTimestamp = -1
  /** Base offset of the batch holding maxTimestamp. */
  offsetOfMaxTimestamp = -1
  /** maxTimestamp of the first batch: what segment.ms measures age from, as Kafka does. */
  firstBatchTimestamp = -1
  /** Wall-clock creation (or open) time, the age of a segment whose first batch has no timestamp. */
  readonly createdAt: number
  /** Wall clock of the last append; retention falls back to it when batches carry no timestamps. */
  lastModified: number
  offsetIndex: OffsetIndex
  timeIndex: TimeIndex
  /** Aborted transactions whose markers are in this segment (Kafka's `.txnindex`). */
  readonly txnIndex: TransactionIndex
  /** Bytes written but not yet fsynced. */
  dirty = false

  private bytesSinceIndex = 0
  private refs = 0
  private state: 'open' | 'closed' | 'deleted' = 'open'
  /** False once closed for good (closed, or deleted and released). */
  private fdOpen = true
  /** The descriptor, or -1 while the open-file limiter has it closed. */
  private handle: number

  private constructor(
    readonly dir: string,
    readonly baseOffset: number,
    fd: number,
    size: number,
    readonly indexIntervalBytes: number,
    now: number,
    lastModified: number,
    readonly fs: LogFileSystem,
    private readonly files: OpenFileLimiter | undefined,
  ) {
    this.handle = fd
    files?.opened(this)
    this.logPath = join(dir, segmentFileName(baseOffset, LOG_SUFFIX))
    this.size = size
    this.nextOffset = baseOffset
    this.createdAt = now
    this.lastModified = lastModified
    this.offsetIndex = new OffsetIndex(join(dir, segmentFileName(baseOffset, INDEX_SUFFIX)), baseOffset)
    this.timeIndex = new TimeIndex(join(dir, segmentFileName(baseOffset, TIME_INDEX_SUFFIX)), baseOffset)
    this.txnIndex = new TransactionIndex(join(dir, segmentFileName(baseOffset, TXN_INDEX_SUFFIX)), fs)
  }

  /** Creates an empty segment (replacing any files of that name). */
  static create(
    dir: string,
    baseOffset: number,
    indexIntervalBytes: number,
    now: number,
    fs: LogFileSystem = defaultFileSystem,
    files?: OpenFileLimiter,
  ): LogSegment {
    const fd = fs.openSync(join(dir, segmentFileName(baseOffset, LOG_SUFFIX)), 'w+')
    const seg = new LogSegment(dir, baseOffset, fd, 0, indexIntervalBytes, now, now, fs, files)
    try {
      seg.offsetIndex.persist(fs)
      seg.timeIndex.persist(fs)
      seg.txnIndex.delete()
    } catch (err) {
      seg.close()
      throw err
    }
    return seg
  }

  /** Opens an existing segment; the caller then either resumes its indexes or recovers it. */
  static open(
    dir: string,
    baseOffset: number,
    indexIntervalBytes: number,
    now: number,
    fs: LogFileSystem = defaultFileSystem,
    files?: OpenFileLimiter,
  ): LogSegment {
    const fd = fs.openSync(join(dir, segmentFileName(baseOffset, LOG_SUFFIX)), 'r+')
    try {
      const st = fstatSync(fd)
      const seg = new LogSegment(dir, baseOffset, fd, st.size, indexIntervalBytes, now, st.mtimeMs, fs, files)
      seg.txnIndex.load()
      return seg
    } catch (err) {
      fs.closeSync(fd)
      throw err
    }
  }

  /**
   * The log file's descriptor, reopened if the open-file limiter closed it.
   * Hold a reference (retain) across any await that uses it.
   */
  get fd(): number {
    if (this.handle < 0) {
      if (!this.fdOpen) throw new Error(`${this.logPath} is closed`)
      this.handle = this.fs.openSync(this.logPath, 'r+')
      this.files?.opened(this)
    } else {
      this.files?.touch(this)
    }
    return this.handle
  }

  /** Whether the descriptor is open now (the limiter may have closed it until the next use). */
  get hasOpenFd(): boolean {
    return this.handle >= 0
  }

  evict(): boolean {
    if (this.handle < 0 || this.refs > 0 || this.state !== 'open') return false
    const fd = this.handle
    this.handle = -1
    // Closing keeps written pages in the page cache; a later fsync on a new descriptor flushes them.
    this.fs.closeSync(fd)
    return true
  }

  get isEmpty(): boolean {
    return this.size === 0
  }

  get isOpen(): boolean {
    return this.state === 'open'
  }

  /** Last offset held, or baseOffset - 1 when empty. */
  get lastOffset(): number {
    return this.nextOffset - 1
  }

  /**
   * Bookkeeping for one batch now at `position`: largest timestamp, and an index
   * entry once more than an index interval of bytes has gone by (Kafka's
   * index.interval.bytes rule). Used by append, recovery and index resumption
   * alike, so all three build the same indexes.
   */
  track(position: number, size: number, baseOffset: number, lastOffset: number, maxTimestamp: number): void {
    if (position === 0) this.firstBatchTimestamp = maxTimestamp
    if (maxTimestamp > this.maxTimestamp) {
      this.maxTimestamp = maxTimestamp
      this.offsetOfMaxTimestamp = baseOffset
    }
    if (this.bytesSinceIndex > this.indexIntervalBytes) {
      this.offsetIndex.append(lastOffset, position)
      if (this.maxTimestamp >= 0) this.timeIndex.maybeAppend(this.maxTimestamp, this.offsetOfMaxTimestamp)
      this.bytesSinceIndex = 0
    }
    this.bytesSinceIndex += size
    this.nextOffset = lastOffset + 1
  }

  /**
   * Appends `length` bytes of whole batches whose offsets are already assigned,
   * with one write; then indexes them from the headers in memory.
   */
  append(buf: Buffer, length: number, now: number): void {
    const position = this.size
    let done = 0
    try {
      while (done < length) done += this.fs.writeSync(this.fd, buf, done, length - done, position + done)
    } catch (err) {
      // Leave no partial batch behind: the next append must land on a boundary.
      if (done > 0) {
        try {
          this.fs.ftruncateSync(this.fd, position)
        } catch {
          // The recovery scan on the next start truncates it.
        }
      }
      throw err
    }
    for (let p = 0; p < length; ) {
      const size = LOG_OVERHEAD + buf.readInt32BE(p + BATCH_LENGTH_AT)
      const base = readInt64(buf, p)
      this.track(position + p, size, base, base + buf.readInt32BE(p + LAST_OFFSET_DELTA_AT), readInt64(buf, p + MAX_TIMESTAMP_AT))
      p += size
    }
    this.size = position + length
    this.lastModified = now
    this.dirty = true
  }

  /**
   * The batch holding `offset`, or the first one after it: the offset index
   * gives a position at or before it, then headers are walked. Undefined when
   * no batch in [.., end) holds an offset >= `offset`.
   */
  locate(offset: number, end = this.size): BatchLocation | undefined {
    let pos = this.offsetIndex.lookup(offset)
    const w = new Window(this.fd, end, 2 * this.indexIntervalBytes + 1024)
    while (pos < end) {
      const o = w.load(pos, WALK_HEADER_BYTES)
      if (o < 0) return undefined
      const size = LOG_OVERHEAD + SCRATCH.readInt32BE(o + BATCH_LENGTH_AT)
      if (size < RECORD_BATCH_OVERHEAD) return undefined
      const base = readInt64(SCRATCH, o)
      const last = base + SCRATCH.readInt32BE(o + LAST_OFFSET_DELTA_AT)
      if (last >= offset) {
        return { position: pos, size, baseOffset: base, lastOffset: last, maxTimestamp: readInt64(SCRATCH, o + MAX_TIMESTAMP_AT) }
      }
      pos += size
    }
    return undefined
  }

  /**
   * Where a read that starts at the batch boundary `start` must stop to carry
   * only whole batches and at most `maxBytes`: the end of the last batch that
   * fits, or `start` when not even the first one does. The offset index gives
   * the last boundary at or below the limit, so only the headers of about one
   * index interval are read, whatever `maxBytes` is.
   */
  wholeBatchesEnd(start: number, maxBytes: number, end = this.size): number {
    const limit = Math.min(end, start + Math.max(0, maxBytes))
    if (limit - start < RECORD_BATCH_OVERHEAD) return start
    let pos = Math.max(start, this.offsetIndex.positionAtOrBefore(limit))
    const w = new Window(this.fd, end, 2 * this.indexIntervalBytes + 1024)
    while (limit - pos >= RECORD_BATCH_OVERHEAD) {
      const o = w.load(pos, LOG_OVERHEAD)
      if (o < 0) break
      const size = LOG_OVERHEAD + SCRATCH.readInt32BE(o + BATCH_LENGTH_AT)
      if (size < RECORD_BATCH_OVERHEAD || size > limit - pos) break
      pos += size
    }
    return pos
  }

  /** The first batch whose maxTimestamp is >= `timestamp`, starting from the time index. */
  findByTimestamp(timestamp: number, end = this.size): BatchLocation | undefined {
    if (this.maxTimestamp < timestamp) return undefined
    const start = this.locate(this.timeIndex.lookupBefore(timestamp), end)
    if (start === undefined) return undefined
    const w = new Window(this.fd, end, SCRATCH.length)
    let pos = start.position
    while (pos < end) {
      const o = w.load(pos, WALK_HEADER_BYTES)
      if (o < 0) return undefined
      const size = LOG_OVERHEAD + SCRATCH.readInt32BE(o + BATCH_LENGTH_AT)
      if (size < RECORD_BATCH_OVERHEAD) return undefined
      const maxTs = readInt64(SCRATCH, o + MAX_TIMESTAMP_AT)
      if (maxTs >= timestamp) {
        const base = readInt64(SCRATCH, o)
        return { position: pos, size, baseOffset: base, lastOffset: base + SCRATCH.readInt32BE(o + LAST_OFFSET_DELTA_AT), maxTimestamp: maxTs }
      }
      pos += size
    }
    return undefined
  }

  /**
   * Calls `visit` with the header of every batch from `position` to the end,
   * as a window of a shared scratch buffer (valid only during the call).
   */
  forEachBatch(position: number, visit: (buf: Buffer, at: number, position: number, size: number) => void): void {
    const end = this.size
    const w = new Window(this.fd, end, SCRATCH.length)
    let pos = position
    while (pos < end) {
      const o = w.load(pos, RECORD_BATCH_OVERHEAD)
      if (o < 0) return
      const size = LOG_OVERHEAD + SCRATCH.readInt32BE(o + BATCH_LENGTH_AT)
      if (size < RECORD_BATCH_OVERHEAD) return
      visit(SCRATCH, o, pos, size)
      pos += size
    }
  }

  /**
   * Reads [position, position + length) without blocking the event loop. The
   * segment is referenced until the read completes, so deletion meanwhile
   * cannot close the descriptor under it. With `into`, the bytes go there
   * (a caller reusing one buffer) and the result is a view of it.
   */
  read(position: number, length: number, into?: Buffer): Promise<Buffer> {
    this.retain()
    return new Promise<Buffer>((resolve, reject) => {
      const out = into ?? Buffer.allocUnsafe(length)
      let done = 0
      const step = (): void => {
        read(this.fd, out, done, length - done, position + done, (err, n) => {
          if (err !== null) {
            this.release()
            reject(err)
          } else if (n === 0 || done + n === length) {
            done += n
            this.release()
            resolve(out.length === done ? out : out.subarray(0, done))
          } else {
            done += n
            step()
          }
        })
      }
      step()
    })
  }

  /** Reads synchronously (recovery, tests). */
  readSync(position: number, length: number): Buffer {
    const out = Buffer.allocUnsafe(length)
    const n = this.readIntoSync(out, 0, length, position)
    return n === length ? out : out.subarray(0, n)
  }

  /** Fills `buf[offset, offset + length)` from `position`; returns the bytes read (fewer at end of file). */
  readIntoSync(buf: Buffer, offset: number, length: number, position: number): number {
    let done = 0
    while (done < length) {
      const n = readSync(this.fd, buf, offset + done, length - done, position + done)
      if (n === 0) break
      done += n
    }
    return done
  }

  /** Writes index entries not yet on disk. */
  persistIndexes(): void {
    if (this.state === 'deleted') return
    this.offsetIndex.persist(this.fs)
    this.timeIndex.persist(this.fs)
  }

  /** fsyncs the log file (indexes are rebuilt or resumed from it, so they are not synced). */
  async flush(): Promise<void> {
    if (!this.fdOpen) return
    this.persistIndexes()
    this.dirty = false
    this.retain()
    try {
      // Aborted-transaction entries are as durable as the markers they describe.
      this.txnIndex.flushSync()
      await fsyncAsync(this.fs, this.fd)
    } catch (err) {
      this.dirty = true
      throw err
    } finally {
      this.release()
    }
  }

  flushSync(): void {
    if (!this.fdOpen) return
    this.persistIndexes()
    this.txnIndex.flushSync()
    this.fs.fsyncSync(this.fd)
    this.dirty = false
  }

  /**
   * Called when a newer segment takes over: a final time-index entry so the
   * last one carries the segment's largest timestamp (retention reads it on
   * the next start), and the indexes written out.
   */
  onBecomeInactive(): void {
    if (this.maxTimestamp >= 0) this.timeIndex.maybeAppend(this.maxTimestamp, this.offsetOfMaxTimestamp)
    this.persistIndexes()
  }

  /** Cuts the log at `position` (a batch boundary) and forgets index entries past it. */
  truncateTo(position: number): void {
    this.fs.ftruncateSync(this.fd, position)
    this.size = position
    this.offsetIndex.truncateToPosition(position)
  }

  /** Forgets all derived state, for a rebuild from the log bytes. */
  resetIndexes(): void {
    this.offsetIndex.reset()
    this.timeIndex.reset()
    this.nextOffset = this.baseOffset
    this.maxTimestamp = -1
    this.offsetOfMaxTimestamp = -1
    this.firstBatchTimestamp = -1
    this.bytesSinceIndex = 0
  }

  /**
   * Trusts the index files if they are sane and the batches after the last
   * indexed one chain exactly to the end of the file (lengths, increasing
   * offsets with the gaps compaction leaves; no CRCs), indexing that tail as it goes. This is all a clean
   * start does per segment. Returns false when anything is off; the caller
   * then recovers the segment from its bytes.
   */
  resumeIndexes(): boolean {
    const oi = OffsetIndex.load(this.offsetIndex.path, this.baseOffset, this.size)
    const ti = TimeIndex.load(this.timeIndex.path, this.baseOffset, 0x7fffffff)
    if (oi === undefined || ti === undefined) return false
    this.resetIndexes()
    this.offsetIndex = oi
    this.timeIndex = ti
    if (this.size === 0) return oi.entries === 0 && ti.entries === 0
    const w = new Window(this.fd, this.size, SCRATCH.length)
    let o = w.load(0, WALK_HEADER_BYTES)
    // Compaction may have removed the first offsets of a segment, never moved any below its base.
    if (o < 0 || readInt64(SCRATCH, o) < this.baseOffset) return false
    this.firstBatchTimestamp = readInt64(SCRATCH, o + MAX_TIMESTAMP_AT)
    this.maxTimestamp = ti.lastTimestamp
    this.offsetOfMaxTimestamp = ti.lastOffset
    let pos = oi.lastPosition
    let expected = -1
    while (pos < this.size) {
      o = w.load(pos, WALK_HEADER_BYTES)
      if (o < 0) return false
      const size = LOG_OVERHEAD + SCRATCH.readInt32BE(o + BATCH_LENGTH_AT)
      if (size < RECORD_BATCH_OVERHEAD || pos + size > this.size) return false
      const base = readInt64(SCRATCH, o)
      const last = base + SCRATCH.readInt32BE(o + LAST_OFFSET_DELTA_AT)
      if (last < base) return false
      if (expected < 0) {
        // The batch the last index entry names must be where the entry says.
        if (oi.entries > 0 ? last !== oi.lastOffset : base < this.baseOffset) return false
      } else if (base < expected) {
        return false
      }
      this.track(pos, size, base, last, readInt64(SCRATCH, o + MAX_TIMESTAMP_AT))
      expected = last + 1
      pos += size
    }
    if (pos !== this.size) return false
    if (ti.entries > 0 && ti.lastOffset >= this.nextOffset) return false
    return true
  }

  retain(): void {
    this.refs++
  }

  release(): void {
    if (--this.refs !== 0) return
    if (this.state !== 'open') this.closeFd()
    else this.files?.trim()
  }

  /** Writes the indexes and closes (once no reader holds the segment). */
  close(): void {
    if (this.state !== 'open') return
    this.persistIndexes()
    this.state = 'closed'
    if (this.refs === 0) this.closeFd()
  }

  /** Closes without writing anything (the directory is offline after a storage failure). */
  abandon(): void {
    if (this.state !== 'open') return
    this.state = 'closed'
    if (this.refs === 0) this.closeFd()
  }

  /**
   * Stops using the segment without touching its files (its directory is being
   * renamed aside for deletion, which must stay undoable until committed):
   * nothing more is written, and readers holding it finish on the descriptor.
   */
  discard(): void {
    if (this.state === 'deleted') return
    this.state = 'deleted'
    if (this.refs === 0) this.closeFd()
  }

  /**
   * Removes the files now; the descriptor stays valid for readers that hold the
   * segment and is closed after the last one releases it.
   */
  delete(): void {
    if (this.state === 'deleted') return
    this.state = 'deleted'
    for (const p of [this.logPath, this.offsetIndex.path, this.timeIndex.path, this.txnIndex.path]) {
      try {
        this.fs.unlinkSync(p)
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err
      }
    }
    if (this.refs === 0) this.closeFd()
  }

  private closeFd(): void {
    if (!this.fdOpen) return
    this.fdOpen = false
    this.files?.closed(this)
    if (this.handle >= 0) this.fs.closeSync(this.handle)
    this.handle = -1
  }
}
