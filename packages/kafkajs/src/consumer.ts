import { Admin as NativeAdmin, type ClientOptions } from '@tidelog/client'
import { Fetch, Heartbeat } from '@tidelog/protocol'
import { Consumer as NativeConsumer, roundRobinAssignor, type ConsumerGroupMetadata, type GroupGeneration, type TopicPartition, type ConsumerOptions, type TopicPartitionOffset as NativeOffset } from '@tidelog/consumer'
import { groupDescription, type GroupDescription } from './admin-answers.js'
import { KafkaJSNonRetriableError, toKafkaJSError } from './errors.js'
import { consumerEvents, Instrumentation } from './events.js'
import type { KafkaContext } from './kafka.js'
import type { Logger } from './logger.js'
import type { WireListener } from './network-events.js'
import { Runner, type ConsumerRunConfig } from './runner.js'
import type { InstrumentationEvent, RemoveInstrumentationEventListener, RetryOptions, TopicPartitionOffset, TopicPartitionOffsetAndMetadata, TopicPartitions } from './types.js'

export interface ConsumerConfig {
  groupId: string
  partitionAssigners?: unknown[]
  metadataMaxAge?: number
  sessionTimeout?: number
  rebalanceTimeout?: number
  heartbeatInterval?: number
  maxBytesPerPartition?: number
  minBytes?: number
  maxBytes?: number
  maxWaitTimeInMs?: number
  retry?: RetryOptions & { restartOnFailure?: (err: Error) => Promise<boolean> }
  allowAutoTopicCreation?: boolean
  maxInFlightRequests?: number
  readUncommitted?: boolean
  rackId?: string
}

export type ConsumerSubscribeTopics = { topics: (string | RegExp)[]; fromBeginning?: boolean }
export type ConsumerSubscribeTopic = { topic: string | RegExp; fromBeginning?: boolean }

type State = 'disconnected' | 'connected' | 'running' | 'stopping'
type Action = 'connect' | 'run' | 'stop' | 'stopped' | 'disconnect'

const TRANSITIONS: Record<State, Partial<Record<Action, State>>> = {
  disconnected: { connect: 'connected', disconnect: 'disconnected' },
  connected: { connect: 'connected', run: 'running', stop: 'connected', disconnect: 'disconnected' },
  running: { connect: 'running', stop: 'stopping', disconnect: 'stopping' },
  stopping: { stopped: 'connected' },
}

// kafkajs' consumer defaults (its consumer docs), where they differ from Java's.
const DEFAULTS = { sessionTimeout: 30_000, rebalanceTimeout: 60_000, heartbeatInterval: 3_000, maxBytesPerPartition: 1_048_576, minBytes: 1, maxBytes: 10_485_760, maxWaitTimeInMs: 5_000 }

/**
 * kafkajs' consumer on tidelog's: subscribe, then run({ eachMessage | eachBatch }). The native
 * consumer is created by run() (kafkajs reads every option, fromBeginning included, by then).
 */
export class KafkaConsumer {
  readonly events = consumerEvents
  private readonly instrumentation: Instrumentation<typeof consumerEvents>
  private readonly log: Logger
  private state: State = 'disconnected'
  private readonly topics = new Set<string>()
  private readonly patterns: RegExp[] = []
  private fromBeginning = false
  private native: NativeConsumer | undefined
  private runner: Runner | undefined
  private admin: NativeAdmin | undefined
  private readonly pendingSeeks = new Map<string, TopicPartition & { offset: bigint }>()
  private readonly pausedTopics = new Map<string, Set<number> | 'all'>()
  private joined: { leaderId: string; isLeader: boolean; startedAt: number } | undefined
  private readonly retry: RetryOptions & { restartOnFailure?: (err: Error) => Promise<boolean> }
  private whenStopped: (() => void) | undefined

  constructor(private readonly ctx: KafkaContext, private readonly config: ConsumerConfig) {
    if (config === undefined || !config.groupId) throw new KafkaJSNonRetriableError('Consumer groupId must be a non-empty string.')
    this.log = ctx.logger.namespace('Consumer')
    this.instrumentation = new Instrumentation(consumerEvents, 'consumer', this.log)
    this.retry = config.retry ?? ctx.retry
    this.instrumentation.addWire([consumerEvents.FETCH_START, consumerEvents.FETCH, consumerEvents.HEARTBEAT], this.groupWire())
  }

  /**
   * kafkajs' runner emits FETCH_START / FETCH around each broker's Fetch and HEARTBEAT after an
   * accepted Heartbeat; here the native consumer sends them, so they come from its requests.
   */
  private groupWire(): WireListener {
    const emit = this.instrumentation.emit.bind(this.instrumentation)
    // nodeId as kafkajs has it: a key of its broker map, so a string.
    return {
      start: (e) => {
        if (e.apiKey === Fetch.apiKey) emit(consumerEvents.FETCH_START, () => ({ nodeId: String(e.nodeId) }))
      },
      end: (e) => {
        // PR #570 of kafkajs made numberOfBatches always 0 (batches are streamed); so here.
        if (e.apiKey === Fetch.apiKey) emit(consumerEvents.FETCH, () => ({ numberOfBatches: 0, duration: Math.round(e.durationMs ?? 0), nodeId: String(e.nodeId) }))
        else if (e.apiKey === Heartbeat.apiKey && (e.response as { errorCode?: number } | undefined)?.errorCode === 0) {
          emit(consumerEvents.HEARTBEAT, () => {
            const g = this.native?.generation
            return { groupId: this.config.groupId, memberId: g?.memberId ?? '', groupGenerationId: g?.generationId ?? -1 }
          })
        }
      },
      error: () => undefined,
    }
  }

  private transition(action: Action): void {
    const next = TRANSITIONS[this.state][action]
    if (next === undefined) throw new KafkaJSNonRetriableError(`consumer: cannot ${action} while ${this.state}`)
    this.state = next
  }

  logger(): Logger {
    return this.log
  }

  on(eventName: string, listener: (event: InstrumentationEvent<any>) => void): RemoveInstrumentationEventListener {
    return this.instrumentation.on(eventName, listener)
  }

  private async nativeAdmin(): Promise<NativeAdmin> {
    this.admin ??= new NativeAdmin(await this.ctx.clientOptions(this.retry, this.instrumentation.tag))
    return this.admin
  }

  async connect(): Promise<void> {
    if (this.state !== 'disconnected') return
    this.instrumentation.setConnected(true)
    try {
      await (await this.nativeAdmin()).connect()
    } catch (e) {
      await this.admin?.close().catch(() => undefined)
      this.admin = undefined
      this.instrumentation.setConnected(false)
      throw toKafkaJSError(e)
    }
    this.transition('connect')
    this.instrumentation.emit(consumerEvents.CONNECT, undefined)
  }

  /**
   * Regular expressions match the topics that exist now, as in kafkajs (topics created later
   * are not picked up).
   */
  async subscribe(subscription: ConsumerSubscribeTopics | ConsumerSubscribeTopic): Promise<void> {
    if (this.state === 'running') throw new KafkaJSNonRetriableError('Cannot subscribe to topic while consumer is running')
    const s = subscription as Partial<ConsumerSubscribeTopics & ConsumerSubscribeTopic>
    const list = s.topics ?? (s.topic !== undefined ? [s.topic] : undefined)
    if (!list || list.length === 0) throw new KafkaJSNonRetriableError('Missing required argument "topics"')
    for (const t of list) {
      if (t instanceof RegExp) continue
      if (typeof t !== 'string' || t === '') throw new KafkaJSNonRetriableError(`Invalid topic ${String(t)}`)
    }
    const regexes = list.filter((t): t is RegExp => t instanceof RegExp)
    if (regexes.length > 0) {
      const all = await (await this.nativeAdmin()).listTopics().catch((e) => Promise.reject(toKafkaJSError(e)))
      for (const r of regexes) for (const name of all) if (r.test(name)) this.topics.add(name)
    }
    for (const t of list) if (typeof t === 'string') this.topics.add(t)
    if (s.fromBeginning === true) this.fromBeginning = true
  }

  async run(config: ConsumerRunConfig = {}): Promise<void> {
    if (this.state === 'disconnected') throw new KafkaJSNonRetriableError('Consumer must be connected before calling run()')
    if (this.state === 'running') {
      this.log.warn('consumer#run was called, but the consumer is already running', { groupId: this.config.groupId })
      return
    }
    if (this.topics.size === 0) throw new KafkaJSNonRetriableError('Consumer must subscribe to topics before calling run()')
    this.transition('run')
    let native: NativeConsumer
    try {
      native = new NativeConsumer(this.nativeOptions(await this.ctx.clientOptions(this.retry, this.instrumentation.tag), config))
    } catch (e) {
      this.state = 'connected'
      throw toKafkaJSError(e)
    }
    this.native = native
    const runner = new Runner(
      {
        native,
        clientId: this.ctx.clientId,
        groupId: this.config.groupId,
        logger: this.log,
        retry: this.retry,
        instrumentation: this.instrumentation,
        crash: (error) => this.crash(error),
        ended: () => void this.stop(),
      },
      config,
    )
    this.runner = runner
    try {
      await native.subscribe([...this.topics], {
        listener: {
          onPartitionsRevoked: () => {
            // The native consumer then waits for the partitions' running handlers and commits
            // what they resolved before the partitions move. kafkajs says REBALANCING when the
            // group rebalances, not when the consumer stops (the revocation of close()).
            if (this.state === 'stopping') return
            this.instrumentation.emit(consumerEvents.REBALANCING, () => ({ groupId: this.config.groupId, memberId: native.generation?.memberId ?? '' }))
          },
          onPartitionsAssigned: (partitions, generation) => this.assigned(native, partitions, generation),
        },
      })
    } catch (e) {
      this.runner = undefined
      this.native = undefined
      await native.close({ leaveGroup: false }).catch(() => undefined)
      this.state = 'connected'
      throw toKafkaJSError(e)
    }
    native.on('offsets.committed', ({ offsets }: { offsets: NativeOffset[] }) => this.committed(native, offsets))
    native.on('group.joined', (info: { leaderId: string; isLeader: boolean }) => {
      this.joined = { leaderId: info.leaderId, isLeader: info.isLeader, startedAt: this.joined?.startedAt ?? Date.now() }
    })
    native.on('member.state', ({ to }: { to: string }) => {
      if (to === 'joining' && this.joined === undefined) this.joined = { leaderId: '', isLeader: false, startedAt: Date.now() }
    })
    // kafkajs emits CONNECT a second time when run() connects its consumer group.
    this.instrumentation.emit(consumerEvents.CONNECT, undefined)
    // kafkajs' run() resolves once the group is joined and synced (NestJS' ClientKafka, for
    // one, reads its partitions from GROUP_JOIN right after), then consumes in the background.
    const joined = new Promise<void>((resolve) => {
      const off = this.instrumentation.onInternal(consumerEvents.GROUP_JOIN, () => {
        off()
        resolve()
      })
      this.whenStopped = () => {
        off()
        resolve()
      }
    })
    runner.start()
    await joined
  }

  private nativeOptions(base: ClientOptions, run: ConsumerRunConfig): ConsumerOptions {
    const c = this.config
    return {
      ...base,
      groupId: c.groupId,
      autoOffsetReset: this.fromBeginning ? 'earliest' : 'latest',
      // Only what handlers resolved is committed: after each batch (the runner), on revocation
      // and on stop (the native consumer), and every autoCommitInterval.
      autoCommit: run.autoCommit ?? true,
      autoCommitIntervalMs: run.autoCommitInterval ?? undefined,
      sessionTimeoutMs: c.sessionTimeout ?? DEFAULTS.sessionTimeout,
      rebalanceTimeoutMs: c.rebalanceTimeout ?? DEFAULTS.rebalanceTimeout,
      heartbeatIntervalMs: c.heartbeatInterval ?? DEFAULTS.heartbeatInterval,
      maxPartitionFetchBytes: c.maxBytesPerPartition ?? DEFAULTS.maxBytesPerPartition,
      fetchMinBytes: c.minBytes ?? DEFAULTS.minBytes,
      fetchMaxBytes: c.maxBytes ?? DEFAULTS.maxBytes,
      fetchMaxWaitMs: c.maxWaitTimeInMs ?? DEFAULTS.maxWaitTimeInMs,
      // kafkajs reads committed data only unless told otherwise.
      isolationLevel: c.readUncommitted === true ? 'read_uncommitted' : 'read_committed',
      clientRack: c.rackId,
      allowAutoTopicCreation: c.allowAutoTopicCreation ?? true,
      metadataMaxAgeMs: c.metadataMaxAge,
      // kafkajs' only built-in assignor, under its protocol name, so mixed groups agree.
      assignors: [{ ...roundRobinAssignor, name: 'RoundRobinAssigner' }],
      maxPollIntervalMs: Math.max(300_000, c.rebalanceTimeout ?? DEFAULTS.rebalanceTimeout),
    }
  }

  private async assigned(native: NativeConsumer, partitions: TopicPartition[], generation: GroupGeneration): Promise<void> {
    for (const p of partitions) {
      const k = `${p.topic}:${p.partition}`
      const seek = this.pendingSeeks.get(k)
      if (seek !== undefined) {
        this.pendingSeeks.delete(k)
        this.applySeek(native, seek)
      }
      const paused = this.pausedTopics.get(p.topic)
      if (paused === 'all' || paused?.has(p.partition)) native.pause([p])
    }
    const memberAssignment: Record<string, number[]> = {}
    for (const tp of native.assigned()) (memberAssignment[tp.topic] ??= []).push(tp.partition)
    const joined = this.joined
    this.joined = undefined
    this.instrumentation.emit(consumerEvents.GROUP_JOIN, () => ({
      duration: joined === undefined ? 0 : Date.now() - joined.startedAt,
      groupId: this.config.groupId,
      isLeader: joined?.isLeader ?? false,
      leaderId: joined?.leaderId ?? '',
      groupProtocol: generation.protocolName ?? '',
      memberId: generation.memberId,
      memberAssignment,
    }))
  }

  private committed(native: NativeConsumer, offsets: NativeOffset[]): void {
    this.instrumentation.emit(consumerEvents.COMMIT_OFFSETS, () => {
      const topics = new Map<string, { partition: string; offset: string }[]>()
      for (const o of offsets) {
        const list = topics.get(o.topic) ?? []
        list.push({ partition: String(o.partition), offset: String(o.offset) })
        topics.set(o.topic, list)
      }
      const g = native.generation
      return { groupId: this.config.groupId, memberId: g?.memberId ?? '', groupGenerationId: g?.generationId ?? -1, topics: [...topics].map(([topic, partitions]) => ({ topic, partitions })) }
    })
  }

  private async crash(error: Error): Promise<boolean> {
    this.log.error(`Crash: ${error.name}: ${error.message}`, { groupId: this.config.groupId })
    let restart = true
    if (this.retry.restartOnFailure !== undefined) restart = await this.retry.restartOnFailure(error).catch(() => true)
    this.instrumentation.emit(consumerEvents.CRASH, { error, groupId: this.config.groupId, restart })
    return restart
  }

  async commitOffsets(topicPartitions: TopicPartitionOffsetAndMetadata[]): Promise<void> {
    const offsets = topicPartitions.map((p) => ({ topic: p.topic, partition: p.partition, offset: BigInt(p.offset), metadata: p.metadata ?? null }))
    const native = this.native
    if (native === undefined) throw new KafkaJSNonRetriableError('The consumer is not running: commitOffsets needs run()')
    await native.commit(offsets).catch((e) => Promise.reject(toKafkaJSError(e)))
  }

  /**
   * This member's group, generation and member id (Java's groupMetadata(); not in kafkajs), for
   * a transaction's sendOffsets({ consumer, topics }): the group coordinator then refuses the
   * offsets of a member that has been replaced by a rebalance (KIP-447).
   */
  groupMetadata(): ConsumerGroupMetadata {
    const native = this.native
    if (native === undefined) throw new KafkaJSNonRetriableError('The consumer is not running: its group metadata needs run()')
    return native.groupMetadata()
  }

  /** Applies at once to an assigned partition, or when the partition is assigned. */
  seek({ topic, partition, offset }: TopicPartitionOffset): void {
    if (!topic) throw new KafkaJSNonRetriableError(`Invalid topic ${String(topic)}`)
    if (Number.isNaN(Number(partition))) throw new KafkaJSNonRetriableError(`Invalid partition, expected a number received ${String(partition)}`)
    let value: bigint
    try {
      value = BigInt(offset)
    } catch {
      throw new KafkaJSNonRetriableError(`Invalid offset, expected a long received ${String(offset)}`)
    }
    if (value < 0n && value !== -1n && value !== -2n) throw new KafkaJSNonRetriableError('Offset must not be a negative number')
    const target = { topic, partition: Number(partition), offset: value }
    const native = this.native
    if (native !== undefined && native.assigned().some((tp) => tp.topic === topic && tp.partition === target.partition)) this.applySeek(native, target)
    else this.pendingSeeks.set(`${topic}:${target.partition}`, target)
  }

  private applySeek(native: NativeConsumer, t: TopicPartition & { offset: bigint }): void {
    // -2 / -1 are kafkajs' earliest / latest sentinels.
    if (t.offset < 0n) {
      void (t.offset === -2n ? native.seekToBeginning([t]) : native.seekToEnd([t])).catch((e) => this.log.error('seek failed', { error: (e as Error).message }))
      return
    }
    native.seek(t)
  }

  pause(topics: { topic: string; partitions?: number[] }[]): void {
    for (const { topic, partitions } of topics) {
      if (!topic) throw new KafkaJSNonRetriableError(`Invalid topic ${String(topic)}`)
      if (partitions === undefined) this.pausedTopics.set(topic, 'all')
      else {
        const prev = this.pausedTopics.get(topic)
        if (prev !== 'all') this.pausedTopics.set(topic, new Set([...(prev ?? []), ...partitions]))
      }
      const native = this.native
      if (native !== undefined) native.pause(native.assigned().filter((tp) => tp.topic === topic && (partitions === undefined || partitions.includes(tp.partition))))
    }
  }

  resume(topics: { topic: string; partitions?: number[] }[]): void {
    for (const { topic, partitions } of topics) {
      const prev = this.pausedTopics.get(topic)
      if (partitions === undefined || prev === 'all') this.pausedTopics.delete(topic)
      else if (prev !== undefined) for (const p of partitions) prev.delete(p)
      const native = this.native
      if (native !== undefined) native.resume(native.assigned().filter((tp) => tp.topic === topic && (partitions === undefined || partitions.includes(tp.partition))))
    }
  }

  paused(): TopicPartitions[] {
    const out: TopicPartitions[] = []
    const native = this.native
    for (const [topic, which] of this.pausedTopics) {
      const partitions = which === 'all' ? (native?.assigned().filter((tp) => tp.topic === topic).map((tp) => tp.partition) ?? []) : [...which].sort((a, b) => a - b)
      out.push({ topic, partitions })
    }
    return out
  }

  async describeGroup(): Promise<GroupDescription> {
    try {
      const [g] = await (await this.nativeAdmin()).describeGroups([this.config.groupId])
      return groupDescription(g!)
    } catch (e) {
      throw toKafkaJSError(e)
    }
  }

  /** Stops fetching, waits for the handlers, commits what they resolved and leaves the group. */
  async stop(): Promise<void> {
    if (this.state !== 'running') return
    this.transition('stop')
    this.whenStopped?.()
    this.whenStopped = undefined
    const runner = this.runner
    const native = this.native
    this.runner = undefined
    await runner?.stop()
    this.native = undefined
    await native?.close().catch((e) => this.log.warn('leaving the group failed', { error: (e as Error).message }))
    this.transition('stopped')
    this.instrumentation.emit(consumerEvents.STOP, undefined)
  }

  async disconnect(): Promise<void> {
    await this.stop()
    if (this.state === 'disconnected') return
    this.transition('disconnect')
    await this.admin?.close().catch(() => undefined)
    this.admin = undefined
    this.instrumentation.setConnected(false)
    this.instrumentation.emit(consumerEvents.DISCONNECT, undefined)
  }
}
