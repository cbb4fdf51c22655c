import type { Admin } from '@tidelog/client'
import type { InternalTopologyBuilder } from '../internal/builder.js'
import type { TopicPlan } from './internal-topics.js'

/**
 * Partition counts of the topics sinks with a StreamPartitioner write to, so the partitioner can
 * run (a foreign-key join routes each response back to its subscriber's partition; TableJoined
 * and Produced.withStreamPartitioner partitioners). Internal topics come from the plan; others are
 * described once at start (a topic that does not exist yet is left to the producer).
 */
export async function sinkPartitionCounts(builder: InternalTopologyBuilder, admin: Admin, plan: readonly TopicPlan[]): Promise<Map<string, number>> {
  const counts = new Map(plan.map((t) => [t.name, t.partitions]))
  const external = new Set<string>()
  for (const n of builder.nodes.values()) {
    if (n.kind === 'sink' && n.partitioner && n.topic !== undefined && !builder.internalTopics.has(n.topic)) external.add(n.topic)
  }
  if (external.size > 0) {
    const existing = new Set(await admin.listTopics())
    const present = [...external].filter((t) => existing.has(t))
    if (present.length > 0) for (const d of await admin.describeTopics(present)) counts.set(d.name, d.partitions.length)
  }
  return counts
}
