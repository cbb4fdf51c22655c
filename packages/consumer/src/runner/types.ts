import type { Batch, Message, TopicPartitionOffset } from '../types.js'

/**
 * What the runner does with a handler that still fails after its retries:
 * - 'stop' (default): the runner stops and run() rejects with the error (a HandlerError). The
 *   failed message is not processed: its offset (and everything after it) is not committed,
 *   and the partition's position goes back to it, so the next run() or iterator reads it again.
 * - 'skip': the failure is logged, the message (or the batch's unresolved rest) counts as
 *   processed, and the partition goes on; its offset is committed like any other.
 */
export type HandlerErrorPolicy = 'stop' | 'skip'

export interface EachMessagePayload<K = Buffer, V = Buffer> {
  topic: string
  partition: number
  message: Message<K, V>
  /** Marks progress for max.poll.interval.ms (heartbeats to the coordinator run on their own timer). */
  heartbeat(): Promise<void>
  /** Pauses this partition (as consumer.pause()): the runner takes nothing more from it until resume(). */
  pause(): () => void
}

export interface EachBatchPayload<K = Buffer, V = Buffer> {
  batch: Batch<K, V>
  /** Marks `offset` processed: it and everything before it in this partition may be committed. */
  resolveOffset(offset: bigint): void
  /** Marks progress for max.poll.interval.ms (heartbeats to the coordinator run on their own timer). */
  heartbeat(): Promise<void>
  /** Commits `offsets`, or else the resolved-but-uncommitted offsets of every partition, if there are any. */
  commitOffsetsIfNecessary(offsets?: readonly TopicPartitionOffset[]): Promise<void>
  /** The resolved offsets (next offset to read) not committed yet, per partition. */
  uncommittedOffsets(): TopicPartitionOffset[]
  /** False once the runner is stopping: return early (resolved offsets are kept). */
  isRunning(): boolean
  /**
   * True once this batch's partition was revoked, lost, sought or paused: the rest of the
   * batch will be read again by whoever consumes the partition next; stop and return.
   */
  isStale(): boolean
  /** Pauses this partition; returns a function that resumes it. */
  pause(): () => void
}

export interface RunRetryOptions {
  /** Retries of a failing handler before the error policy applies (default 5; 0: none). */
  retries?: number
  /** First backoff in ms (default: the client's retryBackoffMs); doubles up to maxRetryTimeMs. */
  initialRetryTimeMs?: number
  /** Longest backoff in ms (default: the client's retryBackoffMaxMs). */
  maxRetryTimeMs?: number
}

export interface RunOptions<K = Buffer, V = Buffer> {
  eachMessage?: (payload: EachMessagePayload<K, V>) => Promise<void> | void
  eachBatch?: (payload: EachBatchPayload<K, V>) => Promise<void> | void
  /** How many partitions are handled at once (default 1). Each partition stays in order. */
  partitionsConsumedConcurrently?: number
  /**
   * eachBatch: a batch that returns without throwing counts as processed to its end (default
   * true). With false, only offsets given to resolveOffset() are processed.
   */
  eachBatchAutoResolve?: boolean
  /** What happens after a handler failed `retry.retries + 1` times. Default 'stop'. */
  onHandlerError?: HandlerErrorPolicy
  retry?: RunRetryOptions
  /** Stops the runner (as stop()) when aborted; run() then resolves. */
  signal?: AbortSignal
}

/** What run() is given about a partition when it stops after a handler failure. */
