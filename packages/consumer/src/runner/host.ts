import type { ExponentialBackoff, Logger } from '@tidelog/client'
import type { Delivery } from '../delivery.js'
import type { Fetcher } from '../fetcher.js'
import type { ResolvedConsumerOptions } from '../options.js'
import type { Assignment, PartitionState } from '../positions.js'
import type { DeserializationErrorPolicy, MessageDecoder } from '../serdes.js'
import type { TopicPartition, TopicPartitionOffset } from '../types.js'

/** What the runner uses of its consumer: the consumer's own parts, never copies of them. */
export interface RunnerHost<K, V> {
  readonly options: ResolvedConsumerOptions
  readonly logger: Logger
  readonly backoff: ExponentialBackoff
  readonly fetcher: Fetcher
  readonly assignment: Assignment
  readonly delivery: Delivery
  readonly decoder: MessageDecoder<K, V>
  readonly onDeserializationError: DeserializationErrorPolicy
  readonly hasGroup: boolean
  /** The application made progress: a rejoin held back by a poll timeout may go on. */
  polled(): void
  /** at-most-once: commits the chunk's end before its first message is handled. */
  commitAhead: ((s: PartitionState, offset: bigint) => Promise<void>) | undefined
  /** Auto-commit of processed offsets of every assigned partition (no-op without auto-commit). */
  commitProcessed(): Promise<void>
  commit(offsets?: readonly TopicPartitionOffset[]): Promise<void>
  /** Stops the partition after an error the application is told about (corrupt data). */
  halt(s: PartitionState, err: unknown): void
  pause(partitions: readonly TopicPartition[]): void
  resume(partitions: readonly TopicPartition[]): void
}
