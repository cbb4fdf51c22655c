export { Producer } from './producer.js'
export type { ProducerOptions, Acks } from './options.js'
export type { ProducerRecord, RecordMetadata, Bytes } from './record.js'
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
} from './errors.js'
