import { performance } from 'node:perf_hooks'
import { isRetriable, isStaleMetadataError, type Cluster, type Connection, type Logger } from '@tidelog/client'
import {
  ErrorCodes,
  Produce,
  RECORD_BATCH_OVERHEAD,
  ProtocolError,
  TidelogError,
  type ProduceRequest,
  type ProduceRequestTopicProduceData,
  type ProduceResponse,
  type ProduceResponsePartitionProduceResponse,
} from '@tidelog/protocol'
import type { Accumulator, PartitionQueue } from './accumulator.js'
import { BatchState, type ProducerBatch } from './batch-builder.js'
import { DeliveryTimeoutError, RecordTooLargeError } from './errors.js'
import type { Idempotence } from './idempotence.js'
import type { ResolvedOptions } from './options.js'
import type { TransactionManager } from './transaction-manager.js'
import { txnError } from './transaction-state.js'

const NO_OFFSET = -1n
const MAX_EXACT = 2 ** 53
/** setTimeout's limit; a longer wait (a huge deliveryTimeoutMs) just runs once more early. */
const MAX_TIMER_MS = 0x7fffffff

/**
 * Moves batches from the accumulator to the brokers (Java's Sender, without a thread: it runs
 * whenever something changes, and on a timer for the next linger, backoff or expiry).
 *
 * A run expires batches past deliveryTimeoutMs, finds the brokers leading a partition whose
 * first batch is ready (full, lingered long enough, being retried, or flushed), and for each
 * one with a connection and fewer than maxInFlight requests outstanding drains one batch per
 * partition it leads into a Produce request of at most maxRequestBytes. Answers complete,
 * retry or fail each batch.
 */
export class Sender {
  private scheduled = false
  private timer: NodeJS.Timeout | undefined
  private timerAt = Infinity
  private stopped = false
  private flushing = 0
  private drainIndex = 0
  private metadataAskedAt = -Infinity
  private readonly inFlight = new Map<number, number>()
  private readonly connecting = new Set<number>()
  private readonly throttledUntil = new Map<number, number>()
  /** With an asynchronous codec, each node's requests are written in the order they were drained. */
  private readonly nodeTail = new Map<number, Promise<void>>()
  /** Batches being compressed off the main thread. */
  private compressing = 0
  private readonly logger: Logger
  private readonly retryBackoffMs: number

  constructor(
    private readonly options: ResolvedOptions,
    private readonly cluster: Cluster,
    private readonly acc: Accumulator,
    private readonly idem: Idempotence,
    /** The codec compresses asynchronously (a registered codec returning promises, or compressAsync). */
    private readonly asyncCodec: boolean,
    /**
     * For a codec that can also compress synchronously (compressAsync beside compress): how many
     * batches may compress off the main thread at once. Past that, a batch is compressed here,
     * so the pool threads and the main thread share the work instead of oversubscribing the
     * cores. Infinity for codecs that only work asynchronously.
     */
    private readonly maxCompressing = Infinity,
    /** A transactional producer's transaction manager: which partitions may be sent, and when queued batches must fail. */
    private readonly txn?: TransactionManager,
  ) {
    this.logger = cluster.logger
    this.retryBackoffMs = cluster.retryBackoff.initialMs
  }

  /** Runs soon (once per turn of the event loop, however often it is asked). */
  readonly wake = (): void => {
    if (this.scheduled || this.stopped) return
    this.scheduled = true
    setImmediate(this.run)
  }

  beginFlush(): void {
    this.flushing++
    this.wake()
  }

  endFlush(): void {
    this.flushing--
  }

  stop(): void {
    this.stopped = true
    if (this.timer !== undefined) clearTimeout(this.timer)
    this.timer = undefined
    this.timerAt = Infinity
  }

  // --- the run -----------------------------------------------------------------------------

  private readonly run = (): void => {
    this.scheduled = false
    if (this.stopped) return
    try {
      this.runOnce()
    } catch (e) {
      // A bug must not crash the application through a timer callback: fail what is queued.
      const err = e instanceof Error ? e : new Error(String(e))
      this.logger.error({ err }, 'producer sender failed')
      this.failAll(err)
    }
  }

  private runOnce(): void {
    const idem = this.idem
    if (idem.fatalError !== undefined) {
      this.failAll(idem.fatalError)
      return
    }
    const txn = this.txn
    if (txn !== undefined) {
      // Java's abortUndrainedBatches: nothing more is sent in a transaction that must abort.
      const blocked = txn.blockedError()
      if (blocked !== undefined) this.failQueued(blocked)
    }
    const now = performance.now()
    const { deliveryTimeoutMs, lingerMs } = this.options
    const canSend = idem.ready()
    if (canSend) idem.beforeDrain()
    const meta = this.cluster.metadata
    const exhausted = this.flushing > 0 || this.acc.waitingForRoom
    let wakeAt = Infinity
    let byNode: Map<number, PartitionQueue[]> | undefined
    let readyNodes: number[] | undefined
    let leaderMissing = false

    for (const q of this.acc.pending) {
      let head = q.batches[0]
      while (head !== undefined && now - head.createdAt >= deliveryTimeoutMs) {
        q.batches.shift()
        if (q.open === head) q.open = undefined
        this.fail(head, new DeliveryTimeoutError(head.topic, head.partition, deliveryTimeoutMs, head.attempts, head.lastError), false)
        head = q.batches[0]
      }
      if (head === undefined) {
        this.acc.pending.delete(q)
        continue
      }
      if (head.createdAt + deliveryTimeoutMs < wakeAt) wakeAt = head.createdAt + deliveryTimeoutMs
      if (!canSend) continue
      const leader = q.leader(meta)
      if (leader === undefined) {
        leaderMissing = true
        continue
      }
      const node = leader.nodeId
      byNode ??= new Map()
      let list = byNode.get(node)
      if (list === undefined) byNode.set(node, (list = []))
      list.push(q)
      if (head.retryAt > now) {
        if (head.retryAt < wakeAt) wakeAt = head.retryAt
        continue
      }
      const ready = exhausted || head.state !== BatchState.Open || q.batches.length > 1 || now - head.createdAt >= lingerMs
      if (!ready) {
        if (head.createdAt + lingerMs < wakeAt) wakeAt = head.createdAt + lingerMs
        continue
      }
      if (readyNodes === undefined) readyNodes = [node]
      else if (!readyNodes.includes(node)) readyNodes.push(node)
    }

    if (readyNodes !== undefined) {
      for (const node of readyNodes) {
        const until = this.throttledUntil.get(node)
        if (until !== undefined) {
          if (until > now) {
            if (until < wakeAt) wakeAt = until
            continue
          }
          this.throttledUntil.delete(node)
        }
        const broker = meta.brokers.get(node)
        const conn = broker === undefined ? undefined : this.cluster.pool.ready(broker)
        if (conn === undefined) {
          this.connect(node)
          continue
        }
        const queues = byNode!.get(node)!
        for (let n = this.inFlight.get(node) ?? 0; n < this.options.maxInFlight; n++) {
          const batches = this.drain(queues, now)
          if (batches.length === 0) break
          this.produce(node, conn, batches)
        }
      }
    }
    if (leaderMissing) {
      this.askMetadata(now)
      if (now + this.retryBackoffMs < wakeAt) wakeAt = now + this.retryBackoffMs
    }
    this.arm(wakeAt, now)
  }

  private arm(at: number, now: number): void {
    if (at === Infinity || this.stopped) return
    if (this.timer !== undefined) {
      if (this.timerAt <= at) return
      clearTimeout(this.timer)
    }
    this.timerAt = at
    // Not unref'd: records waiting to be sent keep the process alive, as their promises are pending.
    this.timer = setTimeout(() => {
      this.timer = undefined
      this.timerAt = Infinity
      this.run()
    }, Math.min(MAX_TIMER_MS, Math.max(0, Math.ceil(at - now))))
  }

  /**
   * One batch from each partition of the node, starting at a rotating position so that no
   * partition is always last when the request fills up (Java's drainIndex).
   */
  private drain(queues: PartitionQueue[], now: number): ProducerBatch[] {
    const out: ProducerBatch[] = []
    const n = queues.length
    const start = this.drainIndex++ % n
    const max = this.options.maxRequestBytes
    const idem = this.idem.enabled ? this.idem : undefined
    let size = 0
    for (let k = 0; k < n; k++) {
      const q = queues[(start + k) % n]!
      const head = q.batches[0]
      if (head === undefined || head.retryAt > now) continue
      if (idem !== undefined && !idem.canDrain(q, head)) continue
      if (this.txn !== undefined && !this.txn.mayDrain(q)) continue
      const ratio = q.owner.ratio
      const estimate = head.estimatedSize(ratio.value)
      if (out.length > 0 && size + estimate > max) break
      q.batches.shift()
      if (q.open === head) q.open = undefined
      if (q.batches.length === 0) this.acc.pending.delete(q)
      const fresh = head.baseSequence < 0
      if (idem !== undefined && fresh) {
        idem.assign(q, head)
        if (this.txn !== undefined) head.transactional = true
      }
      if (head.encoded === undefined && this.asyncCodec && this.compressing < this.maxCompressing) {
        // produce() compresses it and settles the count.
        this.compressing++
      } else if (head.encoded === undefined) {
        try {
          const buf = head.encode(this.options.compression)
          if (this.options.compression !== 0) ratio.observe(head.bytes, buf.length - RECORD_BATCH_OVERHEAD)
        } catch (e) {
          if (idem !== undefined && fresh) idem.unassign(q, head)
          this.fail(head, e instanceof Error ? e : new Error(String(e)), true)
          continue
        }
      }
      head.state = BatchState.InFlight
      size += head.encoded?.length ?? estimate
      out.push(head)
    }
    return out
  }

  private produce(node: number, conn: Connection, batches: ProducerBatch[]): void {
    this.inFlight.set(node, (this.inFlight.get(node) ?? 0) + 1)
    if (!this.asyncCodec) {
      this.write(node, conn, batches)
      return
    }
    const encoded = Promise.all(
      batches.map((b) =>
        b.encoded !== undefined
          ? true
          : b.encodeAsync(this.options.compression).then(
              (buf) => {
                this.compressing--
                b.queue.owner.ratio.observe(b.bytes, buf.length - RECORD_BATCH_OVERHEAD)
                return true
              },
              (e: unknown) => {
                this.compressing--
                this.fail(b, e instanceof Error ? e : new Error(String(e)), true)
                return false
              },
            ),
      ),
    )
    const tail = (this.nodeTail.get(node) ?? Promise.resolve())
      .then(async () => {
        const ok = await encoded
        const ready = batches.filter((b, i) => ok[i] && b.state === BatchState.InFlight)
        if (ready.length === 0) {
          this.release(node)
          this.wake()
          return
        }
        this.write(node, conn, ready)
      })
      .catch((err: unknown) => this.onRequestError(node, batches, err instanceof Error ? err : new Error(String(err))))
    this.nodeTail.set(node, tail)
    void tail.finally(() => {
      if (this.nodeTail.get(node) === tail) this.nodeTail.delete(node)
    })
  }

  private write(node: number, conn: Connection, batches: ProducerBatch[]): void {
    const topicData: ProduceRequestTopicProduceData[] = []
    let t: ProduceRequestTopicProduceData | undefined
    for (const b of batches) {
      if (t === undefined || t.name !== b.topic) {
        t = topicData.find((x) => x.name === b.topic)
        if (t === undefined) topicData.push((t = { name: b.topic, partitionData: [] }))
      }
      t.partitionData.push({ index: b.partition, records: b.encoded! })
    }
    const acks = this.options.acks
    const txn = this.txn
    const body: ProduceRequest = { transactionalId: txn?.transactionalId ?? null, acks, timeoutMs: this.options.requestTimeoutMs, topicData }
    // v3 is the first to carry magic-2 batches (KIP-98), which idempotence and headers need;
    // a TV1 transaction stays below v12, whose transactional batches add partitions (KIP-890).
    conn.request(Produce, body, { minVersion: 3, maxVersion: txn?.produceMaxVersion, expectResponse: acks !== 0 }).then(
      (res) => this.onResponse(node, batches, res),
      (err: unknown) => this.onRequestError(node, batches, err instanceof Error ? err : new Error(String(err))),
    )
  }

  private release(node: number): void {
    const n = (this.inFlight.get(node) ?? 1) - 1
    if (n <= 0) this.inFlight.delete(node)
    else this.inFlight.set(node, n)
  }

  // --- answers -----------------------------------------------------------------------------

  private onResponse(node: number, batches: ProducerBatch[], res: ProduceResponse | undefined): void {
    this.release(node)
    if (res === undefined) {
      // acks=0: written to the socket is all anyone will know.
      for (const b of batches) if (b.state === BatchState.InFlight) this.succeed(b, NO_OFFSET, NO_OFFSET)
      this.wake()
      return
    }
    const throttle = res.throttleTimeMs ?? 0
    // KIP-219: the broker answered at once and expects the client to hold off for the quota.
    if (throttle > 0) this.throttledUntil.set(node, performance.now() + throttle)
    let hint = 0
    for (const topic of res.responses) {
      for (const p of topic.partitionResponses) {
        let b: ProducerBatch | undefined = batches[hint]
        if (b === undefined || b.topic !== topic.name || b.partition !== p.index) {
          b = batches.find((x) => x.topic === topic.name && x.partition === p.index)
        }
        hint++
        if (b !== undefined && b.state === BatchState.InFlight) this.complete(b, p)
      }
    }
    for (const b of batches) {
      if (b.state !== BatchState.InFlight) continue
      this.retryOrFail(b, new TidelogError(`${b.topic}-${b.partition} is missing from the Produce response`, { retriable: true }), performance.now())
    }
    this.wake()
  }

  private onRequestError(node: number, batches: ProducerBatch[], error: Error): void {
    this.release(node)
    if (isStaleMetadataError(error)) this.askMetadata(performance.now(), true)
    const now = performance.now()
    for (const b of batches) if (b.state === BatchState.InFlight) this.retryOrFail(b, error, now)
    this.wake()
  }

  /** One partition's answer (Java's Sender.completeBatch). */
  private complete(b: ProducerBatch, p: ProduceResponsePartitionProduceResponse): void {
    const code = p.errorCode
    if (code === ErrorCodes.NONE) {
      this.succeed(b, p.baseOffset, p.logAppendTimeMs ?? NO_OFFSET)
      return
    }
    const error = new ProtocolError(code, { api: 'Produce', apiKey: Produce.apiKey, topic: b.topic, partition: b.partition, message: p.errorMessage })
    if (code === ErrorCodes.MESSAGE_TOO_LARGE || code === ErrorCodes.RECORD_LIST_TOO_LARGE) {
      if (b.count > 1 && code === ErrorCodes.MESSAGE_TOO_LARGE) {
        this.split(b)
        return
      }
      const size = b.encoded?.length ?? b.bytes
      this.fail(b, new RecordTooLargeError(b.topic, size, -1, "the broker's limit (the topic's max.message.bytes)", { cause: error }), true)
      return
    }
    const now = performance.now()
    if (isStaleMetadataError(error)) this.askMetadata(now, true)
    const special = this.idem.enabled ? this.idem.canRetry(b.queue, b, code, p.logStartOffset ?? -1n) : undefined
    const retriable = special ?? error.retriable
    if (retriable && this.mayRetry(b, now)) {
      this.retry(b, error, now)
      return
    }
    if (code === ErrorCodes.DUPLICATE_SEQUENCE_NUMBER) {
      // The broker has this batch but no longer remembers where: success without an offset.
      this.succeed(b, NO_OFFSET, NO_OFFSET)
      return
    }
    this.fail(b, retriable ? this.timedOut(b, error) : error, true)
  }

  /**
   * The broker refused a batch of several records as too large (its max.message.bytes is
   * below batchBytes, or compression did worse than estimated): send it again as smaller
   * batches, as Java does, halving the size limit each time it happens to the same records.
   */
  private split(b: ProducerBatch): void {
    const ratio = b.queue.owner.ratio
    const observed = b.encoded !== undefined && b.bytes > 0 ? (b.encoded.length - RECORD_BATCH_OVERHEAD) / b.bytes : 1
    // Java resets the estimate to the big batch's ratio (at least 1) so splits stay rare.
    ratio.value = Math.max(1, observed)
    const limit = Math.max(1, Math.min(this.options.batchBytes, Math.floor((b.encoded?.length ?? b.bytes) / 2)))
    const parts = b.split(limit)
    this.logger.warn({ topic: b.topic, partition: b.partition, records: b.count, parts: parts.length }, 'batch too large for the broker, splitting')
    if (this.idem.enabled) this.idem.replace(b.queue, b, parts)
    this.acc.replaceWithParts(b, parts)
  }

  /** A batch whose request got no answer: retried when the error allows, else failed with it. */
  private retryOrFail(b: ProducerBatch, error: Error, now: number): void {
    const retriable = isRetriable(error)
    if (retriable && this.mayRetry(b, now)) this.retry(b, error, now)
    else this.fail(b, retriable ? this.timedOut(b, error) : error, false)
  }

  private mayRetry(b: ProducerBatch, now: number): boolean {
    return !this.stopped && b.attempts < this.options.retries && now - b.createdAt < this.options.deliveryTimeoutMs
  }

  private timedOut(b: ProducerBatch, error: Error): Error {
    if (b.attempts >= this.options.retries) return error
    return new DeliveryTimeoutError(b.topic, b.partition, this.options.deliveryTimeoutMs, b.attempts + 1, error)
  }

  private retry(b: ProducerBatch, error: Error, now: number): void {
    b.lastError = error
    b.retryAt = now + this.cluster.retryBackoff.delay(b.attempts)
    b.attempts++
    this.logger.debug({ topic: b.topic, partition: b.partition, attempts: b.attempts, err: error }, 'retrying batch')
    this.acc.reenqueue(b.queue, b, this.idem.enabled && b.baseSequence >= 0)
  }

  private succeed(b: ProducerBatch, baseOffset: bigint, logAppendTime: bigint): void {
    b.state = BatchState.Acked
    if (this.idem.enabled) this.idem.onAcked(b.queue, b)
    const { topic, partition, owners, runStart, runSlot } = b
    const n = b.count
    const appendTime = logAppendTime >= 0n ? Number(logAppendTime) : -1
    // BigInt(number) is much cheaper than bigint addition; exact while below 2^53.
    const exact = baseOffset >= 0n && baseOffset < BigInt(MAX_EXACT - n)
    const base = exact ? Number(baseOffset) : 0
    for (let r = 0; r < owners.length; r++) {
      const owner = owners[r]!
      const from = runStart[r]!
      const to = r + 1 < owners.length ? runStart[r + 1]! : n
      const slot = runSlot[r]! - from
      for (let i = from; i < to; i++) {
        const offset = exact ? BigInt(base + i) : baseOffset < 0n ? NO_OFFSET : baseOffset + BigInt(i)
        owner.complete(slot + i, { topic, partition, offset, timestamp: appendTime >= 0 ? appendTime : b.timestampOf(i) })
      }
    }
    this.acc.done(b)
  }

  /**
   * Fails every record of a batch. `refused` says the broker answered that it did not write the
   * batch; otherwise (expired, request lost) nobody knows, which idempotence treats differently.
   */
  private fail(b: ProducerBatch, error: Error, refused: boolean): void {
    if (b.state === BatchState.Acked || b.state === BatchState.Failed) return
    // INVALID_PRODUCER_EPOCH means fencing in a transaction (Java's ProducerFencedException).
    if (this.txn !== undefined) error = txnError(error)
    b.state = BatchState.Failed
    if (this.idem.enabled) this.idem.onFailed(b.queue, b, error, refused)
    this.txn?.onBatchFailed(error)
    const { owners, runStart, runSlot } = b
    const n = b.count
    for (let r = 0; r < owners.length; r++) {
      const owner = owners[r]!
      const from = runStart[r]!
      const to = r + 1 < owners.length ? runStart[r + 1]! : n
      for (let i = from; i < to; i++) owner.fail(runSlot[r]! + i - from, error)
    }
    this.acc.done(b)
  }

  /** Fails every unfinished batch, queued or in flight (a fatal error, or close timing out). */
  failAll(error: Error): void {
    for (const b of [...this.acc.incomplete]) {
      const q = b.queue
      const i = q.batches.indexOf(b)
      if (i >= 0) q.batches.splice(i, 1)
      if (q.open === b) q.open = undefined
      if (q.batches.length === 0) this.acc.pending.delete(q)
      this.fail(b, error, false)
    }
  }

  /** Fails every batch not yet sent (in flight ones finish): a transaction that must abort. */
  private failQueued(error: Error): void {
    for (const q of this.acc.pending) {
      while (q.batches.length > 0 && q.batches[0]!.state !== BatchState.InFlight) {
        const b = q.batches.shift()!
        if (q.open === b) q.open = undefined
        this.fail(b, error, false)
      }
      if (q.batches.length === 0) this.acc.pending.delete(q)
    }
  }

  // --- metadata and connections ------------------------------------------------------------

  private askMetadata(now: number, force = false): void {
    if (!force && now - this.metadataAskedAt < this.retryBackoffMs) return
    this.metadataAskedAt = now
    this.cluster.refreshMetadata().then(this.wake, (err: unknown) => this.logger.debug({ err }, 'metadata refresh failed'))
  }

  private connect(node: number): void {
    if (this.connecting.has(node)) return
    this.connecting.add(node)
    this.cluster.connectionTo(node).then(
      () => {
        this.connecting.delete(node)
        this.wake()
      },
      (err: unknown) => {
        this.connecting.delete(node)
        this.logger.debug({ nodeId: node, err }, 'connecting to partition leader failed')
        if (isStaleMetadataError(err)) this.askMetadata(performance.now())
        if (!this.stopped) setTimeout(this.wake, this.retryBackoffMs)
      },
    )
  }
}
