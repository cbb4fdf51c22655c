import { performance } from 'node:perf_hooks'
import type { Record } from '@tidelog/protocol'
import type { Chunk } from '../chunk.js'
import { RecordDeserializationError } from '../errors.js'
import type { PartitionState } from '../positions.js'
import type { Batch, Message, TopicPartitionOffset } from '../types.js'
import type { Runner } from './runner.js'
import { traceProcess } from '../tracing.js'

/**
 * Beyond this many chunks waiting behind the one in hand (or twice maxPartitionFetchBytes), the
 * partition is not fetched until its queue drains: a slow handler bounds its own buffer and
 * leaves the fetch budget to the other partitions.
 */
const HOLD_CHUNKS = 2

/** The partition's records, handled one at a time in offset order, by one handler call at a time. */
export class PartitionWorker<K, V> {
  readonly queue: Chunk[] = []
  queuedBytes = 0
  /** Set while the worker has a turn (it holds one of the runner's slots). */
  active = false
  /** performance.now() when the handler running now started (or last called heartbeat()); -1 when none runs. */
  handlerSince = -1
  /** Some chunk of this partition was taken from the fetcher and not handled to its end. */
  dropped = false
  private idleWaiters: (() => void)[] = []

  constructor(
    readonly state: PartitionState,
    private readonly runner: Runner<K, V>,
  ) {}

  push(c: Chunk): void {
    const holdBytes = 2 * this.runner.host.options.maxPartitionFetchBytes
    this.queue.push(c)
    this.queuedBytes += c.bytes
    if (this.queue.length >= HOLD_CHUNKS || this.queuedBytes >= holdBytes) this.state.held = true
  }

  /** Resolves once no handler of this partition runs (at once when none does). */
  idle(): Promise<void> {
    if (!this.active) return Promise.resolve()
    return new Promise((resolve) => this.idleWaiters.push(resolve))
  }

  /** Whether handling this partition must stop: revoked, lost, sought, paused or the runner stopping. */
  stale(c: Chunk, epoch: number): boolean {
    const s = this.state
    return c.isStale || s.epoch !== epoch || s.revoking || s.paused || !this.runner.host.assignment.isCurrent(s)
  }

  private shift(): Chunk | undefined {
    const c = this.queue.shift()
    if (c === undefined) return undefined
    this.queuedBytes -= c.bytes
    const s = this.state
    if (s.held && this.queue.length < HOLD_CHUNKS && this.queuedBytes < 2 * this.runner.host.options.maxPartitionFetchBytes) {
      s.held = false
      this.runner.host.fetcher.wake()
    }
    return c
  }

  /** Drops every queued chunk (the runner stops, or the partition moved on). */
  drain(): void {
    for (let c = this.shift(); c !== undefined; c = this.shift()) {
      this.dropped = true
      this.runner.host.fetcher.release(c)
    }
    this.state.held = false
  }

  /** One turn: handles the next queued chunk. */
  async turn(): Promise<void> {
    this.active = true
    const c = this.shift()
    try {
      if (c !== undefined) await this.handle(c)
    } finally {
      this.active = false
      this.handlerSince = -1
      const w = this.idleWaiters
      this.idleWaiters = []
      for (const f of w) f()
    }
  }

  private async handle(c: Chunk): Promise<void> {
    const r = this.runner
    const s = this.state
    const epoch = s.epoch
    try {
      if (this.stale(c, epoch) || !r.running) {
        this.dropped = true
        return
      }
      const ahead = r.host.commitAhead
      if (ahead !== undefined) await ahead(s, c.endOffset)
      if (r.eachBatch !== undefined) await this.batch(c, epoch)
      else await this.messages(c, epoch)
    } finally {
      r.host.fetcher.release(c)
    }
  }

  /**
   * The next record of the chunk; null at its end; a promise while a batch is decompressed (ask
   * again after it). Synchronous when the data is there: no microtask per record. Errors halt
   * the partition.
   */
  private next(c: Chunk): Record | null | Promise<void> {
    try {
      const r = c.next()
      return r instanceof Promise ? r.catch((err: unknown) => this.halted(err)) : r
    } catch (err) {
      return this.halted(err)
    }
  }

  private halted(err: unknown): never {
    this.runner.host.halt(this.state, err)
    throw err
  }

  /** Marks everything before `next` processed, unless the partition moved on meanwhile. */
  ack(epoch: number, next: bigint): void {
    const s = this.state
    if (s.epoch === epoch && next > s.acked && next <= s.position && this.runner.host.assignment.isCurrent(s)) s.acked = next
  }

  /** The message for a record (undefined: skipped, it could not be deserialized); a promise only with async deserializers. */
  private toMessage(c: Chunk, rec: Record): Message<K, V> | undefined | Promise<Message<K, V> | undefined> {
    const s = this.state
    try {
      const m = this.runner.host.decoder.fromRecord(s.topic, s.partition, rec, c.timestampType, c.leaderEpoch)
      return m instanceof Promise ? m.catch((err: unknown) => this.undecodable(err, rec)) : m
    } catch (err) {
      return this.undecodable(err, rec)
    }
  }

  private undecodable(err: unknown, rec: Record): undefined {
    const s = this.state
    if (!(err instanceof RecordDeserializationError) || this.runner.host.onDeserializationError === 'stop') throw err
    this.runner.host.logger.warn({ err, topic: s.topic, partition: s.partition, offset: rec.offset }, 'skipping a record that cannot be deserialized')
    return undefined
  }

  private async messages(c: Chunk, epoch: number): Promise<void> {
    const r = this.runner
    const s = this.state
    const each = r.eachMessage!
    for (;;) {
      if (!r.running || this.stale(c, epoch)) {
        this.dropped = true
        return
      }
      let rec = this.next(c)
      while (rec instanceof Promise) {
        await rec
        rec = this.next(c)
      }
      if (rec === null) return
      s.position = rec.offset + 1n
      s.lastEpoch = c.leaderEpoch
      let message = this.toMessage(c, rec)
      if (message instanceof Promise) message = await message
      if (message !== undefined) {
        const payload = {
          topic: s.topic,
          partition: s.partition,
          message,
          heartbeat: () => this.heartbeat(),
          pause: () => this.pause(),
        }
        const outcome = await r.invoke(this, () => this.traced([message], false, () => each(payload)), rec.offset)
        if (outcome === 'abandoned') return
      }
      this.ack(epoch, rec.offset + 1n)
    }
  }

  private async batch(c: Chunk, epoch: number): Promise<void> {
    const r = this.runner
    const s = this.state
    const start = s.position
    const messages: Message<K, V>[] = []
    let failure: unknown
    for (;;) {
      const rec = this.next(c)
      if (rec instanceof Promise) {
        await rec
        continue
      }
      if (rec === null) break
      s.position = rec.offset + 1n
      s.lastEpoch = c.leaderEpoch
      try {
        let m = this.toMessage(c, rec)
        if (m instanceof Promise) m = await m
        if (m !== undefined) messages.push(m)
      } catch (err) {
        // Hand over what comes before the bad record; the position goes back to it after.
        s.position = rec.offset
        failure = err
        break
      }
    }
    const end = s.position
    if (messages.length > 0) {
      const batchOf = (list: Message<K, V>[]): Batch<K, V> => ({
        topic: s.topic,
        partition: s.partition,
        messages: list,
        highWatermark: c.highWatermark,
        lastStableOffset: c.lastStableOffset,
        logStartOffset: c.logStartOffset,
        nextOffset: end,
      })
      let batch = batchOf(messages)
      const payload = {
        get batch() {
          return batch
        },
        resolveOffset: (offset: bigint) => this.ack(epoch, offset + 1n),
        heartbeat: () => this.heartbeat(),
        commitOffsetsIfNecessary: (offsets?: readonly TopicPartitionOffset[]) => r.commitIfNecessary(offsets),
        uncommittedOffsets: () => r.uncommittedOffsets(),
        isRunning: () => r.running,
        isStale: () => this.stale(c, epoch),
        pause: () => this.pause(),
      }
      const outcome = await r.invoke(
        this,
        () => {
          // A retry hands over only what the failed attempt left unresolved.
          if (s.epoch === epoch && s.acked > start) batch = batchOf(messages.filter((m) => m.offset >= s.acked))
          return this.traced(batch.messages, true, () => r.eachBatch!(payload))
        },
        start,
        () => (s.acked > start ? s.acked : start),
      )
      if (outcome === 'abandoned') return
      if (outcome === 'skipped' || (r.eachBatchAutoResolve && !this.stale(c, epoch))) this.ack(epoch, end)
      // Returned with a rest unresolved (early, or stale because paused): it is handed over
      // again rather than skipped. Not after a seek (a new epoch) nor for revoked partitions.
      if (failure === undefined && s.epoch === epoch && s.acked < s.position && !s.revoking && r.host.assignment.isCurrent(s)) {
        s.seek(s.acked, s.lastEpoch)
        r.host.fetcher.purge()
        r.host.fetcher.wake()
      }
    } else if (failure === undefined) {
      // Only records that are never handed over (control records, skipped ones).
      this.ack(epoch, end)
    }
    if (failure !== undefined) throw failure
  }

  private traced<R>(messages: readonly Message<K, V>[], batch: boolean, fn: () => R): R | Promise<Awaited<R>> {
    const host = this.runner.host
    return traceProcess(host.fetcher.cluster.clientId, host.options.groupId, this.state.topic, this.state.partition, messages, batch, fn)
  }

  private heartbeat(): Promise<void> {
    if (this.handlerSince >= 0) this.handlerSince = performance.now()
    this.runner.host.polled()
    return Promise.resolve()
  }

  private pause(): () => void {
    const tp = this.state.toJSON()
    this.runner.host.pause([tp])
    return () => this.runner.host.resume([tp])
  }
}
