import type { Serde } from '@tidelog/client'
import { StreamsException } from '../errors.js'
import { PunctuationType, TaskId, type Cancellable, type Processor, type ProcessorContext, type Punctuator } from '../processor.js'
import { Record, type Headers, type RecordMetadata } from '../record.js'
import { deserializeSync, serializeSync, type StateStore, type StateStoreContext } from '../store.js'
import type { InternalTopologyBuilder, NodeFactory, SinkNode, SourceNode } from './builder.js'
import { PunctuationQueue } from './punctuation.js'
import type { ThreadCache } from '../state/cache.js'
import { deserializationResponse, productionResponse, type DeserializationExceptionHandler, type ProductionExceptionHandler } from '../config.js'

/** A record as it arrives from (or goes to) a topic: bytes, not yet deserialized. */
export interface RawRecord {
  topic: string
  partition: number
  offset: number
  key: Buffer | null
  value: Buffer | null
  timestamp: number
  headers: Headers
}

/** Where sinks and change-logging stores write (a producer in the runtime, a list in the test driver). */
export interface RecordCollector {
  send(record: { topic: string; key: Buffer | null; value: Buffer | null; timestamp: number; headers: Headers; partition?: number }): void
}

export interface TaskConfig {
  applicationId: string
  defaultKeySerde?: Serde<unknown>
  defaultValueSerde?: Serde<unknown>
  /** Partition count of an output topic (for StreamPartitioner); undefined = let the producer choose. */
  partitionsFor?: (topic: string) => number | undefined
  wallClock: () => number
  deserializationExceptionHandler?: DeserializationExceptionHandler
  productionExceptionHandler?: ProductionExceptionHandler
  /** Global stores (GlobalKTable), which every processor may read without being connected to them. */
  globalStores?: ReadonlyMap<string, StateStore>
  /** Records skipped by a handler answering CONTINUE (Java's dropped-records metric). */
  onDropped?: (reason: 'deserialization' | 'serialization', error: unknown) => void
  /** What ProcessorContext#appConfigs returns (Java's application configs, internal ones included). */
  appConfigs?: Readonly<{ [key: string]: unknown }>
  /** The task's directory, where persistent stores live (undefined: they use temporary ones). */
  stateDir?: string
  /** The stream thread's record cache (statestore.cache.max.bytes). */
  cache?: ThreadCache
}

/** A FIFO with O(1) take (Array.shift is linear, and a fetched batch can hold many thousands of records). */
export class RecordQueue<T = RawRecord> {
  private items: T[] = []
  private head = 0

  get length(): number {
    return this.items.length - this.head
  }

  peek(): T | undefined {
    return this.items[this.head]
  }

  push(r: T): void {
    this.items.push(r)
  }

  take(): T {
    const r = this.items[this.head++]!
    if (this.head === this.items.length) {
      this.items = []
      this.head = 0
    } else if (this.head > 4096 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head)
      this.head = 0
    }
    return r
  }
}

interface Instance {
  factory: NodeFactory
  children: Instance[]
  processor?: Processor<any, any, any, any>
  context?: ProcessorContext<any, any>
}

/**
 * A stream task (Java's StreamTask): one instance of a set of nodes with its own processors,
 * stores, stream time and punctuation queues. Records wait in one FIFO per topic-partition; the
 * next record processed is the head with the smallest timestamp (Java's PartitionGroup).
 */
export class StreamTask {
  readonly stores = new Map<string, StateStore>()
  private readonly instances = new Map<string, Instance>()
  private readonly queues = new Map<string, RecordQueue>()
  /** The source node of each input topic, resolved on first use (the lookup decorates every source's topics). */
  private readonly sources = new Map<string, Instance>()
  private readonly streamQueue = new PunctuationQueue()
  private readonly wallQueue = new PunctuationQueue()
  private streamTime = -1
  private current: RecordMetadata | undefined
  private currentTimestamp = 0
  commitRequested = false
  /** Records skipped by processors or exception handlers (Java's dropped-records-total of the task). */
  droppedRecords = 0
  /** Java's ProcessorMetadata: committed with the task's offsets (see state/processor-metadata.ts). */
  readonly processorMetadata = new Map<string, number>()
  /** Set when a processor asked for it: the runtime then loads it from the committed offsets. */
  readsProcessorMetadata = false

  constructor(
    readonly id: TaskId,
    private readonly builder: InternalTopologyBuilder,
    nodeNames: readonly string[],
    private readonly config: TaskConfig,
    private readonly collector: RecordCollector,
  ) {
    const names = new Set(nodeNames)
    for (const name of names) this.instances.set(name, { factory: builder.nodes.get(name)!, children: [] })
    for (const inst of this.instances.values()) {
      for (const p of inst.factory.predecessors) this.instances.get(p)?.children.push(inst)
    }
    const storeContext: StateStoreContext = {
      applicationId: config.applicationId,
      taskId: id,
      logChange: (store, key, value, timestamp) => {
        collector.send({ topic: `${config.applicationId}-${store}-changelog`, key, value, timestamp, headers: [], partition: id.partition })
      },
      currentTimestamp: () => this.currentTimestamp,
      recordDropped: () => { this.droppedRecords++ },
      ...(config.stateDir === undefined ? {} : { stateDir: config.stateDir }),
      ...(config.cache === undefined ? {} : { cache: config.cache }),
      recordContext: () => ({ timestamp: this.currentTimestamp, offset: this.current?.offset ?? -1, partition: this.current?.partition ?? -1, topic: this.current?.topic ?? '', headers: [] }),
    }
    for (const [name, entry] of builder.stores) {
      if (![...entry.processors].some((p) => names.has(p))) continue
      const store = entry.builder.build()
      store.init(storeContext)
      this.stores.set(name, store)
    }
    for (const inst of this.instances.values()) {
      if (inst.factory.kind !== 'processor') continue
      inst.processor = inst.factory.supplier()
      inst.context = this.contextFor(inst)
    }
    for (const inst of this.instances.values()) inst.processor?.init?.(inst.context!)
  }

  /** The source topics this task reads (undecorated names for internal topics are decorated). */
  sourceTopics(): string[] {
    const out: string[] = []
    for (const inst of this.instances.values()) {
      if (inst.factory.kind === 'source') for (const t of inst.factory.topics) out.push(this.builder.decorate(t, this.config.applicationId))
    }
    return out
  }

  addRecord(r: RawRecord): void {
    this.queueOf(r.topic, r.partition).push(r)
  }

  /** The partition's FIFO, which the stream thread fills a fetched batch at a time (one lookup per batch, not per record). */
  queueOf(topic: string, partition: number): RecordQueue {
    const k = `${topic}\u0000${partition}`
    let q = this.queues.get(k)
    if (q === undefined) {
      q = new RecordQueue()
      this.queues.set(k, q)
    }
    return q
  }

  hasRecordsQueued(): boolean {
    for (const q of this.queues.values()) if (q.length > 0) return true
    return false
  }

  /** Processes the next record; false when every queue is empty. */
  process(): boolean {
    let best: RecordQueue | undefined
    for (const q of this.queues.values()) {
      if (q.length > 0 && (best === undefined || q.peek()!.timestamp < best.peek()!.timestamp)) best = q
    }
    if (best === undefined) return false
    const raw = best.take()
    const source = this.sourceFor(raw.topic)
    const f = source.factory as SourceNode
    let key: unknown
    let value: unknown
    try {
      key = raw.key === null ? null : deserializeSync(this.serde(f.keySerde, true, source.factory.name), raw.key, true, raw.topic)
      value = raw.value === null ? null : deserializeSync(this.serde(f.valueSerde, false, source.factory.name), raw.value, false, raw.topic)
    } catch (e) {
      if (deserializationResponse(this.config.deserializationExceptionHandler, raw, e) === 'CONTINUE') {
        this.droppedRecords++
        this.config.onDropped?.('deserialization', e)
        return true
      }
      throw new StreamsException(`Deserialization exception handler is set to fail upon a deserialization error (record ${raw.topic}-${raw.partition}@${raw.offset}). If you would rather have the streaming pipeline continue after a deserialization error, please set the default.deserialization.exception.handler appropriately.`, { cause: e })
    }
    const timestamp = f.timestampExtractor
      ? f.timestampExtractor({ ...raw, key, value }, this.streamTime)
      : raw.timestamp
    if (timestamp < 0) {
      throw new StreamsException(`Input record ${raw.topic}-${raw.partition}@${raw.offset} has invalid (negative) timestamp ${timestamp}; Kafka Streams' default FailOnInvalidTimestamp stops here`)
    }
    if (timestamp > this.streamTime) this.streamTime = timestamp
    this.current = { topic: raw.topic, partition: raw.partition, offset: raw.offset }
    try {
      this.deliverToChildren(source, new Record(key, value, timestamp, raw.headers), undefined)
    } finally {
      this.current = undefined
    }
    return true
  }

  maybePunctuateStreamTime(): boolean {
    if (this.streamTime < 0) return false
    return this.streamQueue.mayPunctuate(this.streamTime, (n, t, p) => this.punctuate(n, t, p))
  }

  maybePunctuateSystemTime(): boolean {
    return this.wallQueue.mayPunctuate(this.config.wallClock(), (n, t, p) => this.punctuate(n, t, p))
  }

  currentStreamTime(): number {
    return this.streamTime
  }

  close(): void {
    for (const inst of this.instances.values()) inst.processor?.close?.()
    for (const s of this.stores.values()) s.close()
  }

  private punctuate(node: string, timestamp: number, punctuator: Punctuator): void {
    this.current = undefined
    this.currentTimestamp = timestamp
    punctuator(timestamp)
  }

  private sourceFor(topic: string): Instance {
    const known = this.sources.get(topic)
    if (known !== undefined) return known
    for (const inst of this.instances.values()) {
      if (inst.factory.kind === 'source' && inst.factory.topics.some((t) => this.builder.decorate(t, this.config.applicationId) === topic)) {
        this.sources.set(topic, inst)
        return inst
      }
    }
    throw new StreamsException(`Task ${this.id} has no source for topic ${topic}`)
  }

  private serde(s: Serde<unknown> | undefined, isKey: boolean, node: string): Serde<unknown> {
    const out = s ?? (isKey ? this.config.defaultKeySerde : this.config.defaultValueSerde)
    if (out === undefined) {
      throw new StreamsException(`Failed to configure ${isKey ? 'key' : 'value'} serde for ${node}: please specify a ${isKey ? 'key' : 'value'} serde or set one through StreamsConfig#DEFAULT_${isKey ? 'KEY' : 'VALUE'}_SERDE_CLASS_CONFIG`)
    }
    return out
  }

  private deliverToChildren(from: Instance, record: Record<unknown, unknown>, childName: string | undefined): void {
    if (childName !== undefined) {
      const child = from.children.find((c) => c.factory.name === childName)
      if (child === undefined) throw new StreamsException(`Unknown downstream node: ${childName} either does not exist or is not connected to this processor.`)
      this.deliver(child, record)
      return
    }
    for (const child of from.children) this.deliver(child, record)
  }

  private deliver(node: Instance, record: Record<unknown, unknown>): void {
    const previous = this.currentTimestamp
    this.currentTimestamp = record.timestamp
    try {
      if (node.factory.kind === 'sink') this.sink(node.factory, record)
      else node.processor!.process(record)
    } finally {
      this.currentTimestamp = previous
    }
  }

  private sink(f: SinkNode, record: Record<unknown, unknown>): void {
    const topic = f.topic !== undefined
      ? this.builder.decorate(f.topic, this.config.applicationId)
      : f.extractor!(record.key, record.value, { ...this.current, timestamp: record.timestamp })
    let key: Buffer | null
    let value: Buffer | null
    try {
      key = record.key === null || record.key === undefined ? null : serializeSync(this.serde(f.keySerde, true, f.name), record.key, true, topic)
      value = record.value === null || record.value === undefined ? null : serializeSync(this.serde(f.valueSerde, false, f.name), record.value, false, topic)
    } catch (e) {
      if (productionResponse(this.config.productionExceptionHandler, { topic }, e) === 'CONTINUE') {
        this.droppedRecords++
        this.config.onDropped?.('serialization', e)
        return
      }
      throw new StreamsException(`Error serializing a record for topic ${topic} in sink ${f.name}; the production exception handler is set to fail`, { cause: e })
    }
    let partition: number | undefined
    if (f.partitioner) {
      const n = this.config.partitionsFor?.(topic)
      if (n !== undefined) partition = f.partitioner(topic, record.key, record.value, n)
    }
    this.collector.send({ topic, key, value, timestamp: record.timestamp, headers: record.headers, ...(partition === undefined ? {} : { partition }) })
  }

  private contextFor(inst: Instance): ProcessorContext<any, any> {
    const task = this
    return {
      applicationId: this.config.applicationId,
      taskId: this.id,
      recordMetadata: () => task.current,
      forward: (record, childName) => task.deliverToChildren(inst, record, childName),
      getStateStore: <S extends StateStore>(name: string): S => {
        const f = inst.factory
        const global = task.config.globalStores?.get(name)
        if (global !== undefined && !(f.kind === 'processor' && f.stores.includes(name))) return global as S
        if (f.kind !== 'processor' || !f.stores.includes(name)) {
          throw new StreamsException(`Processor ${f.name} has no access to StateStore ${name} as the store is not connected to the processor. If you add stores manually via '.addStateStore()' make sure to connect the added store to the processor by providing the processor name to '.addStateStore()' or connect them via '.connectProcessorAndStateStores()'.`)
        }
        return task.stores.get(name) as S
      },
      schedule: (interval: number, type, punctuator): Cancellable => {
        if (type === PunctuationType.STREAM_TIME) return task.streamQueue.schedule(inst.factory.name, 0, interval, punctuator)
        return task.wallQueue.schedule(inst.factory.name, task.config.wallClock() + interval, interval, punctuator)
      },
      currentStreamTimeMs: () => task.streamTime,
      currentSystemTimeMs: () => task.config.wallClock(),
      commit: () => { task.commitRequested = true },
      recordDropped: () => { task.droppedRecords++ },
      processorMetadataForKey: (key) => {
        task.readsProcessorMetadata = true
        return task.processorMetadata.get(key)
      },
      addProcessorMetadataKeyValue: (key, value) => { task.processorMetadata.set(key, value) },
      appConfigs: () => task.config.appConfigs ?? {},
    }
  }
}
