import type { Chunk } from './chunk.js'
import { IllegalStateError } from './errors.js'
import type { Fetcher } from './fetcher.js'
import { ConsumerMessage } from './message.js'
import type { PartitionState } from './positions.js'
import type { Batch, Message } from './types.js'

export interface DeliveryHooks {
  /** at-most-once: commits `offset` for the partition before anything of the chunk is handed out. */
  commitAhead: ((state: PartitionState, offset: bigint) => Promise<void>) | undefined
  /** A partition hit an error the application is given; it stays stopped until a seek. */
  onHalt(state: PartitionState, error: unknown): void
}

/**
 * Hands fetched records to the application, one message or one batch at a time, and tracks
 * what the application holds. A message (or batch) is outstanding from the moment it is handed
 * out until the application asks for the next one: then it counts as processed, and the
 * partition's acked offset moves past it (what at-least-once auto-commits commit).
 */
export class Delivery {
  readonly errors: Error[] = []
  closed = false
  /** An iterator is waiting for data (the application is idle, not holding anything). */
  waiting = false
  /** Bumped on every request for a message; the poll-interval check watches it move. */
  polls = 0
  /**
   * The iterator reading now. One at a time: a message counts as processed when its loop asks
   * for the next one, and a second loop asking would mark the first loop's message processed
   * while it is still being handled (and auto-commit it).
   */
  reader: object | undefined
  /**
   * consumer.run()'s runner while it reads: revocations wait for its handlers of the revoked
   * partitions, and max.poll.interval.ms is measured on its oldest running handler.
   */
  holder: { waitFor(states: ReadonlySet<PartitionState>): Promise<void>; heldMs(): number } | undefined
  private current: Chunk | undefined
  private committedAhead: Chunk | undefined
  private outstanding: PartitionState | undefined
  private outstandingEpoch = 0
  private outstandingAckTo = -1n
  private ackWaiters: (() => void)[] = []

  constructor(
    private readonly fetcher: Fetcher,
    private readonly hooks: DeliveryHooks,
  ) {}

  /** The application is done with what it was given. */
  ack(): void {
    const s = this.outstanding
    if (s === undefined) return
    this.outstanding = undefined
    if (s.epoch === this.outstandingEpoch && this.outstandingAckTo > s.acked) s.acked = this.outstandingAckTo
    if (this.ackWaiters.length > 0) this.releaseWaiters()
  }

  /** Forgets the outstanding delivery without counting it processed (loop left, close, loss). */
  abandon(): void {
    this.outstanding = undefined
    if (this.ackWaiters.length > 0) this.releaseWaiters()
  }

  /** abandon(), if what the application holds comes from one of these partitions. */
  abandonFrom(states: ReadonlySet<PartitionState>): void {
    if (this.outstanding !== undefined && states.has(this.outstanding)) this.abandon()
  }

  private releaseWaiters(): void {
    const w = this.ackWaiters
    this.ackWaiters = []
    for (const f of w) f()
  }

  /** Resolves once the application is done with what it holds of these partitions (if anything). */
  waitForAck(states: ReadonlySet<PartitionState>): Promise<void> {
    const holder = this.holder
    if (holder !== undefined) return holder.waitFor(states)
    if (this.outstanding === undefined || !states.has(this.outstanding)) return Promise.resolve()
    return new Promise((resolve) => this.ackWaiters.push(resolve))
  }

  fail(error: Error): void {
    this.errors.push(error)
    this.fetcher.data.notify()
  }

  wake(): void {
    this.fetcher.data.notify()
  }

  wait(): Promise<void> {
    return this.fetcher.data.wait()
  }

  /** The chunk to read from next, or a promise (at-most-once commit) to wait for first. */
  private chunk(): Chunk | undefined | Promise<void> {
    for (;;) {
      let c = this.current
      if (c === undefined) {
        c = this.fetcher.poll()
        if (c === undefined) return undefined
        this.current = c
      }
      const s = c.state
      if (c.isStale || s.revoking || s.paused) {
        this.finish(c)
        continue
      }
      const ahead = this.hooks.commitAhead
      if (ahead !== undefined && this.committedAhead !== c) {
        const chunk = c
        return ahead(s, c.endOffset).then(() => {
          this.committedAhead = chunk
        })
      }
      return c
    }
  }

  private finish(c: Chunk): void {
    this.fetcher.release(c)
    if (this.current === c) this.current = undefined
  }

  private halt(c: Chunk, error: unknown): void {
    this.finish(c)
    this.hooks.onHalt(c.state, error)
  }

  private read(c: Chunk): ReturnType<Chunk['next']> {
    try {
      const r = c.next()
      if (r instanceof Promise) {
        return r.catch((err: unknown) => {
          this.halt(c, err)
          throw err
        })
      }
      return r
    } catch (err) {
      this.halt(c, err)
      throw err
    }
  }

  /** The next message; undefined when none is buffered; a promise to await before asking again. */
  nextMessage(): Message | undefined | Promise<void> {
    for (;;) {
      const c = this.chunk()
      if (c === undefined || c instanceof Promise) return c
      const r = this.read(c)
      if (r === null) {
        this.finish(c)
        continue
      }
      if (r instanceof Promise) return r
      const s = c.state
      s.position = r.offset + 1n
      s.lastEpoch = c.leaderEpoch
      this.outstanding = s
      this.outstandingEpoch = s.epoch
      this.outstandingAckTo = s.position
      return new ConsumerMessage(s.topic, s.partition, r, c.timestampType, c.leaderEpoch)
    }
  }

  /** The rest of the current chunk (or the next one) as one batch; same contract as nextMessage. */
  nextBatch(): Batch | undefined | Promise<void> {
    for (;;) {
      const c = this.chunk()
      if (c === undefined || c instanceof Promise) return c
      const s = c.state
      const messages: Message[] = []
      for (;;) {
        const r = this.read(c)
        if (r === null) {
          this.finish(c)
          break
        }
        if (r instanceof Promise) {
          // Deliver what is decoded; the next call goes on after the async batch.
          if (messages.length === 0) return r
          break
        }
        s.position = r.offset + 1n
        s.lastEpoch = c.leaderEpoch
        messages.push(new ConsumerMessage(s.topic, s.partition, r, c.timestampType, c.leaderEpoch))
      }
      if (messages.length === 0) continue
      this.outstanding = s
      this.outstandingEpoch = s.epoch
      this.outstandingAckTo = s.position
      return {
        topic: s.topic,
        partition: s.partition,
        messages,
        highWatermark: c.highWatermark,
        lastStableOffset: c.lastStableOffset,
        logStartOffset: c.logStartOffset,
        nextOffset: s.position,
      }
    }
  }
}

/**
 * The async iterator over messages or batches. The common case (data buffered) answers with an
 * already resolved promise and no async function frame; only waiting takes the slow path.
 */
export class DeliveryIterator<T extends Message | Batch> implements AsyncIterableIterator<T> {
  private inNext = false

  constructor(
    private readonly d: Delivery,
    private readonly take: (d: Delivery) => T | undefined | Promise<void>,
    private readonly onPoll: () => void,
    /** Java's wakeup(): aborting makes a waiting (or the next) next() reject with the reason, ending the loop. */
    private readonly signal?: AbortSignal,
  ) {}

  next(): Promise<IteratorResult<T>> {
    const d = this.d
    if (this.signal?.aborted === true && d.reader === this) {
      d.ack()
      this.release()
      return Promise.reject(this.signal.reason)
    }
    if (d.closed) {
      this.release()
      return Promise.resolve({ value: undefined, done: true })
    }
    if (d.reader !== this) {
      if (d.reader !== undefined) {
        return Promise.reject(
          new IllegalStateError(
            'this consumer is already being iterated: one loop at a time (messages or batches), since a message counts as processed when its loop asks for the next one; leave the other loop first',
          ),
        )
      }
      d.reader = this
    }
    if (this.inNext) return Promise.reject(new IllegalStateError('next() called while an earlier next() is still pending'))
    d.ack()
    d.polls++
    this.onPoll()
    if (d.errors.length === 0 && !d.closed) {
      let r: T | undefined | Promise<void>
      try {
        r = this.take(d)
      } catch (err) {
        this.release()
        return Promise.reject(err)
      }
      if (r !== undefined && !(r instanceof Promise)) return Promise.resolve({ value: r, done: false })
      return this.slow(r)
    }
    return this.slow(undefined)
  }

  private async slow(first: Promise<void> | undefined): Promise<IteratorResult<T>> {
    const d = this.d
    this.inNext = true
    d.waiting = true
    try {
      if (first !== undefined) await first
      for (;;) {
        if (d.closed) {
          this.release()
          return { value: undefined, done: true }
        }
        const err = d.errors.shift()
        if (err !== undefined) throw err
        const r = this.take(d)
        if (r instanceof Promise) {
          await r
          continue
        }
        if (r !== undefined) return { value: r, done: false }
        await (this.signal === undefined ? d.wait() : this.waitOrAbort(this.signal))
      }
    } catch (err) {
      // for await does not call return() after next() rejects: the loop has ended all the same.
      this.release()
      throw err
    } finally {
      d.waiting = false
      this.inNext = false
    }
  }

  private waitOrAbort(signal: AbortSignal): Promise<void> {
    if (signal.aborted) return Promise.reject(signal.reason)
    return new Promise<void>((resolve, reject) => {
      const onAbort = (): void => reject(signal.reason)
      signal.addEventListener('abort', onAbort, { once: true })
      this.d.wait().then(() => {
        signal.removeEventListener('abort', onAbort)
        resolve()
      })
    })
  }

  /** Leaving the loop: what the application holds is not counted as processed. */
  return(): Promise<IteratorResult<T>> {
    // An iterator that was refused holds nothing: the reading loop's message stays in hand.
    if (this.d.reader === this) {
      this.d.abandon()
      this.release()
    }
    return Promise.resolve({ value: undefined, done: true })
  }

  /** This loop has ended (left, failed or done): another may read. */
  private release(): void {
    if (this.d.reader === this) this.d.reader = undefined
  }

  [Symbol.asyncIterator](): this {
    return this
  }
}
