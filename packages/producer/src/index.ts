export { Producer } from './producer.js'
export type { ProducerOptions, Acks } from './options.js'
export type { ProducerRecord, RecordMetadata, Bytes } from './record.js'
export type { TypedRecord, SerializerOptions } from './serdes.js'
export { serdes } from '@tidelog/client'
export type { Serde, Serializer, Deserializer, SerdeContext } from '@tidelog/client'
export { partitioners } from './partitioners/index.js'
export type { Partitioner, PartitionerContext, PartitionerFunction, PartitionerName } from './partitioners/index.js'
export {
  BufferExhaustedError,
  DeliveryTimeoutError,
  InvalidPartitionError,
  InvalidRecordError,
  RecordTooLargeError,
  SendError,
  SerializationError,
  ProducerFencedError,
  InvalidTxnStateError,
  TransactionAbortableError,
  TransactionAbortedError,
  TransactionTimeoutError,
} from './errors.js'
export type { ConsumerGroupMetadata, TransactionOffset } from './transaction-manager.js'
export { TRANSITIONS as TRANSACTION_TRANSITIONS, isTransitionValid, isFatalForTransactions } from './transaction-state.js'
export type { TxnState } from './transaction-state.js'
