import type { Admin } from '@tidelog/client'
import { TopologyException } from '../errors.js'
import type { InternalTopologyBuilder } from '../internal/builder.js'

/**
 * Java's CopartitionedTopicsEnforcer, before internal topics are created: the source topics a
 * join reads together must have the same partition count (or the instance refuses to start
 * with TopologyException "Topics not co-partitioned"), and a repartition topic in such a group
 * gets that count, so partition p of both sides lands in the same task.
 */
export async function enforceCopartitioning(builder: InternalTopologyBuilder, admin: Admin): Promise<void> {
  if (builder.copartitionGroups.length === 0) return
  const external = new Set<string>()
  for (const g of builder.copartitionGroups) for (const t of g) if (!builder.internalTopics.has(t)) external.add(t)
  const counts = new Map<string, number>()
  if (external.size > 0) for (const d of await admin.describeTopics([...external])) counts.set(d.name, d.partitions.length)
  for (const group of builder.copartitionGroups) {
    const sizes = new Map<string, number>()
    for (const t of group) {
      const n = counts.get(t)
      if (n !== undefined) sizes.set(t, n)
    }
    if (sizes.size === 0) continue
    const distinct = new Set(sizes.values())
    if (distinct.size > 1) {
      const sorted = [...sizes].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([t, n]) => `${t}=${n}`).join(', ')
      throw new TopologyException(`Topics not co-partitioned: [{${sorted}}]`)
    }
    const n = [...distinct][0]!
    for (const t of group) {
      const it = builder.internalTopics.get(t)
      if (it !== undefined && it.numberOfPartitions === undefined) it.numberOfPartitions = n
    }
  }
}
