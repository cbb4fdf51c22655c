import type { Serde } from '@tidelog/client'
import type { ProcessorContext, ProcessorSupplier } from '../processor.js'
import { sessionWindowAggregate, slidingWindowAggregate, timeWindowAggregate, type Aggregator, type Initializer, type Merger } from '../windows/aggregate.js'
import { registerWindowGrace } from '../windows/suppress.js'
import { applyLogging, sessionStoreBuilder, split, timeWindowStoreBuilder, type GroupedSource, type NamedOrMaterialized } from '../windows/windowed-kstream.js'
import { WindowedSerdes } from '../windows/windowed-serdes.js'
import { SessionWindows, TimeWindows, type SlidingWindows, type Windowed } from '../windows/windows.js'
import { createRepartitionedSource } from './kstream.js'
import { KTable } from './ktable.js'
import type { Materialized, Named } from './options.js'
import { aggregateProcessor, type Change, type OldValues } from './processors.js'
import { lazySerde, type StreamsBuilder } from './streams-builder.js'
import { copartition, storeGetter } from './table-joins.js'

const AGGREGATE_NAME = 'COGROUPKSTREAM-AGGREGATE-'
const MERGE_NAME = 'COGROUPKSTREAM-MERGE-'

/** Each grouped stream (by identity, as Java's map of KGroupedStreamImpl) and the aggregator that folds its records in. */
type Patterns<K, VOut> = Map<GroupedSource<K, any>, Aggregator<K, any, VOut>>

/** Java's KTablePassThrough: the merge node forwards each aggregation's change as it is. */
function passThrough<K, V>(): ProcessorSupplier<K, Change<V>, K, Change<V>> {
  return () => {
    let ctx!: ProcessorContext<K, Change<V>>
    return {
      init: (c) => {
        ctx = c
      },
      process: (r) => ctx.forward(r),
    }
  }
}

/**
 * Java's CogroupedStreamAggregateBuilder: the store name is drawn first, then each grouped
 * stream that needs it gets its repartition topic (named after its Grouped or the store), then
 * one aggregate processor per stream (COGROUPKSTREAM-AGGREGATE-, or `<name>-cogroup-agg-<i>`),
 * all sharing the store, and last the merge node (COGROUPKSTREAM-MERGE-, or `<name>-cogroup-merge`).
 */
function buildCogroup<K, VOut>(
  builder: StreamsBuilder,
  patterns: Patterns<K, VOut>,
  named: Named | undefined,
  storeName: string,
  attachStore: (firstProcessor: string) => void,
  aggregate: (agg: Aggregator<K, any, VOut>, old: OldValues) => ProcessorSupplier<any, any, any, any>,
): { merge: string; old: OldValues } {
  const b = builder.internal
  const parents = new Map<GroupedSource<K, any>, string>()
  for (const g of patterns.keys()) {
    parents.set(g, g.repartitionRequired ? createRepartitionedSource(builder, g.nodeName, g.repartitionName ?? storeName, g.keySerde, g.valueSerde) : g.nodeName)
  }
  const inputs = [...parents.values()]
  for (const other of inputs.slice(1)) copartition(builder, inputs[0]!, other)
  const old: OldValues = { enabled: false }
  const names: string[] = []
  let i = 0
  for (const [g, agg] of patterns) {
    // Java's NamedInternal#suffixWithOrElseGet burns an index even for a given name.
    const generated = b.newProcessorName(AGGREGATE_NAME)
    const name = named?.name !== undefined ? `${named.name}-cogroup-agg-${i++}` : generated
    b.topology.addProcessor(name, aggregate(agg, old), [parents.get(g)!])
    if (names.length === 0) attachStore(name)
    else b.topology.connect(name, storeName)
    names.push(name)
  }
  const generated = b.newProcessorName(MERGE_NAME)
  const merge = named?.name !== undefined ? `${named.name}-cogroup-merge` : generated
  b.topology.addProcessor(merge, passThrough(), names)
  return { merge, old }
}

/**
 * Java's CogroupedKStream (KIP-150): several grouped streams of the same key folded into one
 * aggregate, each with its own aggregator, sharing one store and one initializer.
 */
export class CogroupedKStream<K, VOut> {
  /** @internal */
  constructor(
    private readonly builder: StreamsBuilder,
    private readonly patterns: Patterns<K, VOut>,
    private readonly keySerde: Serde<K> | undefined,
  ) {}

  /** Adds another grouped stream (the same grouped stream again replaces its aggregator, as Java's map does). */
  cogroup<VIn>(groupedStream: { cogroupSource(): GroupedSource<K, VIn> }, aggregator: Aggregator<K, VIn, VOut>): CogroupedKStream<K, VOut> {
    if (groupedStream === null || groupedStream === undefined) throw new TypeError("groupedStream can't be null")
    if (typeof aggregator !== 'function') throw new TypeError("aggregator can't be null")
    this.patterns.set(groupedStream.cogroupSource(), aggregator)
    return this
  }

  aggregate(initializer: Initializer<VOut>, named?: NamedOrMaterialized<K, VOut>, materialized?: Materialized<K, VOut>): KTable<K, VOut> {
    if (typeof initializer !== 'function') throw new TypeError("initializer can't be null")
    const [n, m] = split(named, materialized)
    const b = this.builder.internal
    const storeName = m?.storeName ?? b.newStoreName(AGGREGATE_NAME)
    const keySerde = m?.keySerde ?? this.keySerde
    const valueSerde = m?.valueSerde
    const { merge, old } = buildCogroup<K, VOut>(this.builder, this.patterns, n, storeName,
      (p) => b.addKeyValueStore(storeName, keySerde, valueSerde, p, m, this.builder.defaults),
      (agg, o) => aggregateProcessor(storeName, initializer, agg, o))
    const table = new KTable<K, VOut>(this.builder, merge, keySerde, valueSerde, m?.storeName, old)
    table.valueGetterSupplier = storeGetter(() => storeName)
    return table
  }

  windowedBy(windows: TimeWindows | SlidingWindows): TimeWindowedCogroupedKStream<K, VOut>
  windowedBy(windows: SessionWindows): SessionWindowedCogroupedKStream<K, VOut>
  windowedBy(windows: TimeWindows | SlidingWindows | SessionWindows): TimeWindowedCogroupedKStream<K, VOut> | SessionWindowedCogroupedKStream<K, VOut> {
    if (windows === null || windows === undefined) throw new TypeError("windows can't be null")
    return windows instanceof SessionWindows ? new SessionWindowedCogroupedKStream(this.builder, this.patterns, windows) : new TimeWindowedCogroupedKStream(this.builder, this.patterns, windows)
  }
}

/** Java's TimeWindowedCogroupedKStream, for TimeWindows and SlidingWindows (emitting on every update: Java has no other emit strategy for cogroup). */
export class TimeWindowedCogroupedKStream<K, VOut> {
  /** @internal */
  constructor(
    private readonly builder: StreamsBuilder,
    private readonly patterns: Patterns<K, VOut>,
    readonly windows: TimeWindows | SlidingWindows,
  ) {}

  aggregate(initializer: Initializer<VOut>, named?: NamedOrMaterialized<K, VOut>, materialized?: Materialized<K, VOut>): KTable<Windowed<K>, VOut> {
    if (typeof initializer !== 'function') throw new TypeError("initializer can't be null")
    const [n, m] = split(named, materialized)
    const w = this.windows
    const defaults = this.builder.defaults
    const storeName = m?.storeName ?? this.builder.internal.newStoreName(AGGREGATE_NAME)
    // Java's WindowStoreMaterializer checks the retention before any node is added.
    const store = applyLogging(timeWindowStoreBuilder(w, storeName, lazySerde(m?.keySerde, defaults, true), lazySerde(m?.valueSerde, defaults, false), m, false, defaults), m)
    const { merge, old } = buildCogroup<K, VOut>(this.builder, this.patterns, n, storeName,
      (p) => this.builder.internal.topology.addStateStore(store, [p]),
      (agg, o) => (w instanceof TimeWindows ? timeWindowAggregate(storeName, w, initializer, agg, o) : slidingWindowAggregate(storeName, w, initializer, agg, o)))
    registerWindowGrace(this.builder, merge, w.gracePeriodMs())
    const size = w instanceof TimeWindows ? w.size() : w.timeDifferenceMs
    // As Java: the table has a windowed key serde only when Materialized names a key serde.
    const keySerde = m?.keySerde === undefined ? undefined : WindowedSerdes.timeWindowedSerdeFrom(m.keySerde, size)
    return new KTable<Windowed<K>, VOut>(this.builder, merge, keySerde, m?.valueSerde, m?.storeName, old)
  }
}

/** Java's SessionWindowedCogroupedKStream: the merger combines the aggregates of sessions that grow together. */
export class SessionWindowedCogroupedKStream<K, VOut> {
  /** @internal */
  constructor(
    private readonly builder: StreamsBuilder,
    private readonly patterns: Patterns<K, VOut>,
    readonly windows: SessionWindows,
  ) {}

  aggregate(initializer: Initializer<VOut>, sessionMerger: Merger<K, VOut>, named?: NamedOrMaterialized<K, VOut>, materialized?: Materialized<K, VOut>): KTable<Windowed<K>, VOut> {
    if (typeof initializer !== 'function') throw new TypeError("initializer can't be null")
    if (typeof sessionMerger !== 'function') throw new TypeError("sessionMerger can't be null")
    const [n, m] = split(named, materialized)
    const w = this.windows
    const defaults = this.builder.defaults
    const storeName = m?.storeName ?? this.builder.internal.newStoreName(AGGREGATE_NAME)
    const store = applyLogging(sessionStoreBuilder(w, storeName, lazySerde(m?.keySerde, defaults, true), lazySerde(m?.valueSerde, defaults, false), m, false, defaults), m)
    const { merge, old } = buildCogroup<K, VOut>(this.builder, this.patterns, n, storeName,
      (p) => this.builder.internal.topology.addStateStore(store, [p]),
      (agg, o) => sessionWindowAggregate(storeName, w, initializer, agg, sessionMerger, o))
    registerWindowGrace(this.builder, merge, w.inactivityGap() + w.gracePeriodMs())
    const keySerde = m?.keySerde === undefined ? undefined : WindowedSerdes.sessionWindowedSerdeFrom(m.keySerde)
    return new KTable<Windowed<K>, VOut>(this.builder, merge, keySerde, m?.valueSerde, m?.storeName, old)
  }
}
