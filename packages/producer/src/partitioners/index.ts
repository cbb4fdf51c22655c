import { murmur2, murmur2Strategy } from './murmur2.js'
import { random, randomStrategy } from './random.js'
import { roundRobin, roundRobinStrategy } from './round-robin.js'
import { sticky, stickyStrategy } from './sticky.js'
import type { PartitionStrategy, Partitioner, PartitionerFunction, PartitionerName } from './types.js'

/**
 * The built-in partitioners. Each is a plain `(record, { topic, partitionCount }) => number`
 * that custom partitioners can call; passed to a Producer (as the value or by name), each gets
 * its stateful per-producer form (true stickiness, leader-aware round robin).
 */
export const partitioners: Readonly<Record<PartitionerName, PartitionerFunction>> = Object.freeze({
  murmur2,
  sticky,
  roundRobin,
  random,
})

const builtIns = new Map<Partitioner, PartitionStrategy>([
  [murmur2, murmur2Strategy],
  ['murmur2', murmur2Strategy],
  [sticky, stickyStrategy],
  ['sticky', stickyStrategy],
  [roundRobin, roundRobinStrategy],
  ['roundRobin', roundRobinStrategy],
  [random, randomStrategy],
  ['random', randomStrategy],
])

/** The strategy a producer uses for its `partitioner` option; undefined means Java's default. */
export function strategyFor(p: Partitioner | undefined): PartitionStrategy {
  if (p === undefined) return murmur2Strategy
  const builtIn = builtIns.get(p)
  if (builtIn !== undefined) return builtIn
  if (typeof p !== 'function') throw new RangeError(`partitioner must be a function or one of murmur2, sticky, roundRobin, random; got ${String(p)}`)
  return (record, topic) => p(record, topic.context)
}

export { nextStickyPartition } from './sticky.js'
export { STICKY } from './types.js'
export type { PartitionStrategy, Partitioner, PartitionerContext, PartitionerFunction, PartitionerName, TopicPartitioning } from './types.js'
