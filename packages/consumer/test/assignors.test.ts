import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import {
  compareMembers,
  cooperativeStickyAssignor,
  rangeAssignor,
  roundRobinAssignor,
  stickyAssign,
  withholdTransfers,
  type GroupMember,
  type TopicPartition,
} from '@tidelog/consumer'

const member = (memberId: string, topics: string[], extra: Partial<GroupMember> = {}): GroupMember => ({
  memberId,
  groupInstanceId: null,
  topics,
  userData: null,
  ownedPartitions: [],
  generationId: -1,
  rackId: null,
  ...extra,
})

const show = (m: Map<string, TopicPartition[]>) =>
  Object.fromEntries([...m].map(([id, list]) => [id, list.map((tp) => `${tp.topic}-${tp.partition}`).sort()]))

describe('member order', () => {
  it('puts static members first, by instance id, then dynamic ones by member id (Java MemberInfo)', () => {
    const list = [member('b', []), member('z', [], { groupInstanceId: 'i2' }), member('a', []), member('y', [], { groupInstanceId: 'i1' })]
    expect(list.sort(compareMembers).map((m) => m.memberId)).toEqual(['y', 'z', 'a', 'b'])
  })
})

describe('range', () => {
  it('gives each member a contiguous range per topic, the first ones one extra (Java RangeAssignor)', () => {
    const out = rangeAssignor.assign({
      members: [member('c2', ['t1', 't2']), member('c1', ['t1', 't2']), member('c3', ['t1'])],
      partitionCounts: new Map([
        ['t1', 7],
        ['t2', 3],
      ]),
    })
    expect(show(out)).toEqual({
      c1: ['t1-0', 't1-1', 't1-2', 't2-0', 't2-1'],
      c2: ['t1-3', 't1-4', 't2-2'],
      c3: ['t1-5', 't1-6'],
    })
  })

  it('skips topics without metadata and still answers every member', () => {
    const out = rangeAssignor.assign({ members: [member('a', ['missing'])], partitionCounts: new Map() })
    expect(show(out)).toEqual({ a: [] })
  })
})

describe('roundrobin', () => {
  it('deals sorted partitions in turn, skipping members not subscribed (Java RoundRobinAssignor)', () => {
    const out = roundRobinAssignor.assign({
      members: [member('c0', ['t0']), member('c1', ['t0', 't1']), member('c2', ['t0', 't1', 't2'])],
      partitionCounts: new Map([
        ['t0', 1],
        ['t1', 2],
        ['t2', 3],
      ]),
    })
    // Java's documented example for unequal subscriptions.
    expect(show(out)).toEqual({ c0: ['t0-0'], c1: ['t1-0'], c2: ['t1-1', 't2-0', 't2-1', 't2-2'] })
  })

  it('balances equal subscriptions to within one partition', () => {
    const out = roundRobinAssignor.assign({
      members: [member('a', ['x', 'y']), member('b', ['x', 'y'])],
      partitionCounts: new Map([
        ['x', 3],
        ['y', 3],
      ]),
    })
    expect(show(out)).toEqual({ a: ['x-0', 'x-2', 'y-1'], b: ['x-1', 'y-0', 'y-2'] })
  })
})

const tp = (topic: string, partition: number): TopicPartition => ({ topic, partition })

describe('sticky', () => {
  it('keeps owned partitions and moves only what balance needs when a member joins', () => {
    const owned = (ps: number[]) => ps.map((p) => tp('t', p))
    const out = stickyAssign({
      members: [
        member('a', ['t'], { ownedPartitions: owned([0, 1, 2]), generationId: 4 }),
        member('b', ['t'], { ownedPartitions: owned([3, 4, 5]), generationId: 4 }),
        member('c', ['t']),
      ],
      partitionCounts: new Map([['t', 6]]),
    })
    const a = out.get('a')!.map((x) => x.partition)
    const b = out.get('b')!.map((x) => x.partition)
    expect(a.length).toBe(2)
    expect(b.length).toBe(2)
    expect(a.every((p) => [0, 1, 2].includes(p))).toBe(true)
    expect(b.every((p) => [3, 4, 5].includes(p))).toBe(true)
    expect(out.get('c')!.length).toBe(2)
  })

  it('trusts the newest generation, and neither of two claims from the same one', () => {
    const out = stickyAssign({
      members: [
        member('a', ['t'], { ownedPartitions: [tp('t', 0), tp('t', 1)], generationId: 3 }),
        member('b', ['t'], { ownedPartitions: [tp('t', 0)], generationId: 5 }),
        member('c', ['t'], { ownedPartitions: [tp('t', 1)], generationId: 3 }),
      ],
      partitionCounts: new Map([['t', 3]]),
    })
    expect(out.get('b')!.map((x) => x.partition)).toEqual([0])
    // t-1 is claimed by a and c at generation 3: it goes wherever balance puts it.
    expect([...out.values()].flat().length).toBe(3)
  })
})

describe('cooperative-sticky', () => {
  it('withholds partitions that change owner (KIP-429), so a joiner first gets nothing owned', () => {
    const out = cooperativeStickyAssignor.assign({
      members: [
        member('a', ['t'], { ownedPartitions: [0, 1, 2].map((p) => tp('t', p)), generationId: 1 }),
        member('b', ['t'], { ownedPartitions: [3, 4, 5].map((p) => tp('t', p)), generationId: 1 }),
        member('c', ['t']),
      ],
      partitionCounts: new Map([['t', 6]]),
    })
    expect(out.get('a')!.length).toBe(2)
    expect(out.get('b')!.length).toBe(2)
    expect(out.get('c')).toEqual([])
  })

  it('writes the generation as an int32 in the subscription user data, as Java does', () => {
    const b = cooperativeStickyAssignor.subscriptionUserData!({ topics: ['t'], generationId: 7, ownedPartitions: [] })!
    expect(Buffer.from(b).toString('hex')).toBe('00000007')
  })

  const groupArb = fc
    .record({
      partitions: fc.array(fc.integer({ min: 1, max: 12 }), { minLength: 1, maxLength: 3 }),
      members: fc.array(fc.array(fc.boolean(), { minLength: 3, maxLength: 3 }), { minLength: 1, maxLength: 6 }),
    })
    .map(({ partitions, members }) => ({
      counts: new Map(partitions.map((n, i) => [`t${i}`, n])),
      subs: members.map((flags, i) => ({ id: `m${i}`, topics: partitions.map((_, t) => `t${t}`).filter((_, t) => flags[t] || t === 0) })),
    }))

  it('property: converges through two-phase rebalances without a partition ever having two owners', () => {
    fc.assert(
      fc.property(groupArb, fc.array(fc.integer({ min: 0, max: 5 }), { maxLength: 6 }), ({ counts, subs }, churn) => {
        // Simulate a group: each round the leader assigns from what members report owning; members
        // then revoke what they lost and take what they got. Churn removes or re-adds members.
        let active = subs.slice()
        const owned = new Map<string, TopicPartition[]>(subs.map((s) => [s.id, []]))
        let generation = 0
        const rounds = [...churn, -1, -1, -1]
        for (const change of rounds) {
          if (change >= 0 && active.length > 1 && change < active.length) {
            const gone = active[change]!
            active = active.filter((s) => s !== gone)
            owned.set(gone.id, [])
          } else if (change >= 0) {
            active = subs.slice()
          }
          for (let phase = 0; phase < 3; phase++) {
            generation++
            const members = active.map((s) => member(s.id, s.topics, { ownedPartitions: owned.get(s.id)!, generationId: generation - 1 }))
            const out = cooperativeStickyAssignor.assign({ members, partitionCounts: counts })
            // Owners revoke first, then new owners take over: no partition held twice at any time.
            const holders = new Map<string, string>()
            for (const s of active) {
              const mine = owned.get(s.id)!.filter((x) => out.get(s.id)!.some((y) => y.topic === x.topic && y.partition === x.partition))
              owned.set(s.id, mine)
            }
            for (const s of active) owned.set(s.id, out.get(s.id)!)
            for (const s of active) {
              for (const x of owned.get(s.id)!) {
                const key = `${x.topic}-${x.partition}`
                expect(holders.has(key)).toBe(false)
                holders.set(key, s.id)
              }
            }
          }
        }
        // After the final rounds every partition of a subscribed topic has an owner, balanced.
        const subscribed = new Set(active.flatMap((s) => s.topics))
        let total = 0
        for (const t of subscribed) total += counts.get(t) ?? 0
        const assignedCount = active.reduce((n, s) => n + owned.get(s.id)!.length, 0)
        expect(assignedCount).toBe(total)
        // Balanced as the subscriptions allow: no partition could go to a member eligible for it
        // with two fewer partitions than its owner.
        for (const s of active) {
          for (const x of owned.get(s.id)!) {
            for (const o of active) {
              if (o.topics.includes(x.topic)) expect(owned.get(o.id)!.length).toBeGreaterThanOrEqual(owned.get(s.id)!.length - 1)
            }
          }
        }
        if (active.every((s) => s.topics.join() === active[0]!.topics.join())) {
          const sizes = active.map((s) => owned.get(s.id)!.length)
          expect(Math.max(...sizes) - Math.min(...sizes)).toBeLessThanOrEqual(1)
        }
      }),
      { numRuns: 300 },
    )
  })

  it('withholdTransfers is idempotent and keeps what members already own', () => {
    const members = [member('a', ['t'], { ownedPartitions: [tp('t', 0)] }), member('b', ['t'])]
    const out = new Map([
      ['a', [] as TopicPartition[]],
      ['b', [tp('t', 0), tp('t', 1)]],
    ])
    expect(withholdTransfers(members, out)).toEqual([tp('t', 0)])
    expect(withholdTransfers(members, out)).toEqual([])
    expect(show(out)).toEqual({ a: [], b: ['t-1'] })
  })
})
