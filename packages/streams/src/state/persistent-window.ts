import type { Serde } from '@tidelog/client'
import { InvalidStateStoreException, StreamsException } from '../errors.js'
import { deserializeSync, openStoreEnv, serializeSync, type KeyValue, type StateStoreContext } from '../store.js'
import { windowStoreKeyBinary, type WindowStore } from '../windows/window-store.js'
import { Window, Windowed } from '../windows/windows.js'
import type { LmdbEnv } from './lmdb.js'
import { defaultSegmentInterval, MAX_SEGMENT_DBS, Segments } from './segments.js'

const MAX_SEQ = 0x7fffffff

/** Splits a stored `[key][8-byte start][4-byte seqnum]` (Java's WindowKeySchema). */
function parse(stored: Buffer): { key: Buffer; start: number; seq: number } {
  const n = stored.length - 12
  return { key: stored.subarray(0, n), start: Number(stored.readBigInt64BE(n)), seq: stored.readInt32BE(n + 8) }
}

/**
 * Java's RocksDBWindowStore on LMDB: segments by window start, each keyed in Java's WindowKeySchema
 * (`[key][start][seqnum]`, the changelog's key too), so one key's windows are adjacent. Retention
 * and expiry as the in-memory store (a window at or before `observedStreamTime - retention` is
 * dropped and never read). Range queries over several keys come back segment by segment, key
 * bytes then time within one, as Java's RocksDB store gives them (the in-memory store orders by time first).
 */
export class PersistentWindowStore<K, V> implements WindowStore<K, V> {
  readonly persistent = true
  private env: LmdbEnv | undefined
  private segments: Segments | undefined
  private observedStreamTime = -1
  private seqnum = 0
  private context: StateStoreContext | undefined
  expiredRecords = 0

  constructor(
    readonly name: string,
    readonly retentionPeriodMs: number,
    readonly windowSizeMs: number,
    readonly retainDuplicates: boolean,
    private readonly keySerde: Serde<K>,
    private readonly valueSerde: Serde<V>,
    private readonly logging: boolean,
    readonly timestamped = false,
  ) {}

  init(context: StateStoreContext): void {
    this.context = context
    this.env = openStoreEnv(this.name, this.logging, context, MAX_SEGMENT_DBS)
    this.segments = new Segments(this.env, this.name, defaultSegmentInterval(this.retentionPeriodMs))
    for (const [k] of this.segments.newest()?.range(undefined, undefined) ?? []) this.observedStreamTime = Math.max(this.observedStreamTime, parse(k).start)
  }

  isOpen(): boolean {
    return this.segments !== undefined
  }

  /** Empties the store before a restore from the start (its local state is not trusted). */
  wipe(): void {
    this.open().clear()
    this.observedStreamTime = -1
  }

  flush(): void {
    this.segments?.flush()
  }

  close(): void {
    this.segments?.flush()
    this.segments = undefined
    this.env?.close()
    this.env = undefined
  }

  put(key: K, value: V | null, windowStartTimestamp: number): void {
    this.open()
    const k = this.k(key)
    const v = value === null || value === undefined ? null : serializeSync(this.valueSerde, value, false)
    const seq = this.retainDuplicates ? (this.seqnum = (this.seqnum + 1) & MAX_SEQ) : 0
    const stored = windowStoreKeyBinary(k, windowStartTimestamp, seq)
    if (v !== null || !this.retainDuplicates) this.putStored(stored, windowStartTimestamp, v)
    if (this.logging && this.context) this.context.logChange(this.name, stored, v, this.context.currentTimestamp())
  }

  restore(changelogKey: Buffer, value: Buffer | null): void {
    if (changelogKey.length < 12) throw new StreamsException(`window store ${this.name}: changelog key of ${changelogKey.length} bytes is shorter than its timestamp and sequence number`)
    this.putStored(changelogKey, parse(changelogKey).start, value)
  }

  fetch(key: K, time: number): V | undefined
  fetch(key: K, timeFrom: number, timeTo: number): KeyValue<number, V>[]
  fetch(keyFrom: K | undefined, keyTo: K | undefined, timeFrom: number, timeTo: number): KeyValue<Windowed<K>, V>[]
  fetch(...args: unknown[]): unknown {
    this.open()
    if (args.length === 2) {
      const [key, time] = args as [K, number]
      const first = this.single(this.k(key), time, time)[0]
      return first === undefined ? undefined : this.v(first[1])
    }
    if (args.length === 3) {
      const [key, from, to] = args as [K, number, number]
      return this.single(this.k(key), from, to).map(([s, v]) => ({ key: parse(s).start, value: this.v(v) }))
    }
    const [kf, kt, from, to] = args as [K | undefined, K | undefined, number, number]
    return this.multi(kf === undefined ? undefined : this.k(kf), kt === undefined ? undefined : this.k(kt), from, to)
  }

  backwardFetch(key: K, timeFrom: number, timeTo: number): KeyValue<number, V>[]
  backwardFetch(keyFrom: K | undefined, keyTo: K | undefined, timeFrom: number, timeTo: number): KeyValue<Windowed<K>, V>[]
  backwardFetch(...args: unknown[]): unknown {
    return ((this.fetch as (...a: unknown[]) => unknown[])(...args)).reverse()
  }

  fetchAll(timeFrom: number, timeTo: number): KeyValue<Windowed<K>, V>[] {
    this.open()
    return this.multi(undefined, undefined, timeFrom, timeTo)
  }

  backwardFetchAll(timeFrom: number, timeTo: number): KeyValue<Windowed<K>, V>[] {
    return this.fetchAll(timeFrom, timeTo).reverse()
  }

  all(): KeyValue<Windowed<K>, V>[] {
    return this.fetchAll(0, Number.MAX_SAFE_INTEGER)
  }

  backwardAll(): KeyValue<Windowed<K>, V>[] {
    return this.all().reverse()
  }

  private putStored(stored: Buffer, start: number, value: Buffer | null): void {
    const segments = this.open()
    this.observedStreamTime = Math.max(this.observedStreamTime, start)
    if (start <= this.observedStreamTime - this.retentionPeriodMs) {
      this.expiredRecords++
      return
    }
    segments.get(segments.segmentId(start), value !== null)?.put(stored, value)
    segments.expire(this.observedStreamTime, this.retentionPeriodMs)
  }

  private liveFrom(from: number): number {
    return Math.max(from, this.observedStreamTime - this.retentionPeriodMs + 1)
  }

  /** One key's windows in [from, to], by start then sequence number: a bounded scan of each segment. */
  private single(key: Buffer, from: number, to: number): [Buffer, Buffer][] {
    const lo = this.liveFrom(from)
    if (lo > to) return []
    const out: [Buffer, Buffer][] = []
    for (const seg of this.open().between(lo, to)) {
      // Clamped: a negative time in two's complement big-endian would sort after every real one.
      for (const e of seg.range(windowStoreKeyBinary(key, Math.max(0, lo), 0), windowStoreKeyBinary(key, to, MAX_SEQ))) {
        // A longer key with this one as its prefix can sort inside the bounds: only exact keys count.
        if (e[0].length === key.length + 12 && e[0].compare(key, 0, key.length, 0, key.length) === 0) out.push(e)
      }
    }
    return out
  }

  private multi(from: Buffer | undefined, to: Buffer | undefined, timeFrom: number, timeTo: number): KeyValue<Windowed<K>, V>[] {
    if (from !== undefined && to !== undefined && Buffer.compare(from, to) > 0) return []
    const lo = this.liveFrom(timeFrom)
    const out: KeyValue<Windowed<K>, V>[] = []
    const push = (stored: Buffer, v: Buffer) => {
      const { key, start } = parse(stored)
      out.push({ key: new Windowed(deserializeSync(this.keySerde, Buffer.from(key), true), new Window(start, start + this.windowSizeMs)), value: this.v(v) })
    }
    if (from !== undefined && to !== undefined && from.equals(to)) {
      for (const [s, v] of this.single(from, lo, timeTo)) push(s, v)
      return out
    }
    if (lo > timeTo) return out
    // Key-first bytes with variable-length keys have no tight bounds across keys: scan from the lower key and filter.
    for (const seg of this.open().between(lo, timeTo)) {
      for (const [s, v] of seg.range(from, undefined)) {
        const { key, start } = parse(s)
        if (start < lo || start > timeTo) continue
        if (from !== undefined && Buffer.compare(key, from) < 0) continue
        if (to !== undefined && Buffer.compare(key, to) > 0) continue
        push(s, v)
      }
    }
    return out
  }

  private open(): Segments {
    if (this.segments === undefined) throw new InvalidStateStoreException(`Store ${this.name} is currently closed.`)
    return this.segments
  }

  private k(key: K): Buffer {
    if (key === null || key === undefined) throw new StreamsException(`Store ${this.name}: a key may not be null`)
    return serializeSync(this.keySerde, key, true)
  }

  private v(b: Buffer): V {
    return deserializeSync(this.valueSerde, b, false)
  }
}
