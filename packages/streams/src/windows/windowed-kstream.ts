import type { Serde } from '@tidelog/client'
import { Serdes } from '../serdes.js'
import type { ProcessorSupplier } from '../processor.js'
import { dslSessionSupplier, dslWindowSupplier, type DslDefaults, type StoreBuilder } from '../store.js'
import { createRepartitionedSource } from '../dsl/kstream.js'
import { KTable } from '../dsl/ktable.js'
import { Named, type Materialized } from '../dsl/options.js'
import type { Change, OldValues } from '../dsl/processors.js'
import { lazySerde, type StreamsBuilder } from '../dsl/streams-builder.js'
import { sessionWindowAggregate, slidingWindowAggregate, timeWindowAggregate, type Aggregator, type Initializer, type Merger } from './aggregate.js'
import { EmitStrategy } from './emit-strategy.js'
import { SessionStores } from './session-store.js'
import { registerWindowGrace } from './suppress.js'
import { WindowStores } from './window-store.js'
import { WindowedSerdes } from './windowed-serdes.js'
import { SessionWindows, SlidingWindows, TimeWindows, type Windowed } from './windows.js'

export type NamedOrMaterialized<K, V> = Named | Materialized<K, V> | undefined

/** The DSL's optional (Named | Materialized, Materialized) arguments, as Java's overloads take them. */
export function split<K, V>(a: NamedOrMaterialized<K, V>, b: Materialized<K, V> | undefined): [Named | undefined, Materialized<K, V> | undefined] {
  return a instanceof Named ? [a, b] : [undefined, a ?? b]
}

/** What a grouped stream hands to windowedBy (the fields of KGroupedStream). */
export interface GroupedSource<K, V> {
  builder: StreamsBuilder
  nodeName: string
  keySerde: Serde<K> | undefined
  valueSerde: Serde<V> | undefined
  repartitionRequired: boolean
  repartitionName: string | undefined
}

const reduceAggregator = <K, V>(reducer: (agg: V, value: V) => V): Aggregator<K, V, V> => (_k, v, acc) => (acc === null || acc === undefined ? v : reducer(acc, v))

abstract class WindowedKStreamBase<K, V> {
  protected emit = EmitStrategy.onWindowUpdate()

  /** @internal */
  constructor(protected readonly source: GroupedSource<K, V>) {}

  protected abstract windowedKeySerde(keySerde: Serde<K>): Serde<Windowed<K>>
  protected abstract grace(): number
  /** Throws Java's IllegalArgumentException text (a RangeError) when `retentionMs` is too short for the windows. */
  protected abstract storeBuilder<A>(name: string, keySerde: Serde<K>, valueSerde: Serde<A>, materialized: Materialized<K, A> | undefined): StoreBuilder

  /** KIP-825: emit on every update (the default) or only final results, once a window closes. Sets it on this object and returns it, as Java. */
  emitStrategy(emitStrategy: EmitStrategy): this {
    if (!(emitStrategy instanceof EmitStrategy)) throw new TypeError('emitStrategy cannot be null')
    this.emit = emitStrategy
    return this
  }

  protected get timeOrdered(): boolean {
    return this.emit.type() === 'ON_WINDOW_CLOSE'
  }

  /**
   * Java's GroupedStreamAggregateBuilder for windows: store name drawn first, then the
   * operator's, then (after a key change) the repartition topic named after Grouped or the store.
   */
  protected build<A>(prefix: string, named: Named | undefined, materialized: Materialized<K, A> | undefined, valueSerde: Serde<A> | undefined, supplier: (store: string, old: OldValues) => ProcessorSupplier<K, V, Windowed<K>, Change<A>>): KTable<Windowed<K>, A> {
    const { builder, nodeName, repartitionRequired, repartitionName } = this.source
    const b = builder.internal
    const storeName = materialized?.storeName ?? b.newStoreName(prefix)
    const name = named?.name ?? b.newProcessorName(prefix)
    const parent = repartitionRequired ? createRepartitionedSource(builder, nodeName, repartitionName ?? storeName, this.source.keySerde, this.source.valueSerde) : nodeName
    const keySerde = lazySerde(materialized?.keySerde ?? this.source.keySerde, builder.defaults, true) as Serde<K>
    // Built before the processor is added, so a too-short retention leaves the topology untouched (Java checks it first too).
    const store = this.storeBuilder(storeName, keySerde, lazySerde(materialized?.valueSerde ?? valueSerde, builder.defaults, false), materialized)
    const old: OldValues = { enabled: false }
    b.topology.addProcessor(name, supplier(storeName, old), [parent])
    applyLogging(store, materialized)
    b.topology.addStateStore(store, [name])
    const table = new KTable<Windowed<K>, A>(builder, name, this.windowedKeySerde(keySerde), materialized?.valueSerde ?? valueSerde, materialized?.storeName, old)
    registerWindowGrace(builder, name, this.grace())
    return table
  }

  /** Java burns a store name when count() gets a Materialized without one ("for compatibility"). */
  protected burnForCount(materialized: Materialized<K, number> | undefined): void {
    if (materialized !== undefined && materialized.storeName === undefined) this.source.builder.internal.newStoreName('KSTREAM-AGGREGATE-')
  }
}

/** Java's TimeWindowedKStream, for TimeWindows and SlidingWindows. */
export class TimeWindowedKStream<K, V> extends WindowedKStreamBase<K, V> {
  /** @internal */
  constructor(source: GroupedSource<K, V>, readonly windows: TimeWindows | SlidingWindows) {
    super(source)
  }

  protected windowedKeySerde(keySerde: Serde<K>): Serde<Windowed<K>> {
    return WindowedSerdes.timeWindowedSerdeFrom(keySerde, this.windowSize())
  }

  protected grace(): number {
    return this.windows.gracePeriodMs()
  }

  private windowSize(): number {
    return this.windows instanceof TimeWindows ? this.windows.size() : this.windows.timeDifferenceMs
  }

  protected storeBuilder<A>(name: string, keySerde: Serde<K>, valueSerde: Serde<A>, materialized: Materialized<K, A> | undefined): StoreBuilder {
    return timeWindowStoreBuilder(this.windows, name, keySerde, valueSerde, materialized, this.timeOrdered, this.source.builder.defaults)
  }

  private supplier<A>(init: Initializer<A>, agg: Aggregator<K, V, A>) {
    const w = this.windows
    const emit = this.emit
    return (store: string, old: OldValues) => (w instanceof TimeWindows ? timeWindowAggregate(store, w, init, agg, old, emit) : slidingWindowAggregate(store, w, init, agg, old, emit))
  }

  count(named?: NamedOrMaterialized<K, number>, materialized?: Materialized<K, number>): KTable<Windowed<K>, number> {
    const [n, m] = split(named, materialized)
    this.burnForCount(m)
    return this.build<number>('KSTREAM-AGGREGATE-', n, m, Serdes.Long(), this.supplier<number>(() => 0, (_k, _v, acc) => acc + 1))
  }

  reduce(reducer: (aggregate: V, value: V) => V, named?: NamedOrMaterialized<K, V>, materialized?: Materialized<K, V>): KTable<Windowed<K>, V> {
    const [n, m] = split(named, materialized)
    return this.build<V>('KSTREAM-REDUCE-', n, m, this.source.valueSerde, this.supplier<V>(() => null as V, reduceAggregator<K, V>(reducer)))
  }

  aggregate<A>(initializer: Initializer<A>, aggregator: Aggregator<K, V, A>, named?: NamedOrMaterialized<K, A>, materialized?: Materialized<K, A>): KTable<Windowed<K>, A> {
    const [n, m] = split(named, materialized)
    return this.build<A>('KSTREAM-AGGREGATE-', n, m, undefined, this.supplier(initializer, aggregator))
  }
}

/** Java's SessionWindowedKStream: aggregations need a Merger to combine sessions that grow together. */
export class SessionWindowedKStream<K, V> extends WindowedKStreamBase<K, V> {
  /** @internal */
  constructor(source: GroupedSource<K, V>, readonly windows: SessionWindows) {
    super(source)
  }

  protected windowedKeySerde(keySerde: Serde<K>): Serde<Windowed<K>> {
    return WindowedSerdes.sessionWindowedSerdeFrom(keySerde)
  }

  /** A session closes `gap + grace` after its end (Java's findAndVerifyWindowGrace for sessions). */
  protected grace(): number {
    return this.windows.inactivityGap() + this.windows.gracePeriodMs()
  }

  protected storeBuilder<A>(name: string, keySerde: Serde<K>, valueSerde: Serde<A>, materialized: Materialized<K, A> | undefined): StoreBuilder {
    return sessionStoreBuilder(this.windows, name, keySerde, valueSerde, materialized, this.timeOrdered, this.source.builder.defaults)
  }

  count(named?: NamedOrMaterialized<K, number>, materialized?: Materialized<K, number>): KTable<Windowed<K>, number> {
    const [n, m] = split(named, materialized)
    this.burnForCount(m)
    return this.build<number>('KSTREAM-AGGREGATE-', n, m, Serdes.Long(), (store, old) =>
      sessionWindowAggregate<K, V, number>(store, this.windows, () => 0, (_k, _v, acc) => acc + 1, (_k, a, b) => a + b, old, this.emit))
  }

  reduce(reducer: (aggregate: V, value: V) => V, named?: NamedOrMaterialized<K, V>, materialized?: Materialized<K, V>): KTable<Windowed<K>, V> {
    const [n, m] = split(named, materialized)
    const agg = reduceAggregator<K, V>(reducer)
    return this.build<V>('KSTREAM-REDUCE-', n, m, this.source.valueSerde, (store, old) =>
      sessionWindowAggregate<K, V, V>(store, this.windows, () => null as V, agg, (k, a, b) => agg(k, b, a), old, this.emit))
  }

  aggregate<A>(initializer: Initializer<A>, aggregator: Aggregator<K, V, A>, sessionMerger: Merger<K, A>, named?: NamedOrMaterialized<K, A>, materialized?: Materialized<K, A>): KTable<Windowed<K>, A> {
    const [n, m] = split(named, materialized)
    return this.build<A>('KSTREAM-AGGREGATE-', n, m, undefined, (store, old) => sessionWindowAggregate(store, this.windows, initializer, aggregator, sessionMerger, old, this.emit))
  }
}

/** Materialized's logging choice on a store builder (changelog on by default, with the user's topic configs). */
export function applyLogging(store: StoreBuilder, materialized: Materialized<any, any> | undefined): StoreBuilder {
  if (materialized && !materialized.loggingEnabled) store.withLoggingDisabled()
  else store.withLoggingEnabled({ ...(materialized?.logConfig ?? {}) })
  return store
}

/**
 * Java's WindowStoreMaterializer / SlidingWindowStoreMaterializer (also for cogroup): retention
 * defaults to size + grace (2 * difference + grace for sliding windows, which look back that
 * far) and may not be set below that.
 */
export function timeWindowStoreBuilder<K, A>(w: TimeWindows | SlidingWindows, name: string, keySerde: Serde<K>, valueSerde: Serde<A>, materialized: Materialized<K, A> | undefined, timeOrdered: boolean, defaults: DslDefaults): StoreBuilder {
  const retentionMs = materialized?.retentionMs
  const minimum = w instanceof TimeWindows ? w.size() + w.gracePeriodMs() : 2 * w.timeDifferenceMs + w.gracePeriodMs()
  const retention = retentionMs ?? minimum
  if (retention < minimum) {
    throw new RangeError(w instanceof TimeWindows
      ? `The retention period of the window store ${name} must be no smaller than its window size plus the grace period. Got size=[${w.size()}], grace=[${w.gracePeriodMs()}], retention=[${retention}]`
      : `The retention period of the window store ${name} must be no smaller than 2 * time difference plus the grace period. Got time difference=[${w.timeDifferenceMs}], grace=[${w.gracePeriodMs()}], retention=[${retention}]`)
  }
  const size = w instanceof TimeWindows ? w.size() : w.timeDifferenceMs
  const b = WindowStores.timestampedWindowStoreBuilder(dslWindowSupplier(materialized, name, retention, size, defaults, timeOrdered), keySerde, valueSerde)
  // Java's WindowStoreMaterializer caches emit-on-close time windows too; SlidingWindowStoreMaterializer does not.
  return materialized?.cachingEnabled !== false && (w instanceof TimeWindows || !timeOrdered) ? b.withCachingEnabled() : b
}

/** Java's SessionStoreMaterializer (also for cogroup): retention defaults to gap + grace and may not be set below that. */
export function sessionStoreBuilder<K, A>(w: SessionWindows, name: string, keySerde: Serde<K>, valueSerde: Serde<A>, materialized: Materialized<K, A> | undefined, timeOrdered: boolean, defaults: DslDefaults): StoreBuilder {
  const retentionMs = materialized?.retentionMs
  const retention = retentionMs ?? w.inactivityGap() + w.gracePeriodMs()
  if (retention < w.inactivityGap() + w.gracePeriodMs()) {
    throw new RangeError(`The retention period of the session store ${name} must be no smaller than the session inactivity gap plus the grace period. Got gap=[${w.inactivityGap()}], grace=[${w.gracePeriodMs()}], retention=[${retention}]`)
  }
  const b = SessionStores.sessionStoreBuilder(dslSessionSupplier(materialized, name, retention, defaults, timeOrdered), keySerde, valueSerde)
  // Java's SessionStoreMaterializer: no cache for emit-on-close sessions.
  return materialized?.cachingEnabled !== false && !timeOrdered ? b.withCachingEnabled() : b
}

export function windowedBy<K, V>(source: GroupedSource<K, V>, windows: TimeWindows | SlidingWindows | SessionWindows): TimeWindowedKStream<K, V> | SessionWindowedKStream<K, V> {
  return windows instanceof SessionWindows ? new SessionWindowedKStream(source, windows) : new TimeWindowedKStream(source, windows)
}
