import { TidelogError } from '@tidelog/protocol'
import type { TopicPartition } from './types.js'

/**
 * A partition has no committed offset and autoOffsetReset is 'none' (Java's
 * NoOffsetForPartitionException). Seek the partition to go on.
 */
export class NoOffsetForPartitionError extends TidelogError {
  readonly partitions: TopicPartition[]
  constructor(partitions: TopicPartition[]) {
    super(`no committed offset for ${partitions.map((p) => `${p.topic}-${p.partition}`).join(', ')} and autoOffsetReset is none`)
    this.partitions = partitions
  }
}

/**
 * The fetch position is outside the log and autoOffsetReset is 'none' (Java's
 * OffsetOutOfRangeException). Seek the partition to go on.
 */
export class OffsetOutOfRangeError extends TidelogError {
  readonly topic: string
  readonly partition: number
  readonly offset: bigint
  constructor(topic: string, partition: number, offset: bigint) {
    super(`offset ${offset} is out of range for ${topic}-${partition} and autoOffsetReset is none`)
    this.topic = topic
    this.partition = partition
    this.offset = offset
  }
}

/**
 * A commit was refused because the group moved on without this member (Java's
 * CommitFailedException): the member's generation is over, its partitions may already belong
 * to another member. Not retriable: rejoin (the consumer does) and process again.
 */
export class CommitFailedError extends TidelogError {
  readonly code: number
  constructor(reason: string, code: number, options?: { cause?: unknown }) {
    super(`commit failed: ${reason}; the group has rebalanced and the partitions may have moved to another member`, { cause: options?.cause })
    this.code = code
  }
}

/** A call that the consumer's current state does not allow (Java's IllegalStateException). */
export class IllegalStateError extends TidelogError {}

/** The group coordinator refused this member for good (fenced instance id, bad config, authorization). */
export class GroupMembershipError extends TidelogError {}

/**
 * A run() handler (eachMessage / eachBatch) kept failing after its retries, with
 * onHandlerError 'stop': run() rejects with this. `offset` is the first offset not processed;
 * it is not committed, and the partition's position is back at it.
 */
export class HandlerFailedError extends TidelogError {
  readonly topic: string
  readonly partition: number
  readonly offset: bigint
  readonly attempts: number
  constructor(topic: string, partition: number, offset: bigint, attempts: number, cause: unknown) {
    super(`the handler failed for ${topic}-${partition} at offset ${offset} after ${attempts} attempt(s): ${cause instanceof Error ? cause.message : String(cause)}`, { cause })
    this.topic = topic
    this.partition = partition
    this.offset = offset
    this.attempts = attempts
  }
}

/**
 * A record's key or value could not be deserialized (Java's RecordDeserializationException).
 * With onDeserializationError 'stop' (default) the partition's position stays at `offset`:
 * seek past it (offset + 1n) to go on; run() rejects with it. With 'skip' it is logged and the
 * record counts as processed.
 */
export class RecordDeserializationError extends TidelogError {
  readonly topic: string
  readonly partition: number
  readonly offset: bigint
  readonly isKey: boolean
  constructor(topic: string, partition: number, offset: bigint, isKey: boolean, cause: unknown) {
    super(`cannot deserialize the ${isKey ? 'key' : 'value'} of ${topic}-${partition} at offset ${offset}: ${cause instanceof Error ? cause.message : String(cause)}`, { cause })
    this.topic = topic
    this.partition = partition
    this.offset = offset
    this.isKey = isKey
  }
}
