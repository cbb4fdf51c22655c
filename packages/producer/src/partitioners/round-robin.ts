import type { PartitionStrategy, PartitionerFunction } from './types.js'

/**
 * Java's RoundRobinPartitioner: every record (key or no key) goes to the next partition in turn,
 * cycling over the partitions that have a leader.
 */
export const roundRobinStrategy: PartitionStrategy = (_record, topic) => {
  const available = topic.available()
  const i = topic.counter
  topic.counter = i >= 0x3fffffff ? 0 : i + 1
  return available[i % available.length]!
}

const counters = new Map<string, number>()

/** The same as a plain function; its position is kept per topic name for the whole process. */
export const roundRobin: PartitionerFunction = (_record, context) => {
  const i = counters.get(context.topic) ?? 0
  counters.set(context.topic, i >= 0x3fffffff ? 0 : i + 1)
  return i % context.partitionCount
}
