import { ErrorCodes as E } from '@tidelog/protocol'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { NEW_MEMBER_JOIN_TIMEOUT_MS, type GroupCoordinator, type JoinRequest } from '../../src/groups/coordinator.js'
import type { JoinResult } from '../../src/groups/group.js'
import { consumerProtocol, type Harness, harness, joinRequest, joinWithId } from './helpers.js'

let open: Harness[] = []
beforeEach(() => {
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date'] })
})
afterEach(async () => {
  for (const h of open.splice(0)) await h.close()
  vi.useRealTimers()
})

function make(...args: Parameters<typeof harness>): Harness {
  const h = harness(...args)
  open.push(h)
  return h
}

const assignment = (s: string) => Buffer.from(s)
// Node runs a 0 ms timer after 1 ms, and so do fake timers: a few ms let every re-armed 0 ms delay fire.
const settle = () => vi.advanceTimersByTimeAsync(5)
const sync = (coord: GroupCoordinator, memberId: string, generationId: number, assignments: { memberId: string; assignment: Uint8Array }[] = [], groupId = 'g') =>
  coord.sync({ groupId, memberId, generationId, groupInstanceId: null, protocolType: null, protocolName: null, assignments })
const beat = (coord: GroupCoordinator, memberId: string, generationId: number, groupInstanceId: string | null = null, groupId = 'g') =>
  coord.heartbeat({ groupId, memberId, generationId, groupInstanceId })

/** Forms a Stable group of `n` dynamic members; the leader assigns "a<i>" to member i. */
async function stableGroup(coord: GroupCoordinator, n: number, groupId = 'g', over: Partial<JoinRequest> = {}) {
  const joins = []
  for (let i = 0; i < n; i++) joins.push(await joinWithId(coord, { groupId, clientId: `c${i}`, ...over }))
  await settle()
  const results = await Promise.all(joins.map((j) => j.joined))
  const leader = results.find((r) => r.leader === r.memberId)!
  const generation = leader.generationId
  const assignments = results.map((r, i) => ({ memberId: r.memberId, assignment: assignment(`a${i}`) }))
  const syncs = results.map((r) => sync(coord, r.memberId, generation, r.memberId === leader.memberId ? assignments : [], groupId))
  const synced = await Promise.all(syncs)
  return { ids: results.map((r) => r.memberId), leader: leader.memberId, generation, results, synced }
}

describe('JoinGroup', () => {
  it('hands out a member id first (KIP-394), then answers the rejoin once the group forms', async () => {
    const { coord } = make({ initialRebalanceDelayMs: 100 })
    const first = await coord.join(joinRequest({ clientId: 'app' }))
    expect(first).toMatchObject({ errorCode: E.MEMBER_ID_REQUIRED, generationId: -1, leader: '' })
    expect(first.memberId).toMatch(/^app-[0-9a-f-]{36}$/)
    let done: JoinResult | undefined
    void coord.join(joinRequest({ memberId: first.memberId })).then((r) => (done = r))
    await vi.advanceTimersByTimeAsync(99)
    expect(done).toBeUndefined()
    expect(coord.group('g')!.state).toBe('PreparingRebalance')
    await vi.advanceTimersByTimeAsync(1)
    expect(done).toMatchObject({ errorCode: E.NONE, generationId: 1, protocolType: 'consumer', protocolName: 'range', leader: first.memberId, memberId: first.memberId })
    expect(done!.members.map((m) => m.memberId)).toEqual([first.memberId])
    expect(coord.group('g')!.state).toBe('CompletingRebalance')
  })

  it('extends the initial delay while members keep arriving; the leader alone gets everyone’s metadata', async () => {
    const { coord } = make({ initialRebalanceDelayMs: 100 })
    const a = await joinWithId(coord, { clientId: 'a', protocols: [consumerProtocol('roundrobin'), consumerProtocol('range')] })
    await vi.advanceTimersByTimeAsync(80)
    const b = await joinWithId(coord, { clientId: 'b', protocols: [consumerProtocol('range'), consumerProtocol('roundrobin')] })
    await vi.advanceTimersByTimeAsync(80)
    const c = await joinWithId(coord, { clientId: 'c', protocols: [consumerProtocol('range')] })
    let done = false
    const all = Promise.all([a.joined, b.joined, c.joined]).then((r) => ((done = true), r))
    // Delays end at 100 (b came: extend), 200 (c came: extend) and 300 (nobody new: complete).
    await vi.advanceTimersByTimeAsync(299 - 160)
    expect(done).toBe(false)
    await vi.advanceTimersByTimeAsync(1)
    const [ra, rb, rc] = await all
    for (const r of [ra, rb, rc]) expect(r).toMatchObject({ errorCode: E.NONE, generationId: 1, protocolName: 'range', leader: a.memberId })
    expect(ra!.members.map((m) => m.memberId).sort()).toEqual([a.memberId, b.memberId, c.memberId].sort())
    expect(Buffer.from(ra!.members.find((m) => m.memberId === c.memberId)!.metadata)).toEqual(Buffer.from(consumerProtocol('range').metadata))
    expect(rb!.members).toEqual([])
    expect(rc!.members).toEqual([])
  })

  it('refuses what Kafka refuses', async () => {
    const { coord } = make({ minSessionTimeoutMs: 6000, maxSessionTimeoutMs: 60_000 })
    expect((await coord.join(joinRequest({ groupId: '' }))).errorCode).toBe(E.INVALID_GROUP_ID)
    expect((await coord.join(joinRequest({ sessionTimeoutMs: 5999 }))).errorCode).toBe(E.INVALID_SESSION_TIMEOUT)
    expect((await coord.join(joinRequest({ sessionTimeoutMs: 60_001 }))).errorCode).toBe(E.INVALID_SESSION_TIMEOUT)
    // A member id for a group that does not exist.
    expect(await coord.join(joinRequest({ groupId: 'nope', memberId: 'ghost' }))).toMatchObject({ errorCode: E.UNKNOWN_MEMBER_ID, memberId: 'ghost' })
    // The first member needs a protocol type and protocols.
    expect((await coord.join(joinRequest({ groupId: 'e', protocolType: '' }))).errorCode).toBe(E.INCONSISTENT_GROUP_PROTOCOL)
    expect((await coord.join(joinRequest({ groupId: 'e', protocols: [] }))).errorCode).toBe(E.INCONSISTENT_GROUP_PROTOCOL)
    await stableGroup(coord, 1)
    // Later members need the same type and a protocol in common.
    expect((await coord.join(joinRequest({ protocolType: 'connect' }))).errorCode).toBe(E.INCONSISTENT_GROUP_PROTOCOL)
    expect((await coord.join(joinRequest({ protocols: [consumerProtocol('roundrobin')] }))).errorCode).toBe(E.INCONSISTENT_GROUP_PROTOCOL)
    expect((await coord.join(joinRequest({ memberId: 'not-a-member' }))).errorCode).toBe(E.UNKNOWN_MEMBER_ID)
  })

  it('before v4, adds a new member at once', async () => {
    const { coord } = make()
    const r = coord.join(joinRequest({ requireKnownMemberId: false, clientId: 'old' }))
    await settle()
    expect(await r).toMatchObject({ errorCode: E.NONE, generationId: 1 })
    expect((await r).memberId).toMatch(/^old-/)
  })

  it('answers a follower rejoining a Stable group with unchanged metadata without a rebalance, and rebalances for a leader', async () => {
    const { coord } = make()
    const g = await stableGroup(coord, 2)
    const follower = g.ids.find((id) => id !== g.leader)!
    const again = await coord.join(joinRequest({ memberId: follower }))
    expect(again).toMatchObject({ errorCode: E.NONE, generationId: g.generation, leader: g.leader, members: [] })
    expect(coord.group('g')!.state).toBe('Stable')
    // The leader's JoinGroup is how it asks for a rebalance.
    const leaderJoin = coord.join(joinRequest({ memberId: g.leader }))
    expect(coord.group('g')!.state).toBe('PreparingRebalance')
    expect(beat(coord, follower, g.generation)).toBe(E.REBALANCE_IN_PROGRESS)
    const followerJoin = coord.join(joinRequest({ memberId: follower }))
    const [l, f] = await Promise.all([leaderJoin, followerJoin])
    expect(l).toMatchObject({ errorCode: E.NONE, generationId: g.generation + 1 })
    expect(l.members).toHaveLength(2)
    expect(f).toMatchObject({ errorCode: E.NONE, generationId: g.generation + 1, members: [] })
  })

  it('repeats the answer to a member that rejoins with the same metadata while the group completes the rebalance', async () => {
    const { coord } = make()
    const a = await joinWithId(coord)
    await settle()
    const first = await a.joined
    const again = await coord.join(joinRequest({ memberId: a.memberId }))
    expect(again).toEqual(first)
    // Changed metadata starts another rebalance.
    const changed = coord.join(joinRequest({ memberId: a.memberId, protocols: [consumerProtocol('range', ['other'])] }))
    await settle()
    expect((await changed).generationId).toBe(first.generationId + 1)
  })

  it('drops members that do not rejoin within the rebalance timeout', async () => {
    const { coord } = make()
    const timeouts = { sessionTimeoutMs: 30_000, rebalanceTimeoutMs: 5000 }
    const g = await stableGroup(coord, 2, 'g', timeouts)
    const [x, y] = g.ids
    // A new member triggers a rebalance; only x rejoins.
    const n = await joinWithId(coord, { clientId: 'n', ...timeouts })
    const xJoin = coord.join(joinRequest({ memberId: x, ...timeouts }))
    await vi.advanceTimersByTimeAsync(4999)
    expect(coord.group('g')!.state).toBe('PreparingRebalance')
    await vi.advanceTimersByTimeAsync(1)
    const [rx, rn] = await Promise.all([xJoin, n.joined])
    expect(rx.generationId).toBe(g.generation + 1)
    expect(rn.generationId).toBe(g.generation + 1)
    expect(coord.group('g')!.has(y!)).toBe(false)
    expect(beat(coord, y!, g.generation)).toBe(E.UNKNOWN_MEMBER_ID)
  })

  it('drops a member id that was handed out but never used after the session timeout', async () => {
    const { coord } = make()
    const g = await stableGroup(coord, 1)
    const first = await coord.join(joinRequest({ clientId: 'flaky', sessionTimeoutMs: 8000 }))
    expect(first.errorCode).toBe(E.MEMBER_ID_REQUIRED)
    // The pending id does not trigger a rebalance by itself, but blocks a running one from completing.
    const leaderJoin = coord.join(joinRequest({ memberId: g.leader }))
    let done = false
    void leaderJoin.then(() => (done = true))
    await vi.advanceTimersByTimeAsync(7999)
    expect(done).toBe(false)
    await vi.advanceTimersByTimeAsync(1)
    expect(done).toBe(true)
    expect((await coord.join(joinRequest({ memberId: first.memberId }))).errorCode).toBe(E.UNKNOWN_MEMBER_ID)
  })
})

describe('SyncGroup', () => {
  it('holds followers until the leader syncs, then hands out each member’s assignment', async () => {
    const { coord } = make()
    const a = await joinWithId(coord, { clientId: 'a' })
    const b = await joinWithId(coord, { clientId: 'b' })
    const c = await joinWithId(coord, { clientId: 'c' })
    await settle()
    const [ra, rb, rc] = await Promise.all([a.joined, b.joined, c.joined])
    const gen = ra!.generationId
    let followerDone = false
    const fb = sync(coord, rb!.memberId, gen).then((r) => ((followerDone = true), r))
    await vi.advanceTimersByTimeAsync(1000)
    expect(followerDone).toBe(false)
    // The leader leaves c out: c gets an empty assignment.
    const leader = await sync(coord, ra!.memberId, gen, [
      { memberId: ra!.memberId, assignment: assignment('for-a') },
      { memberId: rb!.memberId, assignment: assignment('for-b') },
      { memberId: 'stranger', assignment: assignment('ignored') },
    ])
    expect(leader).toMatchObject({ errorCode: E.NONE, protocolType: 'consumer', protocolName: 'range' })
    expect(Buffer.from(leader.assignment).toString()).toBe('for-a')
    expect(Buffer.from((await fb).assignment).toString()).toBe('for-b')
    expect(coord.group('g')!.state).toBe('Stable')
    // A member syncing after the group is Stable gets its assignment straight away.
    const late = await sync(coord, rc!.memberId, gen)
    expect(late.errorCode).toBe(E.NONE)
    expect(late.assignment).toHaveLength(0)
  })

  it('checks the member, the generation and (v5) the protocol', async () => {
    const { coord } = make()
    const g = await stableGroup(coord, 1)
    expect((await sync(coord, 'ghost', g.generation)).errorCode).toBe(E.UNKNOWN_MEMBER_ID)
    expect((await sync(coord, g.leader, g.generation, [], 'unknown-group')).errorCode).toBe(E.UNKNOWN_MEMBER_ID)
    expect((await sync(coord, g.leader, g.generation + 1)).errorCode).toBe(E.ILLEGAL_GENERATION)
    const base = { groupId: 'g', memberId: g.leader, generationId: g.generation, groupInstanceId: null, assignments: [] }
    expect((await coord.sync({ ...base, protocolType: 'connect', protocolName: 'range' })).errorCode).toBe(E.INCONSISTENT_GROUP_PROTOCOL)
    expect((await coord.sync({ ...base, protocolType: 'consumer', protocolName: 'roundrobin' })).errorCode).toBe(E.INCONSISTENT_GROUP_PROTOCOL)
    expect((await coord.sync({ ...base, protocolType: 'consumer', protocolName: 'range' })).errorCode).toBe(E.NONE)
    expect((await coord.sync({ ...base, groupId: '', protocolType: null, protocolName: null })).errorCode).toBe(E.INVALID_GROUP_ID)
  })

  it('answers REBALANCE_IN_PROGRESS during a rebalance, and to members waiting when one starts', async () => {
    const { coord } = make()
    const a = await joinWithId(coord, { clientId: 'a' })
    const b = await joinWithId(coord, { clientId: 'b' })
    await settle()
    const [ra, rb] = await Promise.all([a.joined, b.joined])
    const follower = ra!.leader === ra!.memberId ? rb! : ra!
    const waiting = sync(coord, follower.memberId, follower.generationId)
    // Another member arrives before the leader synced.
    const c = await joinWithId(coord, { clientId: 'c' })
    expect((await waiting).errorCode).toBe(E.REBALANCE_IN_PROGRESS)
    expect((await sync(coord, follower.memberId, follower.generationId)).errorCode).toBe(E.REBALANCE_IN_PROGRESS)
    void c
  })

  it('removes members that do not sync within the rebalance timeout, and rebalances', async () => {
    const { coord } = make()
    const a = await joinWithId(coord, { clientId: 'a', rebalanceTimeoutMs: 10_000 })
    const b = await joinWithId(coord, { clientId: 'b', rebalanceTimeoutMs: 10_000 })
    await settle()
    const [ra, rb] = await Promise.all([a.joined, b.joined])
    const leader = ra!.leader === ra!.memberId ? ra! : rb!
    const silent = leader === ra ? rb! : ra!
    await sync(coord, leader.memberId, leader.generationId, [])
    expect(coord.group('g')!.state).toBe('Stable')
    // The follower keeps heartbeating but never sends SyncGroup.
    await vi.advanceTimersByTimeAsync(5000)
    expect(beat(coord, silent.memberId, silent.generationId)).toBe(E.NONE)
    expect(beat(coord, leader.memberId, leader.generationId)).toBe(E.NONE)
    await vi.advanceTimersByTimeAsync(5000)
    expect(coord.group('g')!.has(silent.memberId)).toBe(false)
    expect(coord.group('g')!.state).toBe('PreparingRebalance')
    expect(beat(coord, leader.memberId, leader.generationId)).toBe(E.REBALANCE_IN_PROGRESS)
  })
})

describe('Heartbeat and sessions', () => {
  it('expires a member that stops heartbeating, and the others rebalance without it', async () => {
    const { coord } = make()
    const g = await stableGroup(coord, 2)
    const [x, y] = g.ids as [string, string]
    for (let t = 0; t < 3; t++) {
      await vi.advanceTimersByTimeAsync(3000)
      expect(beat(coord, x, g.generation)).toBe(E.NONE)
    }
    expect(coord.group('g')!.has(y)).toBe(true)
    // y last showed signs of life at the sync: its 10 s session ends.
    await vi.advanceTimersByTimeAsync(1000)
    expect(coord.group('g')!.has(y)).toBe(false)
    expect(beat(coord, y, g.generation)).toBe(E.UNKNOWN_MEMBER_ID)
    expect(beat(coord, x, g.generation)).toBe(E.REBALANCE_IN_PROGRESS)
    const rejoin = await coord.join(joinRequest({ memberId: x }))
    expect(rejoin).toMatchObject({ errorCode: E.NONE, generationId: g.generation + 1, leader: x })
    expect(rejoin.members).toHaveLength(1)
  })

  it('keeps members waiting in a rebalance alive, but not new ones for ever', async () => {
    const { coord } = make()
    const g = await stableGroup(coord, 1, 'g', { rebalanceTimeoutMs: 2 * NEW_MEMBER_JOIN_TIMEOUT_MS })
    // A newcomer starts a rebalance the leader takes its time to join (it keeps heartbeating).
    const newcomer = coord.join(joinRequest({ clientId: 'new', requireKnownMemberId: false }))
    let answer: JoinResult | undefined
    void newcomer.then((r) => (answer = r))
    for (let t = 0; t < NEW_MEMBER_JOIN_TIMEOUT_MS - 3000; t += 3000) {
      await vi.advanceTimersByTimeAsync(3000)
      expect(beat(coord, g.leader, g.generation)).toBe(E.REBALANCE_IN_PROGRESS)
    }
    expect(answer).toBeUndefined()
    expect(coord.group('g')!.size).toBe(2)
    // The newcomer, never answered, is dropped after the new-member timeout; its JoinGroup is answered.
    await vi.advanceTimersByTimeAsync(3000)
    expect(answer).toMatchObject({ errorCode: E.UNKNOWN_MEMBER_ID })
    expect(coord.group('g')!.size).toBe(1)
    const leaderJoin = await coord.join(joinRequest({ memberId: g.leader }))
    expect(leaderJoin).toMatchObject({ errorCode: E.NONE, generationId: g.generation + 1 })
  })

  it('answers ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID and INVALID_GROUP_ID', async () => {
    const { coord } = make()
    const g = await stableGroup(coord, 1)
    expect(beat(coord, g.leader, g.generation - 1)).toBe(E.ILLEGAL_GENERATION)
    expect(beat(coord, 'x', g.generation)).toBe(E.UNKNOWN_MEMBER_ID)
    expect(beat(coord, g.leader, g.generation, null, 'other')).toBe(E.UNKNOWN_MEMBER_ID)
    expect(beat(coord, g.leader, g.generation, null, '')).toBe(E.INVALID_GROUP_ID)
  })
})

describe('LeaveGroup', () => {
  it('rebalances the rest, and leaves an Empty group when the last member goes', async () => {
    const { coord, store } = make()
    const g = await stableGroup(coord, 2)
    const [x, y] = g.ids as [string, string]
    expect(coord.leave('g', [{ memberId: y, groupInstanceId: null }])).toEqual({ errorCode: E.NONE, members: [{ memberId: y, groupInstanceId: null, errorCode: E.NONE }] })
    expect(coord.group('g')!.state).toBe('PreparingRebalance')
    const r = await coord.join(joinRequest({ memberId: x }))
    expect(r.generationId).toBe(g.generation + 1)
    expect(coord.leave('g', [{ memberId: x, groupInstanceId: null }]).members[0]!.errorCode).toBe(E.NONE)
    const group = coord.group('g')!
    expect(group.state).toBe('Empty')
    expect(group.generationId).toBe(g.generation + 2)
    expect(store.storedGroups().get('g')).toMatchObject({ generationId: g.generation + 2, members: [] })
  })

  it('answers per member, and lets a static member be removed by instance id', async () => {
    const { coord } = make()
    const s = coord.join(joinRequest({ groupInstanceId: 'pod-1', clientId: 's' }))
    await settle()
    const rs = await s
    expect(rs.errorCode).toBe(E.NONE)
    const result = coord.leave('g', [
      { memberId: 'ghost', groupInstanceId: null },
      { memberId: 'wrong-id', groupInstanceId: 'pod-1' },
      { memberId: '', groupInstanceId: 'pod-unknown' },
      { memberId: '', groupInstanceId: 'pod-1' },
    ])
    expect(result.members.map((m) => m.errorCode)).toEqual([E.UNKNOWN_MEMBER_ID, E.FENCED_INSTANCE_ID, E.UNKNOWN_MEMBER_ID, E.NONE])
    expect(coord.group('g')!.size).toBe(0)
    expect(coord.leave('unknown', [{ memberId: 'a', groupInstanceId: null }])).toEqual({
      errorCode: E.NONE,
      members: [{ memberId: 'a', groupInstanceId: null, errorCode: E.UNKNOWN_MEMBER_ID }],
    })
    expect(coord.leave('', []).errorCode).toBe(E.INVALID_GROUP_ID)
  })

  it('answers a leaving member’s waiting JoinGroup, and lets a pending member id go', async () => {
    const { coord } = make()
    const g = await stableGroup(coord, 2)
    const [x, y] = g.ids as [string, string]
    const xJoin = coord.join(joinRequest({ memberId: x }))
    coord.leave('g', [{ memberId: x, groupInstanceId: null }])
    expect((await xJoin).errorCode).toBe(E.UNKNOWN_MEMBER_ID)
    const pending = await coord.join(joinRequest({ clientId: 'p' }))
    const yJoin = coord.join(joinRequest({ memberId: y }))
    coord.leave('g', [{ memberId: pending.memberId, groupInstanceId: null }])
    expect((await yJoin).members.map((m) => m.memberId)).toEqual([y])
  })
})

describe('static membership (KIP-345)', () => {
  async function staticGroup(coord: GroupCoordinator) {
    const a = coord.join(joinRequest({ groupInstanceId: 'pod-a', clientId: 'a' }))
    const b = coord.join(joinRequest({ groupInstanceId: 'pod-b', clientId: 'b' }))
    await settle()
    const [ra, rb] = await Promise.all([a, b])
    const leader = ra.leader === ra.memberId ? ra : rb
    await sync(coord, leader.memberId, leader.generationId, [
      { memberId: ra.memberId, assignment: assignment('A') },
      { memberId: rb.memberId, assignment: assignment('B') },
    ])
    await sync(coord, (leader === ra ? rb : ra).memberId, leader.generationId)
    return { ra, rb, generation: ra.generationId }
  }

  it('lets a restarted static member take its place back without a rebalance, fencing the old id', async () => {
    const { coord } = make()
    const { rb, generation } = await staticGroup(coord)
    expect(rb.memberId).toMatch(/^pod-b-/)
    const back = await coord.join(joinRequest({ groupInstanceId: 'pod-b', clientId: 'b' }))
    expect(back).toMatchObject({ errorCode: E.NONE, generationId: generation, members: [] })
    expect(back.memberId).not.toBe(rb.memberId)
    const group = coord.group('g')!
    expect(group.state).toBe('Stable')
    expect(group.generationId).toBe(generation)
    // Same assignment under the new id, no rebalance for anyone.
    const s = await sync(coord, back.memberId, generation)
    expect(Buffer.from(s.assignment).toString()).toBe('B')
    expect(beat(coord, back.memberId, generation, 'pod-b')).toBe(E.NONE)
    // The previous incarnation is told to stop.
    expect(beat(coord, rb.memberId, generation, 'pod-b')).toBe(E.FENCED_INSTANCE_ID)
    expect(beat(coord, rb.memberId, generation)).toBe(E.UNKNOWN_MEMBER_ID)
    expect((await coord.join(joinRequest({ memberId: rb.memberId, groupInstanceId: 'pod-b' }))).errorCode).toBe(E.FENCED_INSTANCE_ID)
  })

  it('tells a restarted static leader it leads but must skip the assignment (v9, KIP-814); older versions name the old leader', async () => {
    const { coord } = make()
    const { ra, rb } = await staticGroup(coord)
    const leader = ra.leader === ra.memberId ? { r: ra, id: 'pod-a' } : { r: rb, id: 'pod-b' }
    const v9 = await coord.join(joinRequest({ groupInstanceId: leader.id, supportSkippingAssignment: true }))
    expect(v9).toMatchObject({ errorCode: E.NONE, skipAssignment: true, leader: v9.memberId })
    expect(v9.members).toHaveLength(2)
    const v8 = await coord.join(joinRequest({ groupInstanceId: leader.id }))
    expect(v8).toMatchObject({ errorCode: E.NONE, skipAssignment: false, leader: v9.memberId, members: [] })
    expect(v8.memberId).not.toBe(v9.memberId)
  })

  it('rebalances when a rejoining static member would change the group’s protocol', async () => {
    const { coord } = make()
    const a = coord.join(joinRequest({ groupInstanceId: 'pod-a', protocols: [consumerProtocol('range'), consumerProtocol('roundrobin')] }))
    await settle()
    const ra = await a
    expect(ra.protocolName).toBe('range')
    await sync(coord, ra.memberId, ra.generationId, [])
    // Now preferring roundrobin, the member would change the group's protocol: a rebalance, not a quiet rejoin.
    const back = await coord.join(joinRequest({ groupInstanceId: 'pod-a', protocols: [consumerProtocol('roundrobin'), consumerProtocol('range')] }))
    expect(back).toMatchObject({ errorCode: E.NONE, protocolName: 'roundrobin', generationId: ra.generationId + 1, leader: back.memberId })
    expect(coord.group('g')!.state).toBe('CompletingRebalance')
  })

  it('keeps a static member that has not rejoined when a rebalance completes', async () => {
    const { coord } = make()
    const { ra, rb, generation } = await staticGroup(coord)
    const join = coord.join(joinRequest({ memberId: ra.memberId, groupInstanceId: 'pod-a' }))
    // pod-b stays alive (heartbeats) but does not rejoin within the 30 s rebalance timeout.
    for (let t = 0; t < 30_000; t += 3000) {
      await vi.advanceTimersByTimeAsync(3000)
      beat(coord, rb.memberId, generation, 'pod-b')
    }
    const r = await join
    expect(r.generationId).toBe(generation + 1)
    // pod-b is still a member (its session, not the rebalance, decides), with its metadata given to the leader.
    expect(coord.group('g')!.has(rb.memberId)).toBe(true)
    if (r.leader === r.memberId) expect(r.members.map((m) => m.groupInstanceId).sort()).toEqual(['pod-a', 'pod-b'])
  })
})

describe('offsets', () => {
  const commit = (coord: GroupCoordinator, over: Partial<Parameters<GroupCoordinator['commitOffsets']>[0]> = {}) =>
    coord.commitOffsets({
      groupId: 'g',
      memberId: '',
      groupInstanceId: null,
      generationId: -1,
      retentionTimeMs: -1n,
      offsets: [{ topic: 't', partition: 0, offset: 42n, leaderEpoch: 3, metadata: 'meta' }],
      ...over,
    })

  it('accepts commits from outside group management only while the group has no members', async () => {
    const { coord } = make()
    expect(await commit(coord)).toEqual([E.NONE])
    expect(coord.group('g')!.state).toBe('Empty')
    expect(coord.fetchOffsets('g', [{ name: 't', partitions: [0, 1] }])).toEqual([
      {
        name: 't',
        partitions: [
          { partition: 0, offset: 42n, leaderEpoch: 3, metadata: 'meta', errorCode: E.NONE },
          { partition: 1, offset: -1n, leaderEpoch: -1, metadata: '', errorCode: E.NONE },
        ],
      },
    ])
    // An unknown group with a generation is a stale member.
    expect(await commit(coord, { groupId: 'other', generationId: 3, memberId: 'm' })).toEqual([E.ILLEGAL_GENERATION])
    const g = await stableGroup(coord, 1)
    expect(await commit(coord)).toEqual([E.UNKNOWN_MEMBER_ID])
    expect(await commit(coord, { memberId: g.leader, generationId: g.generation + 1 })).toEqual([E.ILLEGAL_GENERATION])
    expect(await commit(coord, { memberId: 'ghost', generationId: g.generation })).toEqual([E.UNKNOWN_MEMBER_ID])
    expect(await commit(coord, { memberId: g.leader, generationId: g.generation, offsets: [{ topic: 't', partition: 0, offset: 50n, leaderEpoch: -1, metadata: null }] })).toEqual([E.NONE])
    // A null metadata is stored as "", as Kafka stores it.
    expect(coord.fetchOffsets('g', null)).toEqual([{ name: 't', partitions: [{ partition: 0, offset: 50n, leaderEpoch: -1, metadata: '', errorCode: E.NONE }] }])
  })

  it('answers REBALANCE_IN_PROGRESS while the group completes a rebalance, but accepts commits while it prepares one', async () => {
    const { coord } = make()
    const g = await stableGroup(coord, 2)
    const [x, y] = g.ids as [string, string]
    const xJoin = coord.join(joinRequest({ memberId: x }))
    expect(coord.group('g')!.state).toBe('PreparingRebalance')
    expect(await commit(coord, { memberId: y, generationId: g.generation })).toEqual([E.NONE])
    const yJoin = coord.join(joinRequest({ memberId: y }))
    const [rx] = await Promise.all([xJoin, yJoin])
    expect(coord.group('g')!.state).toBe('CompletingRebalance')
    expect(await commit(coord, { memberId: y, generationId: rx.generationId })).toEqual([E.REBALANCE_IN_PROGRESS])
  })

  it('refuses metadata longer than offset.metadata.max.bytes, per partition', async () => {
    const { coord } = make({ offsetMetadataMaxBytes: 10 })
    const codes = await commit(coord, {
      offsets: [
        { topic: 't', partition: 0, offset: 1n, leaderEpoch: -1, metadata: 'x'.repeat(11) },
        { topic: 't', partition: 1, offset: 1n, leaderEpoch: -1, metadata: 'x'.repeat(10) },
      ],
    })
    expect(codes).toEqual([E.OFFSET_METADATA_TOO_LARGE, E.NONE])
  })

  it('deletes offsets except those of topics a member subscribes to (KIP-496)', async () => {
    const { coord } = make()
    expect(coord.deleteOffsets('g', [{ topic: 't', partition: 0 }])).toEqual({ errorCode: E.GROUP_ID_NOT_FOUND, errors: [] })
    expect(coord.deleteOffsets('', []).errorCode).toBe(E.INVALID_GROUP_ID)
    const g = await stableGroup(coord, 1) // subscribed to "t"
    await commit(coord, {
      memberId: g.leader,
      generationId: g.generation,
      offsets: [
        { topic: 't', partition: 0, offset: 1n, leaderEpoch: -1, metadata: null },
        { topic: 'u', partition: 0, offset: 2n, leaderEpoch: -1, metadata: null },
      ],
    })
    expect(
      coord.deleteOffsets('g', [
        { topic: 't', partition: 0 },
        { topic: 'u', partition: 0 },
      ]),
    ).toEqual({ errorCode: E.NONE, errors: [E.GROUP_SUBSCRIBED_TO_TOPIC, E.NONE] })
    expect(coord.fetchOffsets('g', null).map((t) => t.name)).toEqual(['t'])
    // Once empty, anything may go; an empty group left without offsets is forgotten.
    coord.leave('g', [{ memberId: g.leader, groupInstanceId: null }])
    expect(coord.deleteOffsets('g', [{ topic: 't', partition: 0 }])).toEqual({ errorCode: E.NONE, errors: [E.NONE] })
    expect(coord.group('g')).toBeUndefined()
    expect(coord.describeGroup('g').state).toBe('Dead')
  })

  it('refuses OffsetDelete on a non-consumer group with members', async () => {
    const { coord } = make()
    const j = coord.join(joinRequest({ protocolType: 'connect', protocols: [{ name: 'default', metadata: Buffer.from('x') }], requireKnownMemberId: false }))
    await settle()
    await j
    expect(coord.deleteOffsets('g', [{ topic: 't', partition: 0 }]).errorCode).toBe(E.NON_EMPTY_GROUP)
  })

  it('expires offsets of groups empty for longer than the retention, then forgets the group', async () => {
    const { coord } = make({ offsetsRetentionMs: 60_000, offsetsRetentionCheckIntervalMs: 10_000 })
    await commit(coord, { groupId: 'simple' })
    const g = await stableGroup(coord, 1, 'consumers')
    await commit(coord, { groupId: 'consumers', memberId: g.leader, generationId: g.generation })
    await vi.advanceTimersByTimeAsync(50_000)
    coord.leave('consumers', [{ memberId: g.leader, groupInstanceId: null }])
    // 60 s after its commit the simple group's offset expires; the consumer group has only been empty 10 s.
    await vi.advanceTimersByTimeAsync(10_000)
    expect(coord.group('simple')).toBeUndefined()
    expect(coord.fetchOffsets('consumers', null)).toHaveLength(1)
    await vi.advanceTimersByTimeAsync(50_000)
    expect(coord.fetchOffsets('consumers', null)).toHaveLength(0)
    expect(coord.group('consumers')).toBeUndefined()
  })
})

describe('DescribeGroups, ListGroups, DeleteGroups', () => {
  it('describes, lists with filters and deletes only empty groups', async () => {
    const { coord } = make()
    const g = await stableGroup(coord, 2, 'busy')
    await coord.commitOffsets({ groupId: 'idle', memberId: '', groupInstanceId: null, generationId: -1, retentionTimeMs: -1n, offsets: [{ topic: 't', partition: 0, offset: 1n, leaderEpoch: -1, metadata: null }] })
    const busy = coord.describeGroup('busy')
    expect(busy).toMatchObject({ state: 'Stable', protocolType: 'consumer', protocol: 'range' })
    expect(busy.members.map((m) => m.memberId).sort()).toEqual([...g.ids].sort())
    expect(busy.members.map((m) => Buffer.from(m.assignment).toString()).sort()).toEqual(['a0', 'a1'])
    expect(coord.describeGroup('idle')).toEqual({ state: 'Empty', protocolType: '', protocol: '', members: [] })
    expect(coord.describeGroup('nope')).toEqual({ state: 'Dead', protocolType: '', protocol: '', members: [] })

    expect(coord.listGroups().map((l) => l.groupId).sort()).toEqual(['busy', 'idle'])
    expect(coord.listGroups(['stable'])).toEqual([{ groupId: 'busy', protocolType: 'consumer', state: 'Stable', groupType: 'classic' }])
    expect(coord.listGroups(['Empty', 'Dead']).map((l) => l.groupId)).toEqual(['idle'])
    expect(coord.listGroups([], ['Classic'])).toHaveLength(2)
    expect(coord.listGroups([], ['consumer'])).toEqual([])

    expect(coord.deleteGroups(['busy', 'idle', 'nope'])).toEqual([E.NON_EMPTY_GROUP, E.NONE, E.GROUP_ID_NOT_FOUND])
    expect(coord.fetchOffsets('idle', null)).toEqual([])
    expect(coord.listGroups().map((l) => l.groupId)).toEqual(['busy'])
  })
})

describe('restarts and shutdown', () => {
  it('brings a group back Stable in its generation, with its members, assignments and offsets', async () => {
    let h = make()
    const g = await stableGroup(h.coord, 2)
    await h.coord.commitOffsets({ groupId: 'g', memberId: g.leader, groupInstanceId: null, generationId: g.generation, retentionTimeMs: -1n, offsets: [{ topic: 't', partition: 3, offset: 7n, leaderEpoch: 1, metadata: 'm' }] })
    open = open.filter((x) => x !== h)
    h = await h.reopen()
    open.push(h)
    const group = h.coord.group('g')!
    expect(group.state).toBe('Stable')
    expect(group.generationId).toBe(g.generation)
    expect(group.leaderId).toBe(g.leader)
    expect([...group.members.keys()].sort()).toEqual([...g.ids].sort())
    // Members carry on as if nothing happened.
    const [x, y] = g.ids as [string, string]
    expect(beat(h.coord, x, g.generation)).toBe(E.NONE)
    expect(Buffer.from((await sync(h.coord, y, g.generation)).assignment).toString()).toBe(`a${g.ids.indexOf(y)}`)
    expect(h.coord.fetchOffsets('g', null)).toEqual([{ name: 't', partitions: [{ partition: 3, offset: 7n, leaderEpoch: 1, metadata: 'm', errorCode: E.NONE }] }])
    // Members that never come back expire with their sessions.
    await vi.advanceTimersByTimeAsync(9000)
    expect(beat(h.coord, x, g.generation)).toBe(E.NONE)
    await vi.advanceTimersByTimeAsync(1000)
    expect(group.has(x)).toBe(true)
    expect(group.has(y)).toBe(false)
  })

  it('answers waiting JoinGroups NOT_COORDINATOR on shutdown and refuses new ones', async () => {
    const h = make({ initialRebalanceDelayMs: 3000 })
    const a = await joinWithId(h.coord)
    h.coord.close()
    expect((await a.joined).errorCode).toBe(E.NOT_COORDINATOR)
    expect((await h.coord.join(joinRequest())).errorCode).toBe(E.COORDINATOR_NOT_AVAILABLE)
    // Commits already read are still stored until the store closes.
    expect(await h.coord.commitOffsets({ groupId: 'x', memberId: '', groupInstanceId: null, generationId: -1, retentionTimeMs: -1n, offsets: [{ topic: 't', partition: 0, offset: 1n, leaderEpoch: -1, metadata: null }] })).toEqual([E.NONE])
    await h.store.close()
    expect(await h.coord.commitOffsets({ groupId: 'x', memberId: '', groupInstanceId: null, generationId: -1, retentionTimeMs: -1n, offsets: [{ topic: 't', partition: 0, offset: 2n, leaderEpoch: -1, metadata: null }] })).toEqual([E.COORDINATOR_NOT_AVAILABLE])
  })
})
