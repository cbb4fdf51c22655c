import { existsSync, readFileSync } from 'node:fs'
import { type LogFileSystem, defaultFileSystem } from './file-system.js'
import { readInt64 } from './format.js'

export const TXN_INDEX_SUFFIX = '.txnindex'
/** Kafka's AbortedTxn entry: version int16, producerId, firstOffset, lastOffset, lastStableOffset (int64 each). */
export const TXN_INDEX_ENTRY = 34
const ENTRY_VERSION = 0

/** One aborted transaction, as Kafka's `.txnindex` stores it. */
export interface AbortedTxn {
  producerId: number
  firstOffset: number
  /** Offset of the abort marker. */
  lastOffset: number
  /** The partition's last stable offset once the marker was written. */
  lastStableOffset: number
}

/** What a fetch reports per aborted transaction (FetchResponse's AbortedTransaction). */
export interface AbortedRange {
  producerId: number
  firstOffset: number
}

/**
 * A segment's aborted-transaction index, byte for byte Kafka's `.txnindex`
 * (KIP-98): one 34-byte entry per abort marker in the segment, in marker
 * order. The file is created with its first entry, as Kafka creates it
 * lazily; segments without aborts have none. Entries are few (one per aborted
 * transaction), so they are kept in memory and each is written as it comes;
 * the segment's flush makes them durable with its data, and recovery
 * rebuilds them from the markers in the log.
 */
export class TransactionIndex {
  private list: AbortedTxn[] = []
  private dirty = false

  constructor(
    readonly path: string,
    private readonly fs: LogFileSystem = defaultFileSystem,
  ) {}

  /**
   * Reads the file, when there is one. A torn last entry (an unclean stop mid
   * write) is dropped; so is an entry of an unknown version and everything
   * after it, which replay then writes again.
   */
  load(): void {
    this.list = []
    if (!existsSync(this.path)) return
    const buf = readFileSync(this.path)
    for (let p = 0; p + TXN_INDEX_ENTRY <= buf.length; p += TXN_INDEX_ENTRY) {
      if (buf.readInt16BE(p) !== ENTRY_VERSION) break
      this.list.push({
        producerId: readInt64(buf, p + 2),
        firstOffset: readInt64(buf, p + 10),
        lastOffset: readInt64(buf, p + 18),
        lastStableOffset: readInt64(buf, p + 26),
      })
    }
    if (this.list.length * TXN_INDEX_ENTRY !== buf.length) this.rewrite()
  }

  get entries(): readonly AbortedTxn[] {
    return this.list
  }

  get isEmpty(): boolean {
    return this.list.length === 0
  }

  /** Appends an entry (markers come in offset order). Returns true when this created the file. */
  append(e: AbortedTxn): boolean {
    const last = this.list[this.list.length - 1]
    if (last !== undefined && e.lastOffset <= last.lastOffset) {
      throw new Error(`aborted transaction ending at ${e.lastOffset} does not follow the one ending at ${last.lastOffset} in ${this.path}`)
    }
    const created = this.list.length === 0 && !existsSync(this.path)
    const fd = this.fs.openSync(this.path, 'a')
    try {
      const b = encode(e)
      let done = 0
      while (done < b.length) done += this.fs.writeSync(fd, b, done, b.length - done, null)
    } finally {
      this.fs.closeSync(fd)
    }
    this.list.push(e)
    this.dirty = true
    return created
  }

  /** Forgets entries whose marker is at or past `offset` (a replay writes them again). */
  truncateFrom(offset: number): void {
    let n = this.list.length
    while (n > 0 && this.list[n - 1]!.lastOffset >= offset) n--
    if (n === this.list.length) return
    this.list.length = n
    this.rewrite()
  }

  /**
   * Entries overlapping [fetchOffset, upperBoundOffset), and whether the search
   * may stop here: an entry whose last stable offset reaches the bound proves
   * no later segment holds an overlapping abort (Kafka's collectAbortedTxns).
   */
  collect(fetchOffset: number, upperBoundOffset: number, out: AbortedTxn[]): boolean {
    for (const e of this.list) {
      if (e.lastOffset >= fetchOffset && e.firstOffset < upperBoundOffset) out.push(e)
      if (e.lastStableOffset >= upperBoundOffset) return true
    }
    return false
  }

  /** fsyncs entries written since the last call. */
  flushSync(): void {
    if (!this.dirty || this.list.length === 0) return
    const fd = this.fs.openSync(this.path, 'r+')
    try {
      this.fs.fsyncSync(fd)
    } finally {
      this.fs.closeSync(fd)
    }
    this.dirty = false
  }

  delete(): void {
    this.list = []
    this.dirty = false
    try {
      this.fs.unlinkSync(this.path)
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err
    }
  }

  private rewrite(): void {
    if (this.list.length === 0) {
      this.delete()
      return
    }
    const fd = this.fs.openSync(this.path, 'w')
    try {
      const b = Buffer.concat(this.list.map(encode))
      let done = 0
      while (done < b.length) done += this.fs.writeSync(fd, b, done, b.length - done, done)
    } finally {
      this.fs.closeSync(fd)
    }
    this.dirty = true
  }
}

function encode(e: AbortedTxn): Buffer {
  const b = Buffer.allocUnsafe(TXN_INDEX_ENTRY)
  b.writeInt16BE(ENTRY_VERSION, 0)
  b.writeBigInt64BE(BigInt(e.producerId), 2)
  b.writeBigInt64BE(BigInt(e.firstOffset), 10)
  b.writeBigInt64BE(BigInt(e.lastOffset), 18)
  b.writeBigInt64BE(BigInt(e.lastStableOffset), 26)
  return b
}
