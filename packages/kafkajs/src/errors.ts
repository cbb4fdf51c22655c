import { KafkaConnectionError, RequestTimeoutError, SaslAuthenticationError, AdminError, ClientClosedError } from '@tidelog/client'
import { ProtocolError, TidelogError, UnsupportedVersionError } from '@tidelog/protocol'
import { DeliveryTimeoutError, InvalidRecordError, InvalidTxnStateError, ProducerFencedError, RecordTooLargeError, SendError } from '@tidelog/producer'
import { CommitFailedError, OffsetOutOfRangeError } from '@tidelog/consumer'

// kafkajs' error classes under their kafkajs names: applications test `e.name`, `e.type`,
// `e.retriable` and `instanceof` against these, so each keeps kafkajs' hierarchy and fields.
// The native error a kafkajs error was made from is its `cause`.

type ErrorInput = Error | string

interface KafkaJSErrorOptions {
  retriable?: boolean
  cause?: unknown
}

function messageOf(e: ErrorInput): string {
  return typeof e === 'string' ? e : e.message
}

export class KafkaJSError extends Error {
  override name = 'KafkaJSError'
  retriable: boolean
  helpUrl?: string
  override cause?: unknown

  constructor(e: ErrorInput, options: KafkaJSErrorOptions = {}) {
    super(messageOf(e), options.cause === undefined ? undefined : { cause: options.cause })
    this.retriable = options.retriable ?? true
    if (options.cause !== undefined) this.cause = options.cause
    if (typeof e !== 'string' && 'helpUrl' in e && typeof (e as { helpUrl?: unknown }).helpUrl === 'string') this.helpUrl = (e as { helpUrl: string }).helpUrl
  }
}

export class KafkaJSNonRetriableError extends KafkaJSError {
  override name = 'KafkaJSNonRetriableError'
  constructor(e: ErrorInput, options: { cause?: unknown } = {}) {
    super(e, { retriable: false, cause: options.cause })
  }
}

/** A Kafka error code: `type` is Kafka's name (UNKNOWN_TOPIC_OR_PARTITION, ...), `code` the number. */
export class KafkaJSProtocolError extends KafkaJSError {
  override name = 'KafkaJSProtocolError'
  readonly code: number
  readonly type: string
  constructor(e: ErrorInput | { message: string; type: string; code: number; retriable: boolean }, options: KafkaJSErrorOptions = {}) {
    const info = typeof e === 'object' && 'type' in e ? e : undefined
    super(typeof e === 'string' ? e : e.message, { retriable: options.retriable ?? info?.retriable ?? false, cause: options.cause })
    this.code = info?.code ?? -1
    this.type = info?.type ?? 'UNKNOWN'
  }
}

export class KafkaJSOffsetOutOfRange extends KafkaJSProtocolError {
  override name = 'KafkaJSOffsetOutOfRange'
  readonly topic: string
  readonly partition: number
  constructor(e: ConstructorParameters<typeof KafkaJSProtocolError>[0], meta: { topic: string; partition: number; cause?: unknown }) {
    super(e, { cause: meta.cause })
    this.topic = meta.topic
    this.partition = meta.partition
  }
}

export class KafkaJSMemberIdRequired extends KafkaJSProtocolError {
  override name = 'KafkaJSMemberIdRequired'
  readonly memberId: string
  constructor(e: ConstructorParameters<typeof KafkaJSProtocolError>[0], meta: { memberId: string }) {
    super(e)
    this.memberId = meta.memberId
  }
}

export class KafkaJSNumberOfRetriesExceeded extends KafkaJSNonRetriableError {
  override name = 'KafkaJSNumberOfRetriesExceeded'
  readonly retryCount: number
  readonly retryTime: number
  constructor(e: ErrorInput, meta: { retryCount: number; retryTime: number }) {
    super(e, { cause: e })
    this.retryCount = meta.retryCount
    this.retryTime = meta.retryTime
  }
}

export class KafkaJSConnectionError extends KafkaJSError {
  override name = 'KafkaJSConnectionError'
  readonly broker?: string
  readonly code?: string
  constructor(e: ErrorInput, meta: { broker?: string; code?: string; cause?: unknown } = {}) {
    super(e, { cause: meta.cause })
    this.broker = meta.broker
    this.code = meta.code
  }
}

export class KafkaJSConnectionClosedError extends KafkaJSConnectionError {
  override name = 'KafkaJSConnectionClosedError'
  readonly host?: string
  readonly port?: number
  constructor(e: ErrorInput, meta: { host?: string; port?: number } = {}) {
    super(e, { broker: `${meta.host}:${meta.port}` })
    this.host = meta.host
    this.port = meta.port
  }
}

export class KafkaJSRequestTimeoutError extends KafkaJSError {
  override name = 'KafkaJSRequestTimeoutError'
  readonly broker?: string
  readonly correlationId?: number
  readonly createdAt?: number
  readonly sentAt?: number
  readonly pendingDuration?: number
  constructor(e: ErrorInput, meta: { broker?: string; correlationId?: number; createdAt?: number; sentAt?: number; pendingDuration?: number; cause?: unknown } = {}) {
    super(e, { cause: meta.cause })
    this.broker = meta.broker
    this.correlationId = meta.correlationId
    this.createdAt = meta.createdAt
    this.sentAt = meta.sentAt
    this.pendingDuration = meta.pendingDuration
  }
}

export class KafkaJSMetadataNotLoaded extends KafkaJSError {
  override name = 'KafkaJSMetadataNotLoaded'
}

export class KafkaJSTopicMetadataNotLoaded extends KafkaJSMetadataNotLoaded {
  override name = 'KafkaJSTopicMetadataNotLoaded'
  readonly topic?: string
  constructor(e: ErrorInput, meta: { topic?: string } = {}) {
    super(e)
    this.topic = meta.topic
  }
}

export class KafkaJSStaleTopicMetadataAssignment extends KafkaJSError {
  override name = 'KafkaJSStaleTopicMetadataAssignment'
  readonly topic?: string
  readonly unknownPartitions?: number[]
  constructor(e: ErrorInput, meta: { topic?: string; unknownPartitions?: number[] } = {}) {
    super(e)
    this.topic = meta.topic
    this.unknownPartitions = meta.unknownPartitions
  }
}

export class KafkaJSDeleteGroupsError extends KafkaJSError {
  override name = 'KafkaJSDeleteGroupsError'
  readonly groups: { groupId: string; errorCode: number; error: KafkaJSProtocolError }[]
  constructor(e: ErrorInput, groups: { groupId: string; errorCode: number; error: KafkaJSProtocolError }[] = []) {
    super(e)
    this.groups = groups
  }
}

export class KafkaJSServerDoesNotSupportApiKey extends KafkaJSNonRetriableError {
  override name = 'KafkaJSServerDoesNotSupportApiKey'
  readonly apiKey?: number
  readonly apiName?: string
  constructor(e: ErrorInput, meta: { apiKey?: number; apiName?: string; cause?: unknown } = {}) {
    super(e, { cause: meta.cause })
    this.apiKey = meta.apiKey
    this.apiName = meta.apiName
  }
}

export class KafkaJSBrokerNotFound extends KafkaJSError {
  override name = 'KafkaJSBrokerNotFound'
}

export class KafkaJSPartialMessageError extends KafkaJSNonRetriableError {
  override name = 'KafkaJSPartialMessageError'
}

export class KafkaJSSASLAuthenticationError extends KafkaJSNonRetriableError {
  override name = 'KafkaJSSASLAuthenticationError'
}

export class KafkaJSGroupCoordinatorNotFound extends KafkaJSNonRetriableError {
  override name = 'KafkaJSGroupCoordinatorNotFound'
}

/** What this package does not do (yet); the README lists every method that throws it. */
export class KafkaJSNotImplemented extends KafkaJSNonRetriableError {
  override name = 'KafkaJSNotImplemented'
}

export class KafkaJSTimeout extends KafkaJSNonRetriableError {
  override name = 'KafkaJSTimeout'
}

export class KafkaJSLockTimeout extends KafkaJSTimeout {
  override name = 'KafkaJSLockTimeout'
}

export class KafkaJSUnsupportedMagicByteInMessageSet extends KafkaJSNonRetriableError {
  override name = 'KafkaJSUnsupportedMagicByteInMessageSet'
}

export class KafkaJSDeleteTopicRecordsError extends KafkaJSError {
  override name = 'KafkaJSDeleteTopicRecordsError'
  readonly partitions: { partition: number; offset: string; error: KafkaJSError | null }[]
  constructor(meta: { partitions: { partition: number; offset: string; error: KafkaJSError | null }[] }) {
    // Retriable only when every failed partition is, as kafkajs decides.
    const failed = meta.partitions.filter((p) => p.error !== null)
    super('Error while deleting records', { retriable: failed.every((p) => p.error!.retriable) })
    this.partitions = meta.partitions
  }
}

export class KafkaJSInvariantViolation extends KafkaJSNonRetriableError {
  override name = 'KafkaJSInvariantViolation'
  constructor(e: ErrorInput) {
    super(`Invariant violated: ${messageOf(e)}. This is likely a bug and should be reported.`)
  }
}

export class KafkaJSInvalidVarIntError extends KafkaJSNonRetriableError {
  // kafkajs names these two by their parent class; kept, since `name` is what code compares.
  override name = 'KafkaJSNonRetriableError'
}

export class KafkaJSInvalidLongError extends KafkaJSNonRetriableError {
  override name = 'KafkaJSNonRetriableError'
}

export class KafkaJSCreateTopicError extends KafkaJSProtocolError {
  override name = 'KafkaJSCreateTopicError'
  readonly topic: string
  constructor(e: ConstructorParameters<typeof KafkaJSProtocolError>[0], topic: string, options: { cause?: unknown } = {}) {
    super(e, options)
    this.topic = topic
  }
}

export class KafkaJSAlterPartitionReassignmentsError extends KafkaJSProtocolError {
  override name = 'KafkaJSAlterPartitionReassignmentsError'
  readonly topic?: string
  readonly partition?: number
  constructor(e: ConstructorParameters<typeof KafkaJSProtocolError>[0], topic?: string, partition?: number) {
    super(e)
    this.topic = topic
    this.partition = partition
  }
}

export class KafkaJSAggregateError extends Error {
  override name = 'KafkaJSAggregateError'
  readonly errors: (Error | string)[]
  constructor(message: ErrorInput, errors: (Error | string)[]) {
    super(messageOf(message))
    this.errors = errors
  }
}

/** kafkajs' fetcher signal that a rebalance interrupted a fetch; exported for instanceof checks. */
export class KafkaJSFetcherRebalanceError extends Error {}

export class KafkaJSNoBrokerAvailableError extends KafkaJSError {
  override name = 'KafkaJSNoBrokerAvailableError'
  constructor() {
    super('No broker available')
  }
}

const FENCED_MESSAGE = "Producer attempted an operation with an old epoch. Either there is a newer producer with the same transactionalId, or the producer's transaction has been expired by the broker"

function fromProtocol(e: ProtocolError): KafkaJSProtocolError {
  const info = { message: e.serverMessage ?? e.message, type: e.type, code: e.code, retriable: e.retriable }
  if (e.type === 'OFFSET_OUT_OF_RANGE' && e.topic !== undefined) return new KafkaJSOffsetOutOfRange(info, { topic: e.topic, partition: e.partition ?? -1, cause: e })
  return new KafkaJSProtocolError(info, { cause: e })
}

/**
 * The kafkajs error for a native one, so callers catching kafkajs' classes see them. Errors
 * that already are kafkajs' (a handler's own throw included) pass through unchanged.
 */
export function toKafkaJSError(err: unknown): Error {
  if (err instanceof KafkaJSError || err instanceof KafkaJSAggregateError) return err
  if (err instanceof SendError) return toKafkaJSError(err.errors.find((e) => e !== undefined) ?? err.cause)
  if (err instanceof AdminError) {
    if (err.errors.length === 1) return toKafkaJSError(err.errors[0])
    return new KafkaJSAggregateError(err.message, err.errors.map(toKafkaJSError))
  }
  // kafkajs knows no PRODUCER_FENCED (KIP-588): Kafka answers its request versions with
  // INVALID_PRODUCER_EPOCH, so that is the type and message kafkajs programs test for fencing.
  if (err instanceof ProducerFencedError) return new KafkaJSProtocolError({ message: FENCED_MESSAGE, type: 'INVALID_PRODUCER_EPOCH', code: 47, retriable: false }, { cause: err })
  // A transactional call out of order: kafkajs' state machine throws these.
  if (err instanceof InvalidTxnStateError) return new KafkaJSNonRetriableError(`Transaction state exception: ${err.message}`, { cause: err })
  if (err instanceof ProtocolError) return fromProtocol(err)
  // kafkajs sends what it is given and gets the broker's MESSAGE_TOO_LARGE; the native producer
  // knows the limit and refuses first, with the same meaning.
  if (err instanceof RecordTooLargeError) return new KafkaJSProtocolError({ message: err.message, type: 'MESSAGE_TOO_LARGE', code: 10, retriable: false }, { cause: err })
  if (err instanceof UnsupportedVersionError) {
    const u = err as UnsupportedVersionError & { apiKey?: number; apiName?: string }
    return new KafkaJSServerDoesNotSupportApiKey(err.message, { apiKey: u.apiKey, apiName: u.apiName, cause: err })
  }
  if (err instanceof RequestTimeoutError) return new KafkaJSRequestTimeoutError(err.message, { broker: err.broker, correlationId: err.correlationId, cause: err })
  if (err instanceof KafkaConnectionError) return new KafkaJSConnectionError(err.message, { broker: err.broker, cause: err })
  if (err instanceof SaslAuthenticationError) return new KafkaJSSASLAuthenticationError(err.message, { cause: err })
  if (err instanceof DeliveryTimeoutError) return new KafkaJSNumberOfRetriesExceeded(err, { retryCount: 0, retryTime: 0 })
  if (err instanceof OffsetOutOfRangeError) {
    return new KafkaJSOffsetOutOfRange({ message: err.message, type: 'OFFSET_OUT_OF_RANGE', code: 1, retriable: false }, { topic: err.topic, partition: err.partition, cause: err })
  }
  if (err instanceof CommitFailedError) return new KafkaJSNonRetriableError(err.message, { cause: err })
  if (err instanceof InvalidRecordError || err instanceof TypeError || err instanceof RangeError) return new KafkaJSNonRetriableError(err.message, { cause: err })
  if (err instanceof ClientClosedError) return new KafkaJSNonRetriableError(err.message, { cause: err })
  if (err instanceof TidelogError) return new KafkaJSError(err.message, { retriable: err.retriable, cause: err })
  if (err instanceof Error) return err
  return new KafkaJSError(String(err))
}

/** kafkajs' rebalance check: these codes mean "rejoin", not "fail". */
export function isRebalancing(e: { type?: string }): boolean {
  return e.type === 'REBALANCE_IN_PROGRESS' || e.type === 'NOT_COORDINATOR_FOR_GROUP' || e.type === 'NOT_COORDINATOR' || e.type === 'ILLEGAL_GENERATION'
}

export function isKafkaJSError(e: unknown): e is KafkaJSError {
  return e instanceof KafkaJSError
}
