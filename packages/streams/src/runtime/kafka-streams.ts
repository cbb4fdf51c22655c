import { Admin } from '@tidelog/client'
import { Consumer } from '@tidelog/consumer'
import { Producer, SendError, type ProducerRecord } from '@tidelog/producer'
import { productionResponse, type StreamsConfig } from '../config.js'
import { StreamsException } from '../errors.js'
import { TaskId } from '../processor.js'
import { InMemoryKeyValueStore } from '../store.js'
import { StreamTask, type RecordCollector } from '../internal/task.js'
import type { Topology } from '../topology.js'
import { createInternalTopics, planInternalTopics } from './internal-topics.js'
import { StateMachine, type KafkaStreamsState, type StateListener } from './state.js'
import { enforceCopartitioning } from './copartition.js'
import { GlobalStateThread } from './global-thread.js'
import { sinkPartitionCounts } from './partition-counts.js'
import { queryStore, type StoreQueryParameters } from '../queries/stores.js'
import { StreamsMetadataState, hostAdvertisingAssignor, type KeyQueryMetadata, type StreamsMetadata } from '../queries/metadata.js'
import type { Serializer } from '../serdes.js'

interface TopicPartition {
  topic: string
  partition: number
}

/**
 * Runs a topology against a cluster (Java's KafkaStreams), at_least_once: one consumer in the
 * group `application.id` reads every source topic (the range assignor gives partition p of
 * co-partitioned topics to one member, so a sub-topology's partition p is one task `<sub>_<p>`);
 * one producer writes sinks, repartition topics and changelogs. Each commit first waits for
 * everything sent, then commits the offsets after the last processed records, so a crash
 * re-processes (never loses) what was not committed. Stores are restored from their
 * changelogs when a task is created. One stream thread (num.stream.threads > 1 is not
 * implemented yet).
 */
export class KafkaStreams {
  private readonly machine = new StateMachine()
  private readonly applicationId: string
  private readonly brokers: string[]
  private readonly commitIntervalMs: number
  private readonly admin: Admin
  private readonly producer: Producer
  private readonly consumer: Consumer
  private readonly tasks = new Map<string, StreamTask>()
  /** Next offset to commit per input partition, as `topic:partition`. */
  private readonly processed = new Map<string, TopicPartition & { offset: bigint }>()
  private readonly pending = new Set<Promise<unknown>>()
  private sendError: unknown
  private loop: Promise<void> | undefined
  private timer: NodeJS.Timeout | undefined
  private committing: Promise<void> | undefined
  private readonly abort = new AbortController()
  private topicToSub = new Map<string, number>()
  private groups = new Map<number, string[]>()
  private failure: unknown
  /** GlobalKTables' stores, restored in start() before any task processes (Java's GlobalStreamThread). */
  private global: GlobalStateThread | undefined
  /** Who holds which partition, for interactive queries (Java's StreamsMetadataState). */
  private readonly metadataState: StreamsMetadataState
  /** Partition counts for sinks with a StreamPartitioner (see partition-counts.ts). */
  private sinkPartitions = new Map<string, number>()

  constructor(private readonly topology: Topology, private readonly config: StreamsConfig) {
    const appId = config['application.id']
    if (!appId) throw new StreamsException('Missing required configuration "application.id" which has no default value.')
    const servers = config['bootstrap.servers']
    if (!servers || servers.length === 0) throw new StreamsException('Missing required configuration "bootstrap.servers" which has no default value.')
    if ((config['processing.guarantee'] ?? 'at_least_once') !== 'at_least_once') throw new StreamsException(`processing.guarantee ${config['processing.guarantee']} is not implemented yet (at_least_once only)`)
    if ((config['num.stream.threads'] ?? 1) !== 1) throw new StreamsException('num.stream.threads other than 1 is not implemented yet')
    this.applicationId = appId
    this.brokers = typeof servers === 'string' ? servers.split(',').map((s) => s.trim()) : [...servers]
    this.commitIntervalMs = config['commit.interval.ms'] ?? 30_000
    if (config['default.key.serde'] && !topology.defaults.key) topology.defaults.key = config['default.key.serde']
    if (config['default.value.serde'] && !topology.defaults.value) topology.defaults.value = config['default.value.serde']
    this.admin = new Admin({ brokers: this.brokers, clientId: `${appId}-admin` })
    this.producer = new Producer({ brokers: this.brokers, clientId: `${appId}-producer` })
    this.consumer = new Consumer({
      brokers: this.brokers,
      clientId: `${appId}-consumer`,
      groupId: appId,
      autoOffsetReset: 'earliest',
      autoCommit: false,
      // Range, with application.server in the subscription userData for interactive queries.
      assignors: [hostAdvertisingAssignor(config['application.server'])],
    })
    this.metadataState = new StreamsMetadataState(topology.internal, appId, config['application.server'])
  }

  get state(): KafkaStreamsState {
    return this.machine.state
  }

  setStateListener(listener: StateListener): void {
    this.machine.listener = listener
  }

  /** The error that moved the instance to ERROR, if any. */
  get error(): unknown {
    return this.failure
  }

  /** Creates the internal topics, joins the group and starts processing (resolves once subscribed). */
  async start(): Promise<void> {
    if (this.state !== 'CREATED') throw new StreamsException(`KafkaStreams is not in CREATED state (it is ${this.state}): start() can only be called once`)
    this.machine.must('REBALANCING')
    try {
      const internal = this.topology.internal
      this.groups = internal.nodeGroups()
      for (const [id, names] of this.groups) {
        if (internal.isGlobalGroup(names)) continue
        for (const n of names) {
          const f = internal.nodes.get(n)!
          if (f.kind === 'source') for (const t of f.topics) this.topicToSub.set(internal.decorate(t, this.applicationId), id)
        }
      }
      await enforceCopartitioning(internal, this.admin)
      const plan = await planInternalTopics(internal, this.applicationId, this.admin)
      await createInternalTopics(this.admin, plan.topics, this.config['replication.factor'])
      this.sinkPartitions = await sinkPartitionCounts(internal, this.admin, plan.topics)
      await this.startGlobal()
      await this.consumer.subscribe([...this.topicToSub.keys()], {
        listener: {
          onPartitionsAssigned: (tps) => this.assigned(tps),
          onPartitionsRevoked: (tps) => this.revoked(tps, true),
          onPartitionsLost: (tps) => this.revoked(tps, false),
        },
      })
    } catch (e) {
      this.fail(e)
      throw e
    }
    this.loop = this.run()
    this.timer = setInterval(() => void this.tick(), Math.min(this.commitIntervalMs, 100))
  }

  /** Commits what was processed and leaves the group; resolves when everything is closed. */
  async close(options: { timeoutMs?: number } = {}): Promise<void> {
    if (this.state === 'NOT_RUNNING' || this.state === 'ERROR') return
    if (this.state === 'PENDING_SHUTDOWN') return this.loop?.then(() => undefined)
    const failed = this.state === 'PENDING_ERROR'
    if (!failed) this.machine.must('PENDING_SHUTDOWN')
    clearInterval(this.timer)
    this.abort.abort()
    await this.loop?.catch(() => {})
    try {
      if (!failed) await this.commit()
    } finally {
      await this.consumer.close({ timeoutMs: options.timeoutMs ?? 30_000 }).catch(() => {})
      await this.producer.close({ timeoutMs: options.timeoutMs ?? 30_000 }).catch(() => {})
      await this.admin.close().catch(() => {})
      for (const t of this.tasks.values()) t.close()
      this.tasks.clear()
      await this.global?.close()
      this.machine.to(failed ? 'ERROR' : 'NOT_RUNNING')
    }
  }

  private async run(): Promise<void> {
    try {
      for await (const batch of this.consumer.batches({ signal: this.abort.signal })) {
        const task = this.taskFor(batch.topic, batch.partition)
        for (const m of batch.messages) {
          task.addRecord({
            topic: m.topic,
            partition: m.partition,
            offset: Number(m.offset),
            key: m.key === null ? null : Buffer.from(m.key),
            value: m.value === null ? null : Buffer.from(m.value),
            timestamp: Number(m.timestamp),
            headers: m.headers.map((h) => ({ key: h.key, value: h.value === null ? null : Buffer.from(h.value) })),
          })
        }
        while (task.process()) task.maybePunctuateStreamTime()
        this.drainOutbox()
        const last = batch.messages[batch.messages.length - 1]
        if (last) this.processed.set(`${batch.topic}:${batch.partition}`, { topic: batch.topic, partition: batch.partition, offset: last.offset + 1n })
        if (this.sendError) throw this.sendError
        // ProcessorContext.commit(): honoured right after the batch that asked for it.
        if (task.commitRequested) {
          task.commitRequested = false
          await this.commit()
        }
      }
    } catch (e) {
      if (!this.abort.signal.aborted) this.fail(e)
    }
  }

  /** Wall-clock punctuation and the commit interval, between batches (JS runs one at a time). */
  private lastCommit = Date.now()
  private async tick(): Promise<void> {
    if (this.state !== 'RUNNING' && this.state !== 'REBALANCING') return
    try {
      for (const t of this.tasks.values()) t.maybePunctuateSystemTime()
      this.drainOutbox()
      if (Date.now() - this.lastCommit >= this.commitIntervalMs) await this.commit()
    } catch (e) {
      this.fail(e)
    }
  }

  /** Waits for every send, then commits the processed offsets (at_least_once). */
  private commit(only?: (tp: TopicPartition) => boolean): Promise<void> {
    const run = async () => {
      this.lastCommit = Date.now()
      this.drainOutbox()
      await this.producer.flush()
      await Promise.allSettled([...this.pending])
      if (this.sendError) throw this.sendError
      const offsets = [...this.processed.values()].filter((o) => only === undefined || only(o))
      if (offsets.length === 0) return
      await this.consumer.commit(offsets)
      for (const o of offsets) if (this.processed.get(`${o.topic}:${o.partition}`) === o) this.processed.delete(`${o.topic}:${o.partition}`)
    }
    const next = (this.committing ?? Promise.resolve()).then(run, run)
    this.committing = next.catch(() => {})
    return next
  }

  /** Records the tasks produced since the last hand-over to the producer, in send order. */
  private outbox: ProducerRecord[] = []

  private collector(_task: TaskId): RecordCollector {
    return {
      send: (r) => {
        this.outbox.push({
          topic: r.topic,
          key: r.key,
          value: r.value,
          headers: r.headers.map((h) => ({ key: h.key, value: h.value })),
          timestamp: r.timestamp,
          ...(r.partition === undefined ? {} : { partition: r.partition }),
        })
      },
    }
  }

  /**
   * Hands what the tasks produced to the producer in one send(records) (one promise per batch,
   * not per record); a record that failed goes through the production exception handler.
   */
  private drainOutbox(): void {
    if (this.outbox.length === 0) return
    const records = this.outbox
    this.outbox = []
    const p = this.producer.send(records)
    this.pending.add(p)
    p.then(() => this.pending.delete(p), (e: unknown) => {
      this.pending.delete(p)
      const errors: (Error | undefined)[] = e instanceof SendError ? e.errors : records.map(() => (e instanceof Error ? e : new Error(String(e))))
      errors.forEach((err, i) => {
        if (err === undefined || this.sendError) return
        const topic = records[i]!.topic
        if (productionResponse(this.config['default.production.exception.handler'], { topic }, err) === 'CONTINUE') return
        this.sendError = new StreamsException(`failed to send a record to ${topic}`, { cause: err })
      })
    })
  }

  private taskFor(topic: string, partition: number): StreamTask {
    const sub = this.topicToSub.get(topic)
    if (sub === undefined) throw new StreamsException(`no sub-topology reads ${topic}`)
    const task = this.tasks.get(`${sub}_${partition}`)
    if (task === undefined) throw new StreamsException(`task ${sub}_${partition} is not assigned here`)
    return task
  }

  private async assigned(tps: TopicPartition[]): Promise<void> {
    try {
      for (const tp of tps) {
        const sub = this.topicToSub.get(tp.topic)!
        const key = `${sub}_${tp.partition}`
        if (this.tasks.has(key)) continue
        const id = new TaskId(sub, tp.partition)
        const task = new StreamTask(id, this.topology.internal, this.groups.get(sub)!, {
          applicationId: this.applicationId,
          ...(this.topology.defaults.key ? { defaultKeySerde: this.topology.defaults.key } : {}),
          ...(this.topology.defaults.value ? { defaultValueSerde: this.topology.defaults.value } : {}),
          wallClock: Date.now,
          partitionsFor: (topic) => this.sinkPartitions.get(topic),
          ...(this.global ? { globalStores: this.global.stores } : {}),
          ...(this.config['default.deserialization.exception.handler'] ? { deserializationExceptionHandler: this.config['default.deserialization.exception.handler'] } : {}),
          ...(this.config['default.production.exception.handler'] ? { productionExceptionHandler: this.config['default.production.exception.handler'] } : {}),
        }, this.collector(id))
        this.tasks.set(key, task)
        await this.restore(task)
      }
      await this.metadataState.refresh(this.admin).catch(() => this.metadataState.invalidate())
      this.machine.to('RUNNING')
    } catch (e) {
      this.fail(e)
      throw e
    }
  }

  private async revoked(tps: TopicPartition[], commit: boolean): Promise<void> {
    this.machine.to('REBALANCING')
    this.metadataState.invalidate()
    const gone = new Set(tps.map((tp) => `${tp.topic}:${tp.partition}`))
    if (commit) await this.commit((o) => gone.has(`${o.topic}:${o.partition}`))
    for (const k of gone) this.processed.delete(k)
    const subs = new Set(tps.map((tp) => `${this.topicToSub.get(tp.topic)}_${tp.partition}`))
    for (const k of subs) {
      this.tasks.get(k)?.close()
      this.tasks.delete(k)
    }
  }

  /** Reads each logged store's changelog partition from the start to its end (Java's restoration). */
  private async restore(task: StreamTask): Promise<void> {
    for (const [name, store] of task.stores) {
      if (!(store instanceof InMemoryKeyValueStore) || !this.topology.internal.stores.get(name)!.builder.loggingEnabled) continue
      const tp = { topic: `${this.applicationId}-${name}-changelog`, partition: task.id.partition }
      const [end] = await this.consumer.endOffsets([tp])
      if (end === undefined || end.offset === 0n) continue
      const reader = new Consumer({ brokers: this.brokers, clientId: `${this.applicationId}-restore-consumer`, autoOffsetReset: 'earliest' })
      try {
        reader.assign([tp])
        // By batch position, not record offset: compaction leaves gaps in a changelog.
        for await (const batch of reader.batches()) {
          for (const m of batch.messages) store.restore(Buffer.from(m.key!), m.value === null ? null : Buffer.from(m.value))
          if (batch.nextOffset >= end.offset) break
        }
      } finally {
        await reader.close()
      }
    }
  }

  /**
   * Java's KafkaStreams#store: a read-only view of this instance's stores of that name (see
   * queries/stores.ts); InvalidStateStoreException while not RUNNING (restoring, rebalancing).
   */
  store<T>(params: StoreQueryParameters<T>): T {
    return queryStore(this.localStores(), params)
  }

  /** Java's queryMetadataForKey: the instance (its application.server) and partition holding `key` in `storeName`; null for an unknown store. */
  queryMetadataForKey<K>(storeName: string, key: K, keySerializer: Serializer<K>): KeyQueryMetadata | null {
    return this.metadataState.keyQueryMetadata(storeName, key, keySerializer)
  }

  /** Java's metadataForAllStreamsClients: every instance of the application, from the last assignment. */
  metadataForAllStreamsClients(): StreamsMetadata[] {
    return this.metadataState.allMetadata()
  }

  private localStores() {
    const streams = this
    const internal = this.topology.internal
    return {
      get state() {
        return streams.state
      },
      knowsStore: (name: string) => internal.stores.has(name),
      storesNamed: (name: string) => {
        const out = [...this.tasks.values()].flatMap((t) => {
          const s = t.stores.get(name)
          return s === undefined ? [] : [{ partition: t.id.partition, store: s }]
        })
        const g = this.global?.stores.get(name)
        if (g !== undefined && this.global!.restored) out.push({ partition: -1, store: g })
        return out
      },
    }
  }

  private async startGlobal(): Promise<void> {
    const internal = this.topology.internal
    const nodes = [...this.groups.values()].filter((g) => internal.isGlobalGroup(g)).flat()
    if (nodes.length === 0) return
    this.global = new GlobalStateThread(internal, nodes, {
      applicationId: this.applicationId,
      ...(this.topology.defaults.key ? { defaultKeySerde: this.topology.defaults.key } : {}),
      ...(this.topology.defaults.value ? { defaultValueSerde: this.topology.defaults.value } : {}),
      wallClock: Date.now,
    }, this.brokers, this.applicationId, (e) => this.fail(e))
    await this.global.start(this.admin)
  }

  private fail(e: unknown): void {
    this.failure ??= e
    if (this.machine.to('PENDING_ERROR')) void this.close()
  }
}
