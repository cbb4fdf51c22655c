import { randomPartition } from './random.js'
import { STICKY, type PartitionStrategy, type PartitionerFunction, type TopicPartitioning } from './types.js'

/**
 * Uniform sticky (Java's built-in partitioning for records without a key, and its
 * UniformStickyPartitioner when keys are ignored): all records go to one partition until its
 * batch is full or has been sent, then to another chosen at random (KIP-480). Large batches
 * instead of one small batch per partition per linger period is the point. The accumulator
 * does the switching, because only it knows when a batch closes.
 */
export const stickyStrategy: PartitionStrategy = () => STICKY

/**
 * The next sticky partition for a topic: random among the partitions that have a leader, and
 * not the previous one when there is a choice (KIP-794 keeps the choice uniform).
 */
export function nextStickyPartition(topic: TopicPartitioning, previous: number): number {
  const available = topic.available()
  const n = available.length
  if (n === 1) return available[0]!
  let p = available[Math.floor(Math.random() * n)]!
  if (p === previous) p = available[(available.indexOf(p) + 1 + Math.floor(Math.random() * (n - 1))) % n]!
  return p
}

/**
 * Standalone, without a producer's batches to watch, this can only pick a random partition per
 * call; inside a Producer the same value selects true sticky placement.
 */
export const sticky: PartitionerFunction = (_record, context) => randomPartition(context.partitionCount)
