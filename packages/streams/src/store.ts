import type { Serde } from '@tidelog/client'
import { join } from 'node:path'
import { InvalidStateStoreException, StreamsException } from './errors.js'
import { CHECKPOINT_FILE, readCheckpoint } from './runtime/checkpoint.js'
import { LmdbEnv, LmdbKeyValueBytesStore } from './state/lmdb.js'
import type { CacheRecordContext, DirtyEntry, ThreadCache } from './state/cache.js'
import { PersistentSessionStore } from './state/persistent-session.js'
import { PersistentWindowStore } from './state/persistent-window.js'
import { isVersionedSupplier, persistentVersionedKeyValueStore, VersionedKeyValueStoreBuilder, type VersionedBytesStoreSupplier, type VersionedKeyValueStore } from './state/versioned.js'
import { InMemorySessionStore, SessionStores, type SessionBytesStoreSupplier } from './windows/session-store.js'
import { InMemoryWindowStore, WindowStores, type WindowBytesStoreSupplier } from './windows/window-store.js'

/** What a store sees of its task when it is initialised. */
export interface StateStoreContext {
  readonly applicationId: string
  readonly taskId: { toString(): string }
  /** Writes one change to the store's changelog (only called for stores with logging on). */
  logChange(storeName: string, key: Buffer, value: Buffer | null, timestamp: number): void
  /** The timestamp of the record being processed (changelog records carry it, as in Java). */
  currentTimestamp(): number
  /** The task's directory, `<state.dir>/<application.id>/<taskId>` (Java's StateStoreContext#stateDir); undefined in the test driver, where persistent stores use a temporary directory. */
  readonly stateDir?: string
  /** The stream thread's record cache (statestore.cache.max.bytes > 0), for stores with caching on. */
  readonly cache?: ThreadCache
  /** The record being processed, as a cached write remembers it. */
  recordContext?(): CacheRecordContext
  /** Counts a write the store refused in the task's dropped-records (a versioned store's expired puts, as Java's). */
  recordDropped?(): void
}

/** Told each update a cached store flushes or evicts (Java's CacheFlushListener), with the old value when asked for. */
export type FlushListener<K, V> = (key: K, newValue: V | null, oldValue: V | null, context: CacheRecordContext) => void

export interface StateStore {
  readonly name: string
  init(context: StateStoreContext): void
  flush(): void
  close(): void
  readonly persistent: boolean
  isOpen(): boolean
}

export interface KeyValue<K, V> {
  key: K
  value: V
}

/** Java's ReadOnlyKeyValueStore + KeyValueStore; iterators are arrays here (a snapshot, closed by design). */
export interface KeyValueStore<K, V> extends StateStore {
  get(key: K): V | undefined
  put(key: K, value: V | null): void
  putIfAbsent(key: K, value: V): V | undefined
  putAll(entries: readonly KeyValue<K, V | null>[]): void
  delete(key: K): V | undefined
  /** Keys from `from` to `to` inclusive, in serialized-key byte order (as Java's stores); undefined = open end. */
  range(from: K | undefined, to: K | undefined): KeyValue<K, V>[]
  reverseRange(from: K | undefined, to: K | undefined): KeyValue<K, V>[]
  all(): KeyValue<K, V>[]
  reverseAll(): KeyValue<K, V>[]
  approximateNumEntries(): number
}

/**
 * The bytes store under a typed store: a sorted map keyed by the serialized key, so range and
 * all follow Java's unsigned lexicographic byte order (Bytes.BYTES_LEXICO_COMPARATOR). Keys are
 * held as latin1 strings: comparing those code unit by code unit is exactly that order.
 */
export class InMemoryKeyValueBytesStore {
  private readonly map = new Map<string, Buffer>()
  private sorted: string[] | undefined = []

  get(key: Buffer): Buffer | undefined {
    return this.map.get(key.toString('latin1'))
  }

  put(key: Buffer, value: Buffer | null): Buffer | undefined {
    const k = key.toString('latin1')
    const old = this.map.get(k)
    if (value === null) {
      if (old !== undefined) {
        this.map.delete(k)
        this.sorted = undefined
      }
    } else {
      if (old === undefined) this.sorted = undefined
      this.map.set(k, value)
    }
    return old
  }

  range(from: Buffer | undefined, to: Buffer | undefined): [Buffer, Buffer][] {
    const keys = this.keys()
    const lo = from === undefined ? undefined : from.toString('latin1')
    const hi = to === undefined ? undefined : to.toString('latin1')
    if (lo !== undefined && hi !== undefined && lo > hi) return []
    const out: [Buffer, Buffer][] = []
    for (let i = lo === undefined ? 0 : lowerBound(keys, lo); i < keys.length; i++) {
      const k = keys[i]!
      if (hi !== undefined && k > hi) break
      out.push([Buffer.from(k, 'latin1'), this.map.get(k)!])
    }
    return out
  }

  size(): number {
    return this.map.size
  }

  clear(): void {
    this.map.clear()
    this.sorted = []
  }

  flush(): void {}

  private keys(): string[] {
    if (this.sorted === undefined) this.sorted = [...this.map.keys()].sort()
    return this.sorted
  }
}

/** The first index of a sorted array whose element is >= k. */
function lowerBound(sorted: readonly string[], k: string): number {
  let lo = 0
  let hi = sorted.length
  while (lo < hi) {
    const mid = (lo + hi) >>> 1
    if (sorted[mid]! < k) lo = mid + 1
    else hi = mid
  }
  return lo
}

/** Encodes store values: plain (KeyValueStore) or with the record timestamp in front (Java's timestamped stores). */
export interface ValueAndTimestamp<V> {
  value: V
  timestamp: number
}

const ctx = (isKey: boolean) => ({ topic: '', headers: [], isKey })

export function serializeSync<T>(serde: Serde<T>, value: T, isKey: boolean, topic = ''): Buffer {
  const out = serde.serialize(value, { ...ctx(isKey), topic })
  if (out instanceof Promise) throw new StreamsException('Kafka Streams serdes must be synchronous: this serializer returned a Promise')
  return Buffer.isBuffer(out) ? out : Buffer.from(out.buffer, out.byteOffset, out.byteLength)
}

export function deserializeSync<T>(serde: Serde<T>, data: Buffer, isKey: boolean, topic = ''): T {
  const out = serde.deserialize(data, { ...ctx(isKey), topic })
  if (out instanceof Promise) throw new StreamsException('Kafka Streams serdes must be synchronous: this deserializer returned a Promise')
  return out
}

/** Java's timestamped value format: 8-byte big-endian timestamp, then the value bytes. */
export function timestampedSerde<V>(inner: Serde<V>): Serde<ValueAndTimestamp<V>> {
  return {
    serialize: (v) => {
      const value = serializeSync(inner, v.value, false)
      const out = Buffer.alloc(8 + value.length)
      out.writeBigInt64BE(BigInt(v.timestamp))
      value.copy(out, 8)
      return out
    },
    deserialize: (b) => ({ timestamp: Number(b.readBigInt64BE(0)), value: deserializeSync(inner, b.subarray(8), false) }),
  }
}

/** What a typed key-value store keeps its bytes in (Java's KeyValueStore<Bytes, byte[]>). */
export interface KeyValueBytesStore {
  get(key: Buffer): Buffer | undefined
  put(key: Buffer, value: Buffer | null): void
  /** Inclusive, in unsigned byte order; undefined = open end. */
  range(from: Buffer | undefined, to: Buffer | undefined): [Buffer, Buffer][]
  size(): number
  clear(): void
  flush(): void
}

/**
 * A typed key-value store (Java's MeteredKeyValueStore, with the ChangeLoggingKeyValueBytesStore
 * layer when logging is on) over a bytes store: serdes at the edge, bytes inside, each write sent
 * to `<applicationId>-<name>-changelog`. The bytes store is opened at init, when the task's
 * directory is known.
 */
export abstract class MeteredKeyValueStore<K, V> implements KeyValueStore<K, V> {
  abstract readonly persistent: boolean
  private bytes: KeyValueBytesStore | undefined
  protected context: StateStoreContext | undefined
  private open = false
  /** Java's CachingKeyValueStore layer, when caching is on and the thread has a cache. */
  private cache: ThreadCache | undefined
  private namespace = ''
  private listener: { fn: FlushListener<K, V>; sendOldValues: () => boolean } | undefined

  constructor(
    readonly name: string,
    private readonly keySerde: Serde<K>,
    private readonly valueSerde: Serde<V>,
    readonly logging: boolean,
    /** Values are ValueAndTimestamp (Java's TimestampedKeyValueStore). */
    readonly timestamped = false,
    readonly caching = false,
  ) {}

  protected abstract openBytes(context: StateStoreContext): KeyValueBytesStore

  init(context: StateStoreContext): void {
    this.context = context
    this.bytes = this.openBytes(context)
    if (this.caching && context.cache !== undefined && context.cache.maxBytes > 0) {
      this.cache = context.cache
      this.namespace = `${context.taskId.toString()}-${this.name}`
      this.cache.register(this.namespace, (entries) => this.flushEntries(entries))
    }
    this.open = true
  }

  /**
   * Java's setFlushListener: with a cache, updates reach `fn` when they leave the cache (commit or
   * eviction) instead of being forwarded by the processor; returns whether that is so.
   */
  setFlushListener(fn: FlushListener<K, V>, sendOldValues: () => boolean): boolean {
    this.listener = { fn, sendOldValues }
    return this.cache !== undefined
  }

  isOpen(): boolean {
    return this.open
  }

  flush(): void {
    if (this.cache !== undefined) this.cache.flush(this.namespace)
    this.bytes?.flush()
  }

  close(): void {
    // A close without a flush first (dirty) drops what the cache held, as Java's.
    this.cache?.unregister(this.namespace)
    if (this.open) this.bytes?.flush()
    this.open = false
  }

  /** Applies a changelog record while restoring (no re-logging). */
  restore(key: Buffer, value: Buffer | null): void {
    this.checked().put(key, value)
  }

  /** Empties the store before a restore from the start (its local state is not trusted). */
  wipe(): void {
    this.checked().clear()
  }

  get(key: K): V | undefined {
    const v = this.getBytes(this.k(key))
    return v === undefined ? undefined : this.v(v)
  }

  /** Java's CachingKeyValueStore#getInternal: a miss read from the store is cached clean. */
  private getBytes(k: Buffer): Buffer | undefined {
    if (this.cache === undefined) return this.checked().get(k)
    const hit = this.cache.get(this.namespace, k)
    if (hit !== undefined) return hit.value ?? undefined
    const raw = this.checked().get(k)
    if (raw !== undefined) this.cache.put(this.namespace, k, raw, this.recordContext(), false)
    return raw
  }

  private recordContext(): CacheRecordContext {
    return this.context?.recordContext?.() ?? { timestamp: this.context?.currentTimestamp() ?? 0, offset: -1, partition: -1, topic: '', headers: [] }
  }

  /** Dirty entries leaving the cache: written to the store and changelog, then told to the listener (CachingKeyValueStore#putAndMaybeForward). */
  private flushEntries(entries: DirtyEntry[]): void {
    const bytes = this.checked()
    for (const e of entries) {
      const send = this.listener?.sendOldValues() ?? false
      const rawOld = e.value === null || send ? bytes.get(e.key) : undefined
      // Neither in the store nor cached before: nothing to write or forward.
      if (e.value === null && rawOld === undefined) continue
      bytes.put(e.key, e.value)
      if (this.logging && this.context) this.context.logChange(this.name, e.key, e.value, e.context.timestamp)
      this.listener?.fn(deserializeSync(this.keySerde, e.key, true), e.value === null ? null : this.v(e.value), send && rawOld !== undefined ? this.v(rawOld) : null, e.context)
    }
  }

  put(key: K, value: V | null): void {
    this.write(this.k(key), value === null || value === undefined ? null : serializeSync(this.valueSerde, value, false))
  }

  putIfAbsent(key: K, value: V): V | undefined {
    const old = this.get(key)
    if (old === undefined) this.put(key, value)
    return old
  }

  putAll(entries: readonly KeyValue<K, V | null>[]): void {
    for (const e of entries) this.put(e.key, e.value)
  }

  delete(key: K): V | undefined {
    const k = this.k(key)
    const old = this.getBytes(k)
    this.write(k, null)
    return old === undefined ? undefined : this.v(old)
  }

  range(from: K | undefined, to: K | undefined): KeyValue<K, V>[] {
    return this.rangeBytes(from === undefined ? undefined : this.k(from), to === undefined ? undefined : this.k(to)).map(([k, v]) => this.kv(k, v))
  }

  /** The store's range with the cache's entries over it (Java's MergedSortedCacheKeyValueBytesStoreIterator). */
  private rangeBytes(from: Buffer | undefined, to: Buffer | undefined): [Buffer, Buffer][] {
    const stored = this.checked().range(from, to)
    if (this.cache === undefined) return stored
    if (from !== undefined && to !== undefined && Buffer.compare(from, to) > 0) return []
    const merged = new Map<string, [Buffer, Buffer] | null>(stored.map((e) => [e[0].toString('latin1'), e]))
    for (const c of this.cache.range(this.namespace, from, to)) merged.set(c.key.toString('latin1'), c.value === null ? null : [c.key, c.value])
    return [...merged.entries()].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0)).flatMap(([, e]) => (e === null ? [] : [e]))
  }

  reverseRange(from: K | undefined, to: K | undefined): KeyValue<K, V>[] {
    return this.range(from, to).reverse()
  }

  /** Keys starting with the serialized prefix, in byte order (Java's prefixScan). */
  prefixScan<P>(prefix: P, prefixKeySerde: Serde<P>): KeyValue<K, V>[] {
    const p = serializeSync(prefixKeySerde, prefix, true)
    const out: KeyValue<K, V>[] = []
    for (const [k, v] of this.rangeBytes(p, undefined)) {
      if (k.length < p.length || k.compare(p, 0, p.length, 0, p.length) !== 0) break
      out.push(this.kv(k, v))
    }
    return out
  }

  all(): KeyValue<K, V>[] {
    return this.range(undefined, undefined)
  }

  reverseAll(): KeyValue<K, V>[] {
    return this.all().reverse()
  }

  approximateNumEntries(): number {
    return this.checked().size()
  }

  private write(key: Buffer, value: Buffer | null): void {
    if (this.cache !== undefined) {
      this.checked()
      this.cache.put(this.namespace, key, value, this.recordContext(), true)
      return
    }
    this.checked().put(key, value)
    if (this.logging && this.context) this.context.logChange(this.name, key, value, this.context.currentTimestamp())
  }

  private checked(): KeyValueBytesStore {
    if (!this.open) throw new InvalidStateStoreException(`Store ${this.name} is currently closed.`)
    return this.bytes!
  }

  private k(key: K): Buffer {
    if (key === null || key === undefined) throw new StreamsException(`Store ${this.name}: a key may not be null`)
    return serializeSync(this.keySerde, key, true)
  }

  private v(b: Buffer): V {
    return deserializeSync(this.valueSerde, b, false)
  }

  private kv(k: Buffer, v: Buffer): KeyValue<K, V> {
    return { key: deserializeSync(this.keySerde, k, true), value: this.v(v) }
  }
}

/** Java's InMemoryKeyValueStore under the metered and change-logging layers. */
export class InMemoryKeyValueStore<K, V> extends MeteredKeyValueStore<K, V> {
  readonly persistent = false
  private readonly memory = new InMemoryKeyValueBytesStore()

  protected openBytes(): KeyValueBytesStore {
    return this.memory
  }
}

/**
 * A persistent key-value store on LMDB (Java's RocksDBStore; RocksDB has no prebuilt Node
 * binding worth trusting, LMDB does): `<state.dir>/<application.id>/<taskId>/<name>/`. A logged
 * store the task's checkpoint does not cover is wiped before it opens, so it is restored from
 * the start of its changelog into an empty store (Java wipes such a store under exactly_once_v2;
 * doing it always also drops writes an at_least_once crash left behind the changelog).
 */
export class PersistentKeyValueStore<K, V> extends MeteredKeyValueStore<K, V> {
  readonly persistent = true
  private env: LmdbEnv | undefined

  protected openBytes(context: StateStoreContext): KeyValueBytesStore {
    this.env = openStoreEnv(this.name, this.logging, context)
    return new LmdbKeyValueBytesStore(this.env)
  }

  override close(): void {
    super.close()
    this.env?.close()
    this.env = undefined
  }
}

/** Opens a persistent store's LMDB environment in its task directory, wiped unless the checkpoint covers its changelog. */
export function openStoreEnv(name: string, logging: boolean, context: StateStoreContext, maxDbs?: number): LmdbEnv {
  const taskDir = context.stateDir
  if (taskDir === undefined) return new LmdbEnv(undefined, { wipe: false, ...(maxDbs ? { maxDbs } : {}) })
  const changelog = `${context.applicationId}-${name}-changelog`
  const partition = (context.taskId as { partition?: number }).partition
  const covered = readCheckpoint(join(taskDir, CHECKPOINT_FILE)).some((e) => e.topic === changelog && e.partition === partition)
  return new LmdbEnv(join(taskDir, name), { wipe: logging && !covered, ...(maxDbs ? { maxDbs } : {}) })
}

/** Builds one store per task (Java's StoreBuilder). */
export interface StoreBuilder<S extends StateStore = StateStore> {
  readonly name: string
  readonly loggingEnabled: boolean
  readonly logConfig: Readonly<Record<string, string>>
  withLoggingEnabled(config?: Record<string, string>): this
  withLoggingDisabled(): this
  /** Java's record cache switch (key-value stores so far). */
  withCachingEnabled?(): this
  withCachingDisabled?(): this
  build(): S
}

class KeyValueStoreBuilder<K, V> implements StoreBuilder<MeteredKeyValueStore<K, V>> {
  loggingEnabled = true
  logConfig: Record<string, string> = {}
  /** Off by default for Processor API stores, as Java's StoreBuilder (the DSL turns it on). */
  cachingEnabled = false

  constructor(
    private readonly supplier: KeyValueBytesStoreSupplier,
    private readonly keySerde: Serde<K>,
    private readonly valueSerde: Serde<V>,
    private readonly timestamped = false,
  ) {}

  get name(): string {
    return this.supplier.name
  }

  withLoggingEnabled(config: Record<string, string> = {}): this {
    this.loggingEnabled = true
    this.logConfig = { ...config }
    return this
  }

  withLoggingDisabled(): this {
    this.loggingEnabled = false
    this.logConfig = {}
    return this
  }

  withCachingEnabled(): this {
    this.cachingEnabled = true
    return this
  }

  withCachingDisabled(): this {
    this.cachingEnabled = false
    return this
  }

  build(): MeteredKeyValueStore<K, V> {
    const Store = this.supplier.kind === 'persistent' ? PersistentKeyValueStore : InMemoryKeyValueStore
    return new Store(this.name, this.keySerde, this.valueSerde, this.loggingEnabled, this.timestamped, this.cachingEnabled)
  }
}

/**
 * Names a key-value store and its engine (Java's KeyValueBytesStoreSupplier). A persistent
 * supplier's `timestamped` says what Java's would store; ours keeps the bytes its builder
 * gives (with the timestamp when built by timestampedKeyValueStoreBuilder) either way.
 */
export interface KeyValueBytesStoreSupplier {
  readonly name: string
  readonly kind: 'in-memory' | 'persistent' | 'versioned'
  readonly timestamped?: boolean
}

function supplierName(name: string): string {
  if (!name) throw new TypeError('store name cannot be empty')
  return name
}

/** Java's Stores factory for key-value stores (window and session stores: WindowStores, SessionStores). */
export const Stores = {
  inMemoryKeyValueStore(name: string): KeyValueBytesStoreSupplier {
    return { name: supplierName(name), kind: 'in-memory' }
  },
  persistentKeyValueStore(name: string): KeyValueBytesStoreSupplier {
    return { name: supplierName(name), kind: 'persistent', timestamped: false }
  },
  persistentTimestampedKeyValueStore(name: string): KeyValueBytesStoreSupplier {
    return { name: supplierName(name), kind: 'persistent', timestamped: true }
  },
  keyValueStoreBuilder<K, V>(supplier: KeyValueBytesStoreSupplier, keySerde: Serde<K>, valueSerde: Serde<V>): StoreBuilder<KeyValueStore<K, V>> {
    return new KeyValueStoreBuilder(supplier, keySerde, valueSerde)
  },
  timestampedKeyValueStoreBuilder<K, V>(supplier: KeyValueBytesStoreSupplier, keySerde: Serde<K>, valueSerde: Serde<V>): StoreBuilder<KeyValueStore<K, ValueAndTimestamp<V>>> {
    // A DSL table materialized with a versioned supplier gets a versioned store (Java's KeyValueStoreMaterializer).
    if (isVersionedSupplier(supplier)) return new VersionedKeyValueStoreBuilder(supplier, keySerde, valueSerde) as unknown as StoreBuilder<KeyValueStore<K, ValueAndTimestamp<V>>>
    return new KeyValueStoreBuilder(supplier, keySerde, timestampedSerde(valueSerde), true)
  },
  /** Java's Stores.persistentVersionedKeyValueStore (KIP-889; Kafka 4.4 has no in-memory one): for versionedKeyValueStoreBuilder or Materialized.as. */
  persistentVersionedKeyValueStore(name: string, historyRetentionMs: number, segmentIntervalMs?: number): VersionedBytesStoreSupplier {
    return persistentVersionedKeyValueStore(name, historyRetentionMs, segmentIntervalMs)
  },
  versionedKeyValueStoreBuilder<K, V>(supplier: VersionedBytesStoreSupplier, keySerde: Serde<K>, valueSerde: Serde<V>): StoreBuilder<VersionedKeyValueStore<K, V>> {
    return new VersionedKeyValueStoreBuilder(supplier, keySerde, valueSerde)
  },
  /** Java's Stores.persistentWindowStore: for WindowStores.windowStoreBuilder / timestampedWindowStoreBuilder (same checks as the in-memory one). */
  persistentWindowStore(name: string, retentionPeriodMs: number, windowSizeMs: number, retainDuplicates: boolean): WindowBytesStoreSupplier {
    const s = WindowStores.inMemoryWindowStore(name, retentionPeriodMs, windowSizeMs, retainDuplicates)
    return { ...s, build: (k, v, logging, timestamped) => new PersistentWindowStore(name, retentionPeriodMs, windowSizeMs, retainDuplicates, k, v, logging, timestamped) }
  },
  /** Java's Stores.persistentTimestampedWindowStore (the DSL's); values carry their timestamp when built by timestampedWindowStoreBuilder, as with persistentWindowStore. */
  persistentTimestampedWindowStore(name: string, retentionPeriodMs: number, windowSizeMs: number, retainDuplicates: boolean): WindowBytesStoreSupplier {
    return Stores.persistentWindowStore(name, retentionPeriodMs, windowSizeMs, retainDuplicates)
  },
  /** Java's Stores.persistentSessionStore: for SessionStores.sessionStoreBuilder. */
  persistentSessionStore(name: string, retentionPeriodMs: number): SessionBytesStoreSupplier {
    const s = SessionStores.inMemorySessionStore(name, retentionPeriodMs)
    return { ...s, build: (k, v, logging) => new PersistentSessionStore(name, retentionPeriodMs, k, v, logging) }
  },
}

type DslChoice = { storeSupplier?: unknown; storeType?: string } | undefined
export type DslDefaults = { readonly dslStore?: 'rocksDB' | 'in_memory' }

/** Persistent when Materialized says so, or (saying nothing) when the run's default.dsl.store is rocksDB: decided when a task builds the store. */
function persistentDsl(materialized: DslChoice, defaults: DslDefaults): () => boolean {
  const type = materialized?.storeType
  return () => (type === undefined ? defaults.dslStore === 'rocksDB' : type === 'persistent')
}

/** The supplier of a DSL key-value store: Materialized's own (Materialized.as(Stores.persistentKeyValueStore(...))), or the engine its store type or default.dsl.store names. */
export function dslKeyValueSupplier(name: string, materialized: DslChoice, defaults: DslDefaults): KeyValueBytesStoreSupplier {
  const given = materialized?.storeSupplier
  if (given !== undefined) {
    const kind = (given as Partial<KeyValueBytesStoreSupplier>).kind
    if (kind !== 'in-memory' && kind !== 'persistent' && !isVersionedSupplier(given)) throw new TypeError(`Materialized.as(${(given as { name: string }).name}): a key-value table needs a key-value store supplier (Stores.inMemoryKeyValueStore / persistentKeyValueStore / persistentVersionedKeyValueStore)`)
    return given as KeyValueBytesStoreSupplier
  }
  const persistent = persistentDsl(materialized, defaults)
  return { name: supplierName(name), get kind() { return persistent() ? 'persistent' as const : 'in-memory' as const } }
}

/** The supplier of a DSL window store, as dslKeyValueSupplier. */
/** `timeOrdered`: an emit-on-window-close store (KIP-825), in memory only. */
export function dslWindowSupplier(materialized: DslChoice, name: string, retentionPeriodMs: number, windowSizeMs: number, defaults: DslDefaults, timeOrdered = false): WindowBytesStoreSupplier {
  const given = materialized?.storeSupplier as Partial<WindowBytesStoreSupplier> | undefined
  if (given !== undefined) {
    if (given.windowSizeMs === undefined) throw new TypeError(`Materialized.as(${given.name}): a windowed aggregation needs a window store supplier (WindowStores.inMemoryWindowStore / Stores.persistentWindowStore)`)
    return given as WindowBytesStoreSupplier
  }
  const persistent = persistentDsl(materialized, defaults)
  const s = WindowStores.inMemoryWindowStore(name, retentionPeriodMs, windowSizeMs, false)
  return {
    ...s,
    build: (k, v, logging, timestamped) => (persistent()
      ? new PersistentWindowStore(name, retentionPeriodMs, windowSizeMs, false, k, v, logging, timestamped)
      : new InMemoryWindowStore(name, retentionPeriodMs, windowSizeMs, false, k, v, logging, timestamped, timeOrdered)),
  }
}

/** The supplier of a DSL session store, as dslKeyValueSupplier. */
export function dslSessionSupplier(materialized: DslChoice, name: string, retentionPeriodMs: number, defaults: DslDefaults, timeOrdered = false): SessionBytesStoreSupplier {
  const given = materialized?.storeSupplier as Partial<SessionBytesStoreSupplier & WindowBytesStoreSupplier> | undefined
  if (given !== undefined) {
    if (given.retentionPeriodMs === undefined || given.windowSizeMs !== undefined) throw new TypeError(`Materialized.as(${given.name}): a session aggregation needs a session store supplier (SessionStores.inMemorySessionStore / Stores.persistentSessionStore)`)
    return given as SessionBytesStoreSupplier
  }
  const persistent = persistentDsl(materialized, defaults)
  return {
    ...SessionStores.inMemorySessionStore(name, retentionPeriodMs),
    build: (k, v, logging) => (persistent() ? new PersistentSessionStore(name, retentionPeriodMs, k, v, logging) : new InMemorySessionStore(name, retentionPeriodMs, k, v, logging, timeOrdered)),
  }
}
