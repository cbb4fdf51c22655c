import { murmur2Partition } from '@tidelog/protocol'
import { randomPartition } from './random.js'
import { hasKey, STICKY, type PartitionStrategy, type PartitionerFunction } from './types.js'

/**
 * Java's default: keyed records go to murmur2(key) mod partitionCount over all partitions
 * (available or not, so a key never moves while a leader is down); records without a key are
 * spread by the uniform sticky partitioner (KIP-480, KIP-794).
 */
export const murmur2Strategy: PartitionStrategy = (record, topic) =>
  hasKey(record) ? murmur2Partition(record.key!, topic.partitionCount) : STICKY

/**
 * The same placement as a plain function, for use inside a custom partitioner. Alone it keeps no
 * state, so records without a key get a random partition instead of a sticky one.
 */
export const murmur2: PartitionerFunction = (record, context) =>
  hasKey(record) ? murmur2Partition(record.key!, context.partitionCount) : randomPartition(context.partitionCount)
