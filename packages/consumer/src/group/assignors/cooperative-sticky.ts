import { tpKey, type TopicPartition } from '../../types.js'
import { compareMembers, type AssignmentInput, type Assignor, type GroupMember } from './types.js'

/**
 * The sticky assignment: as balanced as the subscriptions allow (no partition could move to a
 * member eligible for it that has two or more fewer partitions than its owner), moving as few
 * previously owned partitions as that takes.
 *
 * Ownership claims come from the members' subscriptions; a claim from an older generation loses
 * to a newer one, and two claims from the same generation cancel out (the partition is treated
 * as unowned, as neither claim can be trusted).
 */
export function stickyAssign({ members, partitionCounts }: AssignmentInput): Map<string, TopicPartition[]> {
  const sorted = members.slice().sort(compareMembers)
  const index = new Map<string, number>()
  sorted.forEach((m, i) => index.set(m.memberId, i))
  const eligible = new Map<string, number[]>()
  const all: TopicPartition[] = []
  for (const topic of [...new Set(sorted.flatMap((m) => m.topics))].sort()) {
    const count = partitionCounts.get(topic)
    if (count === undefined || count <= 0) continue
    const who: number[] = []
    sorted.forEach((m, i) => {
      if (m.topics.includes(topic)) who.push(i)
    })
    for (let p = 0; p < count; p++) {
      all.push({ topic, partition: p })
      eligible.set(tpKey(topic, p), who)
    }
  }

  // Valid owners: the newest generation's claim, if it is the only one of that generation.
  const owner = new Map<string, { member: number; generation: number; contested: boolean }>()
  sorted.forEach((m, i) => {
    for (const tp of m.ownedPartitions) {
      const key = tpKey(tp.topic, tp.partition)
      if (!eligible.get(key)?.includes(i)) continue
      const prev = owner.get(key)
      if (prev === undefined || m.generationId > prev.generation) owner.set(key, { member: i, generation: m.generationId, contested: false })
      else if (m.generationId === prev.generation && prev.member !== i) prev.contested = true
    }
  })

  const assigned: TopicPartition[][] = sorted.map(() => [])
  const where = new Map<string, number>()
  const give = (tp: TopicPartition, i: number): void => {
    assigned[i]!.push(tp)
    where.set(tpKey(tp.topic, tp.partition), i)
  }
  const unassigned: TopicPartition[] = []
  for (const tp of all) {
    const o = owner.get(tpKey(tp.topic, tp.partition))
    if (o !== undefined && !o.contested) give(tp, o.member)
    else unassigned.push(tp)
  }
  // Partitions with the fewest candidates first, each to the least loaded candidate.
  unassigned.sort((a, b) => eligible.get(tpKey(a.topic, a.partition))!.length - eligible.get(tpKey(b.topic, b.partition))!.length)
  for (const tp of unassigned) {
    const who = eligible.get(tpKey(tp.topic, tp.partition))!
    let best = who[0]!
    for (const i of who) if (assigned[i]!.length < assigned[best]!.length) best = i
    give(tp, best)
  }

  // Balance: move from the most loaded member to an eligible one with at least two fewer, until
  // no such move exists. Each move lowers the sum of squared counts, so this ends.
  for (let moved = true; moved; ) {
    moved = false
    const order = assigned.map((_, i) => i).sort((a, b) => assigned[b]!.length - assigned[a]!.length || a - b)
    for (const from of order) {
      const list = assigned[from]!
      // Give away partitions this member did not own before first: they cost no stickiness.
      const candidates = list
        .map((tp, at) => ({ tp, at, kept: owner.get(tpKey(tp.topic, tp.partition))?.member === from }))
        .sort((a, b) => Number(a.kept) - Number(b.kept))
      for (const c of candidates) {
        const who = eligible.get(tpKey(c.tp.topic, c.tp.partition))!
        let to = -1
        for (const i of who) if (assigned[i]!.length <= list.length - 2 && (to < 0 || assigned[i]!.length < assigned[to]!.length)) to = i
        if (to < 0) continue
        list.splice(list.indexOf(c.tp), 1)
        give(c.tp, to)
        moved = true
        break
      }
      if (moved) break
    }
  }

  const out = new Map<string, TopicPartition[]>()
  sorted.forEach((m, i) => out.set(m.memberId, assigned[i]!.sort((a, b) => (a.topic < b.topic ? -1 : a.topic > b.topic ? 1 : a.partition - b.partition))))
  return out
}

/**
 * KIP-429's rule for cooperative rebalancing: a partition that changes owner is left out of its
 * new owner's assignment this time. Its current owner sees it missing from its own assignment,
 * revokes it and rejoins, and the next rebalance hands it over; so no partition ever has two
 * owners. Which partitions move is judged from the members' own ownership claims. Returns the
 * partitions withheld.
 */
export function withholdTransfers(members: readonly GroupMember[], assignment: Map<string, TopicPartition[]>): TopicPartition[] {
  const revoked = new Set<string>()
  const owned = new Map<string, Set<string>>()
  for (const m of members) {
    const mine = new Set(m.ownedPartitions.map((tp) => tpKey(tp.topic, tp.partition)))
    owned.set(m.memberId, mine)
    const now = new Set((assignment.get(m.memberId) ?? []).map((tp) => tpKey(tp.topic, tp.partition)))
    for (const key of mine) if (!now.has(key)) revoked.add(key)
  }
  const withheld: TopicPartition[] = []
  for (const [memberId, list] of assignment) {
    const mine = owned.get(memberId) ?? new Set<string>()
    const keep = list.filter((tp) => {
      const key = tpKey(tp.topic, tp.partition)
      if (mine.has(key) || !revoked.has(key)) return true
      withheld.push(tp)
      return false
    })
    assignment.set(memberId, keep)
  }
  return withheld
}

/**
 * Java's CooperativeStickyAssignor ("cooperative-sticky"): the sticky assignment, with
 * partitions that change owner withheld for one rebalance (KIP-429). Its subscription user data
 * is the member's generation as an int32, as Java writes it, for peers that read the generation
 * from there (subscription versions before 2 have no generation field).
 */
export const cooperativeStickyAssignor: Assignor = {
  name: 'cooperative-sticky',
  protocols: ['cooperative', 'eager'],
  subscriptionUserData({ generationId }) {
    const b = Buffer.allocUnsafe(4)
    b.writeInt32BE(generationId, 0)
    return b
  },
  assign(input: AssignmentInput) {
    const out = stickyAssign(input)
    withholdTransfers(input.members, out)
    return out
  },
}

/** Reads the generation from cooperative-sticky user data (4-byte int32), or -1. */
export function generationFromUserData(userData: Uint8Array | null): number {
  if (userData === null || userData.length < 4) return -1
  return Buffer.from(userData.buffer, userData.byteOffset, userData.byteLength).readInt32BE(0)
}
