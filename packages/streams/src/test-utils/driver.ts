import type { Deserializer, Serializer } from '@tidelog/client'
import { NoSuchElementError } from './errors.js'
import { StreamsException } from '../errors.js'
import { TaskId } from '../processor.js'
import type { Headers } from '../record.js'
import { deserializeSync, MeteredKeyValueStore, serializeSync, type KeyValue, type KeyValueStore, type StateStore, type ValueAndTimestamp } from '../store.js'
import { RecordQueue, StreamTask, type RawRecord } from '../internal/task.js'
import type { StreamsConfig } from '../config.js'
import type { Topology } from '../topology.js'
import { InMemoryWindowStore, windowValuesOnly, type WindowStore } from '../windows/window-store.js'
import { InMemorySessionStore, type SessionStore } from '../windows/session-store.js'
import { WINDOWED_AGGREGATION_EMIT_INTERVAL } from '../windows/emit-strategy.js'
import { PersistentSessionStore } from '../state/persistent-session.js'
import { PersistentWindowStore } from '../state/persistent-window.js'
import { ThreadCache } from '../state/cache.js'
import { isVersionedStore, type VersionedKeyValueStore } from '../state/versioned.js'

/** A record as the test driver's topics take and give it (kafka-streams-test-utils' TestRecord). */
export interface TestRecord<K, V> {
  key: K | null
  value: V | null
  timestamp: number
  headers: Headers
}

interface Produced {
  topic: string
  key: Buffer | null
  value: Buffer | null
  timestamp: number
  headers: Headers
}

const DEFAULT_APP_ID = 'dummy-topology-test-driver-app-id'
const OUTER_JOIN_EMIT_INTERVAL = '__emit.interval.ms.kstreams.outer.join.spurious.results.fix__'

/**
 * Runs a topology without a broker (Java's TopologyTestDriver): the whole topology is one task
 * 0_0 on partition 0 of every topic. After each input record it punctuates on stream time,
 * commits, and feeds records written to repartition topics back in, as Java's driver does, so
 * every KTable update is an output record (no caching).
 */
export class TopologyTestDriver {
  private readonly task: StreamTask
  /** The global stores' task (GlobalKTable), fed before the main task sees anything, as Java's global state. */
  private readonly globalTask: StreamTask | undefined
  private readonly applicationId: string
  private readonly produced: Produced[] = []
  private readonly outputs = new Map<string, RecordQueue<Produced>>()
  private readonly offsets = new Map<string, number>()
  private readonly inputTopics: Set<string>
  private wallClock: number
  private closed = false
  private readonly cache: ThreadCache | undefined

  constructor(private readonly topology: Topology, config: StreamsConfig = {}, initialWallClockTimeMs: number = Date.now()) {
    this.applicationId = config['application.id'] ?? DEFAULT_APP_ID
    this.wallClock = initialWallClockTimeMs
    if (config['default.key.serde'] && !topology.defaults.key) topology.defaults.key = config['default.key.serde']
    if (config['default.value.serde'] && !topology.defaults.value) topology.defaults.value = config['default.value.serde']
    topology.defaults.dslStore = config['default.dsl.store']
    const internal = topology.internal
    const globalNodes = new Set([...internal.nodeGroups().values()].filter((g) => internal.isGlobalGroup(g)).flat())
    const bytes = config['statestore.cache.max.bytes'] ?? 0
    // Java's driver has one thread cache too, and commits (flushes it) after every record.
    this.cache = bytes > 0 ? new ThreadCache(bytes) : undefined
    const taskConfig = {
      applicationId: this.applicationId,
      ...(topology.defaults.key ? { defaultKeySerde: topology.defaults.key } : {}),
      ...(topology.defaults.value ? { defaultValueSerde: topology.defaults.value } : {}),
      wallClock: () => this.wallClock,
    }
    this.globalTask = globalNodes.size === 0 ? undefined : new StreamTask(new TaskId(-1, 0), internal, [...globalNodes], taskConfig, { send: () => {} })
    this.task = new StreamTask(new TaskId(0, 0), internal, [...internal.nodes.keys()].filter((n) => !globalNodes.has(n)), {
      ...(this.globalTask ? { globalStores: this.globalTask.stores } : {}),
      applicationId: this.applicationId,
      ...(topology.defaults.key ? { defaultKeySerde: topology.defaults.key } : {}),
      ...(topology.defaults.value ? { defaultValueSerde: topology.defaults.value } : {}),
      partitionsFor: () => 1,
      wallClock: () => this.wallClock,
      ...(this.cache ? { cache: this.cache } : {}),
      ...(config['default.deserialization.exception.handler'] ? { deserializationExceptionHandler: config['default.deserialization.exception.handler'] } : {}),
      ...(config['default.production.exception.handler'] ? { productionExceptionHandler: config['default.production.exception.handler'] } : {}),
      // As Java's driver: outer joins look for closed windows on every record, not once a second of wall-clock time.
      appConfigs: { [OUTER_JOIN_EMIT_INTERVAL]: 0, [WINDOWED_AGGREGATION_EMIT_INTERVAL]: 0, ...config },
    }, { send: (r) => this.produced.push({ topic: r.topic, key: r.key, value: r.value, timestamp: r.timestamp, headers: r.headers }) })
    this.inputTopics = new Set([...this.task.sourceTopics(), ...(this.globalTask?.sourceTopics() ?? [])])
  }

  createInputTopic<K, V>(topic: string, keySerializer: Serializer<K>, valueSerializer: Serializer<V>, startTimestampMs: number = Date.now(), autoAdvanceMs = 0): TestInputTopic<K, V> {
    return new TestInputTopic(this, topic, keySerializer, valueSerializer, startTimestampMs, autoAdvanceMs)
  }

  createOutputTopic<K, V>(topic: string, keyDeserializer: Deserializer<K>, valueDeserializer: Deserializer<V>): TestOutputTopic<K, V> {
    return new TestOutputTopic(this, topic, keyDeserializer, valueDeserializer)
  }

  /** @internal */
  pipeRecord(topic: string, key: Buffer | null, value: Buffer | null, timestamp: number, headers: Headers): void {
    this.checkOpen()
    if (!this.inputTopics.has(topic)) throw new StreamsException(`Unknown topic: ${topic}`)
    if (this.globalTask && this.topology.internal.globalTopics.has(topic)) {
      this.globalTask.addRecord({ topic, key, value, timestamp, headers, partition: 0, offset: this.nextOffset(topic) })
      while (this.globalTask.process());
      return
    }
    this.enqueue({ topic, key, value, timestamp, headers })
    this.completeAllProcessableWork()
  }

  /** @internal */
  readOutput(topic: string): Produced | undefined {
    const q = this.outputs.get(topic)
    if (q === undefined) throw new NoSuchElementError(`Uninitialized topic: ${topic}`)
    return q.length === 0 ? undefined : q.take()
  }

  /** @internal */
  queueSize(topic: string): number {
    return this.outputs.get(topic)?.length ?? 0
  }

  /** Moves the mock wall clock and runs due WALL_CLOCK_TIME punctuators. */
  advanceWallClockTime(advanceMs: number): void {
    this.checkOpen()
    if (advanceMs < 0) throw new RangeError('advance must be positive')
    this.wallClock += advanceMs
    this.task.maybePunctuateSystemTime()
    this.commit()
    this.completeAllProcessableWork()
  }

  getStateStore(name: string): StateStore | undefined {
    return this.findStore(name)
  }

  private findStore(name: string): StateStore | undefined {
    return this.task.stores.get(name) ?? this.globalTask?.stores.get(name)
  }

  private nextOffset(topic: string): number {
    const offset = this.offsets.get(topic) ?? 0
    this.offsets.set(topic, offset + 1)
    return offset
  }

  /** A plain key-value view; for a timestamped store (the DSL's) it returns the values alone, as Java's driver does. */
  getKeyValueStore<K, V>(name: string): KeyValueStore<K, V> | undefined {
    const s = this.findStore(name)
    if (!(s instanceof MeteredKeyValueStore)) return undefined
    return s.timestamped ? valuesOnly<K, V>(s as MeteredKeyValueStore<K, ValueAndTimestamp<V>>) : (s as KeyValueStore<K, V>)
  }

  getTimestampedKeyValueStore<K, V>(name: string): KeyValueStore<K, ValueAndTimestamp<V>> | undefined {
    const s = this.findStore(name)
    return s instanceof MeteredKeyValueStore && s.timestamped ? (s as KeyValueStore<K, ValueAndTimestamp<V>>) : undefined
  }

  /** Java's getVersionedKeyValueStore: a versioned store (KIP-889), read with get(key) / get(key, asOfTimestamp). */
  getVersionedKeyValueStore<K, V>(name: string): VersionedKeyValueStore<K, V> | undefined {
    const s = this.findStore(name)
    return isVersionedStore<K, V>(s) ? s : undefined
  }

  /** A window store; for a timestamped one (the DSL's) the values alone, as Java's driver. */
  getWindowStore<K, V>(name: string): ReturnType<typeof windowValuesOnly<K, V>> | WindowStore<K, V> | undefined {
    const s = this.task.stores.get(name)
    if (!(s instanceof InMemoryWindowStore || s instanceof PersistentWindowStore)) return undefined
    return s.timestamped ? windowValuesOnly<K, V>(s as InMemoryWindowStore<K, ValueAndTimestamp<V>>) : (s as WindowStore<K, V>)
  }

  getTimestampedWindowStore<K, V>(name: string): WindowStore<K, ValueAndTimestamp<V>> | undefined {
    const s = this.task.stores.get(name)
    return (s instanceof InMemoryWindowStore || s instanceof PersistentWindowStore) && s.timestamped ? (s as WindowStore<K, ValueAndTimestamp<V>>) : undefined
  }

  getSessionStore<K, V>(name: string): SessionStore<K, V> | undefined {
    const s = this.task.stores.get(name)
    return s instanceof InMemorySessionStore || s instanceof PersistentSessionStore ? (s as SessionStore<K, V>) : undefined
  }

  /** The task's metrics Java's driver exposes that we keep: dropped-records-total (late, null-key and skipped records). */
  metrics(): { name: string; group: string; tags: { [k: string]: string }; value: number }[] {
    return [{ name: 'dropped-records-total', group: 'stream-task-metrics', tags: { 'thread-id': 'main', 'task-id': this.task.id.toString() }, value: this.task.droppedRecords }]
  }

  /** Every topic the topology wrote to, including repartition and changelog topics. */
  producedTopicNames(): string[] {
    return [...this.outputs.keys()]
  }

  close(): void {
    if (this.closed) return
    this.closed = true
    this.task.close()
    this.globalTask?.close()
  }

  private checkOpen(): void {
    if (this.closed) throw new StreamsException('TopologyTestDriver is closed')
  }

  private enqueue(r: Omit<RawRecord, 'partition' | 'offset'>): void {
    const offset = this.offsets.get(r.topic) ?? 0
    this.offsets.set(r.topic, offset + 1)
    this.task.addRecord({ ...r, partition: 0, offset })
  }

  private completeAllProcessableWork(): void {
    this.capture()
    while (this.task.hasRecordsQueued()) {
      this.task.process()
      this.task.maybePunctuateStreamTime()
      this.commit()
      this.capture()
    }
  }

  /** Java's driver commits after each record and wall-clock step: with a record cache, that flushes (and forwards) what it held. */
  private commit(): void {
    if (this.cache !== undefined) for (const s of this.task.stores.values()) s.flush()
  }

  /** Java's captureOutputsAndReEnqueueInternalResults: outputs in send order; those to a source topic go back in. */
  private capture(): void {
    const batch = this.produced.splice(0)
    for (const r of batch) {
      let q = this.outputs.get(r.topic)
      if (q === undefined) {
        q = new RecordQueue<Produced>()
        this.outputs.set(r.topic, q)
      }
      q.push(r)
      if (this.inputTopics.has(r.topic)) this.enqueue(r)
    }
  }
}

function valuesOnly<K, V>(s: MeteredKeyValueStore<K, ValueAndTimestamp<V>>): KeyValueStore<K, V> {
  const strip = (kvs: KeyValue<K, ValueAndTimestamp<V>>[]) => kvs.map((e) => ({ key: e.key, value: e.value.value }))
  const now = () => 0
  return {
    name: s.name,
    persistent: s.persistent,
    init: (c) => s.init(c),
    flush: () => s.flush(),
    close: () => s.close(),
    isOpen: () => s.isOpen(),
    get: (k) => s.get(k)?.value,
    put: (k, v) => s.put(k, v === null ? null : { value: v, timestamp: now() }),
    putIfAbsent: (k, v) => s.putIfAbsent(k, { value: v, timestamp: now() })?.value,
    putAll: (es) => { for (const e of es) s.put(e.key, e.value === null ? null : { value: e.value, timestamp: now() }) },
    delete: (k) => s.delete(k)?.value,
    range: (a, b) => strip(s.range(a, b)),
    reverseRange: (a, b) => strip(s.reverseRange(a, b)),
    all: () => strip(s.all()),
    reverseAll: () => strip(s.reverseAll()),
    approximateNumEntries: () => s.approximateNumEntries(),
  }
}

export class TestInputTopic<K, V> {
  private currentTime: number

  /** @internal */
  constructor(
    private readonly driver: TopologyTestDriver,
    readonly topic: string,
    private readonly keySerializer: Serializer<K>,
    private readonly valueSerializer: Serializer<V>,
    startTimestampMs: number,
    private readonly autoAdvanceMs: number,
  ) {
    if (autoAdvanceMs < 0) throw new RangeError('autoAdvance must be positive')
    this.currentTime = startTimestampMs
  }

  /** pipeInput(value), pipeInput(key, value) or pipeInput(key, value, timestamp), as Java's overloads. */
  pipeInput(...args: [V | null] | [K | null, V | null] | [K | null, V | null, number]): void {
    if (args.length === 1) this.pipe(null, args[0] as V | null, undefined, [])
    else this.pipe(args[0] as K | null, args[1] as V | null, args[2], [])
  }

  pipeRecord(record: Partial<TestRecord<K, V>>): void {
    this.pipe(record.key ?? null, record.value ?? null, record.timestamp, record.headers ?? [])
  }

  pipeKeyValueList(list: readonly { key: K | null; value: V | null }[]): void {
    for (const kv of list) this.pipe(kv.key, kv.value, undefined, [])
  }

  pipeValueList(values: readonly (V | null)[]): void {
    for (const v of values) this.pipe(null, v, undefined, [])
  }

  advanceTime(ms: number): void {
    if (ms < 0) throw new RangeError('advance must be positive')
    this.currentTime += ms
  }

  private pipe(key: K | null, value: V | null, timestamp: number | undefined, headers: Headers): void {
    let ts = timestamp
    if (ts === undefined) {
      ts = this.currentTime
      this.currentTime += this.autoAdvanceMs
    }
    const k = key === null || key === undefined ? null : serializeSync(this.keySerializer as never, key, true, this.topic)
    const v = value === null || value === undefined ? null : serializeSync(this.valueSerializer as never, value, false, this.topic)
    this.driver.pipeRecord(this.topic, k, v, ts, headers)
  }
}

export class TestOutputTopic<K, V> {
  /** @internal */
  constructor(
    private readonly driver: TopologyTestDriver,
    readonly topic: string,
    private readonly keyDeserializer: Deserializer<K>,
    private readonly valueDeserializer: Deserializer<V>,
  ) {}

  readRecord(): TestRecord<K, V> {
    const r = this.driver.readOutput(this.topic)
    if (r === undefined) throw new NoSuchElementError(`Empty topic: ${this.topic}`)
    return {
      key: r.key === null ? null : deserializeSync(this.keyDeserializer as never, r.key, true, this.topic),
      value: r.value === null ? null : deserializeSync(this.valueDeserializer as never, r.value, false, this.topic),
      timestamp: r.timestamp,
      headers: r.headers,
    }
  }

  readValue(): V | null {
    return this.readRecord().value
  }

  readKeyValue(): { key: K | null; value: V | null } {
    const r = this.readRecord()
    return { key: r.key, value: r.value }
  }

  readRecordsToList(): TestRecord<K, V>[] {
    const out: TestRecord<K, V>[] = []
    while (!this.isEmpty()) out.push(this.readRecord())
    return out
  }

  readKeyValuesToList(): { key: K | null; value: V | null }[] {
    return this.readRecordsToList().map((r) => ({ key: r.key, value: r.value }))
  }

  readValuesToList(): (V | null)[] {
    return this.readRecordsToList().map((r) => r.value)
  }

  /** The last value per key, in first-seen key order (Java's readKeyValuesToMap; a null value removes the key). */
  readKeyValuesToMap(): Map<K | null, V | null> {
    const out = new Map<K | null, V | null>()
    for (const r of this.readRecordsToList()) {
      if (r.key === null) throw new StreamsException('Null keys are not allowed with readKeyValuesToMap')
      if (r.value === null) out.delete(r.key)
      else out.set(r.key, r.value)
    }
    return out
  }

  getQueueSize(): number {
    return this.driver.queueSize(this.topic)
  }

  isEmpty(): boolean {
    return this.getQueueSize() === 0
  }
}
