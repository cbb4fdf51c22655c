import type { Serde } from '@tidelog/client'
import { Serdes } from '../serdes.js'
import { changeSerde } from './change-serde.js'
import { KTable } from './ktable.js'
import { storeGetter } from './table-joins.js'
import { Materialized, Named } from './options.js'
import { tableAggregateProcessor, type OldValues } from './processors.js'
import { lazySerde, type StreamsBuilder } from './streams-builder.js'

type NamedOrMaterialized<K, V> = Named | Materialized<K, V> | undefined

/** Java's KGroupedTable: count, reduce and aggregate with an adder and a subtractor. */
export class KGroupedTable<K, V> {
  /** @internal */
  constructor(
    private readonly builder: StreamsBuilder,
    private readonly nodeName: string,
    readonly keySerde: Serde<K> | undefined,
    readonly valueSerde: Serde<V> | undefined,
    private readonly repartitionName: string | undefined,
  ) {}

  count(named?: NamedOrMaterialized<K, number>, materialized?: Materialized<K, number>): KTable<K, number> {
    const [n, m] = named instanceof Named ? [named, materialized] : [undefined, named ?? materialized]
    return this.doAggregate<number>('KTABLE-AGGREGATE-', n, m, m?.valueSerde ?? Serdes.Long(), (store, old) =>
      tableAggregateProcessor<K, V, number>(store, () => 0, (_k, _v, acc) => acc + 1, (_k, _v, acc) => acc - 1, old))
  }

  reduce(adder: (aggregate: V, value: V) => V, subtractor: (aggregate: V, value: V) => V, named?: NamedOrMaterialized<K, V>, materialized?: Materialized<K, V>): KTable<K, V> {
    const [n, m] = named instanceof Named ? [named, materialized] : [undefined, named ?? materialized]
    return this.doAggregate<V>('KTABLE-REDUCE-', n, m, m?.valueSerde ?? this.valueSerde, (store, old) =>
      tableAggregateProcessor<K, V, V>(store, undefined, (_k, v, acc) => adder(acc, v), (_k, v, acc) => subtractor(acc, v), old))
  }

  aggregate<A>(initializer: () => A, adder: (key: K, value: V, aggregate: A) => A, subtractor: (key: K, value: V, aggregate: A) => A, named?: NamedOrMaterialized<K, A>, materialized?: Materialized<K, A>): KTable<K, A> {
    const [n, m] = named instanceof Named ? [named, materialized] : [undefined, named ?? materialized]
    return this.doAggregate<A>('KTABLE-AGGREGATE-', n, m, m?.valueSerde, (store, old) =>
      tableAggregateProcessor<K, V, A>(store, initializer, adder, subtractor, old))
  }

  /**
   * Java's KGroupedTableImpl.doAggregate: the store name first (prefix KTABLE-AGGREGATE- for
   * reduce too, as Java), then sink, source and operator names; the repartition topic carries
   * Change records in Java's ChangedSerializer format.
   */
  private doAggregate<A>(prefix: string, named: Named | undefined, materialized: Materialized<K, A> | undefined, valueSerde: Serde<A> | undefined, supplier: (store: string, old: OldValues) => ReturnType<typeof tableAggregateProcessor<K, V, A>>): KTable<K, A> {
    const b = this.builder.internal
    const storeName = materialized?.storeName ?? b.newStoreName('KTABLE-AGGREGATE-')
    const sink = named?.name ? `${named.name}-sink` : b.newProcessorName('KSTREAM-SINK-')
    const source = named?.name ? `${named.name}-source` : b.newProcessorName('KSTREAM-SOURCE-')
    const name = named?.name ?? b.newProcessorName(prefix)
    const topic = `${this.repartitionName ?? storeName}-repartition`
    const keySerde = this.keySerde
    const changes = changeSerde(lazySerde(this.valueSerde, this.builder.defaults, false))
    b.topology.addInternalTopic({ name: topic, kind: 'repartition' })
    b.topology.addSink({ name: sink, topic, ...(keySerde ? { keySerde } : {}), valueSerde: changes }, [this.nodeName])
    b.topology.addSource({ name: source, topics: [topic], ...(keySerde ? { keySerde } : {}), valueSerde: changes })
    const old: OldValues = { enabled: false }
    b.topology.addProcessor(name, supplier(storeName, old), [source])
    const storeKeySerde = materialized?.keySerde ?? keySerde
    b.addKeyValueStore(storeName, storeKeySerde, valueSerde, name, materialized, this.builder.defaults)
    const table = new KTable<K, A>(this.builder, name, storeKeySerde, valueSerde, materialized?.storeName, old)
    table.valueGetterSupplier = storeGetter(() => storeName)
    return table
  }
}
