import type { Serde } from '@tidelog/client'
import { InvalidStateStoreException, StreamsException } from '../errors.js'
import { deserializeSync, InMemoryKeyValueBytesStore, openStoreEnv, serializeSync, type KeyValueBytesStore, type StateStore, type StateStoreContext, type StoreBuilder, type ValueAndTimestamp } from '../store.js'
import { LmdbKeyValueBytesStore, type LmdbEnv } from './lmdb.js'

/** Java's VersionedKeyValueStore.PUT_RETURN_CODE_VALID_TO_UNDEFINED: the put record is the latest version of its key. */
export const PUT_RETURN_CODE_VALID_TO_UNDEFINED = -1
/** Java's VersionedKeyValueStore.PUT_RETURN_CODE_NOT_PUT (Long.MIN_VALUE, exact as a double): older than the history retention. */
export const PUT_RETURN_CODE_NOT_PUT = -(2 ** 63)

/** Kafka Streams' VERSIONED_STORE_CHANGE_LOG_ADDITIONAL_COMPACTION_LAG_MS: a day on top of the history retention. */
const ADDITIONAL_COMPACTION_LAG_MS = 86_400_000

/** One version of a key (Java's VersionedRecord): valid from `timestamp`; `validTo` (exclusive) is left unset by get(), as in Kafka 4.4. */
export interface VersionedRecord<V> {
  readonly value: V
  readonly timestamp: number
  readonly validTo?: number
}

/**
 * Java's VersionedKeyValueStore (KIP-889): every write carries a timestamp, reads can ask for the
 * value as of a time. Versions older than `historyRetentionMs` behind the largest timestamp seen
 * are no longer accepted nor returned (only a key's latest version never expires).
 */
export interface VersionedKeyValueStore<K, V> extends StateStore {
  readonly versioned: true
  readonly historyRetentionMs: number
  /** Returns -1 when the record is now the key's latest version, its validTo when it went into history, PUT_RETURN_CODE_NOT_PUT when too old. A null value is a tombstone. */
  put(key: K, value: V | null, timestamp: number): number
  /** A tombstone at `timestamp`; returns the version that was valid at that time (null if none, or too old). */
  delete(key: K, timestamp: number): VersionedRecord<V> | null
  /** The latest version, or the one valid at `asOfTimestamp`. */
  get(key: K, asOfTimestamp?: number): VersionedRecord<V> | null
}

/** Names a versioned store and its history (Java's VersionedBytesStoreSupplier; only RocksDB in Java, LMDB here). */
export interface VersionedBytesStoreSupplier {
  readonly name: string
  readonly kind: 'versioned'
  readonly historyRetentionMs: number
  readonly segmentIntervalMs: number
}

/** Java's Stores.defaultSegmentInterval for versioned stores: a few segments per history retention. */
function defaultSegmentInterval(historyRetentionMs: number): number {
  if (historyRetentionMs <= 60_000) return Math.max(Math.floor(historyRetentionMs / 3), 2_000)
  if (historyRetentionMs <= 300_000) return Math.max(Math.floor(historyRetentionMs / 5), 20_000)
  if (historyRetentionMs <= 3_600_000) return Math.max(Math.floor(historyRetentionMs / 12), 60_000)
  return Math.max(Math.floor(historyRetentionMs / 24), 300_000)
}

/** Java's Stores.persistentVersionedKeyValueStore (with its checks and messages). */
export function persistentVersionedKeyValueStore(name: string, historyRetentionMs: number, segmentIntervalMs?: number): VersionedBytesStoreSupplier {
  if (!name) throw new TypeError('name cannot be null')
  if (!Number.isFinite(historyRetentionMs) || historyRetentionMs < 0) throw new RangeError('historyRetention cannot be negative')
  if (segmentIntervalMs !== undefined && !(segmentIntervalMs >= 1)) throw new RangeError('segmentInterval cannot be zero or negative')
  return { name, kind: 'versioned', historyRetentionMs, segmentIntervalMs: segmentIntervalMs ?? defaultSegmentInterval(historyRetentionMs) }
}

export function isVersionedSupplier(s: unknown): s is VersionedBytesStoreSupplier {
  return (s as Partial<VersionedBytesStoreSupplier> | undefined)?.kind === 'versioned'
}

export function isVersionedStore<K, V>(s: unknown): s is VersionedKeyValueStore<K, V> {
  return (s as Partial<VersionedKeyValueStore<K, V>> | undefined)?.versioned === true
}

/** One version as stored: the value bytes, or null for a tombstone. */
interface Version {
  ts: number
  value: Buffer | null
}

/** A key's versions, oldest first: `[8-byte timestamp][4-byte length, -1 for a tombstone][bytes]` each. */
function encode(versions: readonly Version[]): Buffer {
  const parts: Buffer[] = []
  for (const v of versions) {
    const head = Buffer.alloc(12)
    head.writeBigInt64BE(BigInt(v.ts))
    head.writeInt32BE(v.value === null ? -1 : v.value.length, 8)
    parts.push(head)
    if (v.value !== null) parts.push(v.value)
  }
  return Buffer.concat(parts)
}

function decode(b: Buffer | undefined): Version[] {
  const out: Version[] = []
  if (b === undefined) return out
  let at = 0
  while (at < b.length) {
    const ts = Number(b.readBigInt64BE(at))
    const len = b.readInt32BE(at + 8)
    at += 12
    out.push({ ts, value: len < 0 ? null : Buffer.from(b.subarray(at, at + len)) })
    if (len > 0) at += len
  }
  return out
}

/**
 * A versioned key-value store (Java's MeteredVersionedKeyValueStore over
 * ChangeLoggingVersionedKeyValueBytesStore and RocksDBVersionedStore). Each key's versions are one
 * entry, pruned to what history retention can still answer. Each put is logged with its value and
 * the version's timestamp as the changelog record's timestamp, which restore replays (so the
 * changelog topic is compacted with min.compaction.lag.ms = history retention + 1 day).
 */
export class PersistentVersionedKeyValueStore<K, V> implements VersionedKeyValueStore<K, V> {
  readonly versioned = true as const
  readonly persistent = true
  private bytes: KeyValueBytesStore | undefined
  private env: LmdbEnv | undefined
  private context: StateStoreContext | undefined
  private open = false
  /** Java's observedStreamTime: the largest timestamp put (or restored). */
  private observedStreamTime = -1
  private lastPrune = -1

  constructor(
    readonly name: string,
    readonly historyRetentionMs: number,
    private readonly segmentIntervalMs: number,
    private readonly keySerde: Serde<K>,
    private readonly valueSerde: Serde<V>,
    readonly logging: boolean,
    /** Test seam: the same store over memory (Kafka 4.4 has no in-memory versioned store). */
    private readonly inMemory = false,
  ) {}

  init(context: StateStoreContext): void {
    this.context = context
    if (this.inMemory) this.bytes = new InMemoryKeyValueBytesStore()
    else {
      this.env = openStoreEnv(this.name, this.logging, context)
      this.bytes = new LmdbKeyValueBytesStore(this.env)
    }
    // A reopened store finds its stream time again: the largest version timestamp is some key's latest, never pruned.
    for (const [, v] of this.bytes.range(undefined, undefined)) for (const x of decode(v)) this.observedStreamTime = Math.max(this.observedStreamTime, x.ts)
    this.lastPrune = this.observedStreamTime
    this.open = true
  }

  isOpen(): boolean {
    return this.open
  }

  flush(): void {
    // Java drops whole segments past retention; here each segment interval of stream time prunes every key once.
    if (this.bytes !== undefined && this.observedStreamTime - this.lastPrune >= this.segmentIntervalMs) {
      this.lastPrune = this.observedStreamTime
      for (const [k, v] of this.bytes.range(undefined, undefined)) {
        const before = decode(v)
        const after = this.prune(before)
        if (after.length !== before.length) this.bytes.put(k, after.length === 0 ? null : encode(after))
      }
    }
    this.bytes?.flush()
  }

  close(): void {
    if (this.open) this.bytes?.flush()
    this.open = false
    this.env?.close()
    this.env = undefined
  }

  put(key: K, value: V | null, timestamp: number): number {
    const k = this.k(key)
    const v = value === null || value === undefined ? null : serializeSync(this.valueSerde, value, false)
    const code = this.putBytes(k, v, timestamp)
    if (code === PUT_RETURN_CODE_NOT_PUT) this.context?.recordDropped?.()
    if (this.logging && this.context) this.context.logChange(this.name, k, v, timestamp)
    return code
  }

  delete(key: K, timestamp: number): VersionedRecord<V> | null {
    if (timestamp < this.observedStreamTime - this.historyRetentionMs) {
      this.context?.recordDropped?.()
      return null
    }
    const existing = this.get(key, timestamp)
    this.put(key, null, timestamp)
    return existing
  }

  get(key: K, asOfTimestamp?: number): VersionedRecord<V> | null {
    const versions = decode(this.checked().get(this.k(key)))
    const latest = versions[versions.length - 1]
    if (asOfTimestamp === undefined) return latest === undefined || latest.value === null ? null : this.record(latest)
    if (asOfTimestamp < this.observedStreamTime - this.historyRetentionMs) {
      // Past history retention only the latest version may still answer (it never expires), as Java.
      return latest !== undefined && latest.value !== null && latest.ts <= asOfTimestamp ? this.record(latest) : null
    }
    for (let i = versions.length - 1; i >= 0; i--) {
      const x = versions[i]!
      if (x.ts > asOfTimestamp) continue
      return x.value === null ? null : this.record(x)
    }
    return null
  }

  /** Applies a changelog record while restoring: the record's timestamp is the version's. */
  restore(key: Buffer, value: Buffer | null, timestamp = 0): void {
    this.putBytes(key, value, timestamp)
  }

  wipe(): void {
    this.checked().clear()
    this.observedStreamTime = -1
    this.lastPrune = -1
  }

  private putBytes(k: Buffer, v: Buffer | null, timestamp: number): number {
    const bytes = this.checked()
    if (timestamp < this.observedStreamTime - this.historyRetentionMs) return PUT_RETURN_CODE_NOT_PUT
    this.observedStreamTime = Math.max(this.observedStreamTime, timestamp)
    const versions = decode(bytes.get(k))
    let i = versions.length
    while (i > 0 && versions[i - 1]!.ts > timestamp) i--
    if (i > 0 && versions[i - 1]!.ts === timestamp) versions[i - 1] = { ts: timestamp, value: v }
    else versions.splice(i, 0, { ts: timestamp, value: v })
    const next = versions.find((x) => x.ts > timestamp)
    const kept = this.prune(versions)
    bytes.put(k, kept.length === 0 ? null : encode(kept))
    return next === undefined ? PUT_RETURN_CODE_VALID_TO_UNDEFINED : next.ts
  }

  /** Drops the versions no read can reach: valid only before `observedStreamTime - historyRetention`, and a lone expired tombstone. */
  private prune(versions: Version[]): Version[] {
    const horizon = this.observedStreamTime - this.historyRetentionMs
    let first = 0
    while (first < versions.length - 1 && versions[first + 1]!.ts <= horizon) first++
    const kept = first === 0 ? versions : versions.slice(first)
    if (kept.length === 1 && kept[0]!.value === null && kept[0]!.ts <= horizon) return []
    return kept
  }

  /** As Kafka 4.4's get(key) and get(key, asOf): value and timestamp, no validTo (only its interactive multi-version queries fill that in). */
  private record(x: Version): VersionedRecord<V> {
    return { value: deserializeSync(this.valueSerde, x.value!, false), timestamp: x.ts }
  }

  private checked(): KeyValueBytesStore {
    if (!this.open) throw new InvalidStateStoreException(`Store ${this.name} is currently closed.`)
    return this.bytes!
  }

  private k(key: K): Buffer {
    if (key === null || key === undefined) throw new StreamsException(`Store ${this.name}: a key may not be null`)
    return serializeSync(this.keySerde, key, true)
  }
}

/** Java's VersionedKeyValueStoreBuilder: logging on by default; caching does not apply to versioned stores (a no-op, as Java). */
export class VersionedKeyValueStoreBuilder<K, V> implements StoreBuilder<VersionedKeyValueStore<K, V>> {
  loggingEnabled = true
  private userLogConfig: Record<string, string> = {}

  constructor(
    readonly supplier: VersionedBytesStoreSupplier,
    private readonly keySerde: Serde<K>,
    private readonly valueSerde: Serde<V>,
    private readonly inMemory = false,
  ) {}

  get name(): string {
    return this.supplier.name
  }

  get historyRetentionMs(): number {
    return this.supplier.historyRetentionMs
  }

  /** Java's VersionedChangelogTopicConfig: compacted, min.compaction.lag.ms = history retention + 1 day unless the user sets it. */
  get logConfig(): Readonly<Record<string, string>> {
    if (!this.loggingEnabled) return {}
    return { 'cleanup.policy': 'compact', 'min.compaction.lag.ms': String(this.supplier.historyRetentionMs + ADDITIONAL_COMPACTION_LAG_MS), ...this.userLogConfig }
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

  withCachingEnabled(): this {
    return this
  }

  withCachingDisabled(): this {
    return this
  }

  build(): PersistentVersionedKeyValueStore<K, V> {
    const s = this.supplier
    return new PersistentVersionedKeyValueStore(s.name, s.historyRetentionMs, s.segmentIntervalMs, this.keySerde, this.valueSerde, this.loggingEnabled, this.inMemory)
  }
}

/** Java's KeyValueStoreWrapper's put code for a timestamped store: every write is the latest. */
export const PUT_RETURN_CODE_IS_LATEST = PUT_RETURN_CODE_VALID_TO_UNDEFINED

/**
 * What a KTable processor sees of its store (Java's KeyValueStoreWrapper): a timestamped store or
 * a versioned one, behind one get / put whose return code says whether the write is the latest.
 */
export interface TableStore<K, V> {
  readonly versioned: boolean
  get(key: K): ValueAndTimestamp<V> | undefined
  /** Versioned stores only: the value as of a time. */
  getAsOf(key: K, timestamp: number): ValueAndTimestamp<V> | undefined
  put(key: K, value: V | null, timestamp: number): number
}

type TimestampedKv<K, V> = { get(key: K): ValueAndTimestamp<V> | undefined; put(key: K, value: ValueAndTimestamp<V> | null): void }

export function tableStore<K, V>(store: unknown): TableStore<K, V> {
  if (isVersionedStore<K, V>(store)) {
    const asVt = (r: VersionedRecord<V> | null) => (r === null ? undefined : { value: r.value, timestamp: r.timestamp })
    return {
      versioned: true,
      get: (key) => asVt(store.get(key)),
      getAsOf: (key, ts) => asVt(store.get(key, ts)),
      put: (key, value, ts) => store.put(key, value, ts),
    }
  }
  const kv = store as TimestampedKv<K, V>
  return {
    versioned: false,
    get: (key) => kv.get(key),
    getAsOf: () => {
      throw new StreamsException('get(key, timestamp) is only supported for versioned stores')
    },
    put: (key, value, ts) => {
      kv.put(key, value === null ? null : { value, timestamp: ts })
      return PUT_RETURN_CODE_IS_LATEST
    },
  }
}
