import type { Producer as NativeProducer, TransactionOffset, ConsumerGroupMetadata } from '@tidelog/producer'
import { KafkaJSNonRetriableError, toKafkaJSError } from './errors.js'
import type { Logger } from './logger.js'
import type { ProducerBatch, ProducerRecordInput } from './producer.js'
import type { Offsets, RecordMetadata } from './types.js'

/** Where sendOffsets finds the group: kafkajs' consumerGroupId, or a consumer of this package (KIP-447). */
export interface SendOffsetsInput extends Offsets {
  consumerGroupId?: string
  /** A @tidelog/kafkajs consumer in the group (confluent-kafka-javascript's form): its generation and member id fence zombies (KIP-447). */
  consumer?: { groupMetadata(): ConsumerGroupMetadata }
}

/** kafkajs' Transaction: send and sendBatch as the producer's, sendOffsets, commit, abort, isActive. */
export interface Transaction {
  send(record: ProducerRecordInput): Promise<RecordMetadata[]>
  sendBatch(batch: ProducerBatch): Promise<RecordMetadata[]>
  sendOffsets(offsets: SendOffsetsInput): Promise<void>
  commit(): Promise<void>
  abort(): Promise<void>
  isActive(): boolean
}

type Phase = 'active' | 'ending' | 'ended'
type Step = 'end' | 'ended' | 'failed'

// One Transaction object's life; the transactional rules themselves (fatal and abortable
// errors, what may follow what) are the native producer's (@tidelog/producer's TRANSITIONS).
// A commit or abort that failed leaves the transaction usable, so that the abort kafkajs'
// documentation puts in the catch block works after a failed commit (kafkajs 2.2.4 refuses
// it with "Cannot continue to use transaction once ended").
const PHASES: Record<Phase, Partial<Record<Step, Phase>>> = {
  active: { end: 'ending' },
  ending: { ended: 'ended', failed: 'active' },
  ended: {},
}

/** What Kafka takes as "no member": offsets committed without a generation check (as before KIP-447). */
const NO_MEMBER = { generationId: -1, memberId: '', groupInstanceId: null }

export class KafkaTransaction implements Transaction {
  private phase: Phase = 'active'

  constructor(
    private readonly native: NativeProducer,
    private readonly log: Logger,
    private readonly deliver: (batch: ProducerBatch) => Promise<RecordMetadata[]>,
  ) {}

  private step(step: Step): void {
    const next = PHASES[this.phase][step]
    if (next === undefined) throw new KafkaJSNonRetriableError(`Transaction state exception: cannot ${step} while ${this.phase}`)
    this.phase = next
  }

  /** kafkajs' transactionGuard: nothing goes through a transaction that has ended, or is ending (kafkajs' isActive() is false then too). */
  private guard(): void {
    if (this.phase !== 'active') throw new KafkaJSNonRetriableError('Cannot continue to use transaction once ended')
  }

  isActive = (): boolean => {
    const s = this.native.transactionState
    return this.phase === 'active' && (s === 'IN_TRANSACTION' || s === 'ABORTABLE_ERROR')
  }

  send = async (record: ProducerRecordInput): Promise<RecordMetadata[]> => {
    this.guard()
    const { topic, messages, acks, timeout, compression } = record ?? ({} as ProducerRecordInput)
    return this.deliver({ acks, timeout, compression, topicMessages: [{ topic, messages }] })
  }

  sendBatch = async (batch: ProducerBatch): Promise<RecordMetadata[]> => {
    this.guard()
    return this.deliver(batch)
  }

  sendOffsets = async (input: SendOffsetsInput): Promise<void> => {
    this.guard()
    const { consumerGroupId, consumer, topics } = input ?? ({} as SendOffsetsInput)
    let group: ConsumerGroupMetadata
    if (consumer !== undefined) {
      if (typeof consumer?.groupMetadata !== 'function') throw new KafkaJSNonRetriableError('sendOffsets({ consumer }) needs a @tidelog/kafkajs consumer')
      group = consumer.groupMetadata()
      if (consumerGroupId !== undefined && consumerGroupId !== group.groupId) {
        throw new KafkaJSNonRetriableError(`sendOffsets: consumerGroupId "${consumerGroupId}" is not the consumer's group "${group.groupId}"`)
      }
    } else {
      if (!consumerGroupId) throw new KafkaJSNonRetriableError('Missing consumerGroupId')
      group = { groupId: consumerGroupId, ...NO_MEMBER }
    }
    if (!Array.isArray(topics)) throw new KafkaJSNonRetriableError('Missing offset topics')
    const offsets: TransactionOffset[] = []
    for (const { topic, partitions } of topics) {
      for (const { partition, offset } of partitions ?? []) {
        if (typeof offset !== 'string' || !/^\d+$/.test(offset)) throw new KafkaJSNonRetriableError(`Invalid offset ${JSON.stringify(offset)} for ${topic}-${partition}`)
        offsets.push({ topic, partition, offset: BigInt(offset) })
      }
    }
    try {
      await this.native.sendOffsetsToTransaction(offsets, group)
    } catch (e) {
      throw toKafkaJSError(e)
    }
  }

  commit = (): Promise<void> => this.end('commit')

  abort = (): Promise<void> => this.end('abort')

  private async end(how: 'commit' | 'abort'): Promise<void> {
    this.guard()
    this.step('end')
    try {
      if (how === 'commit') await this.native.commitTransaction()
      else await this.native.abortTransaction()
    } catch (e) {
      this.step('failed')
      this.log.debug(`${how} failed`, { error: (e as Error).message })
      throw toKafkaJSError(e)
    }
    this.step('ended')
  }
}
