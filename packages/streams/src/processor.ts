import type { Record, RecordMetadata } from './record.js'
import type { StateStore } from './store.js'

/** Which clock drives a punctuator (Java's PunctuationType). */
export type PunctuationType = 'STREAM_TIME' | 'WALL_CLOCK_TIME'
export const PunctuationType = { STREAM_TIME: 'STREAM_TIME', WALL_CLOCK_TIME: 'WALL_CLOCK_TIME' } as const

export type Punctuator = (timestamp: number) => void

export interface Cancellable {
  cancel(): void
}

/** `<subtopology>_<partition>`, as Java's TaskId prints. */
export class TaskId {
  constructor(readonly subtopology: number, readonly partition: number) {}
  toString(): string {
    return `${this.subtopology}_${this.partition}`
  }
}

export interface ProcessorContext<KOut = unknown, VOut = unknown> {
  readonly applicationId: string
  readonly taskId: TaskId
  /** Topic, partition and offset of the record being processed; undefined inside a punctuator. */
  recordMetadata(): RecordMetadata | undefined
  /** Sends a record to all children, or to the one named `childName`. */
  forward<K extends KOut, V extends VOut>(record: Record<K, V>, childName?: string): void
  getStateStore<S extends StateStore>(name: string): S
  /**
   * STREAM_TIME punctuators fire when stream time (the largest timestamp seen by the task)
   * passes each multiple of the interval; WALL_CLOCK_TIME ones every interval of system time.
   */
  schedule(intervalMs: number, type: PunctuationType, punctuator: Punctuator): Cancellable
  currentStreamTimeMs(): number
  currentSystemTimeMs(): number
  /** Asks for a commit after this record (honoured at the next commit point). */
  commit(): void
  /** Counts a record the processor skipped (Java's task-level dropped-records sensor). */
  recordDropped?(): void
  /** Java's InternalProcessorContext#processorMetadataForKey: a value the task committed with its offsets (restored on restart). */
  processorMetadataForKey?(key: string): number | undefined
  /** Java's addProcessorMetadataKeyValue: kept with the task's next offset commit. */
  addProcessorMetadataKeyValue?(key: string, value: number): void
  /** The application's configuration (Java's ProcessorContext#appConfigs), including internal `__...__` settings. */
  appConfigs?(): Readonly<{ [key: string]: unknown }>
}

/** Java's org.apache.kafka.streams.processor.api.Processor. */
export interface Processor<KIn = unknown, VIn = unknown, KOut = unknown, VOut = unknown> {
  init?(context: ProcessorContext<KOut, VOut>): void
  process(record: Record<KIn, VIn>): void
  close?(): void
}

/** Called once per task: each task gets its own processor instances. */
export type ProcessorSupplier<KIn = unknown, VIn = unknown, KOut = unknown, VOut = unknown> = () => Processor<KIn, VIn, KOut, VOut>

/** Chooses the output topic per record (Java's TopicNameExtractor). */
export type TopicNameExtractor<K, V> = (key: K, value: V, context: { topic?: string; partition?: number; offset?: number; timestamp: number }) => string

/** Chooses a partition for an output record; undefined = the producer's default partitioner. */
export type StreamPartitioner<K, V> = (topic: string, key: K, value: V, numPartitions: number) => number | undefined

/** Where a record's timestamp comes from (Java's TimestampExtractor); default: the record's own. */
export type TimestampExtractor = (record: { topic: string; partition: number; offset: number; key: unknown; value: unknown; timestamp: number }, partitionTime: number) => number
