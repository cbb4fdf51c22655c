import { ApiKeys, ErrorCodes as E, encodeConsumerProtocolSubscription } from '@tidelog/protocol'
import { afterEach, describe, expect, it, vi } from 'vitest'
import type { Broker } from '../src/index.js'
import type { RawClient } from './helpers/raw-client.js'
import { connectTracked, startTracked, trackOpened } from './helpers/opened.js'

// Session expiry must not depend on when the expiry timer gets to run. The clock is moved past
// a member's session deadline while its timer is still a minute away in real time: exactly a
// timer firing late on a loaded machine. Every group operation must answer as if it had fired.

const open = trackOpened()
const SESSION_MS = 60_000

let skewMs = 0
afterEach(() => {
  skewMs = 0
  vi.restoreAllMocks()
})

/** From now on the broker's (and everybody's) Date.now() runs `ms` ahead; its timers do not. */
function jumpClock(ms: number): void {
  if (skewMs === 0) {
    const realNow = Date.now.bind(Date)
    vi.spyOn(Date, 'now').mockImplementation(() => realNow() + skewMs)
  }
  skewMs += ms
}

const start = () => startTracked(open, { groups: { initialRebalanceDelayMs: 0 } })

const joinBody = (groupId: string, instanceId: string | null, memberId = '') => ({
  groupId,
  sessionTimeoutMs: SESSION_MS,
  rebalanceTimeoutMs: 10_000,
  memberId,
  groupInstanceId: instanceId,
  protocolType: 'consumer',
  protocols: [{ name: 'range', metadata: encodeConsumerProtocolSubscription({ topics: ['t'], userData: null }, 0) }],
})

/** A Stable one-member group; the member then goes silent (a closed static consumer sends no LeaveGroup). */
async function stableGroup(c: RawClient, groupId: string, instanceId: string | null) {
  let join = await c.request(ApiKeys.JoinGroup, 5, joinBody(groupId, instanceId))
  if (join.errorCode === E.MEMBER_ID_REQUIRED) join = await c.request(ApiKeys.JoinGroup, 5, joinBody(groupId, instanceId, join.memberId))
  expect(join.errorCode).toBe(E.NONE)
  const sync = await c.request(ApiKeys.SyncGroup, 3, {
    groupId,
    generationId: join.generationId,
    memberId: join.memberId,
    groupInstanceId: instanceId,
    assignments: [{ memberId: join.memberId, assignment: Buffer.from('a') }],
  })
  expect(sync.errorCode).toBe(E.NONE)
  return { memberId: join.memberId as string, generationId: join.generationId as number }
}

const deleteGroup = async (c: RawClient, groupId: string) =>
  (await c.request(ApiKeys.DeleteGroups, 2, { groupsNames: [groupId] })).results[0].errorCode as number

const describeGroup = async (c: RawClient, groupId: string) => {
  const g = (await c.request(ApiKeys.DescribeGroups, 5, { groups: [groupId], includeAuthorizedOperations: false })).groups[0]
  return { state: g.groupState as string, members: (g.members as { groupInstanceId: string | null }[]).map((m) => m.groupInstanceId) }
}

const listedState = async (c: RawClient, groupId: string) =>
  ((await c.request(ApiKeys.ListGroups, 4, { statesFilter: [] })).groups as { groupId: string; groupState: string }[]).find((g) => g.groupId === groupId)?.groupState

async function connect(): Promise<{ b: Broker; c: RawClient }> {
  const b = await start()
  return { b, c: await connectTracked(open, b) }
}

describe('session expiry is decided when a group is used, not only when its timer fires', () => {
  it('DeleteGroups one session timeout after a static member stopped deletes the group (librdkafka 0081)', async () => {
    const { c } = await connect()
    await stableGroup(c, 'static', 'instance-0')
    jumpClock(SESSION_MS - 1000)
    // Still within the session: the member is there, so the group is not empty.
    expect(await deleteGroup(c, 'static')).toBe(E.NON_EMPTY_GROUP)
    jumpClock(1000)
    expect(await deleteGroup(c, 'static')).toBe(E.NONE)
    expect(await describeGroup(c, 'static')).toEqual({ state: 'Dead', members: [] })
  })

  it('DescribeGroups and ListGroups show the group Empty once the deadline passed; the member is gone for Heartbeat too', async () => {
    const { c } = await connect()
    const m = await stableGroup(c, 'described', 'instance-1')
    expect(await describeGroup(c, 'described')).toEqual({ state: 'Stable', members: ['instance-1'] })
    expect(await listedState(c, 'described')).toBe('Stable')
    jumpClock(SESSION_MS + 1)
    expect(await listedState(c, 'described')).toBe('Empty')
    expect(await describeGroup(c, 'described')).toEqual({ state: 'Empty', members: [] })
    const hb = await c.request(ApiKeys.Heartbeat, 3, { groupId: 'described', generationId: m.generationId, memberId: m.memberId, groupInstanceId: 'instance-1' })
    expect(hb.errorCode).toBe(E.UNKNOWN_MEMBER_ID)
  })

  it('a heartbeat before the deadline keeps the member: its session restarts from that heartbeat', async () => {
    const { c } = await connect()
    const m = await stableGroup(c, 'alive', null)
    jumpClock(SESSION_MS - 1000)
    const hb = await c.request(ApiKeys.Heartbeat, 3, { groupId: 'alive', generationId: m.generationId, memberId: m.memberId, groupInstanceId: null })
    expect(hb.errorCode).toBe(E.NONE)
    jumpClock(SESSION_MS - 1000)
    expect(await describeGroup(c, 'alive')).toMatchObject({ state: 'Stable', members: [null] })
    jumpClock(2000)
    expect(await describeGroup(c, 'alive')).toEqual({ state: 'Empty', members: [] })
  })

  it('JoinGroup in a group whose other member expired starts a generation without it', async () => {
    const { c } = await connect()
    const old = await stableGroup(c, 'rejoin', 'instance-a')
    jumpClock(SESSION_MS + 1)
    // The expired member's place is free, so the newcomer forms the next generation alone, at once.
    const next = await stableGroup(c, 'rejoin', 'instance-b')
    expect(next.generationId).toBeGreaterThan(old.generationId)
    expect(await describeGroup(c, 'rejoin')).toEqual({ state: 'Stable', members: ['instance-b'] })
  })
})
