/** What the limiter needs of a segment: whether its descriptor may be closed now, and closing it. */
export interface Evictable {
  /** Closes the descriptor if nothing is using it; the owner reopens it on demand. Returns whether it did. */
  evict(): boolean
}

/**
 * Keeps the number of open segment files at or under a cap (the broker's
 * --max-open-files; Kafka has no such setting and holds every segment open):
 * when a segment opens its file and the cap is reached, the least recently
 * used segments whose descriptors are idle are closed, to be reopened on their
 * next use. A segment being read or fsynced holds a reference and is skipped,
 * so the cap can be exceeded briefly when every open file is busy.
 */
export class OpenFileLimiter {
  // Insertion order is recency order: touch() moves a segment to the end.
  private readonly open = new Map<Evictable, true>()

  constructor(readonly max: number) {
    if (!Number.isInteger(max) || max < 1) throw new RangeError(`max open files must be a positive integer, got ${max}`)
  }

  get size(): number {
    return this.open.size
  }

  /** A segment's file was (re)opened: make room for it. */
  opened(seg: Evictable): void {
    this.open.delete(seg)
    if (this.open.size >= this.max) {
      for (const other of this.open.keys()) {
        if (other.evict()) this.open.delete(other)
        if (this.open.size < this.max) break
      }
    }
    this.open.set(seg, true)
  }

  /** A reference was released: if busy files pushed the count over the cap, close idle ones now. */
  trim(): void {
    if (this.open.size <= this.max) return
    for (const other of this.open.keys()) {
      if (other.evict()) this.open.delete(other)
      if (this.open.size <= this.max) break
    }
  }

  /** The segment was used: it becomes the last to be evicted. */
  touch(seg: Evictable): void {
    if (this.open.delete(seg)) this.open.set(seg, true)
  }

  /** The segment's file was closed for good (or evicted). */
  closed(seg: Evictable): void {
    this.open.delete(seg)
  }
}
