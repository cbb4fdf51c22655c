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
