import { HandlerFailedError, type Batch as NativeBatch, type Consumer as NativeConsumer, type EachBatchPayload as NativeEachBatch } from '@tidelog/consumer'
import { isTraced, traceCall, tracing } from '@tidelog/client'
import { Batch } from './batch.js'
import { toKafkaJSError } from './errors.js'
import { consumerEvents, type Instrumentation } from './events.js'
import type { Logger } from './logger.js'
import type { KafkaMessage, Offsets, OffsetsByTopicPartition, RetryOptions } from './types.js'

export interface EachMessagePayload {
  topic: string
  partition: number
  message: KafkaMessage
  heartbeat(): Promise<void>
  pause(): () => void
}

export interface EachBatchPayload {
  batch: Batch
  resolveOffset(offset: string): void
  heartbeat(): Promise<void>
  pause(): () => void
  commitOffsetsIfNecessary(offsets?: Offsets): Promise<void>
  uncommittedOffsets(): OffsetsByTopicPartition
  isRunning(): boolean
  isStale(): boolean
}

export interface ConsumerRunConfig {
  autoCommit?: boolean
  autoCommitInterval?: number | null
  autoCommitThreshold?: number | null
  eachBatchAutoResolve?: boolean
  partitionsConsumedConcurrently?: number
  eachBatch?: (payload: EachBatchPayload) => Promise<void>
  eachMessage?: (payload: EachMessagePayload) => Promise<void>
}

/** What the runner needs from its consumer. */
export interface RunnerHost {
  readonly native: NativeConsumer
  /** For the per-message `tidelog:consumer:process` tracing events. */
  readonly clientId: string
  readonly groupId: string
  readonly logger: Logger
  readonly retry: RetryOptions
  readonly instrumentation: Instrumentation<typeof consumerEvents>
  /** The handler failed past retry.retries: emits CRASH and says whether to run again. */
  crash(error: Error): Promise<boolean>
  /** run() ended on its own (no restart): the consumer is stopped. */
  ended(): void
}

function toOffsets(offsets: Offsets) {
  return offsets.topics.flatMap((t) => t.partitions.map((p) => ({ topic: t.topic, partition: p.partition, offset: BigInt(p.offset) })))
}

/**
 * kafkajs' consumer.run() on the native consumer's run(): partitions in order, up to
 * partitionsConsumedConcurrently at once, handlers retried with backoff, revocation waiting for
 * running handlers; all of that is the native runner's. This adds kafkajs' surface: string
 * offsets, its Batch, its batch events and its commit points (after each batch, and within
 * one once autoCommitThreshold or autoCommitInterval is reached), and its crash-and-restart.
 */
export class Runner {
  private running = true
  private lastCommit = Date.now()
  private resolvedSinceCommit = 0
  private readonly abort = new AbortController()
  private loop: Promise<void> | undefined
  private readonly autoCommit: boolean

  constructor(private readonly host: RunnerHost, private readonly config: ConsumerRunConfig) {
    this.autoCommit = config.autoCommit ?? true
  }

  start(): void {
    this.loop = this.runLoop()
  }

  private async runLoop(): Promise<void> {
    const r = this.host.retry
    while (this.running) {
      try {
        await this.host.native.run({
          eachBatch: (payload) => this.batch(payload),
          eachBatchAutoResolve: false,
          partitionsConsumedConcurrently: Math.max(1, Math.floor(this.config.partitionsConsumedConcurrently ?? 1)),
          onHandlerError: 'stop',
          retry: { retries: r.retries ?? 5, initialRetryTimeMs: r.initialRetryTime ?? 300, maxRetryTimeMs: r.maxRetryTime ?? 30_000 },
          signal: this.abort.signal,
        })
        return
      } catch (e) {
        if (!this.running) return
        // kafkajs "crashes" here and, unless restartOnFailure declines, restarts: the position
        // went back to the failed message, so the same message is handled again.
        const cause = e instanceof HandlerFailedError && e.cause instanceof Error ? e.cause : e
        const restart = await this.host.crash(toKafkaJSError(cause))
        if (!restart) {
          this.running = false
          this.host.ended()
          return
        }
      }
    }
  }

  isRunning(): boolean {
    return this.running
  }

  /** Stops: running handlers finish, resolved offsets are committed (autoCommit), run() ends. */
  async stop(): Promise<void> {
    this.running = false
    this.abort.abort()
    await this.host.native.stop()
    await this.loop
  }

  /** Whether autoCommitInterval or autoCommitThreshold calls for a commit now (checked per message: no promise unless one is due). */
  private commitDue(): boolean {
    if (!this.autoCommit) return false
    const { autoCommitInterval, autoCommitThreshold } = this.config
    return (autoCommitInterval != null && Date.now() >= this.lastCommit + autoCommitInterval) || (autoCommitThreshold != null && this.resolvedSinceCommit >= autoCommitThreshold)
  }

  private committing: Promise<void> | undefined
  private nextCommit: Promise<void> | undefined

  /**
   * Commits every partition's resolved offsets. Batches of several partitions finishing while
   * a commit is in flight share the one after it (it carries all their offsets), so each still
   * waits for a commit of its own offsets, as in kafkajs, without one request per batch.
   */
  private commit(p: NativeEachBatch): Promise<void> {
    if (this.nextCommit !== undefined) return this.nextCommit
    const start = (): Promise<void> => {
      const c = p.commitOffsetsIfNecessary().then(() => {
        this.lastCommit = Date.now()
        this.resolvedSinceCommit = 0
      })
      // Only for ordering: its outcome reaches callers through `c`.
      this.committing = c.catch(() => undefined).finally(() => {
        if (this.committing === tracked) this.committing = undefined
      })
      const tracked = this.committing
      return c
    }
    if (this.committing === undefined) return start()
    const next = this.committing.then(() => {
      this.nextCommit = undefined
      return start()
    })
    this.nextCommit = next
    return next
  }

  private async batch(p: NativeEachBatch): Promise<void> {
    const nb: NativeBatch = p.batch
    if (nb.messages.length === 0) return
    const batch = new Batch(nb)
    const { topic, partition } = nb
    const payload = () => ({
      topic,
      partition,
      highWatermark: batch.highWatermark,
      offsetLag: batch.offsetLag(),
      offsetLagLow: batch.offsetLagLow(),
      batchSize: batch.messages.length,
      firstOffset: batch.firstOffset(),
      lastOffset: batch.lastOffset(),
    })
    const events = this.host.instrumentation
    const started = Date.now()
    events.emit(consumerEvents.START_BATCH_PROCESS, payload)
    const resolve = (offset: string) => {
      p.resolveOffset(BigInt(offset))
      this.resolvedSinceCommit++
    }
    if (this.config.eachMessage !== undefined) {
      const each = this.config.eachMessage
      const heartbeat = () => p.heartbeat()
      const pause = () => p.pause()
      for (let i = 0; i < batch.messages.length; i++) {
        if (!this.running || p.isStale()) break
        const message = batch.messages[i]!
        // kafkajs' eachMessage is one process span per message (as its OpenTelemetry
        // instrumentation makes), inside the native batch's; one check when nobody traces.
        if (isTraced(tracing.process)) {
          const ctx = { clientId: this.host.clientId, groupId: this.host.groupId, topic, partition, messages: [nb.messages[i]!], batch: false }
          await traceCall(tracing.process, ctx, () => each({ topic, partition, message, heartbeat, pause }))
        } else await each({ topic, partition, message, heartbeat, pause })
        // The native offset: no parsing of the string form per message.
        p.resolveOffset(nb.messages[i]!.offset)
        this.resolvedSinceCommit++
        if (this.commitDue()) await this.commit(p)
      }
    } else if (this.config.eachBatch !== undefined) {
      await this.config.eachBatch({
        batch,
        resolveOffset: resolve,
        heartbeat: () => p.heartbeat(),
        pause: () => p.pause(),
        commitOffsetsIfNecessary: async (offsets) => {
          if (offsets !== undefined) await this.host.native.commit(toOffsets(offsets)).catch((e) => Promise.reject(toKafkaJSError(e)))
          else if (this.commitDue()) await this.commit(p)
        },
        uncommittedOffsets: () => {
          const topics = new Map<string, { partition: number; offset: string }[]>()
          for (const o of p.uncommittedOffsets()) {
            const list = topics.get(o.topic) ?? []
            list.push({ partition: o.partition, offset: String(o.offset) })
            topics.set(o.topic, list)
          }
          return { topics: [...topics].map(([t, partitions]) => ({ topic: t, partitions })) }
        },
        isRunning: () => this.running && p.isRunning(),
        isStale: () => p.isStale(),
      })
      if ((this.config.eachBatchAutoResolve ?? true) && !p.isStale()) resolve(batch.lastOffset())
    }
    events.emit(consumerEvents.END_BATCH_PROCESS, () => ({ ...payload(), duration: Date.now() - started }))
    // kafkajs commits after every batch.
    if (this.autoCommit) await this.commit(p).catch((e) => this.host.logger.warn('commit after batch failed', { error: (e as Error).message }))
  }
}
