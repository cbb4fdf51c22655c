import type { Cluster } from '@tidelog/client'
import { Producer as NativeProducer, type PartitionerFunction, type ProducerOptions, type ProducerRecord, type RecordMetadata as NativeMetadata } from '@tidelog/producer'
import { compressionOf, type CompressionTypes } from './compression.js'
import { KafkaJSError, KafkaJSNonRetriableError, toKafkaJSError } from './errors.js'
import { Instrumentation, producerEvents } from './events.js'
import type { KafkaContext } from './kafka.js'
import type { Logger } from './logger.js'
import { DefaultPartitioner, type ICustomPartitioner } from './partitioners.js'
import { KafkaTransaction, type Transaction } from './transaction.js'
import type { InstrumentationEvent, Message, PartitionMetadata, RecordMetadata, RemoveInstrumentationEventListener, RetryOptions } from './types.js'

export interface ProducerConfig {
  createPartitioner?: ICustomPartitioner
  retry?: RetryOptions
  metadataMaxAge?: number
  allowAutoTopicCreation?: boolean
  idempotent?: boolean
  transactionalId?: string
  transactionTimeout?: number
  maxInFlightRequests?: number
}

export interface TopicMessages {
  topic: string
  messages: Message[]
}

export interface ProducerRecordInput {
  topic: string
  messages: Message[]
  acks?: number
  timeout?: number
  compression?: CompressionTypes
}

export interface ProducerBatch {
  acks?: number
  timeout?: number
  compression?: CompressionTypes
  topicMessages?: TopicMessages[]
}

type State = 'disconnected' | 'connecting' | 'connected' | 'disconnecting'
type Action = 'connect' | 'connected' | 'failed' | 'disconnect' | 'disconnected'

// Every transition of the producer's connection, in one place; anything missing is refused.
const TRANSITIONS: Record<State, Partial<Record<Action, State>>> = {
  disconnected: { connect: 'connecting', disconnect: 'disconnected' },
  connecting: { connected: 'connected', failed: 'disconnected', disconnect: 'disconnecting' },
  connected: { connect: 'connected', disconnect: 'disconnecting' },
  disconnecting: { disconnected: 'disconnected' },
}

// The native producer's metadata, for kafkajs partitioners (they are handed every partition's
// leader and replicas); read through its cluster, which the producer keeps private.
function partitionMetadata(native: NativeProducer, topic: string, count: number): PartitionMetadata[] {
  const t = (native as unknown as { cluster: Cluster }).cluster.metadata.topic(topic)
  const out: PartitionMetadata[] = []
  for (let i = 0; i < count; i++) {
    const p = t?.partitions[i]
    out.push({ partitionErrorCode: 0, partitionId: i, leader: p?.leader ?? -1, replicas: p?.replicas ?? [], isr: p?.isr ?? [], offlineReplicas: p?.offlineReplicas ?? [] })
  }
  return out
}

function bytesOf(v: unknown): Buffer | string | null | undefined {
  // kafkajs writes numbers (and other scalars) as their string form.
  if (typeof v === 'number' || typeof v === 'bigint' || typeof v === 'boolean') return String(v)
  return v as Buffer | string | null | undefined
}

/**
 * kafkajs' producer on tidelog's. `send` and `sendBatch` resolve, like kafkajs, with one entry
 * per topic-partition written: its first offset as `baseOffset`, a decimal string.
 */
export class KafkaProducer {
  readonly events = producerEvents
  private readonly instrumentation: Instrumentation<typeof producerEvents>
  private readonly log: Logger
  private state: State = 'disconnected'
  // One native producer per (acks, compression) pair: both are per-call options in kafkajs and
  // per-producer options natively. Most programs use one pair, so one producer.
  private readonly natives = new Map<string, NativeProducer>()
  private connecting: Promise<void> | undefined
  // The transactional native producer, made and initialised (InitProducerId) by the first
  // transaction(), as kafkajs does; plain send() keeps using the non-transactional ones.
  private transactional: Promise<NativeProducer> | undefined
  private current: KafkaTransaction | undefined
  private readonly partitioner: ((args: Parameters<ReturnType<ICustomPartitioner>>[0]) => number) | undefined

  constructor(private readonly ctx: KafkaContext, private readonly config: ProducerConfig) {
    this.log = ctx.logger.namespace('Producer')
    this.instrumentation = new Instrumentation(producerEvents, 'producer', this.log)
    // The built-in default hashes keys with Java's murmur2 natively; kafkajs' own function is
    // only run for custom and legacy partitioners.
    const create = config.createPartitioner
    this.partitioner = create === undefined || create === DefaultPartitioner ? undefined : create()
  }

  private transition(action: Action): void {
    const next = TRANSITIONS[this.state][action]
    if (next === undefined) throw new KafkaJSNonRetriableError(`producer: cannot ${action} while ${this.state}`)
    this.state = next
  }

  isIdempotent(): boolean {
    return this.config.idempotent === true
  }

  logger(): Logger {
    return this.log
  }

  on(eventName: string, listener: (event: InstrumentationEvent<any>) => void): RemoveInstrumentationEventListener {
    return this.instrumentation.on(eventName, listener)
  }

  async connect(): Promise<void> {
    if (this.state === 'connected') return
    if (this.state === 'connecting') return this.connecting
    this.transition('connect')
    this.instrumentation.setConnected(true)
    this.connecting = (async () => {
      try {
        await this.native(-1, 0).then((p) => p.connect())
        this.transition('connected')
      } catch (e) {
        await this.closeNatives()
        this.instrumentation.setConnected(false)
        this.transition('failed')
        throw toKafkaJSError(e)
      }
    })()
    await this.connecting
    this.instrumentation.emit(producerEvents.CONNECT, undefined)
  }

  async disconnect(): Promise<void> {
    if (this.state === 'disconnected') return
    if (this.state === 'connecting') await this.connecting?.catch(() => undefined)
    if (this.state !== 'connected') return
    this.transition('disconnect')
    await this.closeNatives()
    this.instrumentation.setConnected(false)
    this.transition('disconnected')
    this.instrumentation.emit(producerEvents.DISCONNECT, undefined)
  }

  private async closeNatives(): Promise<void> {
    const all: Promise<NativeProducer | undefined>[] = [...this.natives.values()].map((p) => Promise.resolve(p))
    if (this.transactional !== undefined) all.push(this.transactional.catch(() => undefined))
    this.natives.clear()
    this.transactional = undefined
    this.current = undefined
    await Promise.allSettled((await Promise.all(all)).map((p) => p?.close()))
  }

  private async native(acks: number, compression: CompressionTypes): Promise<NativeProducer> {
    const key = `${acks}/${compression}`
    let p = this.natives.get(key)
    if (p !== undefined) return p
    p = await this.build({
      acks: acks === -1 ? 'all' : (acks as 0 | 1),
      // kafkajs' idempotent defaults to false; left unset, the native producer still turns
      // idempotence on where it can (acks=all), which only removes duplicates from retries.
      idempotent: this.config.idempotent === true ? true : acks === -1 ? undefined : false,
      compression,
    })
    this.natives.set(key, p)
    return p
  }

  /**
   * kafkajs' transaction(): begins a transaction, initialising the producer id first on the
   * first call. Only what is sent through the returned Transaction is part of it.
   */
  async transaction(): Promise<Transaction> {
    const transactionalId = this.config.transactionalId
    if (!transactionalId) throw new KafkaJSNonRetriableError('Must provide transactional id for transactional producer')
    if (this.current?.isActive()) throw ongoingTransaction()
    if (this.state !== 'connected') throw new KafkaJSError('The producer is disconnected')
    const init = (this.transactional ??= this.initTransactional(transactionalId))
    let native: NativeProducer
    try {
      native = await init
    } catch (e) {
      // A failed initialisation is tried again by the next transaction(), as kafkajs does.
      if (this.transactional === init) this.transactional = undefined
      throw toKafkaJSError(e)
    }
    // Two transaction() calls at once: the second finds the first begun.
    const state = native.transactionState
    if (state === 'IN_TRANSACTION' || state === 'ABORTABLE_ERROR') throw ongoingTransaction()
    try {
      native.beginTransaction()
    } catch (e) {
      throw toKafkaJSError(e)
    }
    this.current = new KafkaTransaction(native, this.log, (batch) =>
      this.deliver(batch, true, async (_acks, compression) => {
        this.warnCompression(compression)
        return native
      }),
    )
    return this.current
  }

  private warnedCompression = false

  // A transaction's records all go through its one transactional producer (one producer id),
  // whose compression is fixed: per-call compression cannot apply to them.
  private warnCompression(compression: CompressionTypes): void {
    if (compression === 0 || this.warnedCompression) return
    this.warnedCompression = true
    this.log.warn('compression is not applied to records sent in a transaction: they are written uncompressed (see the @tidelog/kafkajs README)', { compression })
  }

  private async initTransactional(transactionalId: string): Promise<NativeProducer> {
    const native = await this.build({
      acks: 'all',
      idempotent: true,
      compression: 0,
      transactionalId,
      // kafkajs' default transactionTimeout is Java's transaction.timeout.ms, 60 s.
      transactionTimeoutMs: this.config.transactionTimeout ?? 60_000,
    })
    try {
      await native.initTransactions()
      return native
    } catch (e) {
      await native.close({ timeoutMs: 0 }).catch(() => undefined)
      throw e
    }
  }

  private async build(options: Pick<ProducerOptions, 'acks' | 'idempotent' | 'compression' | 'transactionalId' | 'transactionTimeoutMs'>): Promise<NativeProducer> {
    const base = await this.ctx.clientOptions(this.config.retry ?? this.ctx.retry, this.instrumentation.tag)
    const retries = (this.config.retry ?? this.ctx.retry).retries
    const custom = this.partitioner
    let created: NativeProducer | undefined
    const partitioner: PartitionerFunction | 'murmur2' =
      custom === undefined
        ? 'murmur2'
        : (record, { topic, partitionCount }) =>
            custom({
              topic,
              partitionMetadata: partitionMetadata(created!, topic, partitionCount),
              message: { key: record.key as Message['key'], value: record.value as Message['value'], headers: record.headers as Message['headers'], partition: record.partition },
            })
    created = new NativeProducer({
      ...base,
      ...options,
      // kafkajs sends each call at once; records of one call still share their batches.
      lingerMs: 0,
      maxInFlight: this.config.maxInFlightRequests ?? undefined,
      retries,
      allowAutoTopicCreation: this.config.allowAutoTopicCreation ?? true,
      metadataMaxAgeMs: this.config.metadataMaxAge,
      partitioner,
    })
    return created
  }

  send(record: ProducerRecordInput): Promise<RecordMetadata[]> {
    const { topic, messages, acks, timeout, compression } = record ?? ({} as ProducerRecordInput)
    return this.sendBatch({ acks, timeout, compression, topicMessages: [{ topic, messages }] })
  }

  sendBatch(batch: ProducerBatch): Promise<RecordMetadata[]> {
    return this.deliver(batch, this.config.idempotent === true, (acks, compression) => this.native(acks, compression))
  }

  /**
   * send and sendBatch, of the producer and of its transactions (which are idempotent whatever
   * the producer's config says, as in kafkajs), through the native producer `pick` returns.
   */
  private async deliver(batch: ProducerBatch, idempotent: boolean, pick: (acks: number, compression: CompressionTypes) => Promise<NativeProducer>): Promise<RecordMetadata[]> {
    const { acks = -1, compression, topicMessages = [] } = batch ?? {}
    // kafkajs' checks, in its order and with its messages.
    if (topicMessages.some(({ topic }) => !topic)) throw new KafkaJSNonRetriableError('Invalid topic')
    if (idempotent && acks !== -1) {
      throw new KafkaJSNonRetriableError("Not requiring ack for all messages invalidates the idempotent producer's EoS guarantees")
    }
    for (const { topic, messages } of topicMessages) {
      if (!messages) throw new KafkaJSNonRetriableError(`Invalid messages array [${messages}] for topic "${topic}"`)
      const bad = messages.find((m) => m.value === undefined)
      if (bad !== undefined) throw new KafkaJSNonRetriableError(`Invalid message without value for topic "${topic}": ${JSON.stringify(bad)}`)
    }
    if (this.state === 'disconnecting') throw new KafkaJSNonRetriableError("The producer is disconnecting; therefore, it can't safely accept messages anymore")
    if (this.state !== 'connected') throw new KafkaJSError('The producer is disconnected')
    if (acks !== -1 && acks !== 0 && acks !== 1) throw new KafkaJSNonRetriableError(`Invalid acks ${acks}`)

    const records: ProducerRecord[] = []
    const topics: string[] = []
    for (const { topic, messages } of topicMessages) {
      if (!topics.includes(topic)) topics.push(topic)
      for (const m of messages) {
        records.push({
          topic,
          key: bytesOf(m.key),
          value: bytesOf(m.value) ?? null,
          headers: m.headers as ProducerRecord['headers'],
          partition: m.partition ?? undefined,
          timestamp: m.timestamp === undefined || m.timestamp === null ? undefined : Number(m.timestamp),
        })
      }
    }
    let results: NativeMetadata[]
    try {
      const native = await pick(acks, compressionOf(compression))
      results = await native.send(records)
    } catch (e) {
      throw toKafkaJSError(e)
    }
    // kafkajs gets no answer with acks=0, and so reports nothing.
    if (acks === 0) return []
    return summarize(results, topics)
  }
}

function ongoingTransaction(): KafkaJSNonRetriableError {
  return new KafkaJSNonRetriableError('There is already an ongoing transaction for this producer. Please end the transaction before beginning another.')
}

/** One entry per topic-partition, topics in request order, partitions ascending. */
function summarize(results: NativeMetadata[], topics: string[]): RecordMetadata[] {
  // By topic, then partition number: no key string built per record.
  const first = new Map<string, Map<number, bigint>>()
  for (const r of results) {
    let byPartition = first.get(r.topic)
    if (byPartition === undefined) first.set(r.topic, (byPartition = new Map()))
    const seen = byPartition.get(r.partition)
    if (seen === undefined || r.offset < seen) byPartition.set(r.partition, r.offset)
  }
  const out: RecordMetadata[] = []
  for (const topic of topics) {
    const byPartition = first.get(topic)
    if (byPartition === undefined) continue
    for (const partition of [...byPartition.keys()].sort((a, b) => a - b)) {
      out.push({ topicName: topic, partition, errorCode: 0, baseOffset: String(byPartition.get(partition)!), logAppendTime: '-1' })
    }
  }
  return out
}
