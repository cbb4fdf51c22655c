import { InvalidStateStoreException, StreamsException } from '../errors.js'
import { MeteredKeyValueStore, type KeyValue, type KeyValueStore, type StateStore, type ValueAndTimestamp } from '../store.js'
import type { KafkaStreamsState } from '../runtime/state.js'

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

/** Java's QueryableStoreType: which view of a store a query gets. */
export interface QueryableStoreType<T> {
  readonly kind: 'keyValue' | 'timestampedKeyValue'
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
  storesNamed(name: string): { partition: number; store: StateStore }[]
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
  const timestampedView = params.queryableStoreType.kind === 'timestampedKeyValue'
  const stores = (): MeteredKeyValueStore<unknown, unknown>[] => {
    checkState(local, name, params.staleStoresEnabled)
    const found = local.storesNamed(name).filter((s) => params.partition === undefined || s.partition === params.partition)
    if (found.length === 0) {
      const where = params.partition === undefined ? '' : ` for partition ${params.partition}`
      throw new InvalidStateStoreException(`The state store, ${name}, may have migrated to another instance${where}.`)
    }
    return found.map(({ store }) => {
      if (!(store instanceof MeteredKeyValueStore)) throw new InvalidStateStoreException(`Cannot get state store ${name}: it is not a key-value store`)
      if (timestampedView && !store.timestamped) throw new InvalidStateStoreException(`Cannot get state store ${name} because the queryable store type [timestampedKeyValueStore] does not accept the actual store type [keyValueStore].`)
      if (!store.isOpen()) throw new InvalidStateStoreException(`State store ${name} is closed, it may have migrated to another instance.`)
      return store
    })
  }
  // keyValueStore() over a DSL store strips the timestamps (Java's ReadOnlyKeyValueStoreFacade).
  const view = (s: MeteredKeyValueStore<unknown, unknown>, v: unknown) => (s.timestamped && !timestampedView ? (v as ValueAndTimestamp<unknown>).value : v)
  const many = (pick: (s: MeteredKeyValueStore<unknown, unknown>) => KeyValue<unknown, unknown>[]) =>
    stores().flatMap((s) => pick(s).map((kv) => ({ key: kv.key, value: view(s, kv.value) })))
  const store: ReadOnlyKeyValueStore<unknown, unknown> = {
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
  return store as T
}
