import { mkdirSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { ApiKeys, ErrorCodes as E, Writer, ZERO_UUID, encodeConsumerProtocolSubscription } from '@tidelog/protocol'
import { afterEach, describe, expect, it } from 'vitest'
import { MAX_RECORD_BYTES, writeFileHeader, writeGroup, writeOffset } from '../../src/groups/offsets-format.js'
import { OFFSETS_DIR, OFFSETS_FILE, OffsetsStore, RecordListTooLargeError, type StoredGroup } from '../../src/groups/offsets-store.js'
import { type Broker, startBroker } from '../../src/index.js'
import { silentLogger } from '../../src/logger.js'
import { RawClient } from '../helpers/raw-client.js'
import { harness, joinRequest } from './helpers.js'
import { tempDir } from '../helpers/tmp.js'

// One limit for a record of the offsets file, checked when it is written: a group whose metadata
// would exceed it is refused there (as Kafka refuses it on the offsets topic), never found at the
// next start as "damage" that takes every later offset with it.

const open: { brokers: Broker[]; clients: RawClient[]; stores: OffsetsStore[] } = { brokers: [], clients: [], stores: [] }
afterEach(async () => {
  for (const c of open.clients.splice(0)) c.close()
  for (const b of open.brokers.splice(0)) await b.close()
  for (const s of open.stores.splice(0)) await s.close()
})

const TOO_BIG = MAX_RECORD_BYTES + 1024 * 1024

function bigGroup(bytes: number): StoredGroup {
  return {
    protocolType: 'consumer',
    generationId: 3,
    protocolName: 'range',
    leaderId: 'm',
    stateTimestamp: 1,
    members: [{ memberId: 'm', groupInstanceId: null, clientId: 'c', clientHost: '/h', rebalanceTimeoutMs: 1, sessionTimeoutMs: 1, subscription: Buffer.alloc(bytes, 7), assignment: Buffer.alloc(0) }],
  }
}

const commit = (partition: number, offset: bigint) => ({ topic: 't', partition, offset, leaderEpoch: 0, metadata: '', commitTimestamp: 1, expireTimestamp: -1 })

describe('the offsets store record limit', () => {
  it('refuses an oversized group record before writing anything, and keeps the group as it was', async () => {
    const dir = tempDir()
    const s = OffsetsStore.open(dir, silentLogger)
    open.stores.push(s)
    s.storeGroup('g', bigGroup(10))
    s.commit('g', [commit(0, 1n)])
    const file = join(dir, OFFSETS_DIR, OFFSETS_FILE)
    const size = statSync(file).size
    expect(() => s.storeGroup('g', bigGroup(TOO_BIG))).toThrow(RecordListTooLargeError)
    expect(() => s.storeGroup('g', bigGroup(TOO_BIG))).toThrow(/metadata of group g .* at most 67108864/)
    expect(statSync(file).size).toBe(size)
    expect(s.storedGroups().get('g')!.members[0]!.subscription.length).toBe(10)
    s.commit('g', [commit(1, 2n)])
    await s.close()
    const t = OffsetsStore.open(dir, silentLogger)
    open.stores.push(t)
    expect(t.storedGroups().get('g')!.members[0]!.subscription.length).toBe(10)
    expect([t.get('g', 't', 0)?.offset, t.get('g', 't', 1)?.offset]).toEqual([1n, 2n])
  })

  it('reads back an oversized record an earlier release wrote, and every offset after it', async () => {
    const dir = tempDir()
    const w = new Writer(TOO_BIG + 4096)
    writeFileHeader(w)
    writeOffset(w, 'g', 't', 0, commit(0, 5n))
    writeGroup(w, 'g', bigGroup(TOO_BIG), false)
    writeOffset(w, 'g', 't', 1, commit(1, 6n))
    mkdirSync(join(dir, OFFSETS_DIR))
    writeFileSync(join(dir, OFFSETS_DIR, OFFSETS_FILE), w.finish())
    const s = OffsetsStore.open(dir, silentLogger)
    open.stores.push(s)
    expect([s.get('g', 't', 0)?.offset, s.get('g', 't', 1)?.offset]).toEqual([5n, 6n])
    expect(s.storedGroups().get('g')!.members[0]!.subscription.length).toBe(TOO_BIG)
  })
})

describe('a static member rejoining with metadata the store cannot take', () => {
  it('is answered UNKNOWN_SERVER_ERROR and the group keeps the member it had', async () => {
    const h = harness()
    try {
      const { coord } = h
      const first = await coord.join(joinRequest({ groupInstanceId: 'pod' }))
      expect(first.errorCode).toBe(E.NONE)
      const synced = await coord.sync({ groupId: 'g', memberId: first.memberId, groupInstanceId: 'pod', generationId: first.generationId, protocolType: 'consumer', protocolName: 'range', assignments: [{ memberId: first.memberId, assignment: Buffer.from('A') }] })
      expect(synced.errorCode).toBe(E.NONE)
      // A restarted instance with the same protocol: Kafka persists the new member id without a rebalance.
      const huge = encodeConsumerProtocolSubscription({ topics: ['t'], userData: Buffer.alloc(TOO_BIG) }, 0)
      const back = await coord.join(joinRequest({ groupInstanceId: 'pod', protocols: [{ name: 'range', metadata: huge }] }))
      expect(back).toMatchObject({ errorCode: E.UNKNOWN_SERVER_ERROR, memberId: '' })
      const group = coord.group('g')!
      expect(group.state).toBe('Stable')
      expect([...group.members.keys()]).toEqual([first.memberId])
      expect(coord.heartbeat({ groupId: 'g', memberId: first.memberId, groupInstanceId: 'pod', generationId: first.generationId })).toBe(E.NONE)
      const reopened = await h.reopen()
      expect([...reopened.store.storedGroups().get('g')!.members.map((m) => m.memberId)]).toEqual([first.memberId])
      await reopened.close()
    } finally {
      await h.close().catch(() => {})
    }
  })
})

describe('a JoinGroup whose metadata the offsets store cannot take, over the wire', () => {
  it('SyncGroup answers UNKNOWN_SERVER_ERROR as Kafka does, the group rebalances, and nothing else is lost across a restart', async () => {
    const dataDir = tempDir()
    let b = await startBroker({ port: 0, dataDir, groups: { initialRebalanceDelayMs: 0 } })
    open.brokers.push(b)
    let c = await RawClient.connect(b.port)
    open.clients.push(c)
    await c.request(ApiKeys.Metadata, 12, { topics: [{ name: 't', topicId: ZERO_UUID }], allowAutoTopicCreation: true, includeTopicAuthorizedOperations: false })
    const commitFor = (groupId: string, generationId: number, memberId: string, offset: bigint) =>
      c.request(ApiKeys.OffsetCommit, 8, {
        groupId,
        generationIdOrMemberEpoch: generationId,
        memberId,
        groupInstanceId: null,
        topics: [{ name: 't', partitions: [{ partitionIndex: 0, committedOffset: offset, committedLeaderEpoch: -1, committedMetadata: null }] }],
      })
    expect((await commitFor('other', -1, '', 10n)).topics[0].partitions[0].errorCode).toBe(E.NONE)

    const join = (memberId: string, userData: Buffer | null) =>
      c.request(ApiKeys.JoinGroup, 5, {
        groupId: 'big',
        sessionTimeoutMs: 30_000,
        rebalanceTimeoutMs: 30_000,
        memberId,
        groupInstanceId: null,
        protocolType: 'consumer',
        protocols: [{ name: 'range', metadata: encodeConsumerProtocolSubscription({ topics: ['t'], userData }, 0) }],
      })
    const sync = (generationId: number, memberId: string) =>
      c.request(ApiKeys.SyncGroup, 5, {
        groupId: 'big',
        generationId,
        memberId,
        groupInstanceId: null,
        protocolType: 'consumer',
        protocolName: 'range',
        assignments: [{ memberId, assignment: Buffer.from('a') }],
      })
    const first = await join('', null)
    expect(first.errorCode).toBe(E.MEMBER_ID_REQUIRED)
    // ~65 MiB of member metadata fits in a request (100 MiB) but not in one offsets record (64 MiB).
    const joined = await join(first.memberId, Buffer.alloc(TOO_BIG, 1))
    expect(joined).toMatchObject({ errorCode: E.NONE, leader: first.memberId })
    expect((await sync(joined.generationId, first.memberId)).errorCode).toBe(E.UNKNOWN_SERVER_ERROR)
    const described = await c.request(ApiKeys.DescribeGroups, 5, { groups: ['big'], includeAuthorizedOperations: false })
    expect(described.groups[0]).toMatchObject({ errorCode: E.NONE, groupState: 'PreparingRebalance' })
    expect(described.groups[0].members.map((m: { memberId: string }) => m.memberId)).toEqual([first.memberId])

    // The member rejoins with metadata that fits: the group goes on as if the refused generation never was.
    const rejoined = await join(first.memberId, Buffer.from('small'))
    expect(rejoined).toMatchObject({ errorCode: E.NONE, generationId: joined.generationId + 1 })
    expect((await sync(rejoined.generationId, first.memberId)).errorCode).toBe(E.NONE)
    expect((await commitFor('big', rejoined.generationId, first.memberId, 42n)).topics[0].partitions[0].errorCode).toBe(E.NONE)
    expect((await commitFor('other', -1, '', 11n)).topics[0].partitions[0].errorCode).toBe(E.NONE)

    c.close()
    await b.close()
    open.brokers.length = 0
    b = await startBroker({ port: 0, dataDir, groups: { initialRebalanceDelayMs: 0 } })
    open.brokers.push(b)
    c = await RawClient.connect(b.port)
    open.clients.push(c)
    const fetched = await c.request(ApiKeys.OffsetFetch, 8, {
      groups: [
        { groupId: 'big', memberId: null, memberEpoch: -1, topics: [{ name: 't', partitionIndexes: [0] }] },
        { groupId: 'other', memberId: null, memberEpoch: -1, topics: [{ name: 't', partitionIndexes: [0] }] },
      ],
      requireStable: false,
    })
    expect(fetched.groups.map((g: any) => [g.groupId, g.topics[0].partitions[0].committedOffset])).toEqual([
      ['big', 42n],
      ['other', 11n],
    ])
    const after = await c.request(ApiKeys.DescribeGroups, 5, { groups: ['big'], includeAuthorizedOperations: false })
    expect(after.groups[0]).toMatchObject({ groupState: 'Stable', protocolData: 'range' })
    expect(Buffer.from(after.groups[0].members[0].memberAssignment).toString()).toBe('a')
  }, 20_000)
})
