import { type LogFileSystem, defaultFileSystem } from './file-system.js'
import { persistEntries, readEntries } from './index-file.js'
import { TIME_INDEX_ENTRY } from './format.js'

/**
 * The `.timeindex` of a segment: (timestamp, relative offset) pairs in Kafka's
 * layout (int64 + int32, big-endian), appended whenever the segment's largest
 * timestamp so far grows at an index interval, and once more when the segment
 * stops being active, so its last entry is the segment's largest timestamp.
 * ListOffsets by timestamp starts its scan from here. Persisted lazily, like
 * the offset index.
 */
export class TimeIndex {
  private ts: Float64Array
  private rel: Int32Array
  private n = 0
  private persisted = 0
  private rewrite: boolean

  constructor(
    readonly path: string,
    readonly baseOffset: number,
    capacity = 16,
  ) {
    this.ts = new Float64Array(capacity)
    this.rel = new Int32Array(capacity)
    this.rewrite = true
  }

  get entries(): number {
    return this.n
  }

  /** Largest timestamp indexed, or -1 when empty. */
  get lastTimestamp(): number {
    return this.n === 0 ? -1 : this.ts[this.n - 1]!
  }

  get lastOffset(): number {
    return this.n === 0 ? -1 : this.baseOffset + this.rel[this.n - 1]!
  }

  /** Adds an entry if `timestamp` is larger than the last one. */
  maybeAppend(timestamp: number, offset: number): void {
    if (this.n > 0 && timestamp <= this.ts[this.n - 1]!) return
    const rel = offset - this.baseOffset
    if (this.n > 0 && rel < this.rel[this.n - 1]!) return
    if (this.n === this.ts.length) {
      const ts2 = new Float64Array(this.n * 2)
      const rel2 = new Int32Array(this.n * 2)
      ts2.set(this.ts)
      rel2.set(this.rel)
      this.ts = ts2
      this.rel = rel2
    }
    this.ts[this.n] = timestamp
    this.rel[this.n] = rel
    this.n++
  }

  /**
   * The offset of the largest entry whose timestamp is < `timestamp`: every batch
   * before it has only smaller timestamps, so a search for the first record at
   * or after `timestamp` can start there. Returns the base offset if none is.
   */
  lookupBefore(timestamp: number): number {
    let lo = 0
    let hi = this.n - 1
    let found = -1
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1
      if (this.ts[mid]! < timestamp) {
        found = mid
        lo = mid + 1
      } else {
        hi = mid - 1
      }
    }
    return found < 0 ? this.baseOffset : this.baseOffset + this.rel[found]!
  }

  /** Drops entries for offsets at or past `offset`. */
  truncateToOffset(offset: number): void {
    const rel = offset - this.baseOffset
    let n = this.n
    while (n > 0 && this.rel[n - 1]! >= rel) n--
    if (n !== this.n) {
      this.n = n
      this.rewrite = true
      if (this.persisted > n) this.persisted = n
    }
  }

  reset(): void {
    this.n = 0
    this.persisted = 0
    this.rewrite = true
  }

  persist(fs: LogFileSystem = defaultFileSystem): void {
    if (!this.rewrite && this.persisted === this.n) return
    const from = this.rewrite ? 0 : this.persisted
    const out = Buffer.allocUnsafe((this.n - from) * TIME_INDEX_ENTRY)
    for (let i = from, o = 0; i < this.n; i++, o += TIME_INDEX_ENTRY) {
      out.writeBigInt64BE(BigInt(this.ts[i]!), o)
      out.writeInt32BE(this.rel[i]!, o + 8)
    }
    persistEntries(fs, this.path, out, this.rewrite)
    this.persisted = this.n
    this.rewrite = false
  }

  /** Reads the file, or undefined when missing or not sane (the caller rebuilds). */
  static load(path: string, baseOffset: number, maxRelativeOffset: number): TimeIndex | undefined {
    const data = readEntries(path, TIME_INDEX_ENTRY)
    if (data === undefined) return undefined
    const count = data.length / TIME_INDEX_ENTRY
    const index = new TimeIndex(path, baseOffset, Math.max(16, count))
    let prevTs = -Infinity
    let prevRel = -1
    for (let i = 0, o = 0; i < count; i++, o += TIME_INDEX_ENTRY) {
      const ts = Number(data.readBigInt64BE(o))
      const rel = data.readInt32BE(o + 8)
      if (ts <= prevTs || rel < prevRel || rel < 0 || rel > maxRelativeOffset) return undefined
      index.ts[i] = ts
      index.rel[i] = rel
      prevTs = ts
      prevRel = rel
    }
    index.n = count
    index.persisted = count
    index.rewrite = false
    return index
  }
}
