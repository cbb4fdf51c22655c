import type { Serde } from '@tidelog/client'
import { InternalTopologyBuilder } from './internal/builder.js'
import { TopologyDescription } from './internal/describe.js'
import type { ProcessorSupplier, StreamPartitioner, TimestampExtractor, TopicNameExtractor } from './processor.js'
import type { StoreBuilder } from './store.js'

export interface SourceOptions {
  keySerde?: Serde<any>
  valueSerde?: Serde<any>
  timestampExtractor?: TimestampExtractor
}

export interface SinkOptions<K = any, V = any> {
  keySerde?: Serde<K>
  valueSerde?: Serde<V>
  partitioner?: StreamPartitioner<K, V>
}

/**
 * The Processor API's topology (Java's org.apache.kafka.streams.Topology): named sources,
 * processors and sinks, and the state stores connected to processors. StreamsBuilder.build()
 * returns one too.
 */
/** The application's default serdes (default.key.serde / default.value.serde), filled when the topology runs. */
export interface DefaultSerdes {
  key?: Serde<any>
  value?: Serde<any>
  /** default.dsl.store of the run (read when a task builds its stores). */
  dslStore?: 'rocksDB' | 'in_memory'
}

export class Topology {
  /** @internal */
  readonly internal: InternalTopologyBuilder
  /** @internal Shared with the DSL's stores, which resolve their serdes from it at first use. */
  defaults: DefaultSerdes = {}

  constructor(internal: InternalTopologyBuilder = new InternalTopologyBuilder()) {
    this.internal = internal
  }

  addSource(name: string, topics: string | readonly string[], options: SourceOptions = {}): this {
    this.internal.addSource({ name, topics: typeof topics === 'string' ? [topics] : [...topics], ...options })
    return this
  }

  addProcessor<KIn, VIn, KOut, VOut>(name: string, supplier: ProcessorSupplier<KIn, VIn, KOut, VOut>, ...parentNames: string[]): this {
    this.internal.addProcessor(name, supplier, parentNames)
    return this
  }

  addSink<K, V>(name: string, topic: string | TopicNameExtractor<K, V>, ...rest: [SinkOptions<K, V>, ...string[]] | string[]): this {
    const [first, ...others] = rest
    const options = typeof first === 'object' ? first : {}
    const parents = (typeof first === 'object' ? others : rest) as string[]
    this.internal.addSink(
      { name, ...(typeof topic === 'string' ? { topic } : { extractor: topic }), ...(options as SinkOptions) },
      parents,
    )
    return this
  }

  addStateStore(builder: StoreBuilder, ...processorNames: string[]): this {
    this.internal.addStateStore(builder, processorNames)
    return this
  }

  connectProcessorAndStateStores(processorName: string, ...storeNames: string[]): this {
    for (const s of storeNames) this.internal.connect(processorName, s)
    return this
  }

  describe(): TopologyDescription {
    return new TopologyDescription(this.internal)
  }
}
