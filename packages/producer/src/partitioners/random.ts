import type { PartitionStrategy, PartitionerFunction } from './types.js'

export function randomPartition(count: number): number {
  return Math.floor(Math.random() * count)
}

/** A uniformly random partition among those with a leader, key or no key. */
export const randomStrategy: PartitionStrategy = (_record, topic) => {
  const available = topic.available()
  return available[Math.floor(Math.random() * available.length)]!
}

/** A uniformly random partition, key or no key. */
export const random: PartitionerFunction = (_record, context) => randomPartition(context.partitionCount)
