import { RecordTooLargeError as BatchTooLargeError, ErrorCodes, ProtocolError, TidelogError, type ProtocolErrorContext } from '@tidelog/protocol'
import type { RecordMetadata } from './record.js'

/**
 * A record too large to send: larger than maxRequestBytes or bufferMemory (checked before it is
 * queued, as Java's RecordTooLargeException), or refused by the broker with MESSAGE_TOO_LARGE
 * (larger than the topic's max.message.bytes). Extends the codec's class of the same name, so
 * one `instanceof` catches both.
 */
export class RecordTooLargeError extends BatchTooLargeError {
  readonly topic: string
  constructor(topic: string, size: number, max: number, what: string, options?: { cause?: unknown }) {
    super(size, max, 0)
    this.message = `record of about ${size} bytes for topic ${topic} is larger than ${what}${max >= 0 ? ` (${max} bytes)` : ''}`
    if (options?.cause !== undefined) Object.defineProperty(this, 'cause', { value: options.cause, configurable: true, writable: true })
    this.topic = topic
  }
}

/**
 * No room in bufferMemory for a record within maxBlockMs: the producer is taking records faster
 * than the brokers acknowledge them (Java's BufferExhaustedException). Retriable: room frees up
 * as batches complete.
 */
export class BufferExhaustedError extends TidelogError {
  readonly bufferMemory: number
  readonly maxBlockMs: number
  constructor(bufferMemory: number, maxBlockMs: number) {
    super(`no room for the record in bufferMemory (${bufferMemory} bytes) within maxBlockMs (${maxBlockMs} ms)`, { retriable: true })
    this.bufferMemory = bufferMemory
    this.maxBlockMs = maxBlockMs
  }
}

/**
 * A record was not acknowledged within deliveryTimeoutMs of being queued (KIP-91). `cause` is
 * the last error a send attempt met, if any; without one the batch never left the accumulator
 * (no leader, no connection, or the producer id was never obtained). The record may or may not
 * have been written.
 */
export class DeliveryTimeoutError extends TidelogError {
  readonly topic: string
  readonly partition: number
  readonly deliveryTimeoutMs: number
  readonly attempts: number
  constructor(topic: string, partition: number, deliveryTimeoutMs: number, attempts: number, cause?: unknown) {
    const why = cause instanceof Error ? `; last error: ${cause.message}` : attempts === 0 ? '; it was never sent' : ''
    // partition -1: the record expired before it had one (waiting for metadata or buffer room).
    super(`record for ${partition < 0 ? topic : `${topic}-${partition}`} not acknowledged within deliveryTimeoutMs (${deliveryTimeoutMs} ms) after ${attempts} attempt(s)${why}`, {
      cause,
      retriable: true,
    })
    this.topic = topic
    this.partition = partition
    this.deliveryTimeoutMs = deliveryTimeoutMs
    this.attempts = attempts
  }
}

/**
 * An argument to send() that is not a producer record: not an object, no topic, no value, a
 * field that records do not have (such as kafkajs's `messages`), or a field of the wrong type.
 * A TypeError, like every other bad argument in tidelog; `field` names the culprit. Nothing of
 * the record is written. Not retriable: the same record fails again.
 */
export class InvalidRecordError extends TypeError {
  /** The record field at fault (`topic`, `value`, `messages`, ...), or undefined for the record itself. */
  readonly field: string | undefined
  readonly retriable = false
  constructor(message: string, field?: string) {
    super(message)
    this.name = new.target.name
    this.field = field
  }
}

/**
 * A key, value, header or timestamp of a type the producer cannot write (Java's
 * SerializationException); an InvalidRecordError, so a TypeError too.
 */
export class SerializationError extends InvalidRecordError {}

/** A partition that the topic does not have, given on the record or returned by a partitioner. */
export class InvalidPartitionError extends TidelogError {
  readonly topic: string
  readonly partition: number
  readonly partitionCount: number
  constructor(topic: string, partition: number, partitionCount: number, source: 'record' | 'partitioner') {
    super(`${source === 'record' ? 'the record names' : 'the partitioner returned'} partition ${String(partition)} of topic ${topic}, which has partitions 0-${partitionCount - 1}`)
    this.topic = topic
    this.partition = partition
    this.partitionCount = partitionCount
  }
}

/**
 * Some records of a send([...]) call failed. Every record of the call has settled when this is
 * thrown: `errors[i]` says why record i failed (undefined if it was written), `results[i]` holds
 * the metadata of the records that were written.
 */
export class SendError extends TidelogError {
  readonly errors: (Error | undefined)[]
  readonly results: (RecordMetadata | undefined)[]
  readonly failed: number
  constructor(errors: (Error | undefined)[], results: (RecordMetadata | undefined)[], failed: number) {
    const first = errors.find((e) => e !== undefined)
    super(`${failed} of ${errors.length} record(s) failed${first !== undefined ? `; first: ${first.message}` : ''}`, {
      cause: first,
      retriable: errors.every((e) => e === undefined || (e instanceof TidelogError && e.retriable)),
    })
    this.errors = errors
    this.results = results
    this.failed = failed
  }
}

// --- transactions (KIP-98) -------------------------------------------------------------------

/**
 * Another producer with the same transactionalId has called initTransactions() since this one
 * did (PRODUCER_FENCED; INVALID_PRODUCER_EPOCH where it means the same, as Java's
 * ProducerFencedException). Fatal: this producer can only be closed.
 */
export class ProducerFencedError extends ProtocolError {
  constructor(context: ProtocolErrorContext = {}, options?: { cause?: unknown }) {
    super(ErrorCodes.PRODUCER_FENCED, context, options)
  }
}

/**
 * A transactional method called in a state that does not allow it (Java's IllegalStateException
 * from the transaction manager, with Kafka's INVALID_TXN_STATE as its type): send() outside a
 * transaction, commitTransaction() before beginTransaction(), a second initTransactions(), ...
 * Nothing was done; the producer's state is unchanged.
 */
export class InvalidTxnStateError extends ProtocolError {
  constructor(message: string) {
    super(ErrorCodes.INVALID_TXN_STATE, { message })
  }
}

/**
 * The current transaction cannot commit (TRANSACTION_ABORTABLE, as Java's
 * TransactionAbortableException and KIP-1050): a record or an offset commit failed for good,
 * and the only way on is abortTransaction(). `cause` is what failed.
 */
export class TransactionAbortableError extends ProtocolError {
  constructor(cause: unknown) {
    super(ErrorCodes.TRANSACTION_ABORTABLE, { message: `the transaction must be aborted: ${cause instanceof Error ? cause.message : String(cause)}` }, { cause })
  }
}

/**
 * A record that was still queued when its transaction was aborted: it was never sent (Java's
 * TransactionAbortedException).
 */
export class TransactionAbortedError extends TidelogError {
  constructor() {
    super('the record was not sent: its transaction was aborted')
  }
}

/**
 * commitTransaction(), abortTransaction() or initTransactions() did not finish within maxBlockMs
 * (Java's TimeoutException). The operation goes on in the background: call the same method
 * again to wait for it. A commit that timed out is never turned into an abort.
 */
export class TransactionTimeoutError extends TidelogError {
  readonly operation: string
  constructor(operation: string, timeoutMs: number) {
    super(`${operation} did not complete within maxBlockMs (${timeoutMs} ms); call ${operation} again to wait for it`, { retriable: true })
    this.operation = operation
  }
}
