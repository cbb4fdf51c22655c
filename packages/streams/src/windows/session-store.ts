import type { Serde } from '@tidelog/client'
import { InvalidStateStoreException, StreamsException } from '../errors.js'
import { deserializeSync, serializeSync, type KeyValue, type StateStore, type StateStoreContext, type StoreBuilder } from '../store.js'
import { SortedIndex, windowedChangelogConfig } from './window-store.js'
import { Window, Windowed } from './windows.js'
import { installSessionCache } from '../state/caching-windows.js'

/** Java's SessionKeySchema.toBinary: `[key][8-byte end][8-byte start]` (changelog keys and SessionWindowedSerializer). */
export function sessionKeyBinary(key: Buffer, start: number, end: number): Buffer {
  const out = Buffer.alloc(key.length + 16)
  key.copy(out, 0)
  out.writeBigInt64BE(BigInt(end), key.length)
  out.writeBigInt64BE(BigInt(start), key.length + 8)
  return out
}

/** Java's ReadOnlySessionStore + SessionStore; iterators are arrays (snapshots). */
export interface SessionStore<K, V> extends StateStore {
  readonly retentionPeriodMs: number
  /** Sessions of `key` ending at or after `earliestSessionEndTime` and starting at or before `latestSessionStartTime`. */
  findSessions(key: K, earliestSessionEndTime: number, latestSessionStartTime: number): KeyValue<Windowed<K>, V>[]
  findSessions(keyFrom: K | undefined, keyTo: K | undefined, earliestSessionEndTime: number, latestSessionStartTime: number): KeyValue<Windowed<K>, V>[]
  /** Every key's sessions ending in [earliestSessionEndTime, latestSessionEndTime] (KIP-825, what emit-on-close reads). */
  findSessions(earliestSessionEndTime: number, latestSessionEndTime: number): KeyValue<Windowed<K>, V>[]
  backwardFindSessions(key: K, earliestSessionEndTime: number, latestSessionStartTime: number): KeyValue<Windowed<K>, V>[]
  fetchSession(key: K, sessionStartTime: number, sessionEndTime: number): V | undefined
  fetch(key: K): KeyValue<Windowed<K>, V>[]
  backwardFetch(key: K): KeyValue<Windowed<K>, V>[]
  put(sessionKey: Windowed<K>, aggregate: V | null): void
  remove(sessionKey: Windowed<K>): void
}

/**
 * Java's InMemorySessionStore: sessions by end time, then key bytes, then start time. A session
 * ending at or before `observedStreamTime - retention` (the store's stream time is the largest
 * end put) is dropped and never read back.
 */
export class InMemorySessionStore<K, V> implements SessionStore<K, V> {
  readonly persistent = false
  private readonly byEnd = new SortedIndex<Map<string, SortedIndex<Buffer>>>()
  private observedStreamTime = -1
  private context: StateStoreContext | undefined
  private open = false
  expiredRecords = 0

  constructor(
    readonly name: string,
    readonly retentionPeriodMs: number,
    private readonly keySerde: Serde<K>,
    private readonly valueSerde: Serde<V>,
    private readonly logging: boolean,
    /**
     * The store of an emit-on-window-close aggregation (KIP-825; Java's time-ordered
     * RocksDBTimeOrderedSessionStore): its reads by key keep sessions ending at exactly
     * `observedStreamTime - retention`, and the scan by end time that emits closed sessions
     * does not clamp at all: sessions go a whole segment (max(retention / 2, 60 s) of end
     * times) at a time, so a session that closes as stream time jumps far ahead is still emitted.
     */
    readonly timeOrdered = false,
  ) {}

  /** The earliest session end reads by key return. */
  private readFloor(): number {
    return this.observedStreamTime - this.retentionPeriodMs + (this.timeOrdered ? 0 : 1)
  }

  /** The earliest session end still stored. */
  private minLive(): number {
    if (!this.timeOrdered) return this.readFloor()
    const interval = Math.max(Math.floor(this.retentionPeriodMs / 2), 60_000)
    const limit = this.observedStreamTime - this.retentionPeriodMs
    return limit < 0 ? limit : Math.floor(limit / interval) * interval
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

  put(sessionKey: Windowed<K>, aggregate: V | null): void {
    this.checkOpen()
    const k = this.k(sessionKey.key)
    const v = aggregate === null || aggregate === undefined ? null : serializeSync(this.valueSerde, aggregate, false)
    this.putBytes(k, sessionKey.window.start, sessionKey.window.end, v)
    if (this.logging && this.context) this.context.logChange(this.name, sessionKeyBinary(k, sessionKey.window.start, sessionKey.window.end), v, this.context.currentTimestamp())
  }

  remove(sessionKey: Windowed<K>): void {
    this.put(sessionKey, null)
  }

  restore(changelogKey: Buffer, value: Buffer | null): void {
    const n = changelogKey.length - 16
    if (n < 0) throw new StreamsException(`session store ${this.name}: changelog key of ${changelogKey.length} bytes is shorter than its two timestamps`)
    this.putBytes(changelogKey.subarray(0, n), Number(changelogKey.readBigInt64BE(n + 8)), Number(changelogKey.readBigInt64BE(n)), value)
  }

  findSessions(key: K, earliestSessionEndTime: number, latestSessionStartTime: number): KeyValue<Windowed<K>, V>[]
  findSessions(keyFrom: K | undefined, keyTo: K | undefined, earliestSessionEndTime: number, latestSessionStartTime: number): KeyValue<Windowed<K>, V>[]
  findSessions(earliestSessionEndTime: number, latestSessionEndTime: number): KeyValue<Windowed<K>, V>[]
  findSessions(...args: unknown[]): KeyValue<Windowed<K>, V>[] {
    this.checkOpen()
    if (args.length === 2) {
      const [e, l] = args as [number, number]
      return this.scan(undefined, undefined, Math.max(e, this.minLive()), Number.MAX_SAFE_INTEGER, l)
    }
    if (args.length === 3) {
      const [key, e, l] = args as [K, number, number]
      const k = this.k(key)
      return this.scan(k, k, Math.max(e, this.readFloor()), l)
    }
    const [kf, kt, e, l] = args as [K | undefined, K | undefined, number, number]
    return this.scan(kf === undefined ? undefined : this.k(kf), kt === undefined ? undefined : this.k(kt), Math.max(e, this.readFloor()), l)
  }

  backwardFindSessions(key: K, earliestSessionEndTime: number, latestSessionStartTime: number): KeyValue<Windowed<K>, V>[] {
    return this.findSessions(key, earliestSessionEndTime, latestSessionStartTime).reverse()
  }

  fetchSession(key: K, sessionStartTime: number, sessionEndTime: number): V | undefined {
    this.checkOpen()
    if (sessionEndTime < this.readFloor()) return undefined
    const b = this.byEnd.get(sessionEndTime)?.get(this.k(key).toString('latin1'))?.get(sessionStartTime)
    return b === undefined ? undefined : deserializeSync(this.valueSerde, b, false)
  }

  fetch(key: K): KeyValue<Windowed<K>, V>[] {
    return this.findSessions(key, 0, Number.MAX_SAFE_INTEGER)
  }

  backwardFetch(key: K): KeyValue<Windowed<K>, V>[] {
    return this.fetch(key).reverse()
  }

  private putBytes(key: Buffer, start: number, end: number, value: Buffer | null): void {
    this.observedStreamTime = Math.max(this.observedStreamTime, end)
    if (end < this.minLive()) {
      this.expiredRecords++
      return
    }
    const id = key.toString('latin1')
    let keys = this.byEnd.get(end)
    if (value === null) {
      const starts = keys?.get(id)
      if (starts === undefined) return
      starts.delete(start)
      if (starts.map.size === 0) keys!.delete(id)
      if (keys!.size === 0) this.byEnd.delete(end)
      return
    }
    if (keys === undefined) {
      keys = new Map()
      this.byEnd.set(end, keys)
    }
    let starts = keys.get(id)
    if (starts === undefined) {
      starts = new SortedIndex()
      keys.set(id, starts)
    }
    starts.set(start, value)
    this.byEnd.dropThrough(this.minLive() - 1)
  }

  private scan(from: Buffer | undefined, to: Buffer | undefined, earliestEnd: number, latestStart: number, latestEnd = Number.MAX_SAFE_INTEGER): KeyValue<Windowed<K>, V>[] {
    const lo = earliestEnd
    const fromId = from?.toString('latin1')
    const toId = to?.toString('latin1')
    const out: KeyValue<Windowed<K>, V>[] = []
    for (const end of this.byEnd.between(lo, latestEnd)) {
      const keys = this.byEnd.get(end)!
      const ids = fromId !== undefined && fromId === toId ? (keys.has(fromId) ? [fromId] : []) : [...keys.keys()].sort()
      for (const id of ids) {
        if (fromId !== undefined && id < fromId) continue
        if (toId !== undefined && id > toId) break
        const starts = keys.get(id)!
        for (const start of starts.keys()) {
          if (start > latestStart) break
          const key = deserializeSync(this.keySerde, Buffer.from(id, 'latin1'), true)
          out.push({ key: new Windowed(key, new Window(start, end)), value: deserializeSync(this.valueSerde, starts.get(start)!, false) })
        }
      }
    }
    return out
  }

  private checkOpen(): void {
    if (!this.open) throw new InvalidStateStoreException(`Store ${this.name} is currently closed.`)
  }

  private k(key: K): Buffer {
    if (key === null || key === undefined) throw new StreamsException(`Store ${this.name}: a key may not be null`)
    return serializeSync(this.keySerde, key, true)
  }
}

export interface SessionBytesStoreSupplier {
  readonly name: string
  readonly retentionPeriodMs: number
  readonly timeOrdered?: boolean
  /** Builds a store other than the in-memory one (Stores.persistentSessionStore's). */
  readonly build?: (keySerde: Serde<any>, valueSerde: Serde<any>, logging: boolean) => SessionStore<any, any> & { readonly expiredRecords: number }
}

export class SessionStoreBuilder<K, V> implements StoreBuilder<SessionStore<K, V>> {
  loggingEnabled = true
  /** Java's default for a store builder: off (the DSL turns it on unless Materialized disables it or emits on window close). */
  cachingEnabled = false
  private userLogConfig: Record<string, string> = {}

  constructor(private readonly supplier: SessionBytesStoreSupplier, private readonly keySerde: Serde<K>, private readonly valueSerde: Serde<V>) {}

  get name(): string {
    return this.supplier.name
  }

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

  /** Java's CachingSessionStore layer (statestore.cache.max.bytes). */
  withCachingEnabled(): this {
    this.cachingEnabled = true
    return this
  }

  withCachingDisabled(): this {
    this.cachingEnabled = false
    return this
  }

  build(): SessionStore<K, V> & { readonly expiredRecords: number } {
    const store = this.supplier.build
      ? this.supplier.build(this.keySerde, this.valueSerde, this.loggingEnabled)
      : new InMemorySessionStore(this.supplier.name, this.supplier.retentionPeriodMs, this.keySerde, this.valueSerde, this.loggingEnabled, this.supplier.timeOrdered === true)
    if (this.cachingEnabled) installSessionCache(store, this.keySerde, this.valueSerde)
    return store
  }
}

export const SessionStores = {
  inMemorySessionStore(name: string, retentionPeriodMs: number): SessionBytesStoreSupplier {
    if (!name) throw new TypeError('store name cannot be empty')
    if (!Number.isSafeInteger(retentionPeriodMs) || retentionPeriodMs < 0) throw new RangeError('retentionPeriod cannot be negative')
    return { name, retentionPeriodMs }
  },
  sessionStoreBuilder<K, V>(supplier: SessionBytesStoreSupplier, keySerde: Serde<K>, valueSerde: Serde<V>): SessionStoreBuilder<K, V> {
    return new SessionStoreBuilder(supplier, keySerde, valueSerde)
  },
}
