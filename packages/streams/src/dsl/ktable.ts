import type { Serde } from '@tidelog/client'
import { KStream } from './kstream.js'
import { Materialized, Named } from './options.js'
import { ops } from './processors.js'
import type { StreamsBuilder } from './streams-builder.js'

/**
 * A changelog as a table (Java's KTable). Updates flow as Change records; with no record cache
 * every update is forwarded (Java with caching off). groupBy with adder/subtractor and joins
 * are not implemented yet.
 */
export class KTable<K, V> {
  /** @internal */
  constructor(
    private readonly builder: StreamsBuilder,
    /** @internal */
    readonly nodeName: string,
    readonly keySerde: Serde<K> | undefined,
    readonly valueSerde: Serde<V> | undefined,
    /** The store users can query (getKeyValueStore), when the table is materialized under a name. */
    readonly queryableStoreName: string | undefined,
  ) {}

  filter(predicate: (key: K, value: V) => boolean, named?: Named | Materialized<K, V>, materialized?: Materialized<K, V>): KTable<K, V> {
    return this.doFilter(predicate, false, named, materialized)
  }

  filterNot(predicate: (key: K, value: V) => boolean, named?: Named | Materialized<K, V>, materialized?: Materialized<K, V>): KTable<K, V> {
    return this.doFilter(predicate, true, named, materialized)
  }

  mapValues<VR>(mapper: (value: V, key: K) => VR, named?: Named | Materialized<K, VR>, materialized?: Materialized<K, VR>): KTable<K, VR> {
    const [n, m] = named instanceof Named ? [named, materialized] : [undefined, named ?? materialized]
    return this.derive<VR>('KTABLE-MAPVALUES-', n, m, (store) => ops.tableMapValues<K, V, VR>(mapper, store), m?.valueSerde)
  }

  toStream(named?: Named): KStream<K, V> {
    const name = named?.name ?? this.builder.internal.newProcessorName('KTABLE-TOSTREAM-')
    this.builder.internal.topology.addProcessor(name, ops.toStream<K, V>(), [this.nodeName])
    return new KStream<K, V>(this.builder, name, this.keySerde, this.valueSerde, false)
  }

  private doFilter(predicate: (key: K, value: V) => boolean, not: boolean, named: Named | Materialized<K, V> | undefined, materialized: Materialized<K, V> | undefined): KTable<K, V> {
    const [n, m] = named instanceof Named ? [named, materialized] : [undefined, named ?? materialized]
    return this.derive<V>('KTABLE-FILTER-', n, m, (store) => ops.tableFilter<K, V>(predicate, not, store), m?.valueSerde ?? this.valueSerde)
  }

  /** Java draws a store name when Materialized is given (even without a name), then the node's. */
  private derive<VR>(prefix: string, named: Named | undefined, materialized: Materialized<K, VR> | undefined, supplier: (store: string | undefined) => ReturnType<typeof ops.tableFilter<K, any>>, valueSerde: Serde<VR> | undefined): KTable<K, VR> {
    const b = this.builder.internal
    const storeName = materialized ? (materialized.storeName ?? b.newStoreName(prefix)) : undefined
    const queryable = materialized?.storeName
    const name = named?.name ?? b.newProcessorName(prefix)
    b.topology.addProcessor(name, supplier(queryable), [this.nodeName])
    const keySerde = materialized?.keySerde ?? this.keySerde
    if (queryable !== undefined && storeName !== undefined) b.addKeyValueStore(storeName, keySerde, valueSerde, name, materialized, this.builder.defaults)
    return new KTable<K, VR>(this.builder, name, keySerde, valueSerde, queryable)
  }
}
