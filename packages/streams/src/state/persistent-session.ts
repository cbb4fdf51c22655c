import { StreamsException } from '../errors.js'
import type { KeyValue } from '../store.js'
import { sessionKeyBinary, type SessionStore } from '../windows/session-store.js'
import { Window, Windowed } from '../windows/windows.js'
import { SegmentedLmdbStore } from './segmented-store.js'

const MAX_TIME = Number.MAX_SAFE_INTEGER

/** Splits a stored `[key][8-byte end][8-byte start]` (Java's SessionKeySchema). */
function parse(stored: Buffer): { key: Buffer; end: number; start: number } {
  const n = stored.length - 16
  return { key: stored.subarray(0, n), end: Number(stored.readBigInt64BE(n)), start: Number(stored.readBigInt64BE(n + 8)) }
}

/**
 * Java's RocksDBSessionStore on LMDB: segments by session end, keyed in Java's SessionKeySchema
 * (`[key][end][start]`, the changelog's key too). A session ending at or before
 * `observedStreamTime - retention` is dropped and never read, as in the in-memory store. One
 * key's sessions come back by end then start (as the in-memory store gives them); several keys'
 * segment by segment, key bytes first, as Java's RocksDB store.
 */
export class PersistentSessionStore<K, V> extends SegmentedLmdbStore<K, V> implements SessionStore<K, V> {
  protected timeOf(stored: Buffer): number {
    return parse(stored).end
  }

  put(sessionKey: Windowed<K>, aggregate: V | null): void {
    this.open()
    const stored = sessionKeyBinary(this.k(sessionKey.key), sessionKey.window.start, sessionKey.window.end)
    const v = this.valueBytes(aggregate)
    this.putStored(stored, v)
    this.logChange(stored, v)
  }

  remove(sessionKey: Windowed<K>): void {
    this.put(sessionKey, null)
  }

  restore(changelogKey: Buffer, value: Buffer | null): void {
    if (changelogKey.length < 16) throw new StreamsException(`session store ${this.name}: changelog key of ${changelogKey.length} bytes is shorter than its two timestamps`)
    this.putStored(changelogKey, value)
  }

  findSessions(key: K, earliestSessionEndTime: number, latestSessionStartTime: number): KeyValue<Windowed<K>, V>[]
  findSessions(keyFrom: K | undefined, keyTo: K | undefined, earliestSessionEndTime: number, latestSessionStartTime: number): KeyValue<Windowed<K>, V>[]
  /** Every key's sessions ending in [earliest, latest], in end-time order (as Java's time-first session key schema, which emit-on-close reads). */
  findSessions(earliestSessionEndTime: number, latestSessionEndTime: number): KeyValue<Windowed<K>, V>[]
  findSessions(...args: unknown[]): KeyValue<Windowed<K>, V>[] {
    this.open()
    if (args.length === 2) {
      const [e, l] = args as [number, number]
      return this.endingBetween(e, l)
    }
    if (args.length === 3) {
      const [key, e, l] = args as [K, number, number]
      return this.single(this.k(key), e, l).map(([s, v]) => this.kv(s, v))
    }
    const [kf, kt, e, l] = args as [K | undefined, K | undefined, number, number]
    return this.multi(kf === undefined ? undefined : this.k(kf), kt === undefined ? undefined : this.k(kt), e, l)
  }

  backwardFindSessions(key: K, earliestSessionEndTime: number, latestSessionStartTime: number): KeyValue<Windowed<K>, V>[] {
    return this.findSessions(key, earliestSessionEndTime, latestSessionStartTime).reverse()
  }

  fetchSession(key: K, sessionStartTime: number, sessionEndTime: number): V | undefined {
    const segments = this.open()
    if (sessionEndTime <= this.observedStreamTime - this.retentionPeriodMs) return undefined
    const b = segments.get(segments.segmentId(sessionEndTime), false)?.get(sessionKeyBinary(this.k(key), sessionStartTime, sessionEndTime))
    return b === undefined ? undefined : this.v(b)
  }

  fetch(key: K): KeyValue<Windowed<K>, V>[] {
    return this.findSessions(key, 0, MAX_TIME)
  }

  backwardFetch(key: K): KeyValue<Windowed<K>, V>[] {
    return this.fetch(key).reverse()
  }

  private single(key: Buffer, earliestEnd: number, latestStart: number): [Buffer, Buffer][] {
    const lo = this.liveFrom(earliestEnd)
    const out: [Buffer, Buffer][] = []
    for (const seg of this.open().between(lo, MAX_TIME)) {
      // Clamped: a negative time in two's complement big-endian would sort after every real one.
      for (const e of seg.range(sessionKeyBinary(key, 0, Math.max(0, lo)), sessionKeyBinary(key, MAX_TIME, MAX_TIME))) {
        if (e[0].length !== key.length + 16 || e[0].compare(key, 0, key.length, 0, key.length) !== 0) continue
        if (parse(e[0]).start <= latestStart) out.push(e)
      }
    }
    return out
  }

  private multi(from: Buffer | undefined, to: Buffer | undefined, earliestEnd: number, latestStart: number): KeyValue<Windowed<K>, V>[] {
    if (from !== undefined && to !== undefined && Buffer.compare(from, to) > 0) return []
    if (from !== undefined && to !== undefined && from.equals(to)) return this.single(from, earliestEnd, latestStart).map(([s, v]) => this.kv(s, v))
    const lo = this.liveFrom(earliestEnd)
    const out: KeyValue<Windowed<K>, V>[] = []
    for (const seg of this.open().between(lo, MAX_TIME)) {
      for (const [s, v] of seg.range(from, undefined)) {
        const { key, end, start } = parse(s)
        if (end < lo || start > latestStart) continue
        if (from !== undefined && Buffer.compare(key, from) < 0) continue
        if (to !== undefined && Buffer.compare(key, to) > 0) continue
        out.push(this.kv(s, v))
      }
    }
    return out
  }

  private endingBetween(earliestEnd: number, latestEnd: number): KeyValue<Windowed<K>, V>[] {
    const lo = this.liveFrom(earliestEnd)
    const found: { end: number; start: number; key: Buffer; s: Buffer; v: Buffer }[] = []
    for (const seg of this.open().between(lo, latestEnd)) {
      for (const [s, v] of seg.range(undefined, undefined)) {
        const { key, end, start } = parse(s)
        if (end >= lo && end <= latestEnd) found.push({ end, start, key, s, v })
      }
    }
    found.sort((a, b) => a.end - b.end || Buffer.compare(a.key, b.key) || a.start - b.start)
    return found.map((f) => this.kv(f.s, f.v))
  }

  private kv(stored: Buffer, v: Buffer): KeyValue<Windowed<K>, V> {
    const { key, end, start } = parse(stored)
    return { key: new Windowed(this.key(key), new Window(start, end)), value: this.v(v) }
  }
}
