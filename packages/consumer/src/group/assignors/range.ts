import { compareMembers, emptyAssignment, type AssignmentInput, type Assignor, type GroupMember } from './types.js'

/**
 * Java's RangeAssignor ("range"): topic by topic, the members subscribed to it (in Java's member
 * order) each get a contiguous range of partitions; the first (partitions % members) members get
 * one more. Members subscribed to the same topics get the same partition numbers of each.
 */
export const rangeAssignor: Assignor = {
  name: 'range',
  protocols: ['eager'],
  assign({ members, partitionCounts }: AssignmentInput) {
    const out = emptyAssignment(members)
    const byTopic = new Map<string, GroupMember[]>()
    for (const m of members) {
      for (const t of new Set(m.topics)) {
        let list = byTopic.get(t)
        if (list === undefined) byTopic.set(t, (list = []))
        list.push(m)
      }
    }
    for (const topic of [...byTopic.keys()].sort()) {
      const count = partitionCounts.get(topic)
      if (count === undefined || count <= 0) continue
      const consumers = byTopic.get(topic)!.sort(compareMembers)
      const per = Math.floor(count / consumers.length)
      const extra = count % consumers.length
      for (let i = 0; i < consumers.length; i++) {
        const start = per * i + Math.min(i, extra)
        const length = per + (i < extra ? 1 : 0)
        const list = out.get(consumers[i]!.memberId)!
        for (let p = start; p < start + length; p++) list.push({ topic, partition: p })
      }
    }
    return out
  },
}
