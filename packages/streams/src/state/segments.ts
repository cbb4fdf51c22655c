import { InvalidStateStoreException } from '../errors.js'
import { LmdbKeyValueBytesStore, type LmdbEnv } from './lmdb.js'

/** Java's default segment interval for window and session stores: half the retention, at least a minute. */
export function defaultSegmentInterval(retentionPeriodMs: number): number {
  return Math.max(Math.floor(retentionPeriodMs / 2), 60_000)
}

/** Live segments a store may hold at once (retention / interval + 2, as Java's), with room to spare. */
export const MAX_SEGMENT_DBS = 100

/**
 * Java's KeyValueSegments (AbstractRocksDBSegmentedBytesStore): time is cut into segments of
 * `interval` ms, each its own LMDB sub-database named `<store>.<segment start>` as Java names
 * its segment directories, so expiry drops whole segments instead of deleting records.
 */
export class Segments {
  private readonly segments = new Map<number, LmdbKeyValueBytesStore>()

  constructor(private readonly env: LmdbEnv, private readonly name: string, readonly interval: number) {
    // Reopen the segments a previous run left (a sub-database name is a key of the root database).
    const prefix = `${name}.`
    for (const k of env.db().getKeys({}) as Iterable<Buffer>) {
      // LMDB keeps a sub-database's name with its C string terminator.
      const s = Buffer.from(k).toString('latin1').replace(/\u0000$/, '')
      if (s.startsWith(prefix) && /^\d+$/.test(s.slice(prefix.length))) this.get(Number(s.slice(prefix.length)) / interval, true)
    }
  }

  segmentId(timestamp: number): number {
    return Math.floor(timestamp / this.interval)
  }

  get(id: number, create: boolean): LmdbKeyValueBytesStore | undefined {
    let s = this.segments.get(id)
    if (s === undefined && create) {
      if (this.segments.size >= MAX_SEGMENT_DBS - 1) throw new InvalidStateStoreException(`Store ${this.name} would need more than ${MAX_SEGMENT_DBS} live segments`)
      s = new LmdbKeyValueBytesStore(this.env, `${this.name}.${id * this.interval}`)
      this.segments.set(id, s)
    }
    return s
  }

  /** The segments covering [from, to], oldest first. */
  between(from: number, to: number): LmdbKeyValueBytesStore[] {
    const lo = this.segmentId(Math.max(0, from))
    const hi = this.segmentId(Math.max(0, to))
    return [...this.segments.keys()].filter((id) => id >= lo && id <= hi).sort((a, b) => a - b).map((id) => this.segments.get(id)!)
  }

  /** Drops every segment wholly older than `streamTime - retention` (Java's cleanupExpiredSegments). */
  expire(streamTime: number, retentionPeriodMs: number): void {
    const minLive = this.segmentId(streamTime - retentionPeriodMs)
    for (const [id, s] of this.segments) {
      if (id < minLive) {
        s.drop()
        this.segments.delete(id)
      }
    }
  }

  /** The newest segment (to find the stream time a reopened store had reached). */
  newest(): LmdbKeyValueBytesStore | undefined {
    const ids = [...this.segments.keys()]
    return ids.length === 0 ? undefined : this.segments.get(Math.max(...ids))
  }

  flush(): void {
    for (const s of this.segments.values()) s.flush()
  }

  /** Drops every segment (the store's contents are not trusted). */
  clear(): void {
    for (const s of this.segments.values()) s.drop()
    this.segments.clear()
  }
}
