import type { Serde } from '@tidelog/client'
import { InternalTopologyBuilder } from '../internal/builder.js'
import { Topology, type DefaultSerdes } from '../topology.js'
import { dslKeyValueSupplier, Stores, type StoreBuilder } from '../store.js'
import { KStream } from './kstream.js'
import { KTable } from './ktable.js'
import { Consumed, Materialized } from './options.js'
import { tableSourceProcessor } from './processors.js'
import { storeGetter } from './table-joins.js'
import { addGlobalTable, type GlobalKTable } from './global-ktable.js'

/**
 * Names nodes and stores as Java's InternalStreamsBuilder does: one counter for both,
 * `<PREFIX><10-digit index>` for nodes, `<prefix>-STATE-STORE-<index>` for stores; user names
 * replace generated ones but (as in Java) some operations still burn an index.
 */
export class InternalStreamsBuilder {
  readonly topology = new InternalTopologyBuilder()
  private index = 0

  newProcessorName(prefix: string): string {
    return prefix + String(this.index++).padStart(10, '0')
  }

  newStoreName(prefix: string): string {
    return `${prefix}STATE-STORE-${String(this.index++).padStart(10, '0')}`
  }

  /** A timestamped in-memory key-value store for a DSL operator, with Materialized's options. */
  addKeyValueStore(name: string, keySerde: Serde<any> | undefined, valueSerde: Serde<any> | undefined, processor: string, materialized: Materialized<any, any> | undefined, defaults: DefaultSerdes): void {
    const b = Stores.timestampedKeyValueStoreBuilder(dslKeyValueSupplier(name, materialized, defaults), lazySerde(keySerde, defaults, true), lazySerde(valueSerde, defaults, false))
    if (materialized?.cachingEnabled !== false) b.withCachingEnabled?.()
    if (materialized && !materialized.loggingEnabled) b.withLoggingDisabled()
    else b.withLoggingEnabled({ ...(materialized?.logConfig ?? {}) })
    this.topology.addStateStore(b as StoreBuilder, [processor])
  }
}


/**
 * Stores need serdes before the application's defaults are known (they come with the
 * driver's or KafkaStreams' config): this one resolves them at first use.
 */
export function lazySerde(s: Serde<any> | undefined, defaults: DefaultSerdes, isKey: boolean): Serde<any> {
  if (s !== undefined) return s
  const pick = () => {
    const d = isKey ? defaults.key : defaults.value
    if (d === undefined) throw new TypeError(`a state store needs a ${isKey ? 'key' : 'value'} serde: pass one in Materialized or set default.${isKey ? 'key' : 'value'}.serde`)
    return d
  }
  return { serialize: (v, c) => pick().serialize(v, c), deserialize: (b, c) => pick().deserialize(b, c) }
}

/** Java's StreamsBuilder: the DSL's entry point; build() returns the Topology. */
export class StreamsBuilder {
  /** @internal */
  readonly internal = new InternalStreamsBuilder()
  /** @internal Filled from the runtime's config when the topology is run (default.key.serde / default.value.serde). */
  readonly defaults: DefaultSerdes = {}

  stream<K = unknown, V = unknown>(topics: string | readonly string[], consumed: Consumed<K, V> = Consumed.with<K, V>()): KStream<K, V> {
    const name = consumed.name ?? this.internal.newProcessorName('KSTREAM-SOURCE-')
    this.internal.topology.addSource({
      name,
      topics: typeof topics === 'string' ? [topics] : [...topics],
      ...(consumed.keySerde ? { keySerde: consumed.keySerde } : {}),
      ...(consumed.valueSerde ? { valueSerde: consumed.valueSerde } : {}),
      ...(consumed.timestampExtractor ? { timestampExtractor: consumed.timestampExtractor } : {}),
    })
    return new KStream<K, V>(this, name, consumed.keySerde, consumed.valueSerde, false)
  }

  /**
   * A changelog stream read as a table. As in Java, the store name is generated first
   * (`<topic>-STATE-STORE-<n>`), but the store only exists when Materialized names it.
   */
  table<K = unknown, V = unknown>(topic: string, consumed: Consumed<K, V> = Consumed.with<K, V>(), materialized?: Materialized<K, V>): KTable<K, V> {
    const storeName = materialized?.storeName ?? this.internal.newStoreName(`${topic}-`)
    const sourceName = consumed.name ?? this.internal.newProcessorName('KSTREAM-SOURCE-')
    const tableName = consumed.name ? `${consumed.name}-table-source` : this.internal.newProcessorName('KTABLE-SOURCE-')
    const keySerde = materialized?.keySerde ?? consumed.keySerde
    const valueSerde = materialized?.valueSerde ?? consumed.valueSerde
    this.internal.topology.addSource({
      name: sourceName,
      topics: [topic],
      ...(keySerde ? { keySerde } : {}),
      ...(valueSerde ? { valueSerde } : {}),
      ...(consumed.timestampExtractor ? { timestampExtractor: consumed.timestampExtractor } : {}),
    })
    const queryable = materialized?.storeName
    const source = { storeName: queryable }
    const old = { enabled: false }
    this.internal.topology.addProcessor(tableName, tableSourceProcessor<K, V>(source, old), [sourceName])
    if (queryable !== undefined) this.internal.addKeyValueStore(storeName, keySerde, valueSerde, tableName, materialized, this.defaults)
    // Old values need each key's previous value: as Java, an unmaterialized source gets its store then, under the name drawn above.
    const materialize = (force: boolean) => {
      if (source.storeName !== undefined) return true
      if (!force) return false
      source.storeName = storeName
      this.internal.addKeyValueStore(storeName, keySerde, valueSerde, tableName, materialized, this.defaults)
      return true
    }
    const table = new KTable<K, V>(this, tableName, keySerde, valueSerde, queryable, old, materialize)
    // A join reads the table through its store: Java's KTableSource.materialize(), under the name drawn above.
    table.valueGetterSupplier = storeGetter(() => {
      materialize(true)
      return source.storeName!
    })
    return table
  }

  /** Java's StreamsBuilder#globalTable: every instance holds all of `topic` (see GlobalKTable). */
  globalTable<K = unknown, V = unknown>(topic: string, consumed: Consumed<K, V> = Consumed.with<K, V>(), materialized?: Materialized<K, V>): GlobalKTable<K, V> {
    return addGlobalTable(this, topic, consumed, materialized)
  }

  addStateStore(builder: StoreBuilder): this {
    this.internal.topology.addStateStore(builder, [])
    return this
  }

  build(): Topology {
    const t = new Topology(this.internal.topology)
    t.defaults = this.defaults
    return t
  }
}
