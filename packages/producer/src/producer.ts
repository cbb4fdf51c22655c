import { availableParallelism } from 'node:os'
import { performance } from 'node:perf_hooks'
import { ClientClosedError, Cluster, isRetriable, isTraced, sleep, tracing } from '@tidelog/client'
import {
  CompressionError,
  CompressionType,
  ErrorCodes,
  ProtocolError,
  RECORD_BATCH_OVERHEAD,
  compress,
  compressionName,
  getCodec,
  isRetriable as isRetriableCode,
} from '@tidelog/protocol'
import { Accumulator, type TopicQueues } from './accumulator.js'
import type { FlushWaiter } from './batch-builder.js'
import { Delivery } from './delivery.js'
import { BufferExhaustedError, DeliveryTimeoutError, InvalidPartitionError, InvalidRecordError, InvalidTxnStateError, RecordTooLargeError } from './errors.js'
import { Idempotence } from './idempotence.js'
import { IdleTopics } from './idle-topics.js'
import { resolveOptions, type ProducerOptions, type ResolvedOptions } from './options.js'
import { STICKY, strategyFor, type PartitionStrategy } from './partitioners/index.js'
import { RecordSerializer, type SerializerOptions, type TypedRecord } from './serdes.js'
import type { Bytes } from './record.js'
import { describe, explicitTimestamp, recordSize, shapeError, type ProducerRecord, type RecordMetadata } from './record.js'
import { Sender } from './sender.js'
import { within } from './within.js'
import { tracedSend } from './tracing.js'
import { TransactionManager, type ConsumerGroupMetadata, type TransactionOffset } from './transaction-manager.js'
import type { TxnState } from './transaction-state.js'

// Why appending a send()'s records stopped before the last one.
const DONE = 0
const NEED_METADATA = 1
const NEED_ROOM = 2
/** setTimeout's limit. */
const MAX_TIMER_MS = 0x7fffffff
type Stop = typeof DONE | typeof NEED_METADATA | typeof NEED_ROOM
/** Most topics one metadata lookup for waiting records asks for at once. */
const MAX_LOOKUP = 1_000
/** waitForRoom(): the records' delivery timeout ran out first. */
const EXPIRED = 'expired'

/**
 * Fails at construction when the chosen codec cannot compress here (e.g. a registered codec that
 * throws), rather than on every record later. Returns whether the
 * codec works asynchronously, or can (compressAsync, e.g. gzip on the libuv pool): then the
 * sender compresses batches off the main thread while it keeps batching.
 */
function probeCodec(type: CompressionType): { asyncCodec: boolean; maxCompressing: number } {
  if (type === CompressionType.None) return { asyncCodec: false, maxCompressing: 0 }
  let out: Uint8Array | Promise<Uint8Array>
  try {
    out = compress(type, Buffer.from('tidelog'))
  } catch (e) {
    throw new CompressionError(`compression '${compressionName(type)}' is not available: ${(e as Error).message}`, { cause: e })
  }
  if (out instanceof Uint8Array) {
    // One pool job per core beyond the main thread's: more only queue behind each other while
    // the main thread, which could compress the next batch itself, waits.
    const hasAsync = getCodec(type).compressAsync !== undefined
    return { asyncCodec: hasAsync, maxCompressing: Math.max(1, availableParallelism() - 1) }
  }
  out.catch(() => undefined)
  return { asyncCodec: true, maxCompressing: Infinity }
}

/**
 * A Kafka producer: `send()` queues records into per-partition batches and resolves once the
 * brokers acknowledged them (acks), with each record's partition and offset.
 *
 * Records of one send() call, and of calls made one after another, are queued in call order, so
 * records for the same partition are written in that order; with idempotence (the default) this
 * holds through retries and reconnections too.
 */
export class Producer<K = Bytes, V = Bytes> {
  private readonly serializer: RecordSerializer<K, V>
  private readonly options: ResolvedOptions
  private readonly cluster: Cluster
  private readonly acc: Accumulator
  private readonly idem: Idempotence
  private readonly sender: Sender
  private readonly strategy: PartitionStrategy
  private readonly idle: IdleTopics
  private readonly txn: TransactionManager | undefined
  /** send() calls whose records could not all be queued at once (no room, no metadata yet), in call order. */
  private readonly waiting: Delivery[] = []
  private pumping: Promise<void> | undefined
  private roomWaiter: (() => void) | undefined
  private closing: Promise<void> | undefined
  private aborted: Error | undefined
  // Set by appendFrom when it stops: what it waits for.
  private stopTopic = ''
  private stopPartition = -1
  private stopSize = 0

  constructor(options: ProducerOptions & SerializerOptions<K, V>) {
    this.serializer = new RecordSerializer(options.keySerializer, options.valueSerializer)
    this.options = resolveOptions(options)
    const { asyncCodec, maxCompressing } = probeCodec(this.options.compression)
    this.strategy = strategyFor(options.partitioner)
    // Java's producer asks for topics to be auto-created where the broker allows it.
    this.cluster = new Cluster({ ...options, allowAutoTopicCreation: options.allowAutoTopicCreation ?? true })
    this.acc = new Accumulator(this.options.batchBytes, this.options.bufferMemory, () => this.sender.wake())
    this.acc.onRoom = () => {
      const w = this.roomWaiter
      this.roomWaiter = undefined
      w?.()
    }
    const { transactionalId } = this.options
    this.idem = new Idempotence(this.options.idempotent, this.options.idempotenceExplicit, this.cluster, () => this.sender.wake(), transactionalId !== undefined)
    this.txn =
      transactionalId === undefined
        ? undefined
        : new TransactionManager(
            { transactionalId, transactionTimeoutMs: this.options.transactionTimeoutMs, maxBlockMs: this.options.maxBlockMs },
            this.cluster,
            this.idem,
            { flush: () => this.flush(), wake: () => this.sender.wake() },
          )
    this.sender = new Sender(this.options, this.cluster, this.acc, this.idem, asyncCodec, maxCompressing, this.txn)
    this.idle = new IdleTopics(this.acc, this.cluster, this.options.metadataMaxIdleMs)
  }

  /**
   * How many topics the producer holds metadata, partitioner state or queues for: those sent to
   * within the last metadataMaxIdleMs (or with records unfinished). A diagnostic.
   */
  get topicCount(): number {
    return this.idle.count
  }

  /** Fetches cluster metadata now; optional, send() connects on first use. */
  async connect(): Promise<void> {
    await this.cluster.connect()
  }

  /**
   * Queues records and resolves once each is acknowledged. One record: its metadata, or the
   * typed error it failed with. An array: all metadata in order, or a SendError (after every
   * record settled) holding each record's error or metadata.
   */
  send(record: TypedRecord<K, V>): Promise<RecordMetadata>
  send(records: readonly TypedRecord<K, V>[]): Promise<RecordMetadata[]>
  send(input: TypedRecord<K, V> | readonly TypedRecord<K, V>[]): Promise<RecordMetadata | RecordMetadata[]> {
    // One boolean check when nobody traces (node:diagnostics_channel, `tidelog:producer:send`).
    if (isTraced(tracing.send)) return tracedSend(this.cluster.clientId, input, (i) => this.sendTyped(i))
    return this.sendTyped(input)
  }

  private sendTyped(input: TypedRecord<K, V> | readonly TypedRecord<K, V>[]): Promise<RecordMetadata | RecordMetadata[]> {
    if (this.serializer.none || this.closing !== undefined) return this.sendBytes(input as ProducerRecord | readonly ProducerRecord[])
    // Serializers run here, inside send(), before anything is queued.
    const single = !Array.isArray(input)
    return this.serializer.run(single ? [input as TypedRecord<K, V>] : (input as readonly TypedRecord<K, V>[]), (out) => this.sendBytes(single ? out[0]! : out))
  }

  private sendBytes(input: ProducerRecord | readonly ProducerRecord[]): Promise<RecordMetadata | RecordMetadata[]> {
    if (this.closing !== undefined) return Promise.reject(new ClientClosedError('producer'))
    const fatal = this.idem.fatalError
    if (fatal !== undefined) return Promise.reject(fatal)
    if (this.txn !== undefined) {
      const refused = this.txn.sendError()
      if (refused !== undefined) return Promise.reject(refused)
    }
    const single = !Array.isArray(input)
    if (single && (input === null || typeof input !== 'object')) return Promise.reject(new InvalidRecordError(`send() takes a record or an array of records, got ${describe(input)}`))
    const records = single ? [input as ProducerRecord] : (input as readonly ProducerRecord[])
    if (records.length === 0) return Promise.resolve([])
    const d = new Delivery(records, single)
    if (this.waiting.length === 0 && this.appendFrom(d) === DONE) return d.promise
    // What waits must not change with the caller's objects meanwhile.
    d.defer(Date.now())
    this.waiting.push(d)
    if (this.pumping === undefined) {
      this.pumping = this.pump().finally(() => {
        this.pumping = undefined
      })
    }
    return d.promise
  }

  // --- transactions (KIP-98, KIP-447, KIP-890) ----------------------------------------------

  /** The transaction state (Java's TransactionManager state), or undefined for a producer without transactionalId. */
  get transactionState(): TxnState | undefined {
    return this.txn?.state
  }

  /** 2 when initTransactions() found KIP-890's transaction.version 2 finalized, else 1; undefined before or without transactions. */
  get transactionVersion(): 1 | 2 | undefined {
    const t = this.txn
    return t === undefined || t.state === 'UNINITIALIZED' || t.state === 'INITIALIZING' ? undefined : t.tv2 ? 2 : 1
  }

  /**
   * Registers the transactionalId with its coordinator (InitProducerId): fences any earlier
   * producer with the same id and completes the transaction it left open. Once per producer,
   * before the first beginTransaction().
   */
  initTransactions(): Promise<void> {
    try {
      return this.transactional('initTransactions').initTransactions()
    } catch (e) {
      return Promise.reject(e as Error)
    }
  }

  /** Starts a transaction: send() and sendOffsetsToTransaction() are part of it until commit or abort. */
  beginTransaction(): void {
    this.transactional('beginTransaction').beginTransaction()
  }

  /**
   * Commits consumed offsets as part of the transaction (KIP-447): they become the group's
   * committed offsets only if the transaction commits. `groupMetadata` is the consumer's
   * `groupMetadata()`, so that a zombie member of an older generation cannot commit.
   */
  sendOffsetsToTransaction(offsets: readonly TransactionOffset[], groupMetadata: ConsumerGroupMetadata): Promise<void> {
    try {
      return this.transactional('sendOffsetsToTransaction').sendOffsetsToTransaction(offsets, groupMetadata)
    } catch (e) {
      return Promise.reject(e as Error)
    }
  }

  /**
   * Flushes the transaction's records, then commits it. A record that failed makes this reject
   * with TransactionAbortableError: abort then. TransactionTimeoutError after maxBlockMs: the
   * commit goes on, call commitTransaction() again (never abort it).
   */
  commitTransaction(): Promise<void> {
    try {
      return this.transactional('commitTransaction').commitTransaction()
    } catch (e) {
      return Promise.reject(e as Error)
    }
  }

  /** Aborts the transaction: queued records fail with TransactionAbortedError, written ones are never read by read_committed consumers. */
  abortTransaction(): Promise<void> {
    try {
      return this.transactional('abortTransaction').abortTransaction()
    } catch (e) {
      return Promise.reject(e as Error)
    }
  }

  /**
   * Runs `fn` in a transaction: begins, awaits fn, commits and returns fn's result; if fn or the
   * commit fails, aborts and rethrows. A commit that timed out is not aborted (its outcome is
   * not known yet): its TransactionTimeoutError is thrown, and commitTransaction() resumes it.
   */
  async transaction<T>(fn: (producer: this) => Promise<T> | T): Promise<T> {
    const txn = this.transactional('transaction')
    txn.beginTransaction()
    let result: T
    try {
      result = await fn(this)
      await txn.commitTransaction()
      return result
    } catch (e) {
      const s = txn.state
      if (s === 'IN_TRANSACTION' || s === 'ABORTABLE_ERROR') {
        try {
          await txn.abortTransaction()
        } catch (abortError) {
          this.cluster.logger.warn({ err: abortError }, 'aborting the failed transaction failed')
        }
      }
      throw e
    }
  }

  private transactional(op: string): TransactionManager {
    if (this.closing !== undefined) throw new ClientClosedError('producer')
    if (this.txn === undefined) throw new InvalidTxnStateError(`${op}() needs a transactional producer: set transactionalId`)
    return this.txn
  }

  /** Sends everything queued so far without waiting for lingerMs, and resolves when all of it has completed. */
  async flush(): Promise<void> {
    this.sender.beginFlush()
    try {
      while (this.pumping !== undefined) await this.pumping
      await new Promise<void>((resolve) => {
        const waiter: FlushWaiter = { remaining: 0, resolve }
        waiter.remaining = this.acc.watch(waiter)
        if (waiter.remaining === 0) resolve()
      })
    } finally {
      this.sender.endFlush()
    }
  }

  /**
   * Refuses new records, sends and awaits everything queued, then closes the connections. With
   * `timeoutMs`, records still unfinished by then fail with ClientClosedError.
   */
  close(options: { timeoutMs?: number } = {}): Promise<void> {
    this.closing ??= this.shutdown(options.timeoutMs ?? Infinity)
    return this.closing
  }

  private async shutdown(timeoutMs: number): Promise<void> {
    const deadline = performance.now() + timeoutMs
    const txn = this.txn
    if (txn !== undefined && txn.hasOngoingTransaction && timeoutMs > 0) {
      // As Java's Sender on a graceful close: an unfinished transaction is aborted, not left to time out.
      try {
        await within(txn.abortTransaction(), timeoutMs)
      } catch (err) {
        this.cluster.logger.warn({ err }, 'aborting the open transaction on close failed')
      }
    }
    const flushed = this.flush()
    if (timeoutMs === Infinity) {
      await flushed
    } else {
      let timer: NodeJS.Timeout | undefined
      const expired = await Promise.race([
        flushed.then(() => false),
        new Promise<boolean>((resolve) => {
          timer = setTimeout(() => resolve(true), Math.min(timeoutMs, MAX_TIMER_MS))
        }),
      ])
      clearTimeout(timer)
      if (expired) {
        const err = new ClientClosedError('producer')
        this.aborted = err
        for (const d of this.waiting.splice(0)) d.failRest(err)
        this.roomWaiter?.()
        this.sender.failAll(err)
      }
    }
    this.sender.stop()
    this.idem.stop()
    this.txn?.stop()
    this.idle.stop()
    const closed = this.cluster.close()
    if (timeoutMs === Infinity) {
      await closed
      return
    }
    // Connections wait for their requests in flight; with a deadline, close() does not.
    let timer: NodeJS.Timeout | undefined
    await Promise.race([closed, new Promise<void>((resolve) => (timer = setTimeout(resolve, Math.max(0, deadline - performance.now()))))])
    clearTimeout(timer)
  }

  // --- queueing ----------------------------------------------------------------------------

  /**
   * Queues the delivery's records from `d.next` on, synchronously, until one needs what is not
   * here yet: metadata for its topic, or buffer room. Records that cannot be sent at all fail
   * one by one, with the reason.
   */
  private appendFrom(d: Delivery): Stop {
    const { records } = d
    const n = records.length
    const { maxRequestBytes, bufferMemory } = this.options
    const meta = this.cluster.metadata
    const acc = this.acc
    // A batch opened here is as old as this send() call: its delivery timeout started then.
    const now = d.createdAt
    const wallClock = Date.now()
    // When its topic was last used (metadataMaxIdleMs): now, however long these records waited.
    const usedAt = performance.now()
    let topic: string | undefined
    let t: TopicQueues | undefined
    let count = 0
    for (let i = d.next; i < n; i++) {
      const r = records[i]!
      // Before anything else: a malformed record (kafkajs's { topic, messages }, no value) must
      // fail alone, never be written as a null-valued record.
      const bad = shapeError(r, d.single ? 'the record' : `record ${i}`)
      if (bad !== undefined) {
        d.fail(i, bad)
        continue
      }
      if (r.topic !== topic || t === undefined) {
        const failed = d.topicErrors?.get(r.topic)
        if (failed !== undefined) {
          d.fail(i, failed)
          continue
        }
        count = meta.partitionCount(r.topic)
        if (count <= 0) return this.stopAt(d, i, NEED_METADATA, r.topic, -1)
        topic = r.topic
        t = acc.topic(topic)
        t.sync(meta, count)
        t.lastUsed = usedAt
      }
      let size: number
      let stamp: number
      try {
        size = recordSize(r)
        stamp = explicitTimestamp(r.timestamp)
      } catch (e) {
        d.fail(i, e as Error)
        continue
      }
      if (size + RECORD_BATCH_OVERHEAD > maxRequestBytes) {
        d.fail(i, new RecordTooLargeError(topic, size + RECORD_BATCH_OVERHEAD, maxRequestBytes, 'maxRequestBytes'))
        continue
      }
      if (size > bufferMemory) {
        d.fail(i, new RecordTooLargeError(topic, size, bufferMemory, 'bufferMemory'))
        continue
      }
      if (!acc.hasRoom(size)) return this.stopAt(d, i, NEED_ROOM, topic, size)
      let partition: number
      let sticky = false
      const given = r.partition
      if (given !== undefined && given !== null) {
        if (!Number.isInteger(given) || given < 0) {
          d.fail(i, new InvalidPartitionError(topic, given, count, 'record'))
          continue
        }
        // A partition beyond the count may be one the metadata does not show yet.
        if (given >= count) return this.stopAt(d, i, NEED_METADATA, topic, given)
        partition = given
      } else {
        try {
          partition = this.strategy(r, t)
        } catch (e) {
          d.fail(i, e instanceof Error ? e : new Error(String(e)))
          continue
        }
        if (partition === STICKY) {
          partition = acc.stickyPartition(t, size)
          sticky = true
        } else if (!Number.isInteger(partition) || partition < 0 || partition >= count) {
          d.fail(i, new InvalidPartitionError(topic, partition, count, 'partitioner'))
          continue
        }
      }
      let batch
      try {
        batch = acc.append(t, partition, r, stamp < 0 ? wallClock : stamp, size, d, i, now)
      } catch (e) {
        // The writer refused it (its getters answered differently each time): it fails alone.
        d.fail(i, e as Error)
        continue
      }
      if (sticky) t.stickyBatch = batch
    }
    d.next = n
    return DONE
  }

  private stopAt(d: Delivery, i: number, why: Stop, topic: string, arg: number): Stop {
    d.next = i
    this.stopTopic = topic
    if (why === NEED_ROOM) this.stopSize = arg
    else this.stopPartition = arg
    return why
  }

  /** Works through waiting send() calls in order, waiting for metadata or room as they need. */
  private async pump(): Promise<void> {
    {
      while (this.waiting.length > 0 && this.aborted === undefined) {
        const d = this.waiting[0]!
        const stop = this.appendFrom(d)
        if (stop === DONE) {
          this.waiting.shift()
          continue
        }
        // Waiting counts against the records' delivery timeout, which started at send().
        const expireAt = d.createdAt + this.options.deliveryTimeoutMs
        if (stop === NEED_METADATA) {
          const topic = this.stopTopic
          const partition = this.stopPartition
          try {
            await this.waitForMetadata(topic, partition, expireAt, this.unknownTopics(topic))
          } catch (e) {
            const err = e instanceof Error ? e : new Error(String(e))
            if (err instanceof DeliveryTimeoutError) {
              this.waiting.shift()
              d.failRest(err)
            } else if (partition >= 0 && err instanceof InvalidPartitionError) d.fail(d.next++, err)
            else (d.topicErrors ??= new Map()).set(topic, err)
          }
          continue
        }
        const room = await this.waitForRoom(this.stopSize, expireAt)
        if (room !== true) {
          this.waiting.shift()
          d.failRest(this.aborted ?? (room === EXPIRED ? this.expired(this.stopTopic, -1) : new BufferExhaustedError(this.options.bufferMemory, this.options.maxBlockMs)))
        }
      }
    }
  }

  private expired(topic: string, partition: number): DeliveryTimeoutError {
    return new DeliveryTimeoutError(topic, partition, this.options.deliveryTimeoutMs, 0)
  }

  /** true once there is room; false after maxBlockMs (or on abort), EXPIRED at `expireAt`, if sooner. */
  private async waitForRoom(size: number, expireAt: number): Promise<boolean | typeof EXPIRED> {
    const blockUntil = performance.now() + this.options.maxBlockMs
    const deadline = Math.min(blockUntil, expireAt)
    this.acc.waitingForRoom = true
    // Every batch counts as ready while a send waits for room; let the sender see that now.
    this.sender.wake()
    try {
      while (!this.acc.hasRoom(size)) {
        const left = deadline - performance.now()
        if (this.aborted !== undefined) return false
        if (left <= 0) return deadline < blockUntil ? EXPIRED : false
        let timer: NodeJS.Timeout | undefined
        await new Promise<void>((resolve) => {
          this.roomWaiter = resolve
          timer = setTimeout(resolve, Math.min(left, MAX_TIMER_MS))
        })
        clearTimeout(timer)
        this.roomWaiter = undefined
      }
      return true
    } finally {
      this.acc.waitingForRoom = false
    }
  }

  /**
   * Waits until the metadata knows the topic (and `partition`, when >= 0), up to maxBlockMs.
   * The first request adds the topic to the cluster's tracked set; authorization and invalid
   * names fail at once, a topic that does not exist (yet) after maxBlockMs.
   */
  /**
   * `topic` and the other topics the waiting send() calls will need that the metadata does not
   * know (up to MAX_LOOKUP): one Metadata request finds them all, instead of one request per
   * topic, for a producer writing to many new topics.
   */
  private unknownTopics(topic: string): string[] {
    const out = [topic]
    const seen = new Set(out)
    const meta = this.cluster.metadata
    for (const d of this.waiting) {
      const { records } = d
      for (let i = d.next; i < records.length && out.length < MAX_LOOKUP; i++) {
        const name = (records[i] as { topic?: unknown } | null)?.topic
        if (typeof name !== 'string' || name === '' || seen.has(name) || meta.partitionCount(name) > 0 || d.topicErrors?.has(name)) continue
        seen.add(name)
        out.push(name)
      }
    }
    return out
  }

  private async waitForMetadata(topic: string, partition: number, expireAt: number, lookup: readonly string[] = [topic]): Promise<void> {
    const { maxBlockMs } = this.options
    const blockUntil = performance.now() + maxBlockMs
    // The records' delivery timeout (from send()) may end first: then they fail as expired.
    const deadline = Math.min(blockUntil, expireAt)
    const cluster = this.cluster
    for (const t of lookup) this.idle.requesting(t)
    let code: number | undefined
    for (let attempt = 0; ; attempt++) {
      try {
        if (attempt === 0) {
          // Its retries may outlast the deadline (requestTimeoutMs); the records must not.
          if (!(await within(cluster.refreshMetadata(lookup), deadline - performance.now()))) throw this.expired(topic, partition)
        } else {
          const f = await cluster.fetchMetadata([topic], { timeoutMs: Math.max(1, deadline - performance.now()) })
          code = f.topicErrors.get(topic)
        }
      } catch (e) {
        if (e instanceof DeliveryTimeoutError) throw e
        if (performance.now() >= deadline && deadline < blockUntil) throw this.expired(topic, partition)
        if (!isRetriable(e) || performance.now() >= deadline) throw e
      }
      if (this.aborted !== undefined) throw this.aborted
      const count = cluster.metadata.partitionCount(topic)
      if (count > 0 && count > partition) return
      if (code !== undefined && !isRetriableCode(code)) throw new ProtocolError(code, { api: 'Metadata', topic })
      const delay = cluster.retryBackoff.delay(attempt)
      if (performance.now() + delay >= deadline) {
        if (deadline < blockUntil) {
          await sleep(Math.max(0, deadline - performance.now()))
          throw this.expired(topic, partition)
        }
        if (count > 0) throw new InvalidPartitionError(topic, partition, count, 'record')
        throw new ProtocolError(code ?? ErrorCodes.UNKNOWN_TOPIC_OR_PARTITION, {
          api: 'Metadata',
          topic,
          message: `topic ${topic} not present in metadata after maxBlockMs (${maxBlockMs} ms)`,
        })
      }
      await sleep(delay)
    }
  }
}
