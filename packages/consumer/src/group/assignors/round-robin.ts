import { compareMembers, emptyAssignment, type AssignmentInput, type Assignor } from './types.js'

/**
 * Java's RoundRobinAssignor ("roundrobin"): all partitions of all subscribed topics, by topic
 * name then partition, dealt in turn to the members in Java's member order, skipping members
 * not subscribed to the partition's topic.
 */
export const roundRobinAssignor: Assignor = {
  name: 'roundrobin',
  protocols: ['eager'],
  assign({ members, partitionCounts }: AssignmentInput) {
    const out = emptyAssignment(members)
    const sorted = members.slice().sort(compareMembers)
    const subscribed = sorted.map((m) => new Set(m.topics))
    const topics = [...new Set(members.flatMap((m) => m.topics))].sort()
    let next = 0
    for (const topic of topics) {
      const count = partitionCounts.get(topic)
      if (count === undefined || count <= 0) continue
      for (let p = 0; p < count; p++) {
        // Some member is subscribed to every topic in the list, so this ends within one turn.
        for (let tries = 0; tries < sorted.length; tries++) {
          const i = next
          next = (next + 1) % sorted.length
          if (subscribed[i]!.has(topic)) {
            out.get(sorted[i]!.memberId)!.push({ topic, partition: p })
            break
          }
        }
      }
    }
    return out
  },
}
