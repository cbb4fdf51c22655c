import { type LogFileSystem, defaultFileSystem } from './file-system.js'
import { persistEntries, readEntries } from './index-file.js'
import { OFFSET_INDEX_ENTRY } from './format.js'

/**
 * The sparse `.index` of a segment: (offset relative to the segment base, file
 * position) pairs, one per index interval, in Kafka's on-disk layout (two
 * big-endian int32s). Entries name the last offset of the batch that starts at
 * the position, so the largest entry at or below a target offset points at or
 * before the batch holding it. The whole index lives in memory (a 1 GiB segment
 * at 4 KiB per entry is 2 MiB); the file is written lazily (on flush, roll and
 * close), because after an unclean stop the indexes of unflushed segments are
 * rebuilt from the log anyway.
 */
export class OffsetIndex {
  private rel: Int32Array
  private pos: Int32Array
  private n = 0
  /** Entries already in the file. */
  private persisted = 0
  /** The file no longer matches a prefix of the entries (rebuilt or truncated). */
  private rewrite: boolean

  constructor(
    readonly path: string,
    readonly baseOffset: number,
    capacity = 64,
  ) {
    this.rel = new Int32Array(capacity)
    this.pos = new Int32Array(capacity)
    this.rewrite = true
  }

  get entries(): number {
    return this.n
  }

  /** Last indexed offset (absolute), or -1 when empty. */
  get lastOffset(): number {
    return this.n === 0 ? -1 : this.baseOffset + this.rel[this.n - 1]!
  }

  /** Position of the last entry, or 0 when empty. */
  get lastPosition(): number {
    return this.n === 0 ? 0 : this.pos[this.n - 1]!
  }

  append(offset: number, position: number): void {
    const rel = offset - this.baseOffset
    if (this.n > 0 && (rel <= this.rel[this.n - 1]! || position <= this.pos[this.n - 1]!)) return
    if (this.n === this.rel.length) {
      const rel2 = new Int32Array(this.n * 2)
      const pos2 = new Int32Array(this.n * 2)
      rel2.set(this.rel)
      pos2.set(this.pos)
      this.rel = rel2
      this.pos = pos2
    }
    this.rel[this.n] = rel
    this.pos[this.n] = position
    this.n++
  }

  /** Position of the largest entry whose offset is <= `offset` (0 if none is). */
  lookup(offset: number): number {
    const target = offset - this.baseOffset
    let lo = 0
    let hi = this.n - 1
    let found = -1
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1
      if (this.rel[mid]! <= target) {
        found = mid
        lo = mid + 1
      } else {
        hi = mid - 1
      }
    }
    return found < 0 ? 0 : this.pos[found]!
  }

  /** The largest indexed position that is <= `position` (0 if none is): a batch boundary. */
  positionAtOrBefore(position: number): number {
    let lo = 0
    let hi = this.n - 1
    let found = 0
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1
      const p = this.pos[mid]!
      if (p <= position) {
        found = p
        lo = mid + 1
      } else {
        hi = mid - 1
      }
    }
    return found
  }

  /** Drops entries at or past `position` (used when the log is truncated there). */
  truncateToPosition(position: number): void {
    let n = this.n
    while (n > 0 && this.pos[n - 1]! >= position) n--
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

  /** Writes entries not yet in the file (or the whole file after a rebuild). */
  persist(fs: LogFileSystem = defaultFileSystem): void {
    if (!this.rewrite && this.persisted === this.n) return
    const from = this.rewrite ? 0 : this.persisted
    const out = Buffer.allocUnsafe((this.n - from) * OFFSET_INDEX_ENTRY)
    for (let i = from, o = 0; i < this.n; i++, o += OFFSET_INDEX_ENTRY) {
      out.writeInt32BE(this.rel[i]!, o)
      out.writeInt32BE(this.pos[i]!, o + 4)
    }
    persistEntries(fs, this.path, out, this.rewrite)
    this.persisted = this.n
    this.rewrite = false
  }

  /**
   * Reads the file, or returns undefined when it is missing or fails a sanity
   * check (partial entry, offsets or positions not increasing, positions past
   * the log): the caller then rebuilds it from the log.
   */
  static load(path: string, baseOffset: number, logSize: number): OffsetIndex | undefined {
    const data = readEntries(path, OFFSET_INDEX_ENTRY)
    if (data === undefined) return undefined
    const count = data.length / OFFSET_INDEX_ENTRY
    const index = new OffsetIndex(path, baseOffset, Math.max(64, count))
    let prevRel = -1
    let prevPos = -1
    for (let i = 0, o = 0; i < count; i++, o += OFFSET_INDEX_ENTRY) {
      const rel = data.readInt32BE(o)
      const pos = data.readInt32BE(o + 4)
      if (rel <= prevRel || pos <= prevPos || pos >= logSize) return undefined
      index.rel[i] = rel
      index.pos[i] = pos
      prevRel = rel
      prevPos = pos
    }
    index.n = count
    index.persisted = count
    index.rewrite = false
    return index
  }
}
