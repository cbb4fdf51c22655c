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

/**
 * Where a KTable's state lives. Only in-memory key-value stores exist so far (persistent ones are
 * not implemented), and record caches are not implemented: every update is forwarded, as
 * Java does with caching off (statestore.cache.max.bytes=0).
 */
export class Materialized<K, V> {
  private constructor(
    readonly storeName?: string,
    readonly keySerde?: Serde<K>,
    readonly valueSerde?: Serde<V>,
    readonly loggingEnabled: boolean = true,
    readonly logConfig: Readonly<Record<string, string>> = {},
    /** Window and session stores only (Java's Materialized#withRetention); undefined: size (or gap) + grace. */
    readonly retentionMs?: number,
  ) {}
  static as<K, V>(storeName: string): Materialized<K, V> {
    if (!storeName) throw new TypeError('store name cannot be empty')
    return new Materialized<K, V>(storeName)
  }
  static with<K, V>(keySerde?: Serde<K>, valueSerde?: Serde<V>): Materialized<K, V> {
    return new Materialized(undefined, keySerde, valueSerde)
  }
  withKeySerde<NK>(s: Serde<NK>): Materialized<NK, V> {
    return new Materialized(this.storeName, s, this.valueSerde, this.loggingEnabled, this.logConfig, this.retentionMs)
  }
  withValueSerde<NV>(s: Serde<NV>): Materialized<K, NV> {
    return new Materialized(this.storeName, this.keySerde, s, this.loggingEnabled, this.logConfig, this.retentionMs)
  }
  withLoggingEnabled(config: Record<string, string> = {}): Materialized<K, V> {
    return new Materialized(this.storeName, this.keySerde, this.valueSerde, true, { ...config }, this.retentionMs)
  }
  withLoggingDisabled(): Materialized<K, V> {
    return new Materialized(this.storeName, this.keySerde, this.valueSerde, false, {}, this.retentionMs)
  }
  withRetention(retentionMs: number): Materialized<K, V> {
    if (!Number.isSafeInteger(retentionMs)) throw new TypeError(`retention must be an integer number of milliseconds (got ${retentionMs})`)
    if (retentionMs < 0) throw new RangeError('Retention must not be negative.')
    return new Materialized(this.storeName, this.keySerde, this.valueSerde, this.loggingEnabled, this.logConfig, retentionMs)
  }
}

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
