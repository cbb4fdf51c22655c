import type { Serde } from '@tidelog/client'
import { StreamsException } from '../errors.js'
import type { ProcessorSupplier, TopicNameExtractor } from '../processor.js'
import { KGroupedStream } from './kgrouped-stream.js'
import { Branched, Grouped, Named, Produced, Repartitioned } from './options.js'
import { ops, type KeyValuePair } from './processors.js'
import type { StreamsBuilder } from './streams-builder.js'
import { joinStreams, StreamJoined, type ValueJoiner } from './stream-stream-join.js'
import type { JoinWindows } from '../windows/windows.js'
import type { KTable } from './ktable.js'
import { GlobalKTable, joinGlobal } from './global-ktable.js'
import { joinStreamTable, type Joined, type StreamJoiner } from './stream-table-join.js'

/**
 * Adds the repartition topic after a key change (Java's createRepartitionedSource): a filter,
 * a sink to `<name>-repartition` and a source reading it back. The three generated names are
 * always drawn (Java burns them "for compatibility"), but used only when the topic's name is
 * itself generated; a user-given name yields `<topic>-sink`, `-filter`, `-source`.
 */
export function createRepartitionedSource(builder: StreamsBuilder, parent: string, prefix: string, keySerde: Serde<any> | undefined, valueSerde: Serde<any> | undefined, options: { numberOfPartitions?: number; partitioner?: Repartitioned<any, any>['partitioner'] } = {}): string {
  const topic = prefix.endsWith('-repartition') ? prefix : `${prefix}-repartition`
  const b = builder.internal
  const genSink = b.newProcessorName('KSTREAM-SINK-')
  const genFilter = b.newProcessorName('KSTREAM-FILTER-')
  const genSource = b.newProcessorName('KSTREAM-SOURCE-')
  const generated = /^KSTREAM.*-[0-9]{10}$/.test(prefix)
  const sink = generated ? genSink : `${topic}-sink`
  const filter = generated ? genFilter : `${topic}-filter`
  const source = generated ? genSource : `${topic}-source`
  b.topology.addInternalTopic({ name: topic, kind: 'repartition', ...(options.numberOfPartitions ? { numberOfPartitions: options.numberOfPartitions } : {}) })
  // Records with a null key cannot be partitioned by key: Kafka Streams 4.4 drops them here
  // (a null-key record piped into the golden merge topology never reaches the output).
  b.topology.addProcessor(filter, ops.filter((k) => k !== null && k !== undefined, false), [parent])
  b.topology.addSink({ name: sink, topic, ...(keySerde ? { keySerde } : {}), ...(valueSerde ? { valueSerde } : {}), ...(options.partitioner ? { partitioner: options.partitioner } : {}) }, [filter])
  b.topology.addSource({ name: source, topics: [topic], ...(keySerde ? { keySerde } : {}), ...(valueSerde ? { valueSerde } : {}) })
  return source
}

/** A record stream (Java's KStream). Every operation adds named nodes to the builder's topology. */
export class KStream<K, V> {
  /** @internal */
  constructor(
    readonly builder: StreamsBuilder,
    /** @internal The node this stream's records come out of. */
    readonly nodeName: string,
    readonly keySerde: Serde<K> | undefined,
    readonly valueSerde: Serde<V> | undefined,
    /** @internal Set after a key change: grouping must go through a repartition topic. */
    readonly repartitionRequired: boolean,
  ) {}

  private add<KR, VR>(prefix: string, named: Named | undefined, supplier: ProcessorSupplier<any, any, any, any>, keySerde: Serde<KR> | undefined, valueSerde: Serde<VR> | undefined, repartition: boolean): KStream<KR, VR> {
    const name = named?.name ?? this.builder.internal.newProcessorName(prefix)
    this.builder.internal.topology.addProcessor(name, supplier, [this.nodeName])
    return new KStream<KR, VR>(this.builder, name, keySerde, valueSerde, repartition)
  }

  filter(predicate: (key: K, value: V) => boolean, named?: Named): KStream<K, V> {
    return this.add('KSTREAM-FILTER-', named, ops.filter(predicate, false), this.keySerde, this.valueSerde, this.repartitionRequired)
  }

  filterNot(predicate: (key: K, value: V) => boolean, named?: Named): KStream<K, V> {
    return this.add('KSTREAM-FILTER-', named, ops.filter(predicate, true), this.keySerde, this.valueSerde, this.repartitionRequired)
  }

  map<KR, VR>(mapper: (key: K, value: V) => KeyValuePair<KR, VR>, named?: Named): KStream<KR, VR> {
    return this.add('KSTREAM-MAP-', named, ops.map(mapper), undefined, undefined, true)
  }

  /** Java's ValueMapperWithKey order is (key, value); here the mapper gets (value, key) so `v => ...` reads naturally. */
  mapValues<VR>(mapper: (value: V, key: K) => VR, named?: Named): KStream<K, VR> {
    return this.add('KSTREAM-MAPVALUES-', named, ops.mapValues(mapper), this.keySerde, undefined, this.repartitionRequired)
  }

  flatMap<KR, VR>(mapper: (key: K, value: V) => Iterable<KeyValuePair<KR, VR>>, named?: Named): KStream<KR, VR> {
    return this.add('KSTREAM-FLATMAP-', named, ops.flatMap(mapper), undefined, undefined, true)
  }

  flatMapValues<VR>(mapper: (value: V, key: K) => Iterable<VR>, named?: Named): KStream<K, VR> {
    return this.add('KSTREAM-FLATMAPVALUES-', named, ops.flatMapValues(mapper), this.keySerde, undefined, this.repartitionRequired)
  }

  peek(action: (key: K, value: V) => void, named?: Named): KStream<K, V> {
    return this.add('KSTREAM-PEEK-', named, ops.peek(action), this.keySerde, this.valueSerde, this.repartitionRequired)
  }

  foreach(action: (key: K, value: V) => void, named?: Named): void {
    this.add('KSTREAM-FOREACH-', named, ops.foreach(action), undefined, undefined, false)
  }

  selectKey<KR>(mapper: (key: K, value: V) => KR, named?: Named): KStream<KR, V> {
    return this.add('KSTREAM-KEY-SELECT-', named, ops.selectKey(mapper), undefined, this.valueSerde, true)
  }

  /** Processor API inside the DSL (Java's KStream#process); the stores must be added to the builder first. */
  process<KR, VR>(supplier: ProcessorSupplier<K, V, KR, VR>, named?: Named, ...storeNames: string[]): KStream<KR, VR> {
    const out = this.add<KR, VR>('KSTREAM-PROCESSOR-', named, supplier, undefined, undefined, true)
    for (const s of storeNames) this.builder.internal.topology.connect(out.nodeName, s)
    return out
  }

  /**
   * Java's KStream#processValues (KIP-820): a processor that may change values but not keys, so
   * no repartition follows. A record forwarded with another key is refused with StreamsException.
   */
  processValues<VR>(supplier: ProcessorSupplier<K, V, K, VR>, named?: Named, ...storeNames: string[]): KStream<K, VR> {
    const fixedKey: ProcessorSupplier<K, V, K, VR> = () => {
      const inner = supplier()
      let key: K
      return {
        init: (ctx) => inner.init?.({
          ...ctx,
          forward: (record, childName) => {
            if (record.key !== key) throw new StreamsException(`processValues: ${String(record.key)} is not the input key ${String(key)}; use process() to change keys`)
            ctx.forward(record, childName)
          },
        }),
        process: (record) => {
          key = record.key
          inner.process(record)
        },
        close: () => inner.close?.(),
      }
    }
    const out = this.add<K, VR>('KSTREAM-PROCESSVALUES-', named, fixedKey, this.keySerde, undefined, this.repartitionRequired)
    for (const s of storeNames) this.builder.internal.topology.connect(out.nodeName, s)
    return out
  }

  merge(other: KStream<K, V>, named?: Named): KStream<K, V> {
    const name = named?.name ?? this.builder.internal.newProcessorName('KSTREAM-MERGE-')
    this.builder.internal.topology.addProcessor(name, ops.passThrough(), [this.nodeName, other.nodeName])
    return new KStream<K, V>(this.builder, name, undefined, undefined, this.repartitionRequired || other.repartitionRequired)
  }

  split(named?: Named): BranchedKStream<K, V> {
    return new BranchedKStream(this, named)
  }

  to(topic: string | TopicNameExtractor<K, V>, produced: Produced<K, V> = Produced.with<K, V>()): void {
    const name = produced.name ?? this.builder.internal.newProcessorName('KSTREAM-SINK-')
    const keySerde = produced.keySerde ?? this.keySerde
    const valueSerde = produced.valueSerde ?? this.valueSerde
    this.builder.internal.topology.addSink({
      name,
      ...(typeof topic === 'string' ? { topic } : { extractor: topic }),
      ...(keySerde ? { keySerde } : {}),
      ...(valueSerde ? { valueSerde } : {}),
      ...(produced.partitioner ? { partitioner: produced.partitioner } : {}),
    }, [this.nodeName])
  }

  /** Always through a topic `<applicationId>-<name>-repartition` (Java's KStream#repartition, KIP-221). */
  repartition(repartitioned: Repartitioned<K, V> = Repartitioned.with<K, V>()): KStream<K, V> {
    const name = repartitioned.name ?? this.builder.internal.newProcessorName('KSTREAM-REPARTITION-')
    const valueSerde = repartitioned.valueSerde ?? this.valueSerde
    const source = createRepartitionedSource(this.builder, this.nodeName, name, repartitioned.keySerde, valueSerde, {
      ...(repartitioned.numberOfPartitions ? { numberOfPartitions: repartitioned.numberOfPartitions } : {}),
      ...(repartitioned.partitioner ? { partitioner: repartitioned.partitioner } : {}),
    })
    return new KStream<K, V>(this.builder, source, repartitioned.keySerde ?? this.keySerde, valueSerde, false)
  }

  /**
   * Windowed KStream-KStream inner join (Java's KStream#join with JoinWindows; both sides
   * co-partitioned by key), KStream-KTable inner join (only stream records trigger; no match, no
   * output), or KStream-GlobalKTable join through `keyMapper` (the global table's key for each record).
   */
  join<VO, VR>(other: KStream<K, VO>, joiner: ValueJoiner<V, VO, VR, K>, windows: JoinWindows, joined?: StreamJoined<K, V, VO>): KStream<K, VR>
  join<VO, VR>(table: KTable<K, VO>, joiner: StreamJoiner<K, V, VO, VR>, joined?: Joined<K, V, VO>): KStream<K, VR>
  join<GK, GV, VR>(table: GlobalKTable<GK, GV>, keyMapper: (key: K, value: V) => GK | null | undefined, joiner: StreamJoiner<K, V, GV, VR>, named?: Named): KStream<K, VR>
  join(other: KStream<K, any> | KTable<K, any> | GlobalKTable<any, any>, a: any, b?: any, c?: any): KStream<K, any> {
    if (other instanceof KStream) return joinStreams(this, other, a, b, c ?? StreamJoined.with(), false, false)
    if (other instanceof GlobalKTable) return joinGlobal(this, other, a, b, c, false)
    return joinStreamTable(this, other, a, b, false)
  }

  /**
   * As join, but every record of this stream gives a result: with another stream, joined or with
   * a null right value once its window has closed; with a table, the table side is null when it
   * has no match.
   */
  leftJoin<VO, VR>(other: KStream<K, VO>, joiner: ValueJoiner<V, VO | null, VR, K>, windows: JoinWindows, joined?: StreamJoined<K, V, VO>): KStream<K, VR>
  leftJoin<VO, VR>(table: KTable<K, VO>, joiner: StreamJoiner<K, V, VO | null, VR>, joined?: Joined<K, V, VO>): KStream<K, VR>
  leftJoin<GK, GV, VR>(table: GlobalKTable<GK, GV>, keyMapper: (key: K, value: V) => GK | null | undefined, joiner: StreamJoiner<K, V, GV | null, VR>, named?: Named): KStream<K, VR>
  leftJoin(other: KStream<K, any> | KTable<K, any> | GlobalKTable<any, any>, a: any, b?: any, c?: any): KStream<K, any> {
    if (other instanceof KStream) return joinStreams(this, other, a, b, c ?? StreamJoined.with(), true, false)
    if (other instanceof GlobalKTable) return joinGlobal(this, other, a, b, c, true)
    return joinStreamTable(this, other, a, b, true)
  }

  /** Every record of both streams appears: joined, or with null on the missing side once its window has closed. */
  outerJoin<VO, VR>(other: KStream<K, VO>, joiner: ValueJoiner<V | null, VO | null, VR, K>, windows: JoinWindows, joined: StreamJoined<K, V, VO> = StreamJoined.with<K, V, VO>()): KStream<K, VR> {
    return joinStreams(this, other, joiner as ValueJoiner<V, VO, VR, K>, windows, joined, true, true)
  }

  groupByKey(grouped: Grouped<K, V> = Grouped.with<K, V>()): KGroupedStream<K, V> {
    return new KGroupedStream<K, V>(this.builder, this.nodeName, grouped.keySerde ?? this.keySerde, grouped.valueSerde ?? this.valueSerde, this.repartitionRequired, grouped.name)
  }

  groupBy<KR>(selector: (key: K, value: V) => KR, grouped: Grouped<KR, V> = Grouped.with<KR, V>()): KGroupedStream<KR, V> {
    const name = grouped.name ?? this.builder.internal.newProcessorName('KSTREAM-KEY-SELECT-')
    this.builder.internal.topology.addProcessor(name, ops.selectKey(selector), [this.nodeName])
    return new KGroupedStream<KR, V>(this.builder, name, grouped.keySerde, grouped.valueSerde ?? this.valueSerde, true, grouped.name)
  }
}

/** Java's BranchedKStream: split() adds the splitter now, each branch() a pass-through child named `<splitter><n>` or `<splitter><name>`. */
export class BranchedKStream<K, V> {
  private readonly splitter: string
  private readonly predicates: ((k: K, v: V) => boolean)[] = []
  private readonly children: string[] = []
  private readonly outputs: { [name: string]: KStream<K, V> } = {}

  constructor(private readonly source: KStream<K, V>, named?: Named) {
    const b = source.builder.internal
    // Kafka Streams 4.4 draws the generated name even when the split is named (its describe() shows the gap).
    const generated = b.newProcessorName('KSTREAM-BRANCH-')
    this.splitter = named?.name ?? generated
    // The predicate and child lists are shared by reference: branches added later still count.
    b.topology.addProcessor(this.splitter, ops.branch(this.predicates, this.children), [source.nodeName])
  }

  branch(predicate: (key: K, value: V) => boolean, branched?: Branched<K, V>): this {
    this.predicates.push(predicate)
    this.create(branched, this.predicates.length)
    return this
  }

  defaultBranch(branched?: Branched<K, V>): { [name: string]: KStream<K, V> } {
    this.create(branched, 0)
    return this.outputs
  }

  noDefaultBranch(): { [name: string]: KStream<K, V> } {
    return this.outputs
  }

  private create(branched: Branched<K, V> | undefined, index: number): void {
    const b = this.source.builder.internal
    const name = this.splitter + (branched?.name ?? String(index))
    this.children.push(name)
    b.newProcessorName(name)
    b.topology.addProcessor(name, ops.passThrough(), [this.splitter])
    const stream = new KStream<K, V>(this.source.builder, name, this.source.keySerde, this.source.valueSerde, this.source.repartitionRequired)
    if (branched?.chain) {
      const out = branched.chain(stream)
      if (!branched.consume && out !== null && out !== undefined) this.outputs[name] = out
    } else {
      this.outputs[name] = stream
    }
  }
}
