import { randomUUID } from 'node:crypto'
import { Admin } from '@tidelog/client'
import type { StreamsConfig, StreamsUncaughtExceptionHandler } from '../config.js'
import { StreamsException } from '../errors.js'
import type { Topology } from '../topology.js'
import { createInternalTopics, planInternalTopics } from './internal-topics.js'
import { StateMachine, type KafkaStreamsState, type StateListener, type StreamThreadState } from './state.js'
import { StreamThread, type ThreadEnv, type ThreadMetadata } from './stream-thread.js'
import { defaultStateDir, TaskDirectory } from './task-directory.js'
import { enforceCopartitioning } from './copartition.js'
import { GlobalStateThread } from './global-thread.js'
import { sinkPartitionCounts } from './partition-counts.js'
import { queryStore, type StoreQueryParameters } from '../queries/stores.js'
import { StreamsMetadataState, type KeyQueryMetadata, type StreamsMetadata } from '../queries/metadata.js'
import { changelogTopicsBySubtopology } from './assignment/layout.js'
import type { Serializer } from '../serdes.js'

/** Kafka Streams' defaults: commit.interval.ms is 100 under exactly_once_v2, else 30000; producers' transaction.timeout.ms 10000 under EOS. */
const EOS_COMMIT_INTERVAL_MS = 100
const ALOS_COMMIT_INTERVAL_MS = 30_000
const EOS_TRANSACTION_TIMEOUT_MS = 10_000
/** Java's repartition.purge.interval.ms default (KIP-811). */
const PURGE_INTERVAL_MS = 30_000

/**
 * Runs a topology against a cluster (Java's KafkaStreams): `num.stream.threads` stream
 * threads, each its own member of the group `application.id` with its own producer and tasks
 * (one task per sub-topology partition: the range assignor gives partition p of co-partitioned
 * topics to one member). at_least_once commits offsets after everything sent has been
 * acknowledged; exactly_once_v2 commits output, changelogs and offsets in one transaction per
 * thread (see StreamThread). A thread that dies goes to the uncaught exception handler:
 * REPLACE_THREAD starts a new thread with the same index (so its transactional.id fences the
 * old one), SHUTDOWN_CLIENT (the default) moves the instance to ERROR.
 */
export class KafkaStreams {
  private readonly machine = new StateMachine()
  private readonly applicationId: string
  private readonly brokers: string[]
  private readonly admin: Admin
  private readonly threads = new Map<number, StreamThread>()
  private readonly env: ThreadEnv
  private handler: StreamsUncaughtExceptionHandler | undefined
  private failure: unknown
  private closing: Promise<void> | undefined
  /** Java's processId: new per start of an instance with in-memory state. */
  readonly processId = randomUUID()
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
    const guarantee = config['processing.guarantee'] ?? 'at_least_once'
    if (guarantee !== 'at_least_once' && guarantee !== 'exactly_once_v2') {
      throw new StreamsException(`Invalid value ${String(guarantee)} for configuration processing.guarantee: String must be one of: at_least_once, exactly_once_v2`)
    }
    const threads = config['num.stream.threads'] ?? 1
    if (!Number.isInteger(threads) || threads < 1) throw new StreamsException(`Invalid value ${threads} for configuration num.stream.threads: Value must be at least 1`)
    const eos = guarantee === 'exactly_once_v2'
    const standbys = config['num.standby.replicas'] ?? 0
    if (!Number.isInteger(standbys) || standbys < 0) throw new StreamsException(`Invalid value ${standbys} for configuration num.standby.replicas: Value must be at least 0`)
    const warmup = warmupConfig(config)
    const { clientTags, rackAwareAssignmentTags } = rackAwareConfig(config)
    this.applicationId = appId
    this.brokers = typeof servers === 'string' ? servers.split(',').map((s) => s.trim()) : [...servers]
    if (config['default.key.serde'] && !topology.defaults.key) topology.defaults.key = config['default.key.serde']
    if (config['default.value.serde'] && !topology.defaults.value) topology.defaults.value = config['default.value.serde']
    topology.defaults.dslStore = config['default.dsl.store']
    const clientId = config['client.id'] || `${appId}-${this.processId}`
    this.admin = new Admin({ brokers: this.brokers, clientId: `${clientId}-admin`, ...(config.logger ? { logger: config.logger } : {}) })
    this.env = {
      topology,
      config,
      applicationId: appId,
      brokers: this.brokers,
      clientId,
      eos,
      commitIntervalMs: config['commit.interval.ms'] ?? (eos ? EOS_COMMIT_INTERVAL_MS : ALOS_COMMIT_INTERVAL_MS),
      purgeIntervalMs: config['repartition.purge.interval.ms'] ?? PURGE_INTERVAL_MS,
      transactionTimeoutMs: config['transaction.timeout.ms'] ?? EOS_TRANSACTION_TIMEOUT_MS,
      topicToSub: new Map(),
      groups: new Map(),
      repartitionTopics: new Set(),
      admin: this.admin,
      directory: new TaskDirectory(config['state.dir'] ?? defaultStateDir(), appId),
      logger: config.logger,
      onThreadState: (t, next, old) => this.onThreadState(t, next, old),
      layout: { topicToSub: new Map(), statefulSubs: new Set(), numStandbyReplicas: standbys, changelogTopics: new Map(), ...warmup, rackAwareAssignmentTags },
      clientTags,
      assignorLookups: {
        endOffsets: async (tps) => new Map((await this.admin.listOffsets(tps.map((tp) => ({ ...tp, timestamp: 'latest' as const })))).map((o) => [`${o.topic}:${o.partition}`, o.offset])),
        now: Date.now,
      },
      processId: this.processId,
      endpoint: config['application.server'] ?? '',
      onShutdownRequested: () => this.fail(this.failure ?? new StreamsException('the application was asked to shut down: an instance\'s uncaught exception handler answered SHUTDOWN_APPLICATION')),
      partitionsFor: (topic) => this.sinkPartitions.get(topic),
      globalStores: () => this.global?.stores,
      onAssigned: () => void this.metadataState.refresh(this.admin).catch(() => this.metadataState.invalidate()),
      onRevoked: () => this.metadataState.invalidate(),
    }
    this.metadataState = new StreamsMetadataState(topology.internal, appId, config['application.server'])
  }

  get state(): KafkaStreamsState {
    return this.machine.state
  }

  setStateListener(listener: StateListener): void {
    this.machine.listener = listener
  }

  /** Java's setUncaughtExceptionHandler: decides what a stream thread's fatal error does (default SHUTDOWN_CLIENT). */
  setUncaughtExceptionHandler(handler: StreamsUncaughtExceptionHandler): void {
    if (this.state !== 'CREATED') throw new StreamsException('Can only set UncaughtExceptionHandler before calling start(). Current state is: ' + this.state)
    this.handler = handler
  }

  /** The error that moved the instance to ERROR, if any. */
  get error(): unknown {
    return this.failure
  }

  /** Java's metadataForLocalThreads(). */
  metadataForLocalThreads(): ThreadMetadata[] {
    return [...this.threads.values()].map((t) => t.metadata())
  }

  /** Changelog records restored by this instance's threads so far (all threads, including replaced ones). */
  get restoredRecords(): number {
    return this.restoredByGone + [...this.threads.values()].reduce((n, t) => n + t.restoredRecords, 0)
  }

  private restoredByGone = 0

  /** Changelog records applied to this instance's standby stores so far (num.standby.replicas). */
  get standbyRecords(): number {
    return [...this.threads.values()].reduce((n, t) => n + t.standbyRecords, 0)
  }

  /** Probing rebalances (KIP-441) this instance's threads triggered so far. */
  get probingRebalances(): number {
    return [...this.threads.values()].reduce((n, t) => n + t.probing.triggered, 0)
  }

  /** Creates the internal topics, starts the stream threads (resolves once each has subscribed). */
  async start(): Promise<void> {
    if (this.state !== 'CREATED') throw new StreamsException(`KafkaStreams is not in CREATED state (it is ${this.state}): start() can only be called once`)
    this.machine.must('REBALANCING')
    try {
      const internal = this.topology.internal
      const groups = internal.nodeGroups()
      const topicToSub = this.env.topicToSub as Map<string, number>
      for (const [id, names] of groups) {
        if (internal.isGlobalGroup(names)) continue
        (this.env.groups as Map<number, string[]>).set(id, names)
        for (const n of names) {
          const f = internal.nodes.get(n)!
          if (f.kind === 'source') for (const t of f.topics) topicToSub.set(internal.decorate(t, this.applicationId), id)
        }
      }
      for (const t of internal.internalTopics.keys()) (this.env.repartitionTopics as Set<string>).add(internal.decorate(t, this.applicationId))
      const changelogTopics = changelogTopicsBySubtopology(internal, this.applicationId)
      this.env.layout = { ...this.env.layout, topicToSub, statefulSubs: new Set(changelogTopics.keys()), changelogTopics }
      await enforceCopartitioning(internal, this.admin)
      const plan = await planInternalTopics(internal, this.applicationId, this.admin)
      await createInternalTopics(this.admin, plan.topics, this.config['replication.factor'])
      this.sinkPartitions = await sinkPartitionCounts(internal, this.admin, plan.topics)
      await this.startGlobal(groups)
      // All threads exist before any starts, so the client is RUNNING only once every one of them is.
      const n = this.config['num.stream.threads'] ?? 1
      const created = Array.from({ length: n }, (_, i) => this.createThread(i + 1))
      for (const t of created) await t.start()
    } catch (e) {
      this.fail(e)
      throw e
    }
  }

  /** Commits what was processed, checkpoints, leaves the group; resolves when everything is closed. */
  close(options: { timeoutMs?: number } = {}): Promise<void> {
    if (this.closing) return this.closing
    if (this.state === 'NOT_RUNNING' || this.state === 'ERROR') return Promise.resolve()
    const failed = this.state === 'PENDING_ERROR'
    if (!failed) this.machine.must('PENDING_SHUTDOWN')
    this.closing = (async () => {
      try {
        await Promise.all([...this.threads.values()].map((t) => t.shutdown(!failed, options.timeoutMs ?? 30_000)))
      } finally {
        await this.global?.close().catch(() => {})
        await this.admin.close().catch(() => {})
        this.machine.to(failed ? 'ERROR' : 'NOT_RUNNING')
      }
    })()
    return this.closing
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
      storesNamed: (name: string, stale: boolean) => {
        // Java's enableStaleStores: a standby's copy answers too (it may lag the active).
        const out = [...this.threads.values()].flatMap((thread) => [...thread.activeTasks(), ...(stale ? thread.standbyTasks() : [])]).flatMap((t) => {
          const s = t.stores.get(name)
          return s === undefined ? [] : [{ partition: t.id.partition, store: s }]
        })
        const g = this.global?.stores.get(name)
        if (g !== undefined && this.global!.restored) out.push({ partition: -1, store: g })
        return out
      },
    }
  }

  private async startGlobal(groups: ReadonlyMap<number, string[]>): Promise<void> {
    const internal = this.topology.internal
    const nodes = [...groups.values()].filter((g) => internal.isGlobalGroup(g)).flat()
    if (nodes.length === 0) return
    this.global = new GlobalStateThread(internal, nodes, {
      applicationId: this.applicationId,
      ...(this.topology.defaults.key ? { defaultKeySerde: this.topology.defaults.key } : {}),
      ...(this.topology.defaults.value ? { defaultValueSerde: this.topology.defaults.value } : {}),
      wallClock: Date.now,
    }, this.brokers, this.applicationId, (e) => this.fail(e))
    await this.global.start(this.admin)
  }

  private createThread(index: number): StreamThread {
    const t = new StreamThread(index, this.env, (dead, e) => this.onThreadDeath(dead, e))
    this.threads.set(index, t)
    return t
  }

  /** Java's StreamStateListener: any thread rebalancing makes the client REBALANCING; all running makes it RUNNING. */
  private onThreadState(_t: StreamThread, next: StreamThreadState, _old: StreamThreadState): void {
    if (next === 'PARTITIONS_REVOKED' || next === 'PARTITIONS_ASSIGNED') this.machine.to('REBALANCING')
    else if (next === 'RUNNING') {
      const live = [...this.threads.values()].filter((x) => x.machine.state !== 'DEAD' && x.machine.state !== 'PENDING_SHUTDOWN')
      if (live.every((x) => x.machine.state === 'RUNNING')) this.machine.to('RUNNING')
    }
  }

  private onThreadDeath(thread: StreamThread, error: unknown): void {
    if (this.threads.get(thread.index) === thread) {
      this.threads.delete(thread.index)
      this.restoredByGone += thread.restoredRecords
    }
    if (this.state === 'PENDING_SHUTDOWN' || this.state === 'NOT_RUNNING' || this.state === 'PENDING_ERROR' || this.state === 'ERROR') return
    let response: string
    try {
      response = this.handler ? this.handler(error) : 'SHUTDOWN_CLIENT'
    } catch (e) {
      this.config.logger?.error({ err: e }, 'the uncaught exception handler threw; shutting down the client')
      response = 'SHUTDOWN_CLIENT'
    }
    if (response === 'SHUTDOWN_APPLICATION') {
      // KIP-671: the request travels in the subscriptions; the leader hands every member SHUTDOWN_REQUESTED, this instance included.
      this.failure ??= error
      this.config.logger?.error({ err: error, thread: thread.name }, 'stream thread died; asking every instance of the application to shut down (SHUTDOWN_APPLICATION)')
      const live = [...this.threads.values()].filter((t) => t.machine.state !== 'PENDING_SHUTDOWN' && t.machine.state !== 'DEAD')
      if (live.length === 0) {
        // As Java: with no thread left, one is added only to carry the request.
        const messenger = this.createThread(thread.index)
        messenger.requestShutdown()
        messenger.start().catch((e: unknown) => this.fail(e))
      } else for (const t of live) t.requestShutdown()
      return
    }
    if (response === 'REPLACE_THREAD') {
      this.config.logger?.warn({ err: error, thread: thread.name }, 'stream thread died; replacing it (REPLACE_THREAD)')
      this.machine.to('REBALANCING')
      this.createThread(thread.index).start().catch((e: unknown) => this.fail(e))
      return
    }
    this.fail(error)
  }

  private fail(e: unknown): void {
    this.failure ??= e
    if (this.machine.to('PENDING_ERROR')) void this.close()
  }
}

/** Java's StreamsConfig validators for KIP-441's three configs (same messages). */
function warmupConfig(config: StreamsConfig): { acceptableRecoveryLag: bigint; maxWarmupReplicas: number; probingRebalanceIntervalMs: number } {
  const check = (name: keyof StreamsConfig, fallback: number, min: number): number => {
    const v = config[name] ?? fallback
    if (typeof v !== 'number' || !Number.isInteger(v) || v < min) throw new StreamsException(`Invalid value ${String(v)} for configuration ${name}: Value must be at least ${min}`)
    return v
  }
  const internalProbe = config['__probing.rebalance.interval.ms__']
  return {
    acceptableRecoveryLag: BigInt(check('acceptable.recovery.lag', 10_000, 0)),
    maxWarmupReplicas: check('max.warmup.replicas', 2, 1),
    probingRebalanceIntervalMs: internalProbe !== undefined ? check('__probing.rebalance.interval.ms__', 0, 1) : check('probing.rebalance.interval.ms', 600_000, 60_000),
  }
}

const MAX_CLIENT_TAGS = 5
const MAX_TAG_KEY_LENGTH = 20
const MAX_TAG_VALUE_LENGTH = 30

/** KIP-708's configs, validated as Java's StreamsConfig (same messages). */
function rackAwareConfig(config: StreamsConfig): { clientTags: Record<string, string>; rackAwareAssignmentTags: string[] } {
  const clientTags: Record<string, string> = {}
  for (const [name, value] of Object.entries(config)) {
    if (!name.startsWith('client.tag.') || value === undefined) continue
    const key = name.slice('client.tag.'.length)
    if (key.length > MAX_TAG_KEY_LENGTH) throw new StreamsException(`Invalid value ${key} for configuration ${name}: Tag key exceeds maximum length of ${MAX_TAG_KEY_LENGTH}.`)
    if (typeof value !== 'string') throw new StreamsException(`Invalid value ${String(value)} for configuration ${name}: Tag value must be a string.`)
    if (value.length > MAX_TAG_VALUE_LENGTH) throw new StreamsException(`Invalid value ${value} for configuration ${name}: Tag value exceeds maximum length of ${MAX_TAG_VALUE_LENGTH}.`)
    clientTags[key] = value
  }
  if (Object.keys(clientTags).length > MAX_CLIENT_TAGS) throw new StreamsException(`At most ${MAX_CLIENT_TAGS} client tags can be specified using client.tag. prefix.`)
  const raw = config['rack.aware.assignment.tags'] ?? []
  const tags = (typeof raw === 'string' ? raw.split(',') : raw).map((t) => t.trim()).filter((t) => t !== '')
  const shown = `[${tags.join(', ')}]`
  if (tags.length > MAX_CLIENT_TAGS) throw new StreamsException(`Invalid value ${shown} for configuration rack.aware.assignment.tags: exceeds maximum list size of [${MAX_CLIENT_TAGS}].`)
  for (const t of tags) {
    if (!(t in clientTags)) throw new StreamsException(`Invalid value ${shown} for configuration rack.aware.assignment.tags: Contains invalid value [${t}] which doesn't have corresponding tag set via [client.tag.] prefix.`)
  }
  return { clientTags, rackAwareAssignmentTags: tags }
}
