import { ApiKeys, ErrorCodes as E, ZERO_UUID, encodeConsumerProtocolSubscription } from '@tidelog/protocol'
import { describe, expect, it } from 'vitest'
import { type Broker, type BrokerOptions, startBroker } from '../../src/index.js'
import { RawClient } from '../helpers/raw-client.js'
import { tempDir } from '../helpers/tmp.js'
import { connectTracked, trackOpened } from '../helpers/opened.js'

// Group APIs over a real socket, version by version: what each version's fields look like on the wire.

const open = trackOpened()

async function start(opts: BrokerOptions = {}) {
  const b = await startBroker({ port: 0, dataDir: tempDir(), numPartitions: 3, groups: { initialRebalanceDelayMs: 0 }, ...opts })
  open.brokers.push(b)
  return b
}

const connect = (b: Broker) => connectTracked(open, b)

async function createTopic(c: RawClient, name: string) {
  const r = await c.request(ApiKeys.Metadata, 12, { topics: [{ name, topicId: ZERO_UUID }], allowAutoTopicCreation: true, includeTopicAuthorizedOperations: false })
  expect(r.topics[0].errorCode).toBe(0)
}

const subscription = (topics: string[]) => encodeConsumerProtocolSubscription({ topics, userData: null }, 0)

const joinBody = (v: number, o: { groupId?: string; memberId?: string; groupInstanceId?: string | null; topics?: string[] } = {}) => ({
  groupId: o.groupId ?? 'g',
  sessionTimeoutMs: 10_000,
  ...(v >= 1 ? { rebalanceTimeoutMs: 10_000 } : {}),
  memberId: o.memberId ?? '',
  ...(v >= 5 ? { groupInstanceId: o.groupInstanceId ?? null } : {}),
  protocolType: 'consumer',
  protocols: [{ name: 'range', metadata: subscription(o.topics ?? ['t']) }],
})

/** A one-member Stable group joined at JoinGroup/SyncGroup version `v`. */
async function oneMemberGroup(c: RawClient, v = 5, groupId = 'g', topics = ['t']) {
  let join = await c.request(ApiKeys.JoinGroup, v, joinBody(v, { groupId, topics }))
  if (join.errorCode === E.MEMBER_ID_REQUIRED) join = await c.request(ApiKeys.JoinGroup, v, joinBody(v, { groupId, memberId: join.memberId, topics }))
  expect(join.errorCode).toBe(E.NONE)
  const syncV = Math.min(v, 5)
  const sync = await c.request(ApiKeys.SyncGroup, syncV, {
    groupId,
    generationId: join.generationId,
    memberId: join.memberId,
    ...(syncV >= 3 ? { groupInstanceId: null } : {}),
    ...(syncV >= 5 ? { protocolType: 'consumer', protocolName: 'range' } : {}),
    assignments: [{ memberId: join.memberId, assignment: Buffer.from('mine') }],
  })
  expect(sync.errorCode).toBe(E.NONE)
  return { memberId: join.memberId as string, generationId: join.generationId as number }
}

describe('group APIs on the wire', () => {
  it('advertises the ranges Kafka 3.9 serves', async () => {
    const c = await connect(await start())
    const r = await c.request(ApiKeys.ApiVersions, 3, { clientSoftwareName: 'raw', clientSoftwareVersion: '1.0' })
    const ranges = Object.fromEntries(r.apiKeys.map((k: any) => [k.apiKey, [k.minVersion, k.maxVersion]]))
    expect(ranges).toMatchObject({ 8: [2, 9], 9: [1, 9], 10: [0, 6], 11: [0, 9], 12: [0, 4], 13: [0, 5], 14: [0, 5], 15: [0, 5], 16: [0, 5], 42: [0, 2], 47: [0, 0] })
  })

  it('FindCoordinator: one key with "NONE" as message before v4, batches from v4, bad key types refused', async () => {
    const b = await start()
    const c = await connect(b)
    expect(await c.request(ApiKeys.FindCoordinator, 0, { key: 'g' })).toMatchObject({ errorCode: 0, nodeId: b.nodeId, host: '127.0.0.1', port: b.port })
    expect(await c.request(ApiKeys.FindCoordinator, 3, { key: 'txn', keyType: 1 })).toMatchObject({ errorCode: 0, errorMessage: 'NONE', nodeId: b.nodeId, port: b.port })
    expect((await c.request(ApiKeys.FindCoordinator, 2, { key: 'x', keyType: 7 })).errorCode).toBe(E.INVALID_REQUEST)
    const batch = await c.request(ApiKeys.FindCoordinator, 4, { keyType: 0, coordinatorKeys: ['a', 'b'] })
    expect(batch.coordinators).toEqual([
      { key: 'a', nodeId: b.nodeId, host: '127.0.0.1', port: b.port, errorCode: 0, errorMessage: null },
      { key: 'b', nodeId: b.nodeId, host: '127.0.0.1', port: b.port, errorCode: 0, errorMessage: null },
    ])
    const share = await c.request(ApiKeys.FindCoordinator, 6, { keyType: 2, coordinatorKeys: ['s'] })
    expect(share.coordinators[0].errorCode).toBe(E.INVALID_REQUEST)
  })

  it('JoinGroup: v0 joins at once, v4 asks for the member id, v7 names the protocol type, and errors keep each version’s shape', async () => {
    const c = await connect(await start())
    const v0 = await c.request(ApiKeys.JoinGroup, 0, joinBody(0, { groupId: 'old' }))
    expect(v0).toMatchObject({ errorCode: 0, generationId: 1, protocolName: 'range', leader: v0.memberId })
    expect(v0.memberId).toMatch(/^raw-/)
    expect(v0.members).toHaveLength(1)
    const first = await c.request(ApiKeys.JoinGroup, 7, joinBody(7))
    expect(first).toMatchObject({ errorCode: E.MEMBER_ID_REQUIRED, generationId: -1, protocolName: null, leader: '' })
    const joined = await c.request(ApiKeys.JoinGroup, 7, joinBody(7, { memberId: first.memberId }))
    expect(joined).toMatchObject({ errorCode: 0, protocolType: 'consumer', protocolName: 'range', memberId: first.memberId })
    expect(joined.members[0].memberId).toBe(first.memberId)
    // Before v7 a missing protocol name is "".
    expect(await c.request(ApiKeys.JoinGroup, 5, joinBody(5, { groupId: '' }))).toMatchObject({ errorCode: E.INVALID_GROUP_ID, protocolName: '' })
  })

  it('JoinGroup v5+: a static member needs no member id round trip', async () => {
    const c = await connect(await start())
    const r = await c.request(ApiKeys.JoinGroup, 5, joinBody(5, { groupInstanceId: 'pod-1' }))
    expect(r).toMatchObject({ errorCode: 0, generationId: 1 })
    expect(r.memberId).toMatch(/^pod-1-/)
    expect(r.members).toEqual([{ memberId: r.memberId, groupInstanceId: 'pod-1', metadata: Buffer.from(subscription(['t'])) }])
  })

  it('SyncGroup v5 needs the protocol type and name; Heartbeat and LeaveGroup answer per version', async () => {
    const c = await connect(await start())
    const g = await oneMemberGroup(c)
    const sync5 = await c.request(ApiKeys.SyncGroup, 5, { groupId: 'g', generationId: g.generationId, memberId: g.memberId, groupInstanceId: null, protocolType: null, protocolName: 'range', assignments: [] })
    expect(sync5.errorCode).toBe(E.INCONSISTENT_GROUP_PROTOCOL)
    const ok = await c.request(ApiKeys.SyncGroup, 5, { groupId: 'g', generationId: g.generationId, memberId: g.memberId, groupInstanceId: null, protocolType: 'consumer', protocolName: 'range', assignments: [] })
    expect(ok).toMatchObject({ errorCode: 0, protocolType: 'consumer', protocolName: 'range' })
    expect(Buffer.from(ok.assignment).toString()).toBe('mine')
    expect((await c.request(ApiKeys.Heartbeat, 4, { groupId: 'g', generationId: g.generationId, memberId: g.memberId, groupInstanceId: null })).errorCode).toBe(0)
    expect((await c.request(ApiKeys.Heartbeat, 0, { groupId: 'g', generationId: g.generationId + 1, memberId: g.memberId })).errorCode).toBe(E.ILLEGAL_GENERATION)
    // Before v3 the member's error is the request's.
    expect((await c.request(ApiKeys.LeaveGroup, 0, { groupId: 'g', memberId: 'nobody' })).errorCode).toBe(E.UNKNOWN_MEMBER_ID)
    const v5 = await c.request(ApiKeys.LeaveGroup, 5, { groupId: 'g', members: [{ memberId: g.memberId, groupInstanceId: null, reason: 'bye' }, { memberId: 'nobody', groupInstanceId: null, reason: null }] })
    expect(v5).toMatchObject({ errorCode: 0, members: [{ memberId: g.memberId, errorCode: 0 }, { memberId: 'nobody', errorCode: E.UNKNOWN_MEMBER_ID }] })
  })

  it('OffsetCommit and OffsetFetch across versions, with unknown partitions refused and the rest stored', async () => {
    const c = await connect(await start())
    await createTopic(c, 't')
    const commit2 = await c.request(ApiKeys.OffsetCommit, 2, {
      groupId: 'g',
      generationIdOrMemberEpoch: -1,
      memberId: '',
      retentionTimeMs: -1n,
      topics: [
        { name: 't', partitions: [{ partitionIndex: 0, committedOffset: 10n, committedMetadata: 'm0' }, { partitionIndex: 7, committedOffset: 1n, committedMetadata: null }] },
        { name: 'missing', partitions: [{ partitionIndex: 0, committedOffset: 1n, committedMetadata: null }] },
      ],
    })
    expect(commit2.topics).toEqual([
      { name: 't', partitions: [{ partitionIndex: 0, errorCode: 0 }, { partitionIndex: 7, errorCode: E.UNKNOWN_TOPIC_OR_PARTITION }] },
      { name: 'missing', partitions: [{ partitionIndex: 0, errorCode: E.UNKNOWN_TOPIC_OR_PARTITION }] },
    ])
    const commit9 = await c.request(ApiKeys.OffsetCommit, 9, {
      groupId: 'g',
      generationIdOrMemberEpoch: -1,
      memberId: '',
      groupInstanceId: null,
      topics: [{ name: 't', partitions: [{ partitionIndex: 1, committedOffset: 20n, committedLeaderEpoch: 4, committedMetadata: null }] }],
    })
    expect(commit9.topics[0].partitions[0].errorCode).toBe(0)

    const v1 = await c.request(ApiKeys.OffsetFetch, 1, { groupId: 'g', topics: [{ name: 't', partitionIndexes: [0, 2] }] })
    expect(v1.topics).toEqual([
      {
        name: 't',
        partitions: [
          { partitionIndex: 0, committedOffset: 10n, committedLeaderEpoch: -1, metadata: 'm0', errorCode: 0 },
          { partitionIndex: 2, committedOffset: -1n, committedLeaderEpoch: -1, metadata: '', errorCode: 0 },
        ],
      },
    ])
    const all = await c.request(ApiKeys.OffsetFetch, 7, { groupId: 'g', topics: null, requireStable: true })
    expect(all.errorCode).toBe(0)
    expect(all.topics[0].partitions).toEqual([
      { partitionIndex: 0, committedOffset: 10n, committedLeaderEpoch: -1, metadata: 'm0', errorCode: 0 },
      { partitionIndex: 1, committedOffset: 20n, committedLeaderEpoch: 4, metadata: '', errorCode: 0 },
    ])
    const multi = await c.request(ApiKeys.OffsetFetch, 8, {
      groups: [
        { groupId: 'g', topics: [{ name: 't', partitionIndexes: [1] }] },
        { groupId: 'other', topics: null },
      ],
      requireStable: false,
    })
    expect(multi.groups).toEqual([
      { groupId: 'g', errorCode: 0, topics: [{ name: 't', partitions: [{ partitionIndex: 1, committedOffset: 20n, committedLeaderEpoch: 4, metadata: '', errorCode: 0 }] }] },
      { groupId: 'other', errorCode: 0, topics: [] },
    ])
  })

  it('OffsetCommit from a member checks its generation', async () => {
    const c = await connect(await start())
    await createTopic(c, 't')
    const g = await oneMemberGroup(c)
    const body = (generationIdOrMemberEpoch: number, memberId: string) => ({
      groupId: 'g',
      generationIdOrMemberEpoch,
      memberId,
      groupInstanceId: null,
      topics: [{ name: 't', partitions: [{ partitionIndex: 0, committedOffset: 3n, committedLeaderEpoch: -1, committedMetadata: null }] }],
    })
    const code = async (gen: number, member: string) => (await c.request(ApiKeys.OffsetCommit, 8, body(gen, member))).topics[0].partitions[0].errorCode
    expect(await code(g.generationId, g.memberId)).toBe(0)
    expect(await code(g.generationId + 1, g.memberId)).toBe(E.ILLEGAL_GENERATION)
    expect(await code(g.generationId, 'x')).toBe(E.UNKNOWN_MEMBER_ID)
    expect(await code(-1, '')).toBe(E.UNKNOWN_MEMBER_ID)
  })

  it('DescribeGroups, ListGroups with filters, DeleteGroups, OffsetDelete', async () => {
    const c = await connect(await start())
    await createTopic(c, 't')
    await createTopic(c, 'u')
    const g = await oneMemberGroup(c, 5, 'busy', ['t'])
    await c.request(ApiKeys.OffsetCommit, 8, {
      groupId: 'busy',
      generationIdOrMemberEpoch: g.generationId,
      memberId: g.memberId,
      groupInstanceId: null,
      topics: [
        { name: 't', partitions: [{ partitionIndex: 0, committedOffset: 1n, committedLeaderEpoch: -1, committedMetadata: null }] },
        { name: 'u', partitions: [{ partitionIndex: 0, committedOffset: 1n, committedLeaderEpoch: -1, committedMetadata: null }] },
      ],
    })

    const d0 = await c.request(ApiKeys.DescribeGroups, 0, { groups: ['busy', 'nope'] })
    expect(d0.groups[0]).toMatchObject({ errorCode: 0, groupId: 'busy', groupState: 'Stable', protocolType: 'consumer', protocolData: 'range' })
    expect(d0.groups[0].members[0]).toMatchObject({ memberId: g.memberId, clientId: 'raw', clientHost: '/127.0.0.1' })
    expect(Buffer.from(d0.groups[0].members[0].memberAssignment).toString()).toBe('mine')
    expect(d0.groups[1]).toMatchObject({ errorCode: 0, groupId: 'nope', groupState: 'Dead', protocolType: '', members: [] })
    const d5 = await c.request(ApiKeys.DescribeGroups, 5, { groups: ['busy'], includeAuthorizedOperations: true })
    expect(d5.groups[0].authorizedOperations).toBe((1 << 3) | (1 << 6) | (1 << 8) | (1 << 10) | (1 << 11))
    expect((await c.request(ApiKeys.DescribeGroups, 3, { groups: ['busy'], includeAuthorizedOperations: false })).groups[0].authorizedOperations).toBe(-2147483648)

    expect((await c.request(ApiKeys.ListGroups, 0, {})).groups).toEqual([{ groupId: 'busy', protocolType: 'consumer', groupState: '', groupType: '' }])
    expect((await c.request(ApiKeys.ListGroups, 4, { statesFilter: ['empty'] })).groups).toEqual([])
    expect((await c.request(ApiKeys.ListGroups, 5, { statesFilter: [], typesFilter: ['classic'] })).groups).toEqual([
      { groupId: 'busy', protocolType: 'consumer', groupState: 'Stable', groupType: 'classic' },
    ])

    const del = await c.request(ApiKeys.OffsetDelete, 0, {
      groupId: 'busy',
      topics: [
        { name: 't', partitions: [{ partitionIndex: 0 }] },
        { name: 'u', partitions: [{ partitionIndex: 0 }, { partitionIndex: 9 }] },
        { name: 'missing', partitions: [{ partitionIndex: 0 }] },
      ],
    })
    expect(del).toMatchObject({
      errorCode: 0,
      topics: [
        { name: 't', partitions: [{ partitionIndex: 0, errorCode: E.GROUP_SUBSCRIBED_TO_TOPIC }] },
        { name: 'u', partitions: [{ partitionIndex: 0, errorCode: 0 }, { partitionIndex: 9, errorCode: E.UNKNOWN_TOPIC_OR_PARTITION }] },
        { name: 'missing', partitions: [{ partitionIndex: 0, errorCode: E.UNKNOWN_TOPIC_OR_PARTITION }] },
      ],
    })
    const gone = await c.request(ApiKeys.OffsetDelete, 0, { groupId: 'nope', topics: [{ name: 't', partitions: [{ partitionIndex: 0 }] }] })
    expect(gone).toMatchObject({ errorCode: E.GROUP_ID_NOT_FOUND, topics: [] })

    const refused = await c.request(ApiKeys.DeleteGroups, 2, { groupsNames: ['busy', 'nope', 'nope'] })
    expect(refused.results).toEqual([
      { groupId: 'busy', errorCode: E.NON_EMPTY_GROUP },
      { groupId: 'nope', errorCode: E.GROUP_ID_NOT_FOUND },
    ])
    await c.request(ApiKeys.LeaveGroup, 3, { groupId: 'busy', members: [{ memberId: g.memberId, groupInstanceId: null }] })
    expect((await c.request(ApiKeys.DeleteGroups, 0, { groupsNames: ['busy'] })).results).toEqual([{ groupId: 'busy', errorCode: 0 }])
    expect((await c.request(ApiKeys.ListGroups, 4, { statesFilter: [] })).groups).toEqual([])
  })

  it('answers a JoinGroup waiting at shutdown instead of holding the broker open', async () => {
    const b = await start({ groups: { initialRebalanceDelayMs: 60_000 } })
    const c = await connect(b)
    const first = await c.request(ApiKeys.JoinGroup, 5, joinBody(5))
    const waiting = c.request(ApiKeys.JoinGroup, 5, joinBody(5, { memberId: first.memberId }))
    await new Promise((r) => setTimeout(r, 50))
    const started = Date.now()
    await b.close()
    open.brokers.splice(open.brokers.indexOf(b), 1)
    expect(Date.now() - started).toBeLessThan(5000)
    expect((await waiting).errorCode).toBe(E.NOT_COORDINATOR)
  })
})
