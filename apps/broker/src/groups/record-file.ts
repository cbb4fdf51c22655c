import { closeSync, fdatasync, fdatasyncSync, ftruncateSync, mkdirSync, openSync, readFileSync, renameSync, writeSync } from 'node:fs'
import { type FileHandle, open as openFile, unlink } from 'node:fs/promises'
import { join } from 'node:path'
import { Reader, Writer, crc32c } from '@tidelog/protocol'
import { fsyncDir, writeFileAtomicSync } from '../log/checkpoint.js'
import type { Logger } from '../logger.js'

// The durable append-only record file under the offsets store and the transaction log: framing,
// synchronous appends, the flush policy, background compaction and replay on open. What the
// records mean is the subclass's; this file only moves bytes.

/** Each file: uint32 magic, int32 format version. */
export const FILE_HEADER_BYTES = 8
/** Each record: int32 payload length, uint32 CRC32C of the payload, payload. */
export const RECORD_HEADER_BYTES = 8

/** Starts a record of `type` in `w`; returns where it begins, for sealRecord. */
export function beginRecord(w: Writer, type: number): number {
  const at = w.pos
  w.int32(0).int32(0).int8(type)
  return at
}

/** Fills in the length and CRC of the record begun at `at`. */
export function sealRecord(w: Writer, at: number): void {
  const start = at + RECORD_HEADER_BYTES
  w.buf.writeInt32BE(w.pos - start, at)
  w.buf.writeUInt32BE(crc32c(w.buf, start, w.pos), at + 4)
}

/** Rewrite the file once it is this much larger than the live data it held at the last rewrite. */
const COMPACT_RATIO = 4
const COMPACT_MIN_BYTES = 16 * 1024 * 1024
/** A compaction encodes and writes its snapshot in pieces this size: each piece is one short turn of the event loop (64 KiB measured ~1 ms). */
const SNAPSHOT_CHUNK_BYTES = 64 * 1024
/**
 * Appends that arrive during a compaction are copied into the new file in
 * rounds, each written and fsynced off the event loop; the swap happens once a
 * round leaves nothing behind, or after this many rounds with what is left.
 */
const CATCH_UP_ROUNDS = 16

export interface RecordFileOptions {
  /** fsync once this many records are unflushed (the broker's flush.messages); Infinity: page cache. */
  flushMessages?: number
  /** fsync at least this often (the broker's flush.ms); Infinity: never on a timer. */
  flushMs?: number
  /** Compact only once the file is larger than this (default 16 MiB); tests lower it. */
  compactMinBytes?: number
  /** Size of the pieces a compaction writes its snapshot in (default 64 KiB); tests lower it. */
  snapshotPieceBytes?: number
}

export interface RecordFileFormat {
  readonly magic: number
  /** The version written; files of 1..version are read (older ones migrate at the rewrite on open). */
  readonly version: number
  /** What the file is, for messages ("offsets", "transaction log"). */
  readonly kind: string
  /** Thrown for a file we did not write or a newer release wrote: it is refused, never rewritten. */
  readonly formatError: (message: string) => Error
}

/** Where a snapshot writes its records; `w` is replaced between pieces. */
export interface SnapshotSink {
  w: Writer
}

/**
 * A file of length-prefixed, CRC32C-checked records. Appends are single
 * synchronous writes, so an acknowledged record survives a process crash
 * through the page cache; fsync follows the broker's flush policy and runs off
 * the event loop. On open the file is replayed up to the first damaged record
 * and rewritten compacted; while the broker runs it is rewritten whenever it
 * outgrows its live content, in the background (async writes and fsyncs):
 * appends keep going to the old file and are copied into the new one before it
 * replaces the old, so a crash at any moment leaves one complete file.
 */
export abstract class RecordFile {
  private readonly path: string
  private fd = -1
  /** Bumped when a compaction swaps the file: an fsync of the old descriptor no longer counts for the new file. */
  private fdGeneration = 0
  /** Descriptors of replaced files, closed once no fsync uses them. */
  private retiredFds: number[] = []
  private fileBytes = 0
  private liveBytesAtCompaction = 0
  private unflushed = 0
  private flushing: Promise<void> | null = null
  private flushAgain: Promise<void> | null = null
  private lastFlush = Date.now()
  /** The running background compaction, if any. */
  private compaction: Promise<void> | null = null
  /** While a compaction runs: every append since it began, to copy into the new file. */
  private tail: Buffer[] | null = null
  private tailRecords = 0
  /** The directory fsync that makes the last swap durable; flushes wait for it. */
  private dirSync: Promise<void> | null = null
  private readonly flushMessages: number
  private readonly flushMs: number
  private readonly compactMinBytes: number
  private readonly pieceBytes: number
  private readonly flushTimer: NodeJS.Timeout | undefined
  private closed = false
  /** Set when a failed append left bytes that could not be removed. */
  private broken: string | null = null

  protected constructor(
    readonly dir: string,
    fileName: string,
    protected readonly logger: Logger,
    private readonly format: RecordFileFormat,
    opts: RecordFileOptions,
  ) {
    this.path = join(dir, fileName)
    this.flushMessages = opts.flushMessages ?? Infinity
    this.flushMs = opts.flushMs ?? Infinity
    this.compactMinBytes = opts.compactMinBytes ?? COMPACT_MIN_BYTES
    this.pieceBytes = opts.snapshotPieceBytes ?? SNAPSHOT_CHUNK_BYTES
    if (Number.isFinite(this.flushMs)) {
      this.flushTimer = setInterval(() => {
        if (this.unflushed > 0 && Date.now() - this.lastFlush >= this.flushMs) {
          this.flush().catch((err: unknown) => this.logger.error(`${this.path}: fsync failed: ${String(err)}`))
        }
      }, Math.max(10, Math.min(this.flushMs, 1000)))
      this.flushTimer.unref()
    }
  }

  /** Replays one record's payload (its CRC already checked); throws a DecodeError on anything malformed. */
  protected abstract replay(r: Reader, version: number): void
  /** Writes every live record into `sink.w`, yielding after each so the caller can cut pieces. */
  protected abstract liveRecords(sink: SnapshotSink): Generator<void>
  /** One line for the log after loading. */
  protected abstract loadedSummary(): string

  /** Loads the file (creating it when absent) and rewrites it compacted; call once, from the subclass's factory. */
  protected openFile(): void {
    mkdirSync(this.dir, { recursive: true })
    try {
      this.load()
      // At startup nothing else waits on the event loop: the first rewrite is synchronous.
      const data = Buffer.concat([...this.snapshotPieces()])
      writeFileAtomicSync(this.path, data)
      this.fileBytes = data.length
      this.liveBytesAtCompaction = data.length
      this.fd = openSync(this.path, 'a')
    } catch (err) {
      if (this.flushTimer !== undefined) clearInterval(this.flushTimer)
      if (this.fd >= 0) closeSync(this.fd)
      throw err
    }
  }

  /** Resolves once what was appended is as durable as the flush policy asks (fsynced, or left to the page cache). */
  durable(): Promise<void> {
    return this.unflushed >= this.flushMessages ? this.flush() : Promise.resolve()
  }

  /** fsyncs everything appended so far (off the event loop). Concurrent calls share the work. */
  flush(): Promise<void> {
    if (this.flushing !== null) {
      const again = () => {
        this.flushAgain = null
        return this.flush()
      }
      this.flushAgain ??= this.flushing.then(again, again)
      return this.flushAgain
    }
    if (this.fd < 0 || this.unflushed === 0) return this.dirSync ?? Promise.resolve()
    const fd = this.fd
    const generation = this.fdGeneration
    const pending = this.unflushed
    this.flushing = new Promise<void>((resolve, reject) => {
      fdatasync(fd, (err) => {
        this.flushing = null
        this.closeRetiredFds()
        if (err !== null) {
          reject(err)
          return
        }
        // After a swap the compaction has accounted for what the new file holds unflushed.
        if (generation === this.fdGeneration) this.unflushed = Math.max(0, this.unflushed - pending)
        this.lastFlush = Date.now()
        // Records of a replaced file are durable once the rename that brought in their copies is.
        resolve(this.dirSync ?? undefined)
      })
    })
    return this.flushing
  }

  /** Compacts, fsyncs and closes the file (shutdown). Appends fail from the moment it is called. */
  async close(): Promise<void> {
    if (this.closed) return
    this.closed = true
    if (this.flushTimer !== undefined) clearInterval(this.flushTimer)
    try {
      while (this.compaction !== null) await this.compaction
      while (this.flushing !== null) await this.flushing.catch(() => {})
      await this.compact(true)
    } finally {
      // A commit's durable() may have started an fsync during the last compaction: its descriptor stays open until it ends.
      while (this.flushing !== null) await this.flushing.catch(() => {})
      if (this.fd >= 0) {
        try {
          fdatasyncSync(this.fd)
        } catch {
          // Best effort: the last compaction already made the state durable.
        }
        closeSync(this.fd)
        this.fd = -1
      }
      this.closeRetiredFds()
    }
  }

  get isClosed(): boolean {
    return this.closed
  }

  /** Resolves when no background compaction is running (tests, measurements). */
  async settled(): Promise<void> {
    while (this.compaction !== null) await this.compaction
  }

  // --- internals ---------------------------------------------------------------------------

  protected append(buf: Buffer, records: number): void {
    if (this.closed || this.fd < 0) throw new Error(`${this.path} is closed`)
    if (this.broken !== null) throw new Error(`${this.path} takes no more writes until a restart: ${this.broken}`)
    let done = 0
    try {
      while (done < buf.length) done += writeSync(this.fd, buf, done, buf.length - done)
    } catch (err) {
      // A torn record (ENOSPC halfway) would end the file at the next load and hide every record
      // appended after it: cut it off. If that fails too, refuse appends rather than bury them.
      if (done > 0) {
        try {
          ftruncateSync(this.fd, this.fileBytes)
        } catch (cut) {
          this.broken = `a torn write could not be cut off (${(cut as Error).message})`
        }
      }
      throw err
    }
    this.fileBytes += buf.length
    this.unflushed += records
    if (this.tail !== null) {
      this.tail.push(buf)
      this.tailRecords += records
    }
  }

  protected maybeCompact(): void {
    if (this.compaction !== null || this.closed) return
    if (this.fileBytes <= this.compactMinBytes || this.fileBytes <= COMPACT_RATIO * this.liveBytesAtCompaction) return
    this.compaction = this.compact(false)
      .catch((err: unknown) => {
        // The old file is intact and still takes appends; try again after more growth.
        this.logger.error(`${this.path}: compaction failed: ${(err as Error).message}`)
        this.liveBytesAtCompaction = this.fileBytes
      })
      .finally(() => {
        this.compaction = null
      })
  }

  /**
   * Rewrites the file with the live state. The snapshot is taken piece by
   * piece while appends go on; every append since the start is also kept in
   * `tail` and copied after the snapshot. Replaying is "last record per key
   * wins", so a piece that already reflects a later change is harmless: the
   * tail replays that change after it.
   */
  private async compact(final: boolean): Promise<void> {
    const tmp = `${this.path}.tmp`
    this.tail = []
    this.tailRecords = 0
    let fh: FileHandle | undefined
    let swapped = false
    try {
      fh = await openFile(tmp, 'w')
      let written = 0
      for (const piece of this.snapshotPieces()) {
        await writeAll(fh, piece)
        written += piece.length
      }
      const live = written
      await fh.datasync()
      for (let round = 0; this.tail.length > 0 && round < CATCH_UP_ROUNDS; round++) {
        const batch = Buffer.concat(this.tail)
        this.tail = []
        this.tailRecords = 0
        await writeAll(fh, batch)
        written += batch.length
        await fh.datasync()
      }
      // From here to the swap nothing yields, so no append can fall between the copy and the rename.
      const rest = Buffer.concat(this.tail)
      const restRecords = this.tailRecords
      this.tail = null
      writeAllSync(fh.fd, rest)
      written += rest.length
      // A flush of the old file may already have acknowledged some of these: they must not lose that.
      const restSynced = rest.length === 0 || Number.isFinite(this.flushMessages)
      if (rest.length > 0 && restSynced) fdatasyncSync(fh.fd)
      // Opened before the rename (the descriptor follows the file), so a failure here swaps nothing.
      const next = final ? -1 : openSync(tmp, 'a')
      try {
        renameSync(tmp, this.path)
      } catch (err) {
        if (next >= 0) closeSync(next)
        throw err
      }
      swapped = true
      if (this.fd >= 0) this.retiredFds.push(this.fd)
      this.fd = next
      this.fdGeneration++
      this.fileBytes = written
      this.liveBytesAtCompaction = live
      this.unflushed = restSynced ? 0 : restRecords
      if (this.flushing === null) this.closeRetiredFds()
      const dirSync = fsyncDir(this.dir).finally(() => {
        if (this.dirSync === dirSync) this.dirSync = null
      })
      this.dirSync = dirSync
      dirSync.catch(() => {})
      await dirSync
    } finally {
      this.tail = null
      await fh?.close().catch(() => {})
      if (!swapped) await unlink(tmp).catch(() => {})
    }
  }

  private closeRetiredFds(): void {
    for (const fd of this.retiredFds.splice(0)) {
      try {
        closeSync(fd)
      } catch {
        // Already closed: nothing to release.
      }
    }
  }

  /** The live state, in pieces of about `pieceBytes`. */
  private *snapshotPieces(): Generator<Buffer> {
    const piece = this.pieceBytes
    const fresh = () => new Writer(Math.min(piece, SNAPSHOT_CHUNK_BYTES) + 4096)
    const sink: SnapshotSink = { w: fresh() }
    sink.w.uint32(this.format.magic).int32(this.format.version)
    for (const _ of this.liveRecords(sink)) {
      if (sink.w.pos >= piece) {
        yield sink.w.finish()
        sink.w = fresh()
      }
    }
    if (sink.w.pos > 0) yield sink.w.finish()
  }

  private load(): void {
    let data: Buffer
    try {
      data = readFileSync(this.path)
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return
      throw err
    }
    if (data.length === 0) return
    const { magic, version: current, kind, formatError } = this.format
    if (data.length < FILE_HEADER_BYTES || data.readUInt32BE(0) !== magic) {
      throw formatError(`${this.path} is not a tidelog ${kind} file; move it away to start without it`)
    }
    const version = data.readInt32BE(4)
    if (version > current) {
      throw formatError(
        `${this.path} has format version ${version}, written by a newer tidelog-broker; this one reads up to version ${current}. Start the newer release on this data directory`,
      )
    }
    if (version < 1) throw formatError(`${this.path} has format version ${version}, which no tidelog-broker wrote`)
    let pos = FILE_HEADER_BYTES
    let records = 0
    let damage: string | undefined
    while (pos < data.length) {
      if (data.length - pos < RECORD_HEADER_BYTES) {
        damage = 'a truncated record header'
        break
      }
      const len = data.readInt32BE(pos)
      // No upper limit beyond the file itself: whatever was written whole and CRC-checked is read back.
      if (len <= 0 || len > data.length - pos - RECORD_HEADER_BYTES) {
        damage = `a record length of ${len}`
        break
      }
      const start = pos + RECORD_HEADER_BYTES
      if (crc32c(data, start, start + len) !== data.readUInt32BE(pos + 4)) {
        damage = 'a CRC mismatch'
        break
      }
      try {
        this.replay(new Reader(data, start, start + len), version)
      } catch (err) {
        damage = `an unreadable record (${(err as Error).message})`
        break
      }
      pos = start + len
      records++
    }
    if (damage !== undefined) {
      // As the partition logs recover: keep every whole record before the damage (a crash can only
      // tear the tail), and say how much is dropped. The rewrite that follows truncates the file.
      this.logger.warn(`${this.path}: ${damage} at byte ${pos}; keeping the ${records} record(s) before it, dropping ${data.length - pos} byte(s)`)
    }
    this.logger.info(this.loadedSummary())
  }
}

async function writeAll(fh: FileHandle, buf: Buffer): Promise<void> {
  let done = 0
  while (done < buf.length) done += (await fh.write(buf, done, buf.length - done)).bytesWritten
}

function writeAllSync(fd: number, buf: Buffer): void {
  let done = 0
  while (done < buf.length) done += writeSync(fd, buf, done, buf.length - done)
}
