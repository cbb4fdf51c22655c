import type { ProducerRecord } from '../record.js'

/** What a partitioner is told besides the record. */
export interface PartitionerContext {
  readonly topic: string
  readonly partitionCount: number
}

/** A custom partitioner: returns a partition in [0, partitionCount). */
export type PartitionerFunction = (record: ProducerRecord, context: PartitionerContext) => number

/** The built-in partitioners by name. */
export type PartitionerName = 'murmur2' | 'sticky' | 'roundRobin' | 'random'

export type Partitioner = PartitionerFunction | PartitionerName

/** A strategy's answer for records the accumulator places itself (uniform sticky). */
export const STICKY = -1

/** Per-topic state the producer keeps for its partitioners. */
export interface TopicPartitioning {
  readonly topic: string
  readonly partitionCount: number
  /** The context handed to custom functions (one frozen object per partition count). */
  readonly context: PartitionerContext
  /** Partitions that have a leader right now (all of them when none has). */
  available(): readonly number[]
  /** Round-robin position. */
  counter: number
}

/** How a producer picks a record's partition: a partition, or STICKY. */
export type PartitionStrategy = (record: ProducerRecord, topic: TopicPartitioning) => number

/** Keyed: a key is present (null and undefined mean no key). */
export function hasKey(record: ProducerRecord): boolean {
  return record.key !== null && record.key !== undefined
}
