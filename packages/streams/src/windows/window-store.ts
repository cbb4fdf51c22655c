import type { Serde } from '@tidelog/client'
import { InvalidStateStoreException, StreamsException } from '../errors.js'
import { deserializeSync, serializeSync, timestampedSerde, type KeyValue, type StateStore, type StateStoreContext, type StoreBuilder, type ValueAndTimestamp } from '../store.js'
import { Window, Windowed } from './windows.js'
import { installWindowCache } from '../state/caching-windows.js'

/** Kafka Streams' default windowstore.changelog.additional.retention.ms: one day on top of the store's retention. */
export const ADDITIONAL_CHANGELOG_RETENTION_MS = 86_400_000

/**
 * Java's WindowedChangelogTopicConfig: window and session changelogs are compacted and deleted,
 * kept for the store's retention plus a day, unless the user's logging config says otherwise.
 */
export function windowedChangelogConfig(retentionMs: number, user: Readonly<Record<string, string>>): Record<string, string> {
  return { 'cleanup.policy': 'compact,delete', 'retention.ms': String(retentionMs + ADDITIONAL_CHANGELOG_RETENTION_MS), ...user }
}

/** Java's WindowKeySchema.toStoreKeyBinary: `[key][8-byte window start][4-byte seqnum]` (changelog keys). */
export function windowStoreKeyBinary(key: Buffer, windowStart: number, seqnum: number): Buffer {
  const out = Buffer.allocUnsafe(key.length + 12)
  key.copy(out, 0)
  writeLong(out, windowStart, key.length)
  out.writeInt32BE(seqnum, key.length + 8)
  return out
}

/** An 8-byte big-endian long; two 32-bit writes for the usual non-negative times (BigInt is slow on a hot path). */
function writeLong(out: Buffer, n: number, at: number): void {
  if (n >= 0 && n <= Number.MAX_SAFE_INTEGER) {
    out.writeUInt32BE(Math.floor(n / 0x1_0000_0000), at)
    out.writeUInt32BE(n >>> 0, at + 4)
  } else {
    out.writeBigInt64BE(BigInt(n), at)
  }
}

/**
 * A Map with its numeric keys kept sorted: inserts are binary-searched (usually an append, as
 * time moves forward), so expiring the oldest and scanning a time range stay cheap.
 */
export class SortedIndex<T> {
  readonly map = new Map<number, T>()
  private readonly sorted: number[] = []

  get(k: number): T | undefined {
    return this.map.get(k)
  }

  set(k: number, v: T): void {
    if (!this.map.has(k)) {
      const n = this.sorted.length
      if (n === 0 || this.sorted[n - 1]! < k) this.sorted.push(k)
      else this.sorted.splice(this.lowerBound(k), 0, k)
    }
    this.map.set(k, v)
  }

  delete(k: number): void {
    if (!this.map.delete(k)) return
    this.sorted.splice(this.lowerBound(k), 1)
  }

  /** Every key, ascending (the live array: do not modify). */
  keys(): readonly number[] {
    return this.sorted
  }

  /** Keys in [lo, hi], ascending. */
  between(lo: number, hi: number): number[] {
    if (lo > hi) return []
    return this.sorted.slice(this.lowerBound(lo), this.lowerBound(hi + 1))
  }

  /** Removes every key at or below `limit`; returns the values removed. */
  dropThrough(limit: number): T[] {
    const n = this.lowerBound(limit + 1)
    if (n === 0) return []
    const out: T[] = []
    for (const k of this.sorted.splice(0, n)) {
      out.push(this.map.get(k)!)
      this.map.delete(k)
    }
    return out
  }

  clear(): void {
    this.map.clear()
    this.sorted.length = 0
  }

  /** The first index whose key is >= k. */
  private lowerBound(k: number): number {
    let lo = 0
    let hi = this.sorted.length
    while (lo < hi) {
      const mid = (lo + hi) >>> 1
      if (this.sorted[mid]! < k) lo = mid + 1
      else hi = mid
    }
    return lo
  }
}

/** Java's ReadOnlyWindowStore + WindowStore; iterators are arrays (snapshots). */
export interface WindowStore<K, V> extends StateStore {
  readonly windowSizeMs: number
  readonly retentionPeriodMs: number
  put(key: K, value: V | null, windowStartTimestamp: number): void
  fetch(key: K, time: number): V | undefined
  fetch(key: K, timeFrom: number, timeTo: number): KeyValue<number, V>[]
  fetch(keyFrom: K | undefined, keyTo: K | undefined, timeFrom: number, timeTo: number): KeyValue<Windowed<K>, V>[]
  backwardFetch(key: K, timeFrom: number, timeTo: number): KeyValue<number, V>[]
  backwardFetch(keyFrom: K | undefined, keyTo: K | undefined, timeFrom: number, timeTo: number): KeyValue<Windowed<K>, V>[]
  fetchAll(timeFrom: number, timeTo: number): KeyValue<Windowed<K>, V>[]
  backwardFetchAll(timeFrom: number, timeTo: number): KeyValue<Windowed<K>, V>[]
  all(): KeyValue<Windowed<K>, V>[]
  backwardAll(): KeyValue<Windowed<K>, V>[]
}

interface Entry {
  key: Buffer
  seq: number
  value: Buffer
}

/**
 * Java's InMemoryWindowStore under the metered and change-logging layers: records grouped by
 * window start, keys in serialized-byte order within a start. A record whose window start is
 * at or before `observedStreamTime - retention` (the store's own stream time: the largest start
 * put) is dropped, and reads never return one, as Java's segmented stores behave. With
 * `retainDuplicates` (the join stores) every put is kept under its own sequence number.
 */
export class InMemoryWindowStore<K, V> implements WindowStore<K, V> {
  readonly persistent = false
  private readonly segments = new SortedIndex<Map<string, Entry>>()
  /** Per key, its window starts and the entries at each (in sequence order): single-key fetches read only those, as RocksDB's key-first layout does. */
  private readonly byKey = new Map<string, SortedIndex<Entry[]>>()
  private observedStreamTime = -1
  private seqnum = 0
  private context: StateStoreContext | undefined
  private open = false
  /** Records refused because their window had already expired (Java's expired-window-record-drop sensor). */
  expiredRecords = 0

  constructor(
    readonly name: string,
    readonly retentionPeriodMs: number,
    readonly windowSizeMs: number,
    readonly retainDuplicates: boolean,
    private readonly keySerde: Serde<K>,
    private readonly valueSerde: Serde<V>,
    private readonly logging: boolean,
    /** Values are ValueAndTimestamp (Java's TimestampedWindowStore, the DSL's aggregations). */
    readonly timestamped = false,
    /**
     * The store of an emit-on-window-close aggregation (KIP-825; Java's time-ordered
     * RocksDbIndexedTimeOrderedWindowBytesStoreSupplier): its reads keep windows starting at
     * exactly `observedStreamTime - retention`, one millisecond more than the other stores.
     */
    readonly timeOrdered = false,
  ) {}

  /** The earliest window start still live (Java's getActualFrom). */
  private minLive(): number {
    return this.observedStreamTime - this.retentionPeriodMs + (this.timeOrdered ? 0 : 1)
  }

  init(context: StateStoreContext): void {
    this.context = context
    this.open = true
  }

  isOpen(): boolean {
    return this.open
  }

  flush(): void {}

  close(): void {
    this.open = false
  }

  put(key: K, value: V | null, windowStartTimestamp: number): void {
    this.checkOpen()
    const k = this.k(key)
    const v = value === null || value === undefined ? null : serializeSync(this.valueSerde, value, false)
    // Java: with duplicates, every put gets the next sequence number; a null put then deletes nothing.
    const seq = this.retainDuplicates ? (this.seqnum = (this.seqnum + 1) & 0x7fffffff) : 0
    if (v !== null || !this.retainDuplicates) this.putBytes(k, v, windowStartTimestamp, seq)
    if (this.logging && this.context) this.context.logChange(this.name, windowStoreKeyBinary(k, windowStartTimestamp, seq), v, this.context.currentTimestamp())
  }

  /** Applies a changelog record while restoring (no re-logging). */
  restore(changelogKey: Buffer, value: Buffer | null): void {
    const n = changelogKey.length - 12
    if (n < 0) throw new StreamsException(`window store ${this.name}: changelog key of ${changelogKey.length} bytes is shorter than its timestamp and sequence number`)
    this.putBytes(changelogKey.subarray(0, n), value, Number(changelogKey.readBigInt64BE(n)), changelogKey.readInt32BE(n + 8))
  }

  fetch(key: K, time: number): V | undefined
  fetch(key: K, timeFrom: number, timeTo: number): KeyValue<number, V>[]
  fetch(keyFrom: K | undefined, keyTo: K | undefined, timeFrom: number, timeTo: number): KeyValue<Windowed<K>, V>[]
  fetch(a: K | undefined, b: number | K | undefined, c?: number, d?: number): unknown {
    this.checkOpen()
    // Named parameters and arguments.length, not a rest array: this is the aggregations' hot path.
    const n = arguments.length
    if (n === 2) {
      const key = a as K
      const time = b as number
      if (time < this.minLive()) return undefined
      if (this.retainDuplicates) {
        const first = this.single(this.k(key), time, time)[0]
        return first === undefined ? undefined : this.v(first.value)
      }
      const seg = this.segments.get(time)
      if (seg === undefined) return undefined
      const e = seg.get(this.keyId(this.k(key)))
      return e === undefined ? undefined : this.v(e.value)
    }
    if (n === 3) return this.single(this.k(a as K), b as number, c!).map((e) => ({ key: e.start, value: this.v(e.value) }))
    const kf = a
    const kt = b as K | undefined
    return this.range(kf === undefined ? undefined : this.k(kf), kt === undefined ? undefined : this.k(kt), c!, d!)
  }

  backwardFetch(key: K, timeFrom: number, timeTo: number): KeyValue<number, V>[]
  backwardFetch(keyFrom: K | undefined, keyTo: K | undefined, timeFrom: number, timeTo: number): KeyValue<Windowed<K>, V>[]
  backwardFetch(...args: unknown[]): unknown {
    return ((this.fetch as (...a: unknown[]) => unknown[])(...args)).reverse()
  }

  fetchAll(timeFrom: number, timeTo: number): KeyValue<Windowed<K>, V>[] {
    this.checkOpen()
    return this.range(undefined, undefined, timeFrom, timeTo)
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

  private putBytes(key: Buffer, value: Buffer | null, start: number, seq: number): void {
    this.observedStreamTime = Math.max(this.observedStreamTime, start)
    if (start < this.minLive()) {
      this.expiredRecords++
      return
    }
    const keyId = this.keyId(key)
    const id = this.retainDuplicates ? keyId + seqSuffix(seq) : keyId
    let seg = this.segments.get(start)
    if (value === null) {
      if (seg?.delete(id)) {
        if (seg.size === 0) this.segments.delete(start)
        this.unindex(keyId, start, id)
      }
      return
    }
    if (seg === undefined) {
      seg = new Map()
      this.segments.set(start, seg)
    }
    const existing = seg.get(id)
    if (existing !== undefined) {
      // The same key (and sequence number) at the same start: the byKey index holds this very entry.
      existing.value = value
      this.expire()
      return
    }
    const entry: Entry = { key, seq, value }
    seg.set(id, entry)
    let idx = this.byKey.get(keyId)
    if (idx === undefined) {
      idx = new SortedIndex()
      this.byKey.set(keyId, idx)
    }
    const list = idx.get(start)
    if (list === undefined) idx.set(start, [entry])
    else list.push(entry)
    this.expire()
  }

  private unindex(keyId: string, start: number, id: string): void {
    const idx = this.byKey.get(keyId)
    const list = idx?.get(start)
    if (idx === undefined || list === undefined) return
    const rest = list.filter((e) => (this.retainDuplicates ? keyId + seqSuffix(e.seq) : keyId) !== id)
    if (rest.length > 0) idx.set(start, rest)
    else idx.delete(start)
    if (idx.map.size === 0) this.byKey.delete(keyId)
  }

  /** Java drops whole expired windows eagerly on put and before reads. */
  private expire(): void {
    const limit = this.minLive() - 1
    for (const seg of this.segments.dropThrough(limit)) {
      for (const e of seg.values()) {
        const keyId = e.key.toString('latin1')
        const idx = this.byKey.get(keyId)
        if (idx === undefined) continue
        idx.dropThrough(limit)
        if (idx.map.size === 0) this.byKey.delete(keyId)
      }
    }
  }

  private liveStarts(from: number, to: number): number[] {
    return this.segments.between(Math.max(from, this.minLive()), to)
  }

  private single(key: Buffer, from: number, to: number): { start: number; value: Buffer }[] {
    const idx = this.byKey.get(key.toString('latin1'))
    if (idx === undefined) return []
    const out: { start: number; value: Buffer }[] = []
    for (const start of idx.between(Math.max(from, this.minLive()), to)) {
      for (const e of idx.get(start)!) out.push({ start, value: e.value })
    }
    return out
  }

  private range(from: Buffer | undefined, to: Buffer | undefined, timeFrom: number, timeTo: number): KeyValue<Windowed<K>, V>[] {
    if (from !== undefined && to !== undefined && Buffer.compare(from, to) > 0) return []
    const out: KeyValue<Windowed<K>, V>[] = []
    for (const start of this.liveStarts(timeFrom, timeTo)) {
      for (const e of sortedEntries(this.segments.get(start)!)) {
        if (from !== undefined && Buffer.compare(e.key, from) < 0) continue
        if (to !== undefined && Buffer.compare(e.key, to) > 0) continue
        out.push({ key: new Windowed(deserializeSync(this.keySerde, e.key, true), new Window(start, start + this.windowSizeMs)), value: this.v(e.value) })
      }
    }
    return out
  }

  private checkOpen(): void {
    if (!this.open) throw new InvalidStateStoreException(`Store ${this.name} is currently closed.`)
  }

  /**
   * The aggregations fetch a key and then put it: the last primitive key's bytes are kept, so
   * it is serialized once (serdes are deterministic functions of the key).
   */
  private lastKey: unknown = undefined
  private lastKeyBytes: Buffer | undefined
  private lastKeyId: string | undefined

  /** The map key for serialized key bytes (latin1: one char per byte, so byte order is string order). */
  private keyId(bytes: Buffer): string {
    if (bytes === this.lastKeyBytes) return (this.lastKeyId ??= bytes.toString('latin1'))
    return bytes.toString('latin1')
  }

  private k(key: K): Buffer {
    if (key === null || key === undefined) throw new StreamsException(`Store ${this.name}: a key may not be null`)
    if (key === this.lastKey && this.lastKeyBytes !== undefined) return this.lastKeyBytes
    const bytes = serializeSync(this.keySerde, key, true)
    if (typeof key === 'string' || typeof key === 'number') {
      this.lastKey = key
      this.lastKeyBytes = bytes
      this.lastKeyId = undefined
    }
    return bytes
  }

  private v(b: Buffer): V {
    return deserializeSync(this.valueSerde, b, false)
  }
}

function seqSuffix(seq: number): string {
  const b = Buffer.alloc(4)
  b.writeInt32BE(seq)
  return b.toString('latin1')
}

/** Entries of one window start in Java's order: serialized key (then sequence number) bytes. */
function sortedEntries(seg: Map<string, Entry>): Entry[] {
  return [...seg.entries()].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0)).map((e) => e[1])
}

/** Names an in-memory window store (Java's WindowBytesStoreSupplier from Stores.inMemoryWindowStore). */
export interface WindowBytesStoreSupplier {
  readonly name: string
  readonly retentionPeriodMs: number
  readonly windowSizeMs: number
  readonly retainDuplicates: boolean
  /** Emit-on-window-close stores (KIP-825): see InMemoryWindowStore#timeOrdered. */
  readonly timeOrdered?: boolean
  /** Builds a store other than the in-memory one (Stores.persistentWindowStore's). */
  readonly build?: (keySerde: Serde<any>, valueSerde: Serde<any>, logging: boolean, timestamped: boolean) => WindowStore<any, any> & { readonly expiredRecords: number }
}

export class WindowStoreBuilder<K, V> implements StoreBuilder<WindowStore<K, V>> {
  loggingEnabled = true
  /** Java's default for a store builder: off (the DSL turns it on unless Materialized disables it). */
  cachingEnabled = false
  private userLogConfig: Record<string, string> = {}

  constructor(
    private readonly supplier: WindowBytesStoreSupplier,
    private readonly keySerde: Serde<K>,
    private readonly valueSerde: Serde<V>,
    private readonly timestamped: boolean,
  ) {}

  get name(): string {
    return this.supplier.name
  }

  /** The changelog's topic configs, as Kafka Streams creates them for a window store. */
  get logConfig(): Readonly<Record<string, string>> {
    return windowedChangelogConfig(this.supplier.retentionPeriodMs, this.userLogConfig)
  }

  withLoggingEnabled(config: Record<string, string> = {}): this {
    this.loggingEnabled = true
    this.userLogConfig = { ...config }
    return this
  }

  withLoggingDisabled(): this {
    this.loggingEnabled = false
    this.userLogConfig = {}
    return this
  }

  /** Java's CachingWindowStore layer (statestore.cache.max.bytes): not for stores that keep duplicates (joins). */
  withCachingEnabled(): this {
    this.cachingEnabled = true
    return this
  }

  withCachingDisabled(): this {
    this.cachingEnabled = false
    return this
  }

  build(): WindowStore<K, V> & { readonly expiredRecords: number } {
    const s = this.supplier
    const store = s.build
      ? s.build(this.keySerde, this.valueSerde, this.loggingEnabled, this.timestamped)
      : new InMemoryWindowStore(s.name, s.retentionPeriodMs, s.windowSizeMs, s.retainDuplicates, this.keySerde, this.valueSerde, this.loggingEnabled, this.timestamped, s.timeOrdered === true)
    if (this.cachingEnabled && !s.retainDuplicates) installWindowCache(store, this.keySerde, this.valueSerde)
    return store
  }
}

function checkRetention(name: string, retentionPeriodMs: number, windowSizeMs: number): void {
  if (!name) throw new TypeError('store name cannot be empty')
  if (!Number.isSafeInteger(retentionPeriodMs) || retentionPeriodMs < 0) throw new RangeError('retentionPeriod cannot be negative')
  if (!Number.isSafeInteger(windowSizeMs) || windowSizeMs < 0) throw new RangeError('windowSize cannot be negative')
  if (windowSizeMs > retentionPeriodMs) {
    throw new RangeError(`The retention period of the window store ${name} must be no smaller than its window size. Got size=[${windowSizeMs}], retention=[${retentionPeriodMs}]`)
  }
}

/** Java's Stores factories for window stores (in memory; persistent stores are not implemented). */
export const WindowStores = {
  inMemoryWindowStore(name: string, retentionPeriodMs: number, windowSizeMs: number, retainDuplicates: boolean): WindowBytesStoreSupplier {
    checkRetention(name, retentionPeriodMs, windowSizeMs)
    return { name, retentionPeriodMs, windowSizeMs, retainDuplicates }
  },
  windowStoreBuilder<K, V>(supplier: WindowBytesStoreSupplier, keySerde: Serde<K>, valueSerde: Serde<V>): WindowStoreBuilder<K, V> {
    return new WindowStoreBuilder(supplier, keySerde, valueSerde, false)
  },
  timestampedWindowStoreBuilder<K, V>(supplier: WindowBytesStoreSupplier, keySerde: Serde<K>, valueSerde: Serde<V>): WindowStoreBuilder<K, ValueAndTimestamp<V>> {
    return new WindowStoreBuilder(supplier, keySerde, timestampedSerde(valueSerde), true)
  },
}

/** A plain-value read view of a timestamped window store, as Java's TopologyTestDriver#getWindowStore gives. */
export function windowValuesOnly<K, V>(s: InMemoryWindowStore<K, ValueAndTimestamp<V>>): Pick<WindowStore<K, V>, 'name' | 'windowSizeMs' | 'retentionPeriodMs' | 'fetch' | 'backwardFetch' | 'fetchAll' | 'backwardFetchAll' | 'all' | 'backwardAll'> {
  const strip = <T>(kvs: KeyValue<T, ValueAndTimestamp<V>>[]) => kvs.map((e) => ({ key: e.key, value: e.value.value }))
  const fetch = (...args: unknown[]): any => {
    const out = (s.fetch as (...a: unknown[]) => unknown)(...args)
    if (args.length === 2) return (out as ValueAndTimestamp<V> | undefined)?.value
    return strip(out as KeyValue<unknown, ValueAndTimestamp<V>>[])
  }
  return {
    name: s.name,
    windowSizeMs: s.windowSizeMs,
    retentionPeriodMs: s.retentionPeriodMs,
    fetch,
    backwardFetch: ((...args: unknown[]) => strip((s.backwardFetch as (...a: unknown[]) => KeyValue<unknown, ValueAndTimestamp<V>>[])(...args))) as any,
    fetchAll: (a, b) => strip(s.fetchAll(a, b)),
    backwardFetchAll: (a, b) => strip(s.backwardFetchAll(a, b)),
    all: () => strip(s.all()),
    backwardAll: () => strip(s.backwardAll()),
  }
}
