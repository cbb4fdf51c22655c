export { Topology } from './topology.js'
export type { SourceOptions, SinkOptions, DefaultSerdes } from './topology.js'
export { TopologyDescription } from './internal/describe.js'
export type { DescribedNode, Subtopology } from './internal/describe.js'
export { Record } from './record.js'
export type { Headers, RecordMetadata } from './record.js'
export { PunctuationType, TaskId } from './processor.js'
export type {
  Processor,
  ProcessorContext,
  ProcessorSupplier,
  Punctuator,
  Cancellable,
  TopicNameExtractor,
  StreamPartitioner,
  TimestampExtractor,
} from './processor.js'
export { Stores, InMemoryKeyValueStore } from './store.js'
export type { StateStore, KeyValueStore, KeyValue, StoreBuilder, KeyValueBytesStoreSupplier, ValueAndTimestamp, StateStoreContext } from './store.js'
export { Serdes } from './serdes.js'
export type { Serde, Serializer, Deserializer, SerdeContext } from './serdes.js'
export { StreamsException, TopologyException, InvalidStateStoreException } from './errors.js'
export type { StreamsConfig, HandlerResponse, DeserializationExceptionHandler, ProductionExceptionHandler } from './config.js'
export { StreamsBuilder } from './dsl/streams-builder.js'
export { KStream, BranchedKStream } from './dsl/kstream.js'
export { KTable } from './dsl/ktable.js'
export { KGroupedStream } from './dsl/kgrouped-stream.js'
export { Named, Consumed, Produced, Grouped, Repartitioned, Materialized, Branched } from './dsl/options.js'
export type { Change, KeyValuePair } from './dsl/processors.js'
export { TopologyTestDriver, TestInputTopic, TestOutputTopic } from './test-utils/driver.js'
export type { TestRecord } from './test-utils/driver.js'
export { NoSuchElementError } from './test-utils/errors.js'
export { KafkaStreams } from './runtime/kafka-streams.js'
export { STATE_TRANSITIONS } from './runtime/state.js'
export type { KafkaStreamsState, StateListener } from './runtime/state.js'
export { KGroupedTable } from './dsl/kgrouped-table.js'
export { Joined } from './dsl/stream-table-join.js'
export type { StreamJoiner } from './dsl/stream-table-join.js'
export { GlobalKTable } from './dsl/global-ktable.js'
export { TableJoined } from './dsl/fk-join/fk-join.js'
export { QueryableStoreTypes, StoreQueryParameters, StreamsNotStartedException, UnknownStateStoreException } from './queries/stores.js'
export type { ReadOnlyKeyValueStore, QueryableStoreType } from './queries/stores.js'
export type { KeyQueryMetadata, HostInfo, StreamsMetadata } from './queries/metadata.js'
export { startKeyQueryServer } from './queries/http.js'
export type { KeyQueryServer, KeyQueryServerOptions } from './queries/http.js'
