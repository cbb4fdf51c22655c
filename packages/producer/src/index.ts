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
} from './errors.js'
