import type { Serde } from '@tidelog/client'
import type { StreamPartitioner, TimestampExtractor } from '../processor.js'

/**
 * The DSL's option objects, as in Java: immutable, built from static factories and with*
 * methods, each returning a new object.
 */
export class Named {
  private constructor(readonly name: string | undefined) {}
  static as(name: string): Named {
    if (!name) throw new TypeError('name cannot be empty')
    return new Named(name)
  }
  /** @internal */
  static none = new Named(undefined)
}

export class Consumed<K, V> {
  private constructor(
    readonly keySerde?: Serde<K>,
    readonly valueSerde?: Serde<V>,
    readonly timestampExtractor?: TimestampExtractor,
    readonly name?: string,
  ) {}
  static with<K, V>(keySerde?: Serde<K>, valueSerde?: Serde<V>): Consumed<K, V> {
    return new Consumed(keySerde, valueSerde)
  }
  static as<K, V>(name: string): Consumed<K, V> {
    return new Consumed<K, V>(undefined, undefined, undefined, name)
  }
  withKeySerde<NK>(s: Serde<NK>): Consumed<NK, V> {
    return new Consumed(s, this.valueSerde, this.timestampExtractor, this.name)
  }
  withValueSerde<NV>(s: Serde<NV>): Consumed<K, NV> {
    return new Consumed(this.keySerde, s, this.timestampExtractor, this.name)
  }
  withTimestampExtractor(e: TimestampExtractor): Consumed<K, V> {
    return new Consumed(this.keySerde, this.valueSerde, e, this.name)
  }
  withName(name: string): Consumed<K, V> {
    return new Consumed(this.keySerde, this.valueSerde, this.timestampExtractor, name)
  }
}

export class Produced<K, V> {
  private constructor(
    readonly keySerde?: Serde<K>,
    readonly valueSerde?: Serde<V>,
    readonly partitioner?: StreamPartitioner<K, V>,
    readonly name?: string,
  ) {}
  static with<K, V>(keySerde?: Serde<K>, valueSerde?: Serde<V>, partitioner?: StreamPartitioner<K, V>): Produced<K, V> {
    return new Produced(keySerde, valueSerde, partitioner)
  }
  static as<K, V>(name: string): Produced<K, V> {
    return new Produced<K, V>(undefined, undefined, undefined, name)
  }
  withKeySerde(s: Serde<K>): Produced<K, V> {
    return new Produced(s, this.valueSerde, this.partitioner, this.name)
  }
  withValueSerde(s: Serde<V>): Produced<K, V> {
    return new Produced(this.keySerde, s, this.partitioner, this.name)
  }
  withStreamPartitioner(p: StreamPartitioner<K, V>): Produced<K, V> {
    return new Produced(this.keySerde, this.valueSerde, p, this.name)
  }
  withName(name: string): Produced<K, V> {
    return new Produced(this.keySerde, this.valueSerde, this.partitioner, name)
  }
}

/** How a re-keyed stream is grouped: the serdes of its repartition topic and that topic's name. */
export class Grouped<K, V> {
  private constructor(
    readonly keySerde?: Serde<K>,
    readonly valueSerde?: Serde<V>,
    readonly name?: string,
  ) {}
  static with<K, V>(keySerde?: Serde<K>, valueSerde?: Serde<V>): Grouped<K, V> {
    return new Grouped(keySerde, valueSerde)
  }
  static as<K, V>(name: string): Grouped<K, V> {
    return new Grouped<K, V>(undefined, undefined, name)
  }
  withKeySerde<NK>(s: Serde<NK>): Grouped<NK, V> {
    return new Grouped(s, this.valueSerde, this.name)
  }
  withValueSerde<NV>(s: Serde<NV>): Grouped<K, NV> {
    return new Grouped(this.keySerde, s, this.name)
  }
  withName(name: string): Grouped<K, V> {
    return new Grouped(this.keySerde, this.valueSerde, name)
  }
}

export class Repartitioned<K, V> {
  private constructor(
    readonly keySerde?: Serde<K>,
    readonly valueSerde?: Serde<V>,
    readonly name?: string,
    readonly numberOfPartitions?: number,
    readonly partitioner?: StreamPartitioner<K, V>,
  ) {}
  static with<K, V>(keySerde?: Serde<K>, valueSerde?: Serde<V>): Repartitioned<K, V> {
    return new Repartitioned(keySerde, valueSerde)
  }
  static as<K, V>(name: string): Repartitioned<K, V> {
    return new Repartitioned<K, V>(undefined, undefined, name)
  }
  static numberOfPartitions<K, V>(n: number): Repartitioned<K, V> {
    return new Repartitioned<K, V>(undefined, undefined, undefined, n)
  }
  withKeySerde(s: Serde<K>): Repartitioned<K, V> {
    return new Repartitioned(s, this.valueSerde, this.name, this.numberOfPartitions, this.partitioner)
  }
  withValueSerde(s: Serde<V>): Repartitioned<K, V> {
    return new Repartitioned(this.keySerde, s, this.name, this.numberOfPartitions, this.partitioner)
  }
  withName(name: string): Repartitioned<K, V> {
    return new Repartitioned(this.keySerde, this.valueSerde, name, this.numberOfPartitions, this.partitioner)
  }
  withNumberOfPartitions(n: number): Repartitioned<K, V> {
    if (!Number.isInteger(n) || n < 1) throw new RangeError(`number of partitions must be a positive integer (got ${n})`)
    return new Repartitioned(this.keySerde, this.valueSerde, this.name, n, this.partitioner)
  }
  withStreamPartitioner(p: StreamPartitioner<K, V>): Repartitioned<K, V> {
    return new Repartitioned(this.keySerde, this.valueSerde, this.name, this.numberOfPartitions, p)
  }
}

/** Which built-in engine a DSL store uses (Java's BuiltInDslStoreSuppliers: ROCKS_DB, IN_MEMORY; KIP-954). */
export type DslStoreType = 'persistent' | 'in-memory'

/** Anything with a store name that Materialized.as accepts (Java's Key-Value/Window/SessionBytesStoreSupplier). */
export interface NamedStoreSupplier {
  readonly name: string
}

interface MaterializedFields {
  storeName?: string
  storeSupplier?: NamedStoreSupplier
  storeType?: DslStoreType
  keySerde?: Serde<any>
  valueSerde?: Serde<any>
  loggingEnabled: boolean
  logConfig: Readonly<Record<string, string>>
  cachingEnabled: boolean
  retentionMs?: number
}

/**
 * Where a KTable's state lives, as Java's Materialized: a name or a store supplier, serdes,
 * logging and caching (both on by default). Without a supplier or store type the engine is the
 * application's `default.dsl.store`.
 */
export class Materialized<K, V> {
  private constructor(private readonly f: MaterializedFields) {}

  get storeName(): string | undefined {
    return this.f.storeSupplier?.name ?? this.f.storeName
  }
  get storeSupplier(): NamedStoreSupplier | undefined {
    return this.f.storeSupplier
  }
  get storeType(): DslStoreType | undefined {
    return this.f.storeType
  }
  get keySerde(): Serde<K> | undefined {
    return this.f.keySerde
  }
  get valueSerde(): Serde<V> | undefined {
    return this.f.valueSerde
  }
  get loggingEnabled(): boolean {
    return this.f.loggingEnabled
  }
  get logConfig(): Readonly<Record<string, string>> {
    return this.f.logConfig
  }
  get cachingEnabled(): boolean {
    return this.f.cachingEnabled
  }
  /** Window and session stores only (Java's Materialized#withRetention); undefined: size (or gap) + grace. */
  get retentionMs(): number | undefined {
    return this.f.retentionMs
  }

  /** A store name, or a supplier (Stores.persistentKeyValueStore(name), WindowStores..., SessionStores...) whose name and engine are used. */
  static as<K, V>(storeNameOrSupplier: string | NamedStoreSupplier): Materialized<K, V> {
    if (typeof storeNameOrSupplier === 'string') {
      if (!storeNameOrSupplier) throw new TypeError('store name cannot be empty')
      return new Materialized<K, V>({ ...DEFAULTS, storeName: storeNameOrSupplier })
    }
    if (!storeNameOrSupplier?.name) throw new TypeError('supplier cannot be null and must name its store')
    return new Materialized<K, V>({ ...DEFAULTS, storeSupplier: storeNameOrSupplier })
  }
  static with<K, V>(keySerde?: Serde<K>, valueSerde?: Serde<V>): Materialized<K, V> {
    return new Materialized<K, V>({ ...DEFAULTS, keySerde, valueSerde })
  }
  withKeySerde<NK>(s: Serde<NK>): Materialized<NK, V> {
    return new Materialized<NK, V>({ ...this.f, keySerde: s })
  }
  withValueSerde<NV>(s: Serde<NV>): Materialized<K, NV> {
    return new Materialized<K, NV>({ ...this.f, valueSerde: s })
  }
  withLoggingEnabled(config: Record<string, string> = {}): Materialized<K, V> {
    return new Materialized<K, V>({ ...this.f, loggingEnabled: true, logConfig: { ...config } })
  }
  withLoggingDisabled(): Materialized<K, V> {
    return new Materialized<K, V>({ ...this.f, loggingEnabled: false, logConfig: {} })
  }
  /** Java's default: on. A cache only holds updates back when statestore.cache.max.bytes > 0 (see the README on which operations cache). */
  withCachingEnabled(): Materialized<K, V> {
    return new Materialized<K, V>({ ...this.f, cachingEnabled: true })
  }
  withCachingDisabled(): Materialized<K, V> {
    return new Materialized<K, V>({ ...this.f, cachingEnabled: false })
  }
  /** Java's Materialized#withStoreType (KIP-591); a supplier given to as() wins. */
  withStoreType(type: DslStoreType): Materialized<K, V> {
    if (type !== 'persistent' && type !== 'in-memory') throw new TypeError(`unknown store type ${String(type)}: 'persistent' or 'in-memory'`)
    return new Materialized<K, V>({ ...this.f, storeType: type })
  }
  withRetention(retentionMs: number): Materialized<K, V> {
    if (!Number.isSafeInteger(retentionMs)) throw new TypeError(`retention must be an integer number of milliseconds (got ${retentionMs})`)
    if (retentionMs < 0) throw new RangeError('Retention must not be negative.')
    return new Materialized<K, V>({ ...this.f, retentionMs })
  }
}

const DEFAULTS: MaterializedFields = { loggingEnabled: true, logConfig: {}, cachingEnabled: true }

export class Branched<K, V> {
  private constructor(
    readonly name?: string,
    readonly chain?: (stream: any) => any,
    readonly consume?: boolean,
  ) {}
  static as<K, V>(name: string): Branched<K, V> {
    return new Branched<K, V>(name)
  }
  /** The branch goes to `fn` and is not in the returned map (unless named, as in Java: then it maps to null). */
  static withConsumer<K, V>(fn: (stream: any) => void, name?: string): Branched<K, V> {
    return new Branched<K, V>(name, fn, true)
  }
  /** The branch goes through `fn`, whose result is what the returned map holds. */
  static withFunction<K, V>(fn: (stream: any) => any, name?: string): Branched<K, V> {
    return new Branched<K, V>(name, fn, false)
  }
}
