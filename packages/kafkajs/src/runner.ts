import { ExponentialBackoff, sleep } from '@tidelog/client'
import type { Batch as NativeBatch, Consumer as NativeConsumer, TopicPartitionOffset as NativeOffset } from '@tidelog/consumer'
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
  readonly groupId: string
  readonly logger: Logger
  readonly retry: RetryOptions
  readonly instrumentation: Instrumentation<typeof consumerEvents>
  /** Commits and emits COMMIT_OFFSETS; rejects with a kafkajs error. */
  commit(offsets: NativeOffset[]): Promise<void>
  pause(topic: string, partition: number): () => void
  /** The handler failed more often than retry.retries allows: decides whether to go on. */
  crash(error: Error): Promise<boolean>
}

interface PartitionProgress {
  /** Next offset to commit (the last resolved + 1). */
  resolved: bigint | undefined
  committed: bigint | undefined
  /** Bumped by seeks and handler failures: batches fetched before belong to an older position. */
  epoch: number
  failures: number
}

const key = (topic: string, partition: number) => `${topic}:${partition}`

/**
 * kafkajs' consumer.run() on the native consumer's batches: each partition's batches in order,
 * up to partitionsConsumedConcurrently partitions at once. The native consumer's own auto-commit
 * is off: kafkajs commits what handlers resolved (resolveOffset, eachBatchAutoResolve), which
 * may be less than a batch, so the offsets committed here are exactly the resolved ones.
 */
export class Runner {
  private running = true
  private readonly progress = new Map<string, PartitionProgress>()
  private readonly inFlight = new Map<string, Promise<void>>()
  private lastCommit = Date.now()
  private resolvedSinceCommit = 0
  private readonly backoff: ExponentialBackoff
  private readonly concurrency: number
  private readonly autoCommit: boolean
  private loop: Promise<void> | undefined
  private readonly abort = new AbortController()

  constructor(private readonly host: RunnerHost, private readonly config: ConsumerRunConfig) {
    this.concurrency = Math.max(1, Math.floor(config.partitionsConsumedConcurrently ?? 1))
    this.autoCommit = config.autoCommit ?? true
    this.backoff = new ExponentialBackoff(host.retry.initialRetryTime ?? 300, host.retry.maxRetryTime ?? 30_000, host.retry.multiplier ?? 2, host.retry.factor ?? 0.2)
  }

  start(): void {
    this.loop = this.dispatch().catch((e) => this.host.logger.error('consumer runner stopped', { error: (e as Error).message }))
  }

  isRunning(): boolean {
    return this.running
  }

  private state(topic: string, partition: number): PartitionProgress {
    const k = key(topic, partition)
    let p = this.progress.get(k)
    if (p === undefined) this.progress.set(k, (p = { resolved: undefined, committed: undefined, epoch: 0, failures: 0 }))
    return p
  }

  /** Moves a partition: batches already fetched for it are dropped, and, with autoCommit, the offset is committed (as kafkajs' seek). */
  seeked(topic: string, partition: number, offset: bigint): void {
    const p = this.state(topic, partition)
    p.epoch++
    p.resolved = offset
    this.resolvedSinceCommit++
  }

  private async dispatch(): Promise<void> {
    const it = this.host.native.batches()
    try {
      while (this.running) {
        // With a single partition at a time, the next batch is asked for only once the handler is
        // done: the native consumer then waits for it before a rebalance moves the partition.
        while (this.inFlight.size >= this.concurrency && this.running) await Promise.race(this.inFlight.values())
        if (!this.running) break
        const next = await it.next()
        if (next.done || !this.running) break
        const b = next.value
        const k = key(b.topic, b.partition)
        const before = this.inFlight.get(k) ?? Promise.resolve()
        const epoch = this.state(b.topic, b.partition).epoch
        const task: Promise<void> = before.then(() => this.process(b, epoch)).finally(() => {
          if (this.inFlight.get(k) === task) this.inFlight.delete(k)
        })
        this.inFlight.set(k, task)
        if (this.concurrency === 1) await task
      }
    } finally {
      await it.return?.()
    }
  }

  /** Waits for the handlers of these partitions (all when omitted), then commits what they resolved. */
  async drain(partitions?: { topic: string; partition: number }[]): Promise<void> {
    const keys = partitions?.map((p) => key(p.topic, p.partition))
    const waiting = [...this.inFlight].filter(([k]) => keys === undefined || keys.includes(k)).map(([, t]) => t)
    await Promise.allSettled(waiting)
    if (this.autoCommit) await this.commitResolved(keys).catch((e) => this.host.logger.warn('commit before rebalance failed', { error: (e as Error).message }))
    if (keys !== undefined) for (const k of keys) this.progress.delete(k)
  }

  async stop(): Promise<void> {
    this.running = false
    this.abort.abort()
    await Promise.allSettled([...this.inFlight.values()])
    if (this.autoCommit) await this.commitResolved().catch((e) => this.host.logger.warn('final commit failed', { error: (e as Error).message }))
  }

  /** Waits for the dispatch loop to end after stop(). */
  async finished(): Promise<void> {
    await this.loop
  }

  private stale(b: NativeBatch, epoch: number): boolean {
    return !this.running || this.state(b.topic, b.partition).epoch !== epoch
  }

  private async process(nb: NativeBatch, epoch: number): Promise<void> {
    if (this.stale(nb, epoch) || nb.messages.length === 0) return
    const { topic, partition } = nb
    const progress = this.state(topic, partition)
    const batch = new Batch(nb)
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
    let paused = false
    const pause = () => {
      paused = true
      return this.host.pause(topic, partition)
    }
    const resolve = (offset: string) => {
      const next = BigInt(offset) + 1n
      if (progress.resolved === undefined || next > progress.resolved) {
        progress.resolved = next
        this.resolvedSinceCommit++
      }
    }
    const heartbeat = async () => {}
    try {
      if (this.config.eachMessage !== undefined) {
        for (const message of batch.messages) {
          if (this.stale(nb, epoch)) break
          await this.config.eachMessage({ topic, partition, message, heartbeat, pause })
          resolve(message.offset)
          await this.commitIfNecessary()
          if (paused) break
        }
      } else if (this.config.eachBatch !== undefined) {
        await this.config.eachBatch({
          batch,
          resolveOffset: resolve,
          heartbeat,
          pause,
          commitOffsetsIfNecessary: (offsets) => (offsets !== undefined ? this.host.commit(toNative(offsets)) : this.commitIfNecessary()),
          uncommittedOffsets: () => this.uncommitted(),
          isRunning: () => this.running,
          isStale: () => this.stale(nb, epoch),
        })
        if ((this.config.eachBatchAutoResolve ?? true) && !this.stale(nb, epoch) && !paused) resolve(batch.lastOffset())
      }
      progress.failures = 0
    } catch (e) {
      await this.failed(nb, epoch, progress, e)
      return
    }
    events.emit(consumerEvents.END_BATCH_PROCESS, () => ({ ...payload(), duration: Date.now() - started }))
    if (paused || this.stale(nb, epoch)) {
      // The rest of the batch was not handed out: read it again from the first unresolved offset.
      if (!this.stale(nb, epoch)) this.rewind(nb, progress)
    }
    if (this.autoCommit) await this.commitResolved().catch((e) => this.host.logger.warn('commit failed', { error: (e as Error).message }))
  }

  /** Fetching the partition starts again at its first unresolved offset. */
  private rewind(nb: NativeBatch, progress: PartitionProgress): void {
    progress.epoch++
    const offset = progress.resolved ?? nb.messages[0]!.offset
    try {
      this.host.native.seek({ topic: nb.topic, partition: nb.partition, offset })
    } catch {
      // The partition was revoked meanwhile: its new owner starts from the committed offset.
    }
  }

  /**
   * A handler threw. As in kafkajs, what it resolved is committed, and the unresolved messages
   * are delivered again after a backoff; after retry.retries failures in a row the consumer
   * "crashes" (CRASH event) and restarts unless restartOnFailure says no. Nothing is skipped.
   */
  private async failed(nb: NativeBatch, epoch: number, progress: PartitionProgress, e: unknown): Promise<void> {
    const error = e instanceof Error ? e : new Error(String(e))
    this.host.logger.error(`Error when calling ${this.config.eachMessage !== undefined ? 'eachMessage' : 'eachBatch'}`, { topic: nb.topic, partition: nb.partition, error: error.message, stack: error.stack })
    if (this.autoCommit) await this.commitResolved().catch(() => undefined)
    if (this.stale(nb, epoch)) return
    this.rewind(nb, progress)
    progress.failures++
    const retries = this.host.retry.retries ?? 5
    if (progress.failures > retries) {
      progress.failures = 0
      const restart = await this.host.crash(toKafkaJSError(error))
      if (!restart) {
        this.running = false
        return
      }
    }
    await sleep(this.backoff.delay(progress.failures), this.abort.signal).catch(() => undefined)
  }

  private async commitIfNecessary(): Promise<void> {
    if (!this.autoCommit) return
    const { autoCommitInterval, autoCommitThreshold } = this.config
    const timeUp = autoCommitInterval != null && Date.now() >= this.lastCommit + autoCommitInterval
    const enough = autoCommitThreshold != null && this.resolvedSinceCommit >= autoCommitThreshold
    if (timeUp || enough) await this.commitResolved()
  }

  private uncommitted(): OffsetsByTopicPartition {
    const topics = new Map<string, { partition: number; offset: string }[]>()
    for (const [k, p] of this.progress) {
      if (p.resolved === undefined || p.resolved === p.committed) continue
      const i = k.lastIndexOf(':')
      const topic = k.slice(0, i)
      const list = topics.get(topic) ?? []
      list.push({ partition: Number(k.slice(i + 1)), offset: String(p.resolved) })
      topics.set(topic, list)
    }
    return { topics: [...topics].map(([topic, partitions]) => ({ topic, partitions })) }
  }

  private async commitResolved(keys?: string[]): Promise<void> {
    const offsets: NativeOffset[] = []
    const done: [PartitionProgress, bigint][] = []
    for (const [k, p] of this.progress) {
      if (keys !== undefined && !keys.includes(k)) continue
      if (p.resolved === undefined || p.resolved === p.committed) continue
      const i = k.lastIndexOf(':')
      offsets.push({ topic: k.slice(0, i), partition: Number(k.slice(i + 1)), offset: p.resolved })
      done.push([p, p.resolved])
    }
    if (offsets.length === 0) return
    await this.host.commit(offsets)
    for (const [p, offset] of done) p.committed = offset
    this.lastCommit = Date.now()
    this.resolvedSinceCommit = 0
  }
}

function toNative(offsets: Offsets): NativeOffset[] {
  return offsets.topics.flatMap((t) => t.partitions.map((p) => ({ topic: t.topic, partition: p.partition, offset: BigInt(p.offset) })))
}
