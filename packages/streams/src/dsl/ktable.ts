import type { Serde } from '@tidelog/client'
import { KGroupedTable } from './kgrouped-table.js'
import { KStream } from './kstream.js'
import { Grouped, Materialized, Named } from './options.js'
import { ops, type KeyValuePair, type OldValues } from './processors.js'
import type { StreamsBuilder } from './streams-builder.js'
import { suppressTable, type Suppressed } from '../windows/suppress.js'
import { computedGetter, joinTables, storeGetter, type ValueGetterSupplier } from './table-joins.js'
import { joinOnForeignKey, type TableJoined } from './fk-join/fk-join.js'

/**
 * A changelog as a table (Java's KTable). Updates flow as Change records; with no record cache
 * every update is forwarded (Java with caching off). Joins: table-joins.ts and fk-join/.
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
    /** @internal */
    readonly oldValues: OldValues,
    /**
     * @internal Whether this table can send old values, asking upstream as needed (`force`: a
     * source materializes its store to do so). Aggregations always can.
     */
    private readonly enableUpstream: (force: boolean) => boolean = () => true,
  ) {}

  /** @internal How joins read this table; set by the operation that made it. */
  valueGetterSupplier: ValueGetterSupplier<K, V> | undefined

  /** @internal Java's valueGetterSupplier(): a source table gets its store now if it has none. */
  valueGetter(): ValueGetterSupplier<K, V> {
    if (this.valueGetterSupplier !== undefined) return this.valueGetterSupplier
    if (this.queryableStoreName !== undefined) return storeGetter(() => this.queryableStoreName!)
    throw new TypeError(`KTable ${this.nodeName} cannot be read by a join`)
  }

  /**
   * KTable-KTable inner join (Java's KTable#join): a result for each key present on both sides.
   * With a foreign-key extractor first, the foreign-key join (KIP-213): each row of this table
   * joins the row of `other` whose key the extractor reads from its value.
   */
  join<VO, VR>(other: KTable<K, VO>, joiner: (value: V, other: VO) => VR, named?: Named | Materialized<K, VR>, materialized?: Materialized<K, VR>): KTable<K, VR>
  join<KO, VO, VR>(other: KTable<KO, VO>, foreignKeyExtractor: ((value: V) => KO | null | undefined) | ((key: K, value: V) => KO | null | undefined), joiner: (value: V, other: VO) => VR, named?: TableJoined<K, NoInfer<KO>> | Named | Materialized<K, VR>, materialized?: Materialized<K, VR>): KTable<K, VR>
  join(other: KTable<any, any>, a: any, b?: any, c?: any, d?: any): KTable<K, any> {
    if (typeof b === 'function') return joinOnForeignKey(this.builder, this, other, a, b, false, c, d)
    return joinTables(this.builder, this, other, a, 'inner', b, c)
  }

  /** KTable-KTable left join: every key of this table, with null while the other side has none (or, with an extractor, the foreign-key left join). */
  leftJoin<VO, VR>(other: KTable<K, VO>, joiner: (value: V, other: VO | null) => VR, named?: Named | Materialized<K, VR>, materialized?: Materialized<K, VR>): KTable<K, VR>
  leftJoin<KO, VO, VR>(other: KTable<KO, VO>, foreignKeyExtractor: ((value: V) => KO | null | undefined) | ((key: K, value: V) => KO | null | undefined), joiner: (value: V, other: VO | null) => VR, named?: TableJoined<K, NoInfer<KO>> | Named | Materialized<K, VR>, materialized?: Materialized<K, VR>): KTable<K, VR>
  leftJoin(other: KTable<any, any>, a: any, b?: any, c?: any, d?: any): KTable<K, any> {
    if (typeof b === 'function') return joinOnForeignKey(this.builder, this, other, a, b, true, c, d)
    return joinTables(this.builder, this, other, a, 'left', b, c)
  }

  /** KTable-KTable outer join: every key of either table, with null for the missing side. */
  outerJoin<VO, VR>(other: KTable<K, VO>, joiner: (value: V | null, other: VO | null) => VR, named?: Named | Materialized<K, VR>, materialized?: Materialized<K, VR>): KTable<K, VR> {
    return joinTables<K, V, VO, VR>(this.builder, this, other, joiner, 'outer', named, materialized)
  }

  /**
   * @internal Java's enableSendingOldValues(forceMaterialization): true once this table (and
   * everything upstream of it) forwards (new, old) pairs.
   */
  enableSendingOldValues(force: boolean): boolean {
    if (this.oldValues.enabled) return true
    if (this.enableUpstream(force)) this.oldValues.enabled = true
    return this.oldValues.enabled
  }

  filter(predicate: (key: K, value: V) => boolean, named?: Named | Materialized<K, V>, materialized?: Materialized<K, V>): KTable<K, V> {
    return this.doFilter(predicate, false, named, materialized)
  }

  filterNot(predicate: (key: K, value: V) => boolean, named?: Named | Materialized<K, V>, materialized?: Materialized<K, V>): KTable<K, V> {
    return this.doFilter(predicate, true, named, materialized)
  }

  mapValues<VR>(mapper: (value: V, key: K) => VR, named?: Named | Materialized<K, VR>, materialized?: Materialized<K, VR>): KTable<K, VR> {
    const [n, m] = named instanceof Named ? [named, materialized] : [undefined, named ?? materialized]
    return this.derive<VR>('KTABLE-MAPVALUES-', n, m, (store, old) => ops.tableMapValues<K, V, VR>(mapper, store, old), m?.valueSerde, (k, v) => mapper(v, k))
  }

  toStream(named?: Named): KStream<K, V> {
    const name = named?.name ?? this.builder.internal.newProcessorName('KTABLE-TOSTREAM-')
    this.builder.internal.topology.addProcessor(name, ops.toStream<K, V>(), [this.nodeName])
    return new KStream<K, V>(this.builder, name, this.keySerde, this.valueSerde, false)
  }

  /**
   * Re-keys the table for an aggregation (Java's KTable#groupBy): each update becomes a
   * subtraction from the old key's aggregate and an addition to the new one, through
   * `<applicationId>-<Grouped name or store>-repartition`.
   */
  groupBy<KR, VR>(selector: (key: K, value: V) => KeyValuePair<KR, VR>, grouped: Grouped<KR, VR> = Grouped.with<KR, VR>()): KGroupedTable<KR, VR> {
    // Kafka Streams 4.4 draws the generated name even when Grouped names the node (describe() shows the gap).
    const generated = this.builder.internal.newProcessorName('KTABLE-SELECT-')
    const name = grouped.name ?? generated
    this.builder.internal.topology.addProcessor(name, ops.tableSelect(selector), [this.nodeName])
    this.enableSendingOldValues(true)
    return new KGroupedTable<KR, VR>(this.builder, name, grouped.keySerde, grouped.valueSerde, grouped.name)
  }

  /**
   * Holds updates back (Java's KTable#suppress): `Suppressed.untilWindowCloses` gives one final
   * result per window of a windowed aggregation, `untilTimeLimit` rate-limits any table.
   */
  suppress(suppressed: Suppressed<K>): KTable<K, V> {
    return suppressTable(this, this.builder, suppressed)
  }

  private doFilter(predicate: (key: K, value: V) => boolean, not: boolean, named: Named | Materialized<K, V> | undefined, materialized: Materialized<K, V> | undefined): KTable<K, V> {
    const [n, m] = named instanceof Named ? [named, materialized] : [undefined, named ?? materialized]
    // Java's KTableFilter: when upstream can send old values without materializing anything, it
    // does, so an update filtered out on both sides forwards no needless tombstone.
    return this.derive<V>('KTABLE-FILTER-', n, m, (store, old) => {
      old.enabled = this.enableSendingOldValues(false)
      return ops.tableFilter<K, V>(predicate, not, store, old)
    }, m?.valueSerde ?? this.valueSerde, (k, v) => (predicate(k, v) !== not ? v : null))
  }

  /** Java draws a store name when Materialized is given (even without a name), then the node's. */
  private derive<VR>(prefix: string, named: Named | undefined, materialized: Materialized<K, VR> | undefined, supplier: (store: string | undefined, old: OldValues) => ReturnType<typeof ops.tableFilter<K, any>>, valueSerde: Serde<VR> | undefined, compute?: (key: K, value: V) => VR | null): KTable<K, VR> {
    const b = this.builder.internal
    const storeName = materialized ? (materialized.storeName ?? b.newStoreName(prefix)) : undefined
    const queryable = materialized?.storeName
    const name = named?.name ?? b.newProcessorName(prefix)
    const old: OldValues = { enabled: false }
    b.topology.addProcessor(name, supplier(queryable, old), [this.nodeName])
    const keySerde = materialized?.keySerde ?? this.keySerde
    if (queryable !== undefined && storeName !== undefined) b.addKeyValueStore(storeName, keySerde, valueSerde, name, materialized, this.builder.defaults)
    const table = new KTable<K, VR>(this.builder, name, keySerde, valueSerde, queryable, old, (force) => queryable !== undefined || this.enableSendingOldValues(force))
    if (queryable === undefined && compute !== undefined) table.valueGetterSupplier = computedGetter(() => this.valueGetter(), compute)
    return table
  }
}
