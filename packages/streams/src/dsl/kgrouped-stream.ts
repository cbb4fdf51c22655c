import type { Serde } from '@tidelog/client'
import { Serdes } from '../serdes.js'
import { createRepartitionedSource } from './kstream.js'
import { KTable } from './ktable.js'
import { storeGetter } from './table-joins.js'
import { Materialized, Named } from './options.js'
import { aggregateProcessor, type OldValues } from './processors.js'
import type { StreamsBuilder } from './streams-builder.js'
import { windowedBy, type GroupedSource, type SessionWindowedKStream, type TimeWindowedKStream } from '../windows/windowed-kstream.js'
import type { Aggregator } from '../windows/aggregate.js'
import { CogroupedKStream } from './cogroup.js'
import type { SessionWindows, SlidingWindows, TimeWindows } from '../windows/windows.js'

type NamedOrMaterialized<K, V> = Named | Materialized<K, V> | undefined

function split<K, V>(a: NamedOrMaterialized<K, V>, b: Materialized<K, V> | undefined): [Named | undefined, Materialized<K, V> | undefined] {
  if (a instanceof Named) return [a, b]
  return [undefined, a ?? b]
}

/** Java's KGroupedStream: count, reduce and aggregate into a KTable backed by a key-value store. */
export class KGroupedStream<K, V> {
  /** @internal */
  constructor(
    private readonly builder: StreamsBuilder,
    private readonly nodeName: string,
    readonly keySerde: Serde<K> | undefined,
    readonly valueSerde: Serde<V> | undefined,
    private readonly repartitionRequired: boolean,
    private readonly repartitionName: string | undefined,
  ) {}

  count(named?: NamedOrMaterialized<K, number>, materialized?: Materialized<K, number>): KTable<K, number> {
    const [n, m] = split(named, materialized)
    return this.doAggregate<number>('KSTREAM-AGGREGATE-', n, m, m?.keySerde ?? this.keySerde, m?.valueSerde ?? Serdes.Long(), (store, old) =>
      aggregateProcessor<K, V, number>(store, () => 0, (_k, _v, acc) => acc + 1, old))
  }

  reduce(reducer: (aggregate: V, value: V) => V, named?: NamedOrMaterialized<K, V>, materialized?: Materialized<K, V>): KTable<K, V> {
    const [n, m] = split(named, materialized)
    return this.doAggregate<V>('KSTREAM-REDUCE-', n, m, m?.keySerde ?? this.keySerde, m?.valueSerde ?? this.valueSerde, (store, old) =>
      aggregateProcessor<K, V, V>(store, undefined, (_k, v, acc) => reducer(acc, v), old))
  }

  aggregate<A>(initializer: () => A, aggregator: (key: K, value: V, aggregate: A) => A, named?: NamedOrMaterialized<K, A>, materialized?: Materialized<K, A>): KTable<K, A> {
    const [n, m] = split(named, materialized)
    return this.doAggregate<A>('KSTREAM-AGGREGATE-', n, m, m?.keySerde ?? this.keySerde, m?.valueSerde, (store, old) =>
      aggregateProcessor<K, V, A>(store, initializer, aggregator, old))
  }

  /** Windowed aggregations (Java's KGroupedStream#windowedBy): time and sliding windows, or sessions. */
  windowedBy(windows: TimeWindows | SlidingWindows): TimeWindowedKStream<K, V>
  windowedBy(windows: SessionWindows): SessionWindowedKStream<K, V>
  windowedBy(windows: TimeWindows | SlidingWindows | SessionWindows): TimeWindowedKStream<K, V> | SessionWindowedKStream<K, V> {
    return windowedBy<K, V>(this.cogroupSource(), windows)
  }

  /**
   * KIP-150: starts a cogrouped aggregation with this stream and its aggregator; add other
   * grouped streams of the same key with CogroupedKStream#cogroup, then aggregate (optionally windowed).
   */
  cogroup<VOut>(aggregator: Aggregator<K, V, VOut>): CogroupedKStream<K, VOut> {
    if (typeof aggregator !== 'function') throw new TypeError("aggregator can't be null")
    return new CogroupedKStream<K, VOut>(this.builder, new Map([[this.cogroupSource(), aggregator]]), this.keySerde)
  }

  /** @internal What windowedBy and cogroup build on; one object per grouped stream, so cogroup can tell streams apart as Java does. */
  cogroupSource(): GroupedSource<K, V> {
    this.source ??= { builder: this.builder, nodeName: this.nodeName, keySerde: this.keySerde, valueSerde: this.valueSerde, repartitionRequired: this.repartitionRequired, repartitionName: this.repartitionName }
    return this.source
  }

  private source: GroupedSource<K, V> | undefined

  /**
   * Java's GroupedStreamAggregateBuilder: the store name is drawn first, then the operator's,
   * then (after a key change) the repartition topic named after the Grouped name or the store.
   */
  private doAggregate<A>(prefix: string, named: Named | undefined, materialized: Materialized<K, A> | undefined, keySerde: Serde<K> | undefined, valueSerde: Serde<A> | undefined, supplier: (store: string, old: OldValues) => ReturnType<typeof aggregateProcessor<K, V, A>>): KTable<K, A> {
    const b = this.builder.internal
    const storeName = materialized?.storeName ?? b.newStoreName(prefix)
    const name = named?.name ?? b.newProcessorName(prefix)
    let parent = this.nodeName
    if (this.repartitionRequired) {
      parent = createRepartitionedSource(this.builder, this.nodeName, this.repartitionName ?? storeName, this.keySerde, this.valueSerde)
    }
    const old: OldValues = { enabled: false }
    b.topology.addProcessor(name, supplier(storeName, old), [parent])
    b.addKeyValueStore(storeName, keySerde, valueSerde, name, materialized, this.builder.defaults)
    const table = new KTable<K, A>(this.builder, name, keySerde, valueSerde, materialized?.storeName, old)
    table.valueGetterSupplier = storeGetter(() => storeName)
    return table
  }
}
