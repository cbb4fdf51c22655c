import fc from 'fast-check'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import type { GroupCoordinator } from '../../src/groups/coordinator.js'
import { type Group, GroupState } from '../../src/groups/group.js'
import { consumerProtocol, harness, joinRequest } from './helpers.js'

// Random interleavings of every group operation, from well-behaved to nonsensical, with time
// jumping about: the coordinator must never throw, must keep its bookkeeping consistent, and
// must answer every request it parked once it shuts down.

beforeEach(() => {
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date'] })
})
afterEach(() => {
  vi.useRealTimers()
})

const GROUPS = ['g', 'h']
const INSTANCES = [null, null, 'pod-1', 'pod-2']
const PROTOCOLS = [[consumerProtocol('range')], [consumerProtocol('roundrobin'), consumerProtocol('range')], [consumerProtocol('roundrobin')]]

// Mostly one of the first few ids handed out, sometimes a new member (6+) or a stranger.
const member = fc.oneof({ weight: 3, arbitrary: fc.nat(2) }, { weight: 2, arbitrary: fc.nat(8) })
// Mostly the group's current generation (null), sometimes any.
const generation = fc.oneof({ weight: 4, arbitrary: fc.constant(null) }, { weight: 1, arbitrary: fc.integer({ min: -1, max: 6 }) })

type Op =
  | { kind: 'join'; group: number; member: number; instance: number; protocols: number; session: number; rebalance: number; v4: boolean; v9: boolean }
  | { kind: 'sync'; group: number; member: number; instance: number; generation: number | null; assign: boolean }
  | { kind: 'heartbeat' | 'leave' | 'commit'; group: number; member: number; instance: number; generation: number | null }
  | { kind: 'delete' | 'deleteOffsets' | 'expire' | 'leaderSync' | 'rejoinAll' | 'heartbeatAll'; group: number }
  | { kind: 'wait'; ms: number }

const op: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('join' as const),
      group: fc.nat(GROUPS.length - 1),
      member: member,
      instance: fc.nat(INSTANCES.length - 1),
      protocols: fc.nat(PROTOCOLS.length - 1),
      session: fc.constantFrom(6000, 10_000),
      rebalance: fc.oneof({ weight: 6, arbitrary: fc.constantFrom(5000, 20_000) }, { weight: 1, arbitrary: fc.constantFrom(-1, 0) }),
      v4: fc.boolean(),
      v9: fc.boolean(),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({ kind: fc.constant('sync' as const), group: fc.nat(GROUPS.length - 1), member: member, instance: fc.nat(INSTANCES.length - 1), generation, assign: fc.boolean() }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constantFrom('heartbeat' as const, 'leave' as const, 'commit' as const),
      group: fc.nat(GROUPS.length - 1),
      member: member,
      instance: fc.nat(INSTANCES.length - 1),
      generation,
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constantFrom('delete' as const, 'deleteOffsets' as const, 'expire' as const), group: fc.nat(GROUPS.length - 1) }) },
  // What well-behaved clients do, so groups also get to Stable: everyone rejoins, the leader assigns, all heartbeat.
  { weight: 5, arbitrary: fc.record({ kind: fc.constantFrom('leaderSync' as const, 'rejoinAll' as const, 'heartbeatAll' as const), group: fc.nat(GROUPS.length - 1) }) },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('wait' as const),
      ms: fc.oneof({ weight: 5, arbitrary: fc.constantFrom(1, 10, 60, 200) }, { weight: 1, arbitrary: fc.constantFrom(3000, 11_000, 40_000, 400_000) }),
    }),
  },
)

function checkGroup(g: Group): void {
  const members = [...g.members.values()]
  if (g.leaderId !== null) expect(g.has(g.leaderId)).toBe(true)
  if (members.length > 0) expect(g.leaderId).not.toBeNull()
  expect(g.numAwaiting).toBe(members.filter((m) => m.awaitingJoin !== null).length)
  for (const [instance, id] of g.staticMembers) expect(g.get(id)?.groupInstanceId).toBe(instance)
  for (const m of members) if (m.groupInstanceId !== null) expect(g.staticMembers.get(m.groupInstanceId)).toBe(m.memberId)
  for (const id of g.pendingSyncMembers) expect(g.has(id)).toBe(true)
  if (g.is(GroupState.Stable) || g.is(GroupState.CompletingRebalance)) {
    expect(members.length).toBeGreaterThan(0)
    expect(g.protocolName).not.toBeNull()
  }
  if (g.is(GroupState.Empty)) expect(members.length).toBe(0)
  if (!g.is(GroupState.CompletingRebalance)) expect(members.filter((m) => m.awaitingSync !== null)).toEqual([])
  if (!g.is(GroupState.PreparingRebalance)) expect(g.numAwaiting).toBe(0)
}

async function run(coord: GroupCoordinator, ops: Op[]): Promise<Promise<unknown>[]> {
  // Member ids handed out, per group, so later operations can use real ones.
  const known = new Map<string, string[]>(GROUPS.map((g) => [g, []]))
  const idFor = (group: string, i: number) => known.get(group)![i] ?? `stranger-${i}`
  const gen = (group: string, g: number | null) => g ?? coord.group(group)?.generationId ?? -1
  const parked: Promise<unknown>[] = []
  for (const o of ops) {
    if (o.kind === 'wait') {
      await vi.advanceTimersByTimeAsync(o.ms)
    } else {
      const groupId = GROUPS[o.group]!
      switch (o.kind) {
        case 'join': {
          // An id handed out earlier, or none (a new member).
          const memberId = known.get(groupId)![o.member] ?? ''
          const p = coord.join(
            joinRequest({
              groupId,
              memberId,
              groupInstanceId: INSTANCES[o.instance]!,
              protocols: PROTOCOLS[o.protocols]!,
              sessionTimeoutMs: o.session,
              rebalanceTimeoutMs: o.rebalance,
              requireKnownMemberId: o.v4,
              supportSkippingAssignment: o.v9,
            }),
          )
          parked.push(p.then((r) => void (r.memberId !== '' && !known.get(groupId)!.includes(r.memberId) && known.get(groupId)!.push(r.memberId))))
          break
        }
        case 'sync': {
          const memberId = idFor(groupId, o.member)
          const assignments = o.assign ? known.get(groupId)!.map((id) => ({ memberId: id, assignment: Buffer.from(id) })) : []
          parked.push(coord.sync({ groupId, memberId, generationId: gen(groupId, o.generation), groupInstanceId: INSTANCES[o.instance]!, protocolType: null, protocolName: null, assignments }))
          break
        }
        case 'heartbeat':
          coord.heartbeat({ groupId, memberId: idFor(groupId, o.member), generationId: gen(groupId, o.generation), groupInstanceId: INSTANCES[o.instance]! })
          break
        case 'leave':
          coord.leave(groupId, [{ memberId: o.member < 6 ? idFor(groupId, o.member) : '', groupInstanceId: INSTANCES[o.instance]! }])
          break
        case 'commit':
          parked.push(
            coord.commitOffsets({
              groupId,
              memberId: o.member < 6 ? idFor(groupId, o.member) : '',
              generationId: gen(groupId, o.generation),
              groupInstanceId: INSTANCES[o.instance]!,
              retentionTimeMs: -1n,
              offsets: [{ topic: 't', partition: o.member, offset: BigInt(o.member), leaderEpoch: -1, metadata: null }],
            }),
          )
          break
        case 'delete':
          coord.deleteGroups([groupId])
          break
        case 'deleteOffsets':
          coord.deleteOffsets(groupId, [{ topic: 't', partition: 0 }])
          break
        case 'expire':
          coord.expireOffsets(Date.now() + 30 * 24 * 3600 * 1000)
          break
        case 'leaderSync': {
          const g = coord.group(groupId)
          if (g?.leaderId == null) break
          const leader = g.get(g.leaderId)!
          const assignments = [...g.members.keys()].map((id) => ({ memberId: id, assignment: Buffer.from(id) }))
          parked.push(coord.sync({ groupId, memberId: leader.memberId, generationId: g.generationId, groupInstanceId: leader.groupInstanceId, protocolType: null, protocolName: null, assignments }))
          break
        }
        case 'heartbeatAll': {
          const g = coord.group(groupId)
          for (const m of g?.members.values() ?? []) coord.heartbeat({ groupId, memberId: m.memberId, generationId: g!.generationId, groupInstanceId: m.groupInstanceId })
          break
        }
        case 'rejoinAll': {
          const g = coord.group(groupId)
          if (g === undefined) break
          for (const m of [...g.members.values()]) {
            if (m.awaitingJoin !== null) continue
            parked.push(coord.join(joinRequest({ groupId, memberId: m.memberId, groupInstanceId: m.groupInstanceId, protocols: [...m.protocols] })))
          }
          for (const id of [...g.pendingMembers.keys()]) parked.push(coord.join(joinRequest({ groupId, memberId: id })))
          break
        }
      }
    }
    // Let answered requests record the ids they handed out.
    for (let i = 0; i < 3; i++) await Promise.resolve()
    for (const g of GROUPS) {
      const group = coord.group(g)
      if (group !== undefined) checkGroup(group)
      coord.describeGroup(g)
    }
    coord.listGroups()
  }
  return parked
}

describe('GroupCoordinator under random operations', () => {
  it('never throws, stays consistent, and answers everything it parked by shutdown', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 80 }), async (ops) => {
        const h = harness({ initialRebalanceDelayMs: 50 })
        try {
          const parked = await run(h.coord, ops)
          h.coord.close()
          let settled = 0
          for (const p of parked) void p.then(() => settled++)
          await vi.advanceTimersByTimeAsync(0)
          expect(settled).toBe(parked.length)
        } finally {
          await h.close()
        }
      }),
      { numRuns: 300 },
    )
  })
})
