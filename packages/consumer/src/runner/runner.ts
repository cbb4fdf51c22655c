import { performance } from 'node:perf_hooks'
import { ExponentialBackoff, sleep } from '@tidelog/client'
import type { Chunk } from '../chunk.js'
import { HandlerFailedError, IllegalStateError } from '../errors.js'
import type { PartitionState } from '../positions.js'
import type { TopicPartitionOffset } from '../types.js'
import type { RunnerHost } from './host.js'
import type { EachBatchPayload, EachMessagePayload, HandlerErrorPolicy, RunOptions } from './types.js'
import { PartitionWorker } from './worker.js'

const DEFAULT_RETRIES = 5

export type InvokeOutcome = 'done' | 'skipped' | 'abandoned'

/**
 * consumer.run(): takes fetched chunks from the fetcher's queue and hands them to one worker per
 * partition. Up to `partitionsConsumedConcurrently` workers run at once, each taking one chunk
 * per turn (then the next partition waiting gets the slot), so partitions share the handler
 * slots fairly and each stays in offset order. A partition whose queue is full is not fetched
 * (PartitionState.held) until it drains, so a slow partition bounds its own buffer and never
 * holds the fetch budget the others need.
 */
export class Runner<K, V> {
  running = true
  readonly eachMessage: ((p: EachMessagePayload<K, V>) => Promise<void> | void) | undefined
  readonly eachBatch: ((p: EachBatchPayload<K, V>) => Promise<void> | void) | undefined
  readonly eachBatchAutoResolve: boolean
  /** The most handlers seen running at once (for tests and diagnostics). */
  peakConcurrency = 0
  private readonly concurrency: number
  private readonly policy: HandlerErrorPolicy
  private readonly retries: number
  private readonly backoff: ExponentialBackoff
  private readonly workers = new Map<PartitionState, PartitionWorker<K, V>>()
  private readonly ready: PartitionWorker<K, V>[] = []
  private readonly turns = new Set<Promise<void>>()
  private readonly stopping = new AbortController()
  private failure: unknown
  private failed = false
  private done: Promise<void> | undefined
  private readonly onAbort = (): void => this.stop()

  constructor(
    readonly host: RunnerHost<K, V>,
    private readonly options: RunOptions<K, V>,
  ) {
    const { eachMessage, eachBatch } = options
    if ((eachMessage === undefined) === (eachBatch === undefined)) throw new TypeError('run() needs exactly one of eachMessage and eachBatch')
    if (eachMessage !== undefined && typeof eachMessage !== 'function') throw new TypeError('eachMessage must be a function')
    if (eachBatch !== undefined && typeof eachBatch !== 'function') throw new TypeError('eachBatch must be a function')
    this.eachMessage = eachMessage
    this.eachBatch = eachBatch
    this.eachBatchAutoResolve = options.eachBatchAutoResolve ?? true
    const n = options.partitionsConsumedConcurrently ?? 1
    if (!Number.isSafeInteger(n) || n < 1) throw new TypeError(`partitionsConsumedConcurrently must be an integer >= 1, got ${String(n)}`)
    this.concurrency = n
    const policy = options.onHandlerError ?? 'stop'
    if (policy !== 'stop' && policy !== 'skip') throw new TypeError(`onHandlerError must be 'stop' or 'skip', got ${String(policy)}`)
    this.policy = policy
    const retries = options.retry?.retries ?? DEFAULT_RETRIES
    if (!Number.isSafeInteger(retries) || retries < 0) throw new TypeError(`retry.retries must be an integer >= 0, got ${String(retries)}`)
    this.retries = retries
    const b = host.backoff
    this.backoff =
      options.retry?.initialRetryTimeMs === undefined && options.retry?.maxRetryTimeMs === undefined
        ? b
        : new ExponentialBackoff(options.retry.initialRetryTimeMs ?? b.initialMs, options.retry.maxRetryTimeMs ?? b.maxMs)
  }

  /** Resolves when stopped (stop(), the signal, close()); rejects with the error that stopped it. */
  run(): Promise<void> {
    if (this.done !== undefined) return this.done
    const d = this.host.delivery
    if (d.reader !== undefined) return Promise.reject(new IllegalStateError('this consumer is already being read (an iterator or another run()): one at a time'))
    d.reader = this
    d.holder = this
    const signal = this.options.signal
    if (signal?.aborted === true) this.running = false
    signal?.addEventListener('abort', this.onAbort, { once: true })
    this.done = this.dispatch().finally(() => signal?.removeEventListener('abort', this.onAbort))
    return this.done
  }

  /** Stops taking records; handlers running now finish; run() then settles. */
  stop(): void {
    if (!this.running) return
    this.running = false
    this.stopping.abort()
    this.host.delivery.wake()
  }

  /** The runner ends with this error (the first one wins). */
  fail(err: unknown): void {
    if (!this.failed) {
      this.failed = true
      this.failure = err
    }
    this.stop()
  }

  // --- dispatching --------------------------------------------------------------------------

  private async dispatch(): Promise<void> {
    const d = this.host.delivery
    const f = this.host.fetcher
    try {
      while (this.running) {
        if (d.closed) break
        const err = d.errors.shift()
        if (err !== undefined) {
          this.fail(err)
          break
        }
        let routed = false
        for (let c = f.poll(); c !== undefined; c = f.poll()) {
          this.route(c)
          routed = true
        }
        if (routed) this.pump()
        else await d.wait()
      }
    } finally {
      await this.finish()
    }
    if (this.failed) throw this.failure
  }

  private route(c: Chunk): void {
    const s = c.state
    let w = this.workers.get(s)
    if (w === undefined) this.workers.set(s, (w = new PartitionWorker(s, this)))
    const wasEmpty = w.queue.length === 0
    w.push(c)
    if (wasEmpty && !w.active) this.ready.push(w)
  }

  /** Gives free slots to waiting workers, first come first served. */
  private pump(): void {
    while (this.running && this.turns.size < this.concurrency && this.ready.length > 0) {
      const w = this.ready.shift()!
      const t: Promise<void> = w
        .turn()
        .catch((err: unknown) => this.fail(err))
        .finally(() => {
          this.turns.delete(t)
          if (w.queue.length > 0) this.ready.push(w)
          else if (!this.host.assignment.isCurrent(w.state)) this.workers.delete(w.state)
          this.pump()
        })
      this.turns.add(t)
      if (this.turns.size > this.peakConcurrency) this.peakConcurrency = this.turns.size
    }
  }

  /**
   * After the last turn: queued records are dropped and every partition goes back to the first
   * offset not processed, so nothing handed out but unfinished is skipped by whatever reads
   * next (another run(), an iterator, or after a restart from the commit made here).
   */
  private async finish(): Promise<void> {
    this.running = false
    while (this.turns.size > 0) await Promise.all([...this.turns])
    const host = this.host
    for (const w of this.workers.values()) w.drain()
    this.ready.length = 0
    for (const s of host.assignment.all()) {
      s.held = false
      if (!s.hasPosition) continue
      if (s.acked >= 0n && s.acked < s.position) s.seek(s.acked, s.lastEpoch)
      else if (s.fetchOffset !== s.position) s.invalidateFetches()
    }
    this.workers.clear()
    host.fetcher.purge()
    const d = host.delivery
    if (d.reader === this) d.reader = undefined
    if (d.holder === this) d.holder = undefined
    host.fetcher.wake()
    if (host.hasGroup && host.options.autoCommit && !d.closed) await host.commitProcessed().catch((err) => host.logger.warn({ err }, 'commit after run() failed'))
  }

  // --- handlers -----------------------------------------------------------------------------

  /**
   * Calls a handler with the retry policy: up to `retries` more attempts with backoff, then
   * 'stop' (throws HandlerFailedError: the runner ends) or 'skip'. A handler failing while its
   * partition moved on or the runner stops is abandoned: nothing of it counts as processed.
   */
  async invoke(w: PartitionWorker<K, V>, fn: () => Promise<void> | void, offset: bigint, failedAt: () => bigint = () => offset): Promise<InvokeOutcome> {
    const epoch = w.state.epoch
    for (let attempt = 0; ; attempt++) {
      w.handlerSince = performance.now()
      try {
        await fn()
        return 'done'
      } catch (err) {
        const s = w.state
        const moved = s.epoch !== epoch || s.revoking || !this.host.assignment.isCurrent(s)
        if (moved || !this.running) {
          this.host.logger.debug({ err, topic: s.topic, partition: s.partition }, 'handler failed while its partition moved on or the runner stopped')
          return 'abandoned'
        }
        if (attempt < this.retries) {
          const delay = this.backoff.delay(attempt)
          this.host.logger.warn({ err, topic: s.topic, partition: s.partition, offset: failedAt(), attempt: attempt + 1, delayMs: delay }, 'handler failed, retrying')
          w.handlerSince = -1
          try {
            await sleep(delay, this.stopping.signal)
          } catch {
            return 'abandoned'
          }
          continue
        }
        if (this.policy === 'skip') {
          this.host.logger.error({ err, topic: s.topic, partition: s.partition, offset: failedAt() }, 'handler failed, skipping (onHandlerError: skip)')
          return 'skipped'
        }
        throw new HandlerFailedError(s.topic, s.partition, failedAt(), attempt + 1, err)
      } finally {
        w.handlerSince = -1
        this.host.polled()
      }
    }
  }

  // --- for the consumer -------------------------------------------------------------------------

  /** How long the oldest running handler has run (max.poll.interval.ms); 0 when none runs. */
  heldMs(): number {
    let oldest = Infinity
    for (const w of this.workers.values()) if (w.handlerSince >= 0 && w.handlerSince < oldest) oldest = w.handlerSince
    return oldest === Infinity ? 0 : performance.now() - oldest
  }

  /** Resolves once no handler of these partitions runs; they take nothing more (they are revoking). */
  async waitFor(states: ReadonlySet<PartitionState>): Promise<void> {
    const waits: Promise<void>[] = []
    for (const s of states) {
      const w = this.workers.get(s)
      if (w !== undefined) {
        w.drain()
        waits.push(w.idle())
      }
    }
    await Promise.all(waits)
  }

  uncommittedOffsets(): TopicPartitionOffset[] {
    const out: TopicPartitionOffset[] = []
    for (const s of this.host.assignment.all()) {
      if (!s.hasPosition || s.acked < 0n || (s.committed >= 0n && s.acked <= s.committed)) continue
      out.push({ topic: s.topic, partition: s.partition, offset: s.acked, leaderEpoch: s.lastEpoch })
    }
    return out
  }

  async commitIfNecessary(offsets?: readonly TopicPartitionOffset[]): Promise<void> {
    if (offsets !== undefined) return this.host.commit(offsets)
    const pending = this.uncommittedOffsets()
    if (pending.length > 0) await this.host.commit(pending)
  }
}
