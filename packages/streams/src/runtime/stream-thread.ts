import { Consumer } from '@tidelog/consumer'
import { isFatalForTransactions, Producer, type ProducerRecord } from '@tidelog/producer'
import { StreamsException } from '../errors.js'
import { TaskId } from '../processor.js'
import { StreamTask, type RecordCollector } from '../internal/task.js'
import { isTaskMigrated } from './migrated.js'
import { addBatch, producerRecordOf, recordCache, sendFailure, taskIdOf } from './thread-io.js'
import { Machine, THREAD_STATE_TRANSITIONS } from './state.js'
import { changelogsOf, restoreTask } from './restore.js'
import type { ThreadEnv, ThreadMetadata, TopicPartition } from './thread-env.js'
import { StandbyTasks } from './standby.js'
import { ProbingSchedule } from './probing.js'
import { streamsAssignor } from './assignment/streams-assignor.js'
import { AssignorError, type AssignmentInfo, type SubscriptionInfo } from './assignment/codec.js'
import { ThreadCache } from '../state/cache.js'
import { decodeOffsetMetadata, encodeOffsetMetadata, mergeProcessorMetadata } from '../state/processor-metadata.js'

export type { ThreadEnv, ThreadMetadata } from './thread-env.js'

/**
 * One stream thread (Java's StreamThread): its own consumer in the application's group, its
 * own producer and its tasks. Node runs JavaScript on one event loop, so threads are
 * concurrent, not parallel: each is an independent client set whose I/O overlaps the others'.
 *
 * exactly_once_v2 (KIP-447): the producer is transactional with `transactional.id`
 * `<applicationId>-<processId>-<threadIdx>`; sinks, repartition topics and changelogs are
 * written in one transaction per commit interval, which also carries the consumed offsets with
 * the consumer's group metadata. A fencing, a stale generation or an abortable send aborts the
 * transaction and revives every task (Java's TaskManager: closed dirty, state wiped, restored
 * from the committed changelog, input rewound to the committed offsets).
 */
export class StreamThread {
  readonly name: string
  readonly machine = new Machine(THREAD_STATE_TRANSITIONS, 'CREATED', 'StreamThread')
  private readonly consumer: Consumer
  /** Java's restore consumer: reads changelogs (read_committed under EOS), assigned only while a task restores. */
  private readonly restoreConsumer: Consumer
  private producer: Producer
  private readonly tasks = new Map<string, StreamTask>()
  /** Tasks of revoked partitions, kept (committed, clean) until the next assignment says whether they stay (eager rebalancing). */
  private readonly suspended = new Map<string, StreamTask>()
  private readonly processed = new Map<string, TopicPartition & { offset: bigint }>()
  private readonly pending = new Set<Promise<unknown>>()
  private outbox: ProducerRecord[] = []
  /** For each outbox record, the task whose store wrote it to a changelog (its checkpoint position moves). */
  private outboxChangelog: (TaskId | undefined)[] = []
  private sendError: unknown
  private inTxn = false
  /** Bumped when a transaction is abandoned: errors of its sends no longer matter. */
  private txnGeneration = 0
  /** Bumped when the input is rewound: a batch fetched before then is stale. */
  private resets = 0
  private chain: Promise<unknown> = Promise.resolve()
  private active = 0
  private loop: Promise<void> | undefined
  private timer: NodeJS.Timeout | undefined
  private readonly abort = new AbortController()
  private lastCommit = Date.now()
  private lastPurge = Date.now()
  private readonly purgeable = new Map<string, TopicPartition & { offset: bigint }>()
  private dying = false
  /** Closing after an error: revocation must not commit anything. */
  private dirty = false
  private shuttingDown = false
  /** Changelog records applied while restoring, over this thread's life (tests and metrics). */
  restoredRecords = 0
  private readonly standbys: StandbyTasks
  /** The standby tasks of the assignment being applied (from its userData). */
  private standbyPlan: string[] = []
  /** Sent in the next subscription: SHUTDOWN_REQUESTED once this instance asks the application to stop. */
  private errorCode: number = AssignorError.NONE
  private shutdownRequested = false
  /** Java's ThreadCache: statestore.cache.max.bytes split evenly over the stream threads. */
  private readonly cache: ThreadCache | undefined
  commits = 0
  recoveries = 0
  /** KIP-441: when this thread triggers a probing rebalance (the leader gave it the time). */
  readonly probing = new ProbingSchedule()

  constructor(readonly index: number, private readonly env: ThreadEnv, private readonly onDeath: (thread: StreamThread, error: unknown) => void) {
    this.cache = recordCache(env.config)
    this.name = `${env.clientId}-StreamThread-${index}`
    this.machine.listener = (next, old) => env.onThreadState(this, next, old)
    this.consumer = new Consumer({
      brokers: env.brokers,
      clientId: `${this.name}-consumer`,
      groupId: env.applicationId,
      autoOffsetReset: 'earliest',
      autoCommit: false,
      assignors: [streamsAssignor(env.layout, this, env.logger, env.assignorLookups)],
      isolationLevel: env.eos ? 'read_committed' : 'read_uncommitted',
      ...(env.config['session.timeout.ms'] !== undefined ? { sessionTimeoutMs: env.config['session.timeout.ms'] } : {}),
      ...(env.config['heartbeat.interval.ms'] !== undefined ? { heartbeatIntervalMs: env.config['heartbeat.interval.ms'] } : {}),
      ...(env.config['group.instance.id'] ? { groupInstanceId: `${env.config['group.instance.id']}-${index}` } : {}),
      ...(env.logger ? { logger: env.logger } : {}),
    })
    this.restoreConsumer = new Consumer({
      brokers: env.brokers,
      clientId: `${this.name}-restore-consumer`,
      autoOffsetReset: 'earliest',
      isolationLevel: env.eos ? 'read_committed' : 'read_uncommitted',
      ...(env.logger ? { logger: env.logger } : {}),
    })
    this.producer = this.newProducer()
    this.standbys = new StandbyTasks({
      brokers: env.brokers,
      clientId: this.name,
      eos: env.eos,
      logger: env.logger,
      positionOf: (task, changelog) => env.directory.positionsOf(task.id).get(changelog),
      onApplied: (task, changelog, offset) => env.directory.advance(task.id, changelog, offset),
    })
  }

  /** This thread's subscription userData: its client, what it ran and holds (Java's SubscriptionInfo). */
  subscriptionInfo(): SubscriptionInfo {
    const sums: Record<string, string> = {}
    for (const [task, sum] of this.env.directory.offsetSums()) sums[task] = sum.toString()
    return {
      processId: this.env.processId,
      endpoint: this.env.endpoint,
      prevActive: [...new Set([...this.tasks.keys(), ...this.suspended.keys()])],
      prevStandby: this.standbys.keys(),
      offsetSums: sums,
      errorCode: this.errorCode,
      clientTags: this.env.clientTags ?? {},
    }
  }

  /** Called by the assignor before onPartitionsAssigned. */
  onAssignmentInfo(info: AssignmentInfo): void {
    this.standbyPlan = info.standby
    this.probing.onAssignment(info.nextRebalanceMs)
    if (info.errorCode === AssignorError.SHUTDOWN_REQUESTED) this.shutdownRequested = true
  }

  /** KIP-671: the next subscription carries SHUTDOWN_REQUESTED, and the thread rejoins at once to send it. */
  requestShutdown(): void {
    this.errorCode = AssignorError.SHUTDOWN_REQUESTED
    if (this.machine.state !== 'CREATED') this.consumer.enforceRebalance('the application is shutting down (SHUTDOWN_APPLICATION)')
  }

  /** Changelog records applied to this thread's standby stores. */
  get standbyRecords(): number {
    return this.standbys.records
  }

  get transactionalId(): string | undefined {
    return this.env.eos ? `${this.env.clientId}-${this.index}` : undefined
  }

  metadata(): ThreadMetadata {
    return {
      threadName: this.name,
      threadState: this.machine.state,
      activeTasks: [...this.tasks.keys()].sort(),
      standbyTasks: this.standbys.keys().sort(),
      consumerClientId: `${this.name}-consumer`,
      producerClientIds: [`${this.name}-producer`],
      transactionalId: this.transactionalId,
    }
  }

  async start(): Promise<void> {
    this.machine.must('STARTING')
    if (this.env.eos) await this.producer.initTransactions()
    await this.consumer.subscribe([...this.env.topicToSub.keys()], {
      listener: {
        onPartitionsAssigned: (tps) => this.serial(() => this.assigned(tps)),
        onPartitionsRevoked: (tps) => this.serial(() => this.revoked(tps)),
        onPartitionsLost: (tps) => this.serial(() => this.lost(tps)),
      },
    })
    this.loop = this.run()
    this.timer = setInterval(() => void this.tick(), Math.max(1, Math.min(this.env.commitIntervalMs, 100)))
  }

  /** Clean: commits, checkpoints and leaves the group. Dirty: abandons the open transaction. */
  async shutdown(clean: boolean, timeoutMs = 30_000): Promise<void> {
    if (this.shuttingDown || !this.machine.to('PENDING_SHUTDOWN')) return
    this.shuttingDown = true
    clearInterval(this.timer)
    // What a failed batch produced never leaves, not even through the revocation that closing the consumer triggers.
    if (!clean) {
      this.dirty = true
      this.outbox = []
      this.outboxChangelog = []
    }
    this.abort.abort()
    await this.loop?.catch(() => {})
    try {
      if (clean) await this.serial(() => this.commit())
    } catch (e) {
      clean = false
      this.env.logger?.warn({ err: e, thread: this.name }, 'stream thread: the final commit failed, closing dirty')
    } finally {
      if (!clean && this.inTxn) await this.producer.abortTransaction().catch(() => {})
      this.inTxn = false
      await this.consumer.close({ timeoutMs }).catch(() => {})
      await this.restoreConsumer.close().catch(() => {})
      for (const t of await this.standbys.close()) this.closeTask(t, true)
      await this.producer.close({ timeoutMs: clean ? timeoutMs : 0 }).catch(() => {})
      for (const [, t] of [...this.tasks, ...this.suspended]) this.closeTask(t, clean)
      this.tasks.clear()
      this.suspended.clear()
      this.machine.to('DEAD')
    }
  }

  /** Runs transactional work one piece at a time: commits, recoveries and rebalance steps never overlap processing. */
  private serial<T>(fn: () => Promise<T>): Promise<T> {
    this.active++
    const next = this.chain.then(fn, fn)
    this.chain = next.catch(() => {}).finally(() => this.active--)
    return next
  }

  private async idle(): Promise<void> {
    while (this.active > 0) await this.chain
  }

  private async run(): Promise<void> {
    try {
      for await (const batch of this.consumer.batches({ signal: this.abort.signal })) {
        const seen = this.resets
        await this.idle()
        if (this.resets !== seen || this.abort.signal.aborted) continue
        const task = this.taskFor(batch.topic, batch.partition)
        // Fetched before its partition was revoked: the next owner reads it from the committed offset.
        if (task === undefined) continue
        addBatch(task, batch.topic, batch.partition, batch.messages)
        while (task.process()) task.maybePunctuateStreamTime()
        this.drainOutbox()
        const last = batch.messages[batch.messages.length - 1]
        if (last) this.processed.set(`${batch.topic}:${batch.partition}`, { topic: batch.topic, partition: batch.partition, offset: last.offset + 1n })
        // ProcessorContext.commit() is honoured right after the batch that asked for it.
        if (task.commitRequested || this.sendError !== undefined || Date.now() - this.lastCommit >= this.env.commitIntervalMs) {
          task.commitRequested = false
          await this.serial(() => this.commit())
        }
      }
    } catch (e) {
      if (!this.abort.signal.aborted) this.die(e)
    }
  }

  /** Wall-clock punctuation and the commit interval while no records arrive. */
  private async tick(): Promise<void> {
    const s = this.machine.state
    if (this.active > 0 || (s !== 'RUNNING' && s !== 'PARTITIONS_ASSIGNED')) return
    try {
      if (this.probing.due(Date.now())) this.consumer.enforceRebalance('Scheduled probing rebalance (KIP-441: warm-up replicas are catching up)')
      for (const t of this.tasks.values()) t.maybePunctuateSystemTime()
      this.drainOutbox()
      if (Date.now() - this.lastCommit >= this.env.commitIntervalMs) await this.serial(() => this.commit())
    } catch (e) {
      this.die(e)
    }
  }

  private die(e: unknown): void {
    if (this.dying) return
    this.dying = true
    void this.shutdown(false).finally(() => this.onDeath(this, e))
  }

  /** Commits what was processed; under exactly_once_v2 a task-migrated error aborts and revives instead of failing. */
  private async commit(): Promise<void> {
    try {
      await (this.env.eos ? this.commitTransaction() : this.commitOffsets())
    } catch (e) {
      if (!this.env.eos || !isTaskMigrated(e)) throw e
      await this.recover(e)
      return
    }
    this.commits++
    this.maybePurge()
  }

  private committed(offsets: readonly (TopicPartition & { offset: bigint })[]): void {
    for (const o of offsets) {
      const k = `${o.topic}:${o.partition}`
      if (this.processed.get(k) === o) this.processed.delete(k)
      if (this.env.repartitionTopics.has(o.topic)) this.purgeable.set(k, o)
    }
  }

  /** at_least_once: waits for every send, then commits the offsets after the processed records. */
  private async commitOffsets(): Promise<void> {
    this.lastCommit = Date.now()
    this.flushCaches()
    this.drainOutbox()
    await this.producer.flush()
    await Promise.allSettled([...this.pending])
    if (this.sendError) throw this.sendError
    const offsets = [...this.processed.values()]
    if (offsets.length === 0) return
    await this.consumer.commit(this.withProcessorMetadata(offsets))
    this.committed(offsets)
    // Java checkpoints after an at_least_once commit; under EOS only a clean close may (a crash must not trust local state).
    for (const t of this.tasks.values()) {
      for (const store of t.stores.values()) store.flush()
      this.env.directory.checkpoint(t, changelogsOf(t, this.env.topology.internal, this.env.applicationId))
    }
  }

  /** exactly_once_v2: the offsets join the open transaction, which then commits (KIP-447). */
  private async commitTransaction(): Promise<void> {
    this.lastCommit = Date.now()
    this.flushCaches()
    this.drainOutbox()
    if (this.sendError) throw this.sendError
    const offsets = [...this.processed.values()]
    if (offsets.length === 0 && !this.inTxn) return
    this.begin()
    if (offsets.length > 0) await this.producer.sendOffsetsToTransaction(this.withProcessorMetadata(offsets), this.consumer.groupMetadata())
    await this.producer.commitTransaction()
    this.inTxn = false
    if (this.sendError) throw this.sendError
    this.committed(offsets)
  }

  /** Java's StreamTask#committableOffsetsAndMetadata: each offset carries its task's time and processor metadata (KIP-825's last emitted close time). */
  private withProcessorMetadata(offsets: readonly (TopicPartition & { offset: bigint })[]): (TopicPartition & { offset: bigint; metadata?: string })[] {
    return offsets.map((o) => {
      const t = this.taskFor(o.topic, o.partition)
      return t === undefined || t.processorMetadata.size === 0 ? o : { ...o, metadata: encodeOffsetMetadata(t.currentStreamTime(), t.processorMetadata) }
    })
  }

  private begin(): void {
    if (!this.env.eos || this.inTxn) return
    this.producer.beginTransaction()
    this.inTxn = true
  }

  /**
   * Java's TaskManager on TaskMigratedException / TaskCorruptedException under EOS: abort the
   * transaction (a fenced producer is replaced instead: it can only be closed), close every task
   * dirty, wipe its state, restore it from the committed changelog, and rewind the input to the
   * committed offsets so nothing of the aborted transaction counts.
   */
  private async recover(cause: unknown, revive = true): Promise<void> {
    this.recoveries++
    this.env.logger?.warn({ err: cause, thread: this.name }, 'stream thread: aborting the transaction and reviving its tasks')
    this.txnGeneration++
    this.resets++
    this.outbox = []
    this.outboxChangelog = []
    this.pending.clear()
    this.sendError = undefined
    this.processed.clear()
    let replace = isFatalForTransactions(cause)
    if (this.inTxn && !replace) {
      try {
        await this.producer.abortTransaction()
      } catch (e) {
        this.env.logger?.warn({ err: e, thread: this.name }, 'stream thread: abort failed, replacing the producer')
        replace = true
      }
    }
    this.inTxn = false
    if (replace) {
      await this.producer.close({ timeoutMs: 0 }).catch(() => {})
      this.producer = this.newProducer()
      await this.producer.initTransactions()
    }
    for (const [key, t] of this.tasks) {
      this.closeTask(t, false)
      if (revive) this.tasks.set(key, await this.createTask(t.id))
      else this.tasks.delete(key)
    }
    if (!revive) return
    const parts = this.consumer.assigned()
    if (parts.length === 0) return
    for (const c of await this.consumer.committed(parts)) {
      if (c.offset >= 0n) this.consumer.seek({ topic: c.topic, partition: c.partition, offset: c.offset })
      else await this.consumer.seekToBeginning([{ topic: c.topic, partition: c.partition }])
    }
  }

  /** Java's repartition purge (KIP-811 repartition.purge.interval.ms): records before the committed offset are no longer needed. */
  private maybePurge(): void {
    if (this.purgeable.size === 0 || Date.now() - this.lastPurge < this.env.purgeIntervalMs) return
    this.lastPurge = Date.now()
    const requests = [...this.purgeable.values()]
    this.purgeable.clear()
    this.env.admin.deleteRecords(requests).catch((e: unknown) => {
      this.env.logger?.warn({ err: e, thread: this.name }, 'stream thread: purging repartition topics failed; the next commit tries again')
    })
  }

  private newProducer(): Producer {
    const txnId = this.transactionalId
    return new Producer({
      brokers: this.env.brokers,
      clientId: `${this.name}-producer`,
      ...(txnId === undefined ? {} : { transactionalId: txnId, transactionTimeoutMs: this.env.transactionTimeoutMs }),
      ...(this.env.logger ? { logger: this.env.logger } : {}),
    })
  }

  private collector(id: TaskId): RecordCollector {
    const changelogs = new Set<string>()
    for (const [name, entry] of this.env.topology.internal.stores) if (entry.builder.loggingEnabled) changelogs.add(`${this.env.applicationId}-${name}-changelog`)
    return {
      send: (r) => {
        this.outboxChangelog.push(changelogs.has(r.topic) ? id : undefined)
        this.outbox.push(producerRecordOf(r))
      },
    }
  }

  /** A commit first empties the record caches: what they forward goes out with this commit. */
  private flushCaches(): void {
    if (this.cache === undefined) return
    for (const t of this.tasks.values()) for (const s of t.stores.values()) s.flush()
  }

  /**
   * Hands what the tasks produced to the producer in one send(records) (one promise per batch,
   * not per record); a record that failed goes through the production exception handler.
   */
  private drainOutbox(): void {
    if (this.outbox.length === 0) return
    this.begin()
    const records = this.outbox
    const owners = this.outboxChangelog
    this.outbox = []
    this.outboxChangelog = []
    const generation = this.txnGeneration
    const p = this.producer.send(records)
    this.pending.add(p)
    p.then((done) => {
      this.pending.delete(p)
      if (generation !== this.txnGeneration) return
      done.forEach((md, i) => {
        const owner = owners[i]
        if (owner !== undefined) this.env.directory.advance(owner, `${md.topic}:${md.partition}`, md.offset)
      })
    }, (e: unknown) => {
      this.pending.delete(p)
      if (generation !== this.txnGeneration) return
      if (this.sendError === undefined) this.sendError = sendFailure(e, records, this.env.eos, this.env.config['default.production.exception.handler'])
    })
  }

  private taskFor(topic: string, partition: number): StreamTask | undefined {
    const sub = this.env.topicToSub.get(topic)
    if (sub === undefined) throw new StreamsException(`no sub-topology reads ${topic}`)
    return this.tasks.get(`${sub}_${partition}`)
  }

  private async createTask(id: TaskId): Promise<StreamTask> {
    const { topology, applicationId } = this.env
    const task = this.buildTask(id)
    const changelogs = changelogsOf(task, topology.internal, applicationId)
    const from = this.env.directory.open(id, task, changelogs, this.env.eos)
    await this.restore(task, from)
    // Java's initializeTaskTimeAndProcessorMetadata, for tasks whose processors keep metadata.
    if (task.readsProcessorMetadata) {
      for (const c of await this.consumer.committed(task.sourceTopics().map((topic) => ({ topic, partition: id.partition })))) {
        mergeProcessorMetadata(task.processorMetadata, decodeOffsetMetadata(c.metadata).metadata)
      }
    }
    return task
  }

  /** Restores a task's stores from their changelogs after `from` (a checkpoint, or a promoted standby's position). */
  private async restore(task: StreamTask, from: ReadonlyMap<string, bigint>): Promise<void> {
    this.restoredRecords += await restoreTask(task, changelogsOf(task, this.env.topology.internal, this.env.applicationId), {
      reader: this.restoreConsumer,
      from,
      onApplied: (changelog, offset) => this.env.directory.advance(task.id, changelog, offset),
      onWiped: (changelog) => this.env.directory.forget(task.id, changelog),
    })
  }

  /** A task's processors and stores, nothing restored yet (a standby only ever uses the stores). */
  private buildTask(id: TaskId): StreamTask {
    const { topology, config, applicationId } = this.env
    return new StreamTask(id, topology.internal, this.env.groups.get(id.subtopology)!, {
      applicationId,
      stateDir: this.env.directory.taskDir(id),
      ...(this.cache ? { cache: this.cache } : {}),
      ...(topology.defaults.key ? { defaultKeySerde: topology.defaults.key } : {}),
      ...(topology.defaults.value ? { defaultValueSerde: topology.defaults.value } : {}),
      wallClock: Date.now,
      // ProcessorContext#appConfigs: Java's internal `__...__` settings (emit intervals) reach the processors.
      appConfigs: config as Readonly<{ [key: string]: unknown }>,
      ...(this.env.partitionsFor ? { partitionsFor: this.env.partitionsFor } : {}),
      ...(this.env.globalStores?.() ? { globalStores: this.env.globalStores()! } : {}),
      ...(config['default.deserialization.exception.handler'] ? { deserializationExceptionHandler: config['default.deserialization.exception.handler'] } : {}),
      ...(config['default.production.exception.handler'] ? { productionExceptionHandler: config['default.production.exception.handler'] } : {}),
    }, this.collector(id))
  }

  /** Clean: the state matches what was committed, so it may be checkpointed. Dirty: it may hold aborted writes, so it is wiped. */
  private closeTask(task: StreamTask, clean: boolean): void {
    if (clean) for (const store of task.stores.values()) store.flush()
    task.close()
    this.env.directory.close(task, changelogsOf(task, this.env.topology.internal, this.env.applicationId), clean, this.env.eos)
  }

  private async assigned(tps: TopicPartition[]): Promise<void> {
    this.machine.to('PARTITIONS_ASSIGNED')
    if (this.shutdownRequested) {
      // Outside the rebalance callback: closing the consumer from inside it would wait on itself.
      setImmediate(() => this.env.onShutdownRequested?.(this))
      return
    }
    const wanted = new Set(tps.map((tp) => `${this.env.topicToSub.get(tp.topic)!}_${tp.partition}`))
    const standby = new Set(this.standbyPlan.filter((k) => !wanted.has(k)))
    await this.standbys.pause()
    for (const key of this.standbys.keys()) {
      if (!standby.has(key) && !wanted.has(key)) this.closeTask(this.standbys.take(key)!, true)
    }
    for (const [key, t] of this.suspended) {
      if (wanted.has(key)) continue
      // Java recycles an active task that becomes a standby: its stores stay as they are.
      if (standby.has(key)) this.standbys.add(key, t, changelogsOf(t, this.env.topology.internal, this.env.applicationId))
      else this.closeTask(t, true)
    }
    for (const key of wanted) {
      if (this.tasks.has(key)) continue
      const kept = this.suspended.get(key)
      if (kept !== undefined) {
        this.tasks.set(key, kept)
        continue
      }
      const promoted = this.standbys.take(key)
      if (promoted !== undefined) {
        // A standby becomes active with its stores as they are: only the tail past its position is restored.
        await this.restore(promoted, this.env.directory.positionsOf(promoted.id))
        this.tasks.set(key, promoted)
        continue
      }
      this.tasks.set(key, await this.createTask(taskIdOf(key)))
    }
    this.suspended.clear()
    for (const key of standby) {
      if (this.standbys.has(key)) continue
      const task = this.buildTask(taskIdOf(key))
      const changelogs = changelogsOf(task, this.env.topology.internal, this.env.applicationId)
      this.env.directory.open(task.id, task, changelogs, this.env.eos)
      this.standbys.add(key, task, changelogs)
    }
    this.standbys.resume()
    this.env.onAssigned?.()
    this.machine.to('RUNNING')
  }

  /** This thread's standby tasks (for interactive queries with enableStaleStores). */
  standbyTasks(): Iterable<StreamTask> {
    return this.standbys.stores()
  }

  /** This thread's active tasks (for interactive queries). */
  activeTasks(): Iterable<StreamTask> {
    return this.tasks.values()
  }

  private async revoked(tps: TopicPartition[]): Promise<void> {
    this.env.onRevoked?.()
    if (this.dirty) return this.lost(tps)
    this.machine.to('PARTITIONS_REVOKED')
    // A batch fetched before the revocation but not processed yet is stale: after the new assignment the consumer reads from the committed offsets.
    this.resets++
    // One transaction spans all of the thread's tasks, so revocation commits all of them (as Java's EOS-v2).
    await this.commit()
    const gone = new Set(tps.map((tp) => `${this.env.topicToSub.get(tp.topic)}_${tp.partition}`))
    for (const tp of tps) this.processed.delete(`${tp.topic}:${tp.partition}`)
    for (const key of gone) {
      const t = this.tasks.get(key)
      if (t === undefined) continue
      this.tasks.delete(key)
      this.suspended.set(key, t)
    }
  }

  /** The member was dropped from the group: its tasks may already run elsewhere, so nothing is committed and their state is wiped. */
  private async lost(tps: TopicPartition[]): Promise<void> {
    this.env.onRevoked?.()
    this.machine.to('PARTITIONS_REVOKED')
    this.resets++
    if (this.env.eos && !this.dirty) {
      await this.recover(new StreamsException(`partitions lost: ${tps.map((tp) => `${tp.topic}-${tp.partition}`).join(', ')}`), false)
      return
    }
    for (const [key, t] of this.tasks) {
      this.closeTask(t, false)
      this.tasks.delete(key)
    }
    this.processed.clear()
  }
}
