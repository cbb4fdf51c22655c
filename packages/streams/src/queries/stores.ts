import { InvalidStateStoreException, StreamsException } from '../errors.js'
import { MeteredKeyValueStore, type KeyValue, type KeyValueStore, type StateStore, type ValueAndTimestamp } from '../store.js'
import type { KafkaStreamsState } from '../runtime/state.js'
import { InMemorySessionStore, type SessionStore } from '../windows/session-store.js'
import { InMemoryWindowStore, type WindowStore } from '../windows/window-store.js'
import type { Windowed } from '../windows/windows.js'
import { PersistentSessionStore } from '../state/persistent-session.js'
import { PersistentWindowStore } from '../state/persistent-window.js'

/** Java's StreamsNotStartedException: a query before start(). */
export class StreamsNotStartedException extends InvalidStateStoreException {
  constructor(message: string) {
    super(message)
    this.name = 'StreamsNotStartedException'
  }
}

/** Java's UnknownStateStoreException: the topology has no store of that name. */
export class UnknownStateStoreException extends InvalidStateStoreException {
  constructor(message: string) {
    super(message)
    this.name = 'UnknownStateStoreException'
  }
}

/** Java's ReadOnlyKeyValueStore: what interactive queries may do with a key-value store. */
export type ReadOnlyKeyValueStore<K, V> = Pick<KeyValueStore<K, V>, 'get' | 'range' | 'reverseRange' | 'all' | 'reverseAll' | 'approximateNumEntries'>

/** Java's ReadOnlyWindowStore: what interactive queries may do with a window store. */
export type ReadOnlyWindowStore<K, V> = Pick<WindowStore<K, V>, 'fetch' | 'backwardFetch' | 'fetchAll' | 'backwardFetchAll' | 'all' | 'backwardAll'>

/** Java's ReadOnlySessionStore: what interactive queries may do with a session store. */
export interface ReadOnlySessionStore<K, V> {
  /** Every session of `key`. */
  fetch(key: K): KeyValue<Windowed<K>, V>[]
  /** Every session of the keys in [keyFrom, keyTo]. */
  fetch(keyFrom: K, keyTo: K): KeyValue<Windowed<K>, V>[]
  backwardFetch(key: K): KeyValue<Windowed<K>, V>[]
  findSessions(key: K, earliestSessionEndTime: number, latestSessionStartTime: number): KeyValue<Windowed<K>, V>[]
  backwardFindSessions(key: K, earliestSessionEndTime: number, latestSessionStartTime: number): KeyValue<Windowed<K>, V>[]
  fetchSession(key: K, sessionStartTime: number, sessionEndTime: number): V | undefined
}

/** Java's QueryableStoreType: which view of a store a query gets. */
export interface QueryableStoreType<T> {
  readonly kind: 'keyValue' | 'timestampedKeyValue' | 'window' | 'timestampedWindow' | 'session'
  /** @internal */
  readonly _view?: T
}

/** Java's QueryableStoreTypes. keyValueStore() on a DSL (timestamped) store gives the plain values, as Java's facade does. */
export const QueryableStoreTypes = {
  keyValueStore<K, V>(): QueryableStoreType<ReadOnlyKeyValueStore<K, V>> {
    return { kind: 'keyValue' }
  },
  timestampedKeyValueStore<K, V>(): QueryableStoreType<ReadOnlyKeyValueStore<K, ValueAndTimestamp<V>>> {
    return { kind: 'timestampedKeyValue' }
  },
  /** On a DSL (timestamped) window store: the plain values, as Java's ReadOnlyWindowStoreFacade. */
  windowStore<K, V>(): QueryableStoreType<ReadOnlyWindowStore<K, V>> {
    return { kind: 'window' }
  },
  timestampedWindowStore<K, V>(): QueryableStoreType<ReadOnlyWindowStore<K, ValueAndTimestamp<V>>> {
    return { kind: 'timestampedWindow' }
  },
  sessionStore<K, V>(): QueryableStoreType<ReadOnlySessionStore<K, V>> {
    return { kind: 'session' }
  },
}

/** Java's StoreQueryParameters: the store, its type, optionally one partition and whether stale (restoring / rebalancing) stores may answer. */
export class StoreQueryParameters<T> {
  private constructor(
    readonly storeName: string,
    readonly queryableStoreType: QueryableStoreType<T>,
    readonly partition: number | undefined,
    readonly staleStoresEnabled: boolean,
  ) {}
  static fromNameAndType<T>(storeName: string, type: QueryableStoreType<T>): StoreQueryParameters<T> {
    return new StoreQueryParameters(storeName, type, undefined, false)
  }
  withPartition(partition: number): StoreQueryParameters<T> {
    return new StoreQueryParameters(this.storeName, this.queryableStoreType, partition, this.staleStoresEnabled)
  }
  enableStaleStores(): StoreQueryParameters<T> {
    return new StoreQueryParameters(this.storeName, this.queryableStoreType, this.partition, true)
  }
}

/** What a KafkaStreams instance shows the query layer: its state and, per store name, the local instances by partition. */
export interface LocalStores {
  readonly state: KafkaStreamsState
  knowsStore(name: string): boolean
  /** With `stale`, standby tasks' copies too (enableStaleStores). */
  storesNamed(name: string, stale: boolean): { partition: number; store: StateStore }[]
}

function checkState(local: LocalStores, name: string, stale: boolean): void {
  const s = local.state
  if (s === 'CREATED') throw new StreamsNotStartedException('KafkaStreams has not been started, you can retry after calling start()')
  if (s === 'RUNNING' || (stale && s === 'REBALANCING')) return
  throw new InvalidStateStoreException(`Cannot get state store ${name} because the stream thread is ${s}, not RUNNING`)
}

/**
 * Java's KafkaStreams#store: a read-only view over this instance's stores of that name (one per
 * local task, as CompositeReadOnlyKeyValueStore). Each call looks them up again, so a query
 * after a rebalance or during restoration fails with InvalidStateStoreException instead of
 * answering from a store this instance no longer (or not yet) holds.
 */
export function queryStore<T>(local: LocalStores, params: StoreQueryParameters<T>): T {
  const name = params.storeName
  checkState(local, name, params.staleStoresEnabled)
  if (!local.knowsStore(name)) throw new UnknownStateStoreException(`Cannot get state store ${name} because no such store is registered in the topology.`)
  const kind = params.queryableStoreType.kind
  const stores = <S extends StateStore>(accepts: (s: StateStore) => s is S): S[] => {
    checkState(local, name, params.staleStoresEnabled)
    const found = local.storesNamed(name, params.staleStoresEnabled).filter((s) => params.partition === undefined || s.partition === params.partition)
    if (found.length === 0) {
      const where = params.partition === undefined ? '' : ` for partition ${params.partition}`
      throw new InvalidStateStoreException(`The state store, ${name}, may have migrated to another instance${where}.`)
    }
    return found.map(({ store }) => {
      if (!accepts(store)) throw new InvalidStateStoreException(`Cannot get state store ${name} because the queryable store type [${TYPE_NAMES[kind]}] does not accept the actual store type [${storeTypeName(store)}].`)
      if (!store.isOpen()) throw new InvalidStateStoreException(`State store ${name} is closed, it may have migrated to another instance.`)
      return store
    })
  }
  if (kind === 'window' || kind === 'timestampedWindow') return windowView(() => stores(windowAccepts(kind === 'timestampedWindow')), kind === 'timestampedWindow') as T
  if (kind === 'session') return sessionView(() => stores((s): s is AnySession => s instanceof InMemorySessionStore || s instanceof PersistentSessionStore)) as T
  return keyValueView(() => stores(kvAccepts(kind === 'timestampedKeyValue')), kind === 'timestampedKeyValue') as T
}

/** Java's QueryableStoreTypes names, as its "does not accept the actual store type" message prints them. */
const TYPE_NAMES = { keyValue: 'keyValueStore', timestampedKeyValue: 'timestampedKeyValueStore', window: 'windowStore', timestampedWindow: 'timestampedWindowStore', session: 'sessionStore' } as const

function storeTypeName(s: StateStore): string {
  if (s instanceof MeteredKeyValueStore) return s.timestamped ? 'timestampedKeyValueStore' : 'keyValueStore'
  if (s instanceof InMemoryWindowStore || s instanceof PersistentWindowStore) return s.timestamped ? 'timestampedWindowStore' : 'windowStore'
  if (s instanceof InMemorySessionStore || s instanceof PersistentSessionStore) return 'sessionStore'
  return s.constructor.name
}

type AnyKv = MeteredKeyValueStore<unknown, unknown>
type AnyWindow = InMemoryWindowStore<unknown, unknown> | PersistentWindowStore<unknown, unknown>

const kvAccepts = (timestamped: boolean) => (s: StateStore): s is AnyKv => s instanceof MeteredKeyValueStore && (!timestamped || s.timestamped)
const windowAccepts = (timestamped: boolean) => (s: StateStore): s is AnyWindow => (s instanceof InMemoryWindowStore || s instanceof PersistentWindowStore) && (!timestamped || s.timestamped)

/** The plain-values view of a timestamped store (Java's *StoreFacade); the store's own values otherwise. */
function plain(timestampedStore: boolean, timestampedView: boolean): (v: unknown) => unknown {
  return timestampedStore && !timestampedView ? (v) => (v as ValueAndTimestamp<unknown>).value : (v) => v
}

function keyValueView(stores: () => AnyKv[], timestampedView: boolean): ReadOnlyKeyValueStore<unknown, unknown> {
  const view = (s: AnyKv, v: unknown) => plain(s.timestamped, timestampedView)(v)
  const many = (pick: (s: AnyKv) => KeyValue<unknown, unknown>[]) =>
    stores().flatMap((s) => pick(s).map((kv) => ({ key: kv.key, value: view(s, kv.value) })))
  return {
    get: (key) => {
      if (key === null || key === undefined) throw new StreamsException('key cannot be null')
      for (const s of stores()) {
        const v = s.get(key)
        if (v !== undefined) return view(s, v)
      }
      return undefined
    },
    range: (from, to) => many((s) => s.range(from, to)),
    reverseRange: (from, to) => many((s) => s.reverseRange(from, to)),
    all: () => many((s) => s.all()),
    reverseAll: () => many((s) => s.reverseAll()),
    approximateNumEntries: () => Math.min(Number.MAX_SAFE_INTEGER, stores().reduce((n, s) => n + s.approximateNumEntries(), 0)),
  }
}

function checkKey(key: unknown, what = 'key'): void {
  if (key === null || key === undefined) throw new StreamsException(`${what} cannot be null`)
}

/**
 * Answers from this instance's stores of the name, as Java's composite stores: a query about one
 * key takes the first store with an answer (a key lives in one partition); ranges and scans
 * concatenate every store's answer.
 */
function gather<S, T>(stores: S[], firstOnly: boolean, pick: (s: S) => T[]): T[] {
  if (!firstOnly) return stores.flatMap(pick)
  for (const s of stores) {
    const out = pick(s)
    if (out.length > 0) return out
  }
  return []
}

/** Java's CompositeReadOnlyWindowStore (with ReadOnlyWindowStoreFacade for windowStore() over a DSL store). */
function windowView(stores: () => AnyWindow[], timestampedView: boolean): ReadOnlyWindowStore<unknown, unknown> {
  const values = <T>(s: AnyWindow, kvs: KeyValue<T, unknown>[]) => {
    const v = plain(s.timestamped, timestampedView)
    return kvs.map((kv) => ({ key: kv.key, value: v(kv.value) }))
  }
  const ranged = (method: 'fetch' | 'backwardFetch') => (...args: unknown[]): any => {
    checkKey(args[0], args.length === 4 ? 'keyFrom' : 'key')
    if (args.length === 4) checkKey(args[1], 'keyTo')
    if (method === 'fetch' && args.length === 2) {
      for (const s of stores()) {
        const v = s.fetch(args[0], args[1] as number)
        if (v !== undefined) return plain(s.timestamped, timestampedView)(v)
      }
      return undefined
    }
    return gather(stores(), args.length === 3, (s) => values(s, (s[method] as (...a: unknown[]) => KeyValue<unknown, unknown>[])(...args)))
  }
  const scan = (pick: (s: AnyWindow) => KeyValue<Windowed<unknown>, unknown>[]) => gather(stores(), false, (s) => values(s, pick(s)))
  return {
    fetch: ranged('fetch'),
    backwardFetch: ranged('backwardFetch'),
    fetchAll: (from, to) => scan((s) => s.fetchAll(from, to)),
    backwardFetchAll: (from, to) => scan((s) => s.backwardFetchAll(from, to)),
    all: () => scan((s) => s.all()),
    backwardAll: () => scan((s) => s.backwardAll()),
  }
}

type AnySession = InMemorySessionStore<unknown, unknown> | PersistentSessionStore<unknown, unknown>

/** Java's CompositeReadOnlySessionStore. */
function sessionView(stores: () => AnySession[]): ReadOnlySessionStore<unknown, unknown> {
  const one = (key: unknown, pick: (s: SessionStore<unknown, unknown>) => KeyValue<Windowed<unknown>, unknown>[]) => {
    checkKey(key)
    return gather(stores(), true, pick)
  }
  return {
    fetch: ((...args: unknown[]) => {
      const [from, to] = args
      if (args.length === 1) return one(from, (s) => s.fetch(from))
      checkKey(from, 'keyFrom')
      checkKey(to, 'keyTo')
      return gather(stores(), false, (s) => s.findSessions(from, to, 0, Number.MAX_SAFE_INTEGER))
    }) as ReadOnlySessionStore<unknown, unknown>['fetch'],
    backwardFetch: (key) => one(key, (s) => s.backwardFetch(key)),
    findSessions: (key, e, l) => one(key, (s) => s.findSessions(key, e, l)),
    backwardFindSessions: (key, e, l) => one(key, (s) => s.backwardFindSessions(key, e, l)),
    fetchSession: (key, start, end) => {
      checkKey(key)
      for (const s of stores()) {
        const v = s.fetchSession(key, start, end)
        if (v !== undefined) return v
      }
      return undefined
    },
  }
}
