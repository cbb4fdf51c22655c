import { ApiKeys, ErrorCodes, Reader, Writer, ZERO_UUID, decodeRecordBatches } from '@tidelog/protocol'
import { createRegistry } from '../src/handlers/index.js'
import { describe, expect, it } from 'vitest'
import { makeBatch } from './helpers/batches.js'
import { type Opened, connectTracked, createTopic, startTracked, trackOpened } from './helpers/opened.js'
import type { RawClient } from './helpers/raw-client.js'
import { tempDir } from './helpers/tmp.js'

const open: Opened = trackOpened()

async function produce(c: RawClient, topic: string, values: string[]): Promise<void> {
  const r = await c.request(ApiKeys.Produce, 9, {
    transactionalId: null,
    acks: -1,
    timeoutMs: 1000,
    topicData: [{ name: topic, partitionData: [{ index: 0, records: makeBatch(values.map((value) => ({ value }))) }] }],
  })
  expect(r.responses[0].partitionResponses[0].errorCode).toBe(0)
}

async function topicId(c: RawClient, name: string): Promise<string> {
  const m = await c.request(ApiKeys.Metadata, 12, { topics: [{ name, topicId: ZERO_UUID }], allowAutoTopicCreation: false, includeTopicAuthorizedOperations: false })
  return m.topics[0].topicId
}

/** One share consumer speaking the raw protocol: heartbeat, then share fetches within one share session. */
class Member {
  epoch = 0
  sessionEpoch = 0
  constructor(
    readonly c: RawClient,
    readonly group: string,
    readonly memberId: string,
  ) {}

  async join(topics: string[]) {
    const r = await this.c.request(ApiKeys.ShareGroupHeartbeat, 1, { groupId: this.group, memberId: this.memberId, memberEpoch: 0, rackId: null, subscribedTopicNames: topics })
    expect(r.errorCode).toBe(ErrorCodes.NONE)
    this.epoch = r.memberEpoch
    return r
  }

  async fetch(tid: string, opts: { maxWaitMs?: number; acks?: { first: number; last: number; types: number[] }[] } = {}) {
    const r = await this.c.request(ApiKeys.ShareFetch, 1, {
      groupId: this.group,
      memberId: this.memberId,
      shareSessionEpoch: this.sessionEpoch,
      maxWaitMs: opts.maxWaitMs ?? 0,
      minBytes: 1,
      maxBytes: 1 << 20,
      maxRecords: 500,
      batchSize: 500,
      topics: [{ topicId: tid, partitions: [{ partitionIndex: 0, acknowledgementBatches: (opts.acks ?? []).map((a) => ({ firstOffset: BigInt(a.first), lastOffset: BigInt(a.last), acknowledgeTypes: a.types })) }] }],
      forgottenTopicsData: [],
    })
    if (r.errorCode === ErrorCodes.NONE) this.sessionEpoch = this.sessionEpoch === 0 ? 1 : this.sessionEpoch + 1
    const p = r.responses.find((t: any) => t.topicId === tid)?.partitions[0]
    const acquired: [number, number, number][] = (p?.acquiredRecords ?? []).map((a: any) => [Number(a.firstOffset), Number(a.lastOffset), a.deliveryCount])
    const values: string[] = []
    for (const b of decodeRecordBatches(p?.records ?? Buffer.alloc(0))) {
      for (const rec of b) if (acquired.some(([lo, hi]) => Number(rec.offset) >= lo && Number(rec.offset) <= hi)) values.push(Buffer.from(rec.value!).toString())
    }
    return { r, p, acquired, values }
  }

  async acknowledge(tid: string, first: number, last: number, types: number[]) {
    const r = await this.c.request(ApiKeys.ShareAcknowledge, 1, {
      groupId: this.group,
      memberId: this.memberId,
      shareSessionEpoch: this.sessionEpoch,
      topics: [{ topicId: tid, partitions: [{ partitionIndex: 0, acknowledgementBatches: [{ firstOffset: BigInt(first), lastOffset: BigInt(last), acknowledgeTypes: types }] }] }],
    })
    if (r.errorCode === ErrorCodes.NONE) this.sessionEpoch++
    return r
  }
}

const ACCEPT = 1
const RELEASE = 2
const REJECT = 3

describe('share groups (KIP-932)', () => {
  it('acquires records under locks, takes ACCEPT / RELEASE / REJECT, and keeps the share-partition state across a restart', async () => {
    const dataDir = tempDir()
    const b = await startTracked(open, { dataDir })
    const c = await connectTracked(open, b)
    await createTopic(c, 'q', 1)
    const tid = await topicId(c, 'q')

    const m1 = new Member(c, 'g', 'member-one')
    const joined = await m1.join(['q'])
    expect(joined.memberEpoch).toBeGreaterThan(0)
    expect(joined.heartbeatIntervalMs).toBe(5000)
    expect(joined.assignment.topicPartitions).toEqual([{ topicId: tid, partitions: [0] }])
    // The first fetch places the start offset (share.auto.offset.reset=latest: the end of the log).
    const first = await m1.fetch(tid)
    expect(first.r.errorCode).toBe(ErrorCodes.NONE)
    expect(first.r.acquisitionLockTimeoutMs).toBe(30_000)
    await produce(c, 'q', ['a', 'b', 'c', 'd', 'e'])
    const got = await m1.fetch(tid, { maxWaitMs: 5000 })
    expect(got.acquired).toEqual([[0, 4, 1]])
    expect(got.values).toEqual(['a', 'b', 'c', 'd', 'e'])

    // A second member finds everything locked by the first.
    const m2 = new Member(c, 'g', 'member-two')
    await m2.join(['q'])
    expect((await m2.fetch(tid)).acquired).toEqual([])

    // Heartbeats: m2's join moved the group epoch, so m1's next heartbeat (with the epoch it knows)
    // brings it the new epoch and its assignment; an epoch it was never given is fenced.
    const hb = await c.request(ApiKeys.ShareGroupHeartbeat, 1, { groupId: 'g', memberId: 'member-one', memberEpoch: m1.epoch, rackId: null, subscribedTopicNames: null })
    expect(hb.errorCode).toBe(ErrorCodes.NONE)
    expect(hb.memberEpoch).toBe(m1.epoch + 1)
    expect(hb.assignment.topicPartitions).toEqual([{ topicId: tid, partitions: [0] }])
    m1.epoch = hb.memberEpoch
    const steady = await c.request(ApiKeys.ShareGroupHeartbeat, 1, { groupId: 'g', memberId: 'member-one', memberEpoch: m1.epoch, rackId: null, subscribedTopicNames: null })
    expect([steady.errorCode, steady.memberEpoch, steady.assignment]).toEqual([ErrorCodes.NONE, m1.epoch, null])
    const fenced = await c.request(ApiKeys.ShareGroupHeartbeat, 1, { groupId: 'g', memberId: 'member-one', memberEpoch: m1.epoch + 5, rackId: null, subscribedTopicNames: null })
    expect(fenced.errorCode).toBe(ErrorCodes.FENCED_MEMBER_EPOCH)

    // ACCEPT a, b and e; RELEASE c (offered again); REJECT d (archived).
    const ack = await m1.acknowledge(tid, 0, 4, [ACCEPT, ACCEPT, RELEASE, REJECT, ACCEPT])
    expect(ack.errorCode).toBe(ErrorCodes.NONE)
    expect(ack.responses[0].partitions[0].errorCode).toBe(ErrorCodes.NONE)
    const again = await m2.fetch(tid, { maxWaitMs: 5000 })
    expect(again.acquired).toEqual([[2, 2, 2]])
    expect(again.values).toEqual(['c'])
    // m1 no longer holds offset 2: acknowledging it is INVALID_RECORD_STATE, and changes nothing.
    const wrong = await m1.acknowledge(tid, 2, 2, [ACCEPT])
    expect(wrong.responses[0].partitions[0].errorCode).toBe(ErrorCodes.INVALID_RECORD_STATE)
    // A share session epoch out of order is refused.
    const badEpoch = await c.request(ApiKeys.ShareAcknowledge, 1, { groupId: 'g', memberId: 'member-one', shareSessionEpoch: 99, topics: [] })
    expect(badEpoch.errorCode).toBe(ErrorCodes.INVALID_SHARE_SESSION_EPOCH)

    const described = await c.request(ApiKeys.ShareGroupDescribe, 1, { groupIds: ['g', 'nope'], includeAuthorizedOperations: false })
    expect(described.groups[0].groupState).toBe('Stable')
    expect(described.groups[0].members.map((m: any) => m.memberId).sort()).toEqual(['member-one', 'member-two'])
    expect(described.groups[0].members[0].assignment.topicPartitions[0].topicName).toBe('q')
    expect(described.groups[1].errorCode).toBe(ErrorCodes.GROUP_ID_NOT_FOUND)
    const listed = await c.request(ApiKeys.ListGroups, 5, { statesFilter: [], typesFilter: ['Share'] })
    expect(listed.groups).toEqual([{ groupId: 'g', protocolType: 'share', groupState: 'Stable', groupType: 'share' }])
    const classicOnly = await c.request(ApiKeys.ListGroups, 5, { statesFilter: [], typesFilter: ['classic'] })
    expect(classicOnly.groups).toEqual([])

    // Restart: a, b, e stay acknowledged and d archived; c, held by m2 when the broker stopped, is offered again.
    c.close()
    open.clients.splice(0)
    await b.close()
    open.brokers.splice(0)
    const b2 = await startTracked(open, { dataDir })
    const c2 = await connectTracked(open, b2)
    await produce(c2, 'q', ['f'])
    const m3 = new Member(c2, 'g', 'member-three')
    await m3.join(['q'])
    const after = await m3.fetch(tid, { maxWaitMs: 5000 })
    expect(after.acquired).toEqual([[2, 2, 3], [5, 5, 1]])
    expect(after.values).toEqual(['c', 'f'])
  }, 30_000)

  it('expires acquisition locks, redelivers with a higher delivery count, and archives at the delivery limit', async () => {
    const b = await startTracked(open, { groupShareRecordLockDurationMs: 1000, groupShareDeliveryCountLimit: 2 })
    const c = await connectTracked(open, b)
    await createTopic(c, 'q', 1)
    const tid = await topicId(c, 'q')
    const m = new Member(c, 'g2', 'solo')
    await m.join(['q'])
    await m.fetch(tid)
    await produce(c, 'q', ['x'])
    expect((await m.fetch(tid, { maxWaitMs: 5000 })).acquired).toEqual([[0, 0, 1]])
    // Not acknowledged: the lock runs out and the long poll wakes with the record again.
    const redelivered = await m.fetch(tid, { maxWaitMs: 15_000 })
    expect(redelivered.acquired).toEqual([[0, 0, 2]])
    expect(redelivered.r.acquisitionLockTimeoutMs).toBe(1000)
    // At the limit of 2 deliveries, the next expiry archives it: it is never offered a third time.
    expect((await m.fetch(tid, { maxWaitMs: 3000 })).acquired).toEqual([])
    await produce(c, 'q', ['y'])
    const next = await m.fetch(tid, { maxWaitMs: 5000 })
    expect(next.acquired).toEqual([[1, 1, 1]])
    expect(next.values).toEqual(['y'])
  }, 30_000)

  it('answers bad share requests with Kafka errors', async () => {
    const b = await startTracked(open)
    const c = await connectTracked(open, b)
    const noSubs = await c.request(ApiKeys.ShareGroupHeartbeat, 1, { groupId: 'g', memberId: 'm', memberEpoch: 0, rackId: null, subscribedTopicNames: null })
    expect(noSubs.errorCode).toBe(ErrorCodes.INVALID_REQUEST)
    const unknown = await c.request(ApiKeys.ShareGroupHeartbeat, 1, { groupId: 'g', memberId: 'm', memberEpoch: 3, rackId: null, subscribedTopicNames: null })
    expect(unknown.errorCode).toBe(ErrorCodes.UNKNOWN_MEMBER_ID)
    const notMember = await c.request(ApiKeys.ShareFetch, 1, { groupId: 'g', memberId: 'm', shareSessionEpoch: 0, maxWaitMs: 0, minBytes: 1, maxBytes: 1000, maxRecords: 10, batchSize: 10, topics: [], forgottenTopicsData: [] })
    expect(notMember.errorCode).toBe(ErrorCodes.UNKNOWN_MEMBER_ID)
    await c.request(ApiKeys.ShareGroupHeartbeat, 1, { groupId: 'g', memberId: 'm', memberEpoch: 0, rackId: null, subscribedTopicNames: ['nothing-yet'] })
    const noSession = await c.request(ApiKeys.ShareAcknowledge, 1, { groupId: 'g', memberId: 'm', shareSessionEpoch: 0, topics: [] })
    expect(noSession.errorCode).toBe(ErrorCodes.INVALID_SHARE_SESSION_EPOCH)
    const noSession2 = await c.request(ApiKeys.ShareFetch, 1, { groupId: 'g', memberId: 'm', shareSessionEpoch: 4, maxWaitMs: 0, minBytes: 1, maxBytes: 1000, maxRecords: 10, batchSize: 10, topics: [], forgottenTopicsData: [] })
    expect(noSession2.errorCode).toBe(ErrorCodes.SHARE_SESSION_NOT_FOUND)
    const leave = await c.request(ApiKeys.ShareGroupHeartbeat, 1, { groupId: 'g', memberId: 'm', memberEpoch: -1, rackId: null, subscribedTopicNames: null })
    expect(leave.memberEpoch).toBe(-1)
  })

  it('checks READ on the group and on the topics, as Kafka does', async () => {
    const b = await startTracked(open, { authorizerClassName: 'org.apache.kafka.metadata.authorizer.StandardAuthorizer', allowEveryoneIfNoAclFound: true })
    const c = await connectTracked(open, b)
    await createTopic(c, 'q', 1)
    const tid = await topicId(c, 'q')
    // Once topic q has an ACL (READ for someone else), anonymous may neither describe nor read it; group g has none.
    const acl = await c.request(ApiKeys.CreateAcls, 3, {
      creations: [{ resourceType: 2, resourceName: 'q', resourcePatternType: 3, principal: 'User:other', host: '*', operation: 3, permissionType: 3 }],
    })
    expect(acl.results[0].errorCode).toBe(ErrorCodes.NONE)
    const hb = await c.request(ApiKeys.ShareGroupHeartbeat, 1, { groupId: 'g', memberId: 'm', memberEpoch: 0, rackId: null, subscribedTopicNames: ['q'] })
    expect(hb.errorCode).toBe(ErrorCodes.TOPIC_AUTHORIZATION_FAILED)
    const m = new Member(c, 'g', 'm')
    await m.join(['other-topic'])
    const f = await m.fetch(tid)
    expect(f.r.errorCode).toBe(ErrorCodes.NONE)
    expect(f.p.errorCode).toBe(ErrorCodes.TOPIC_AUTHORIZATION_FAILED)
    // A group with an ACL for someone else is refused as a whole.
    const gacl = await c.request(ApiKeys.CreateAcls, 3, {
      creations: [{ resourceType: 3, resourceName: 'g', resourcePatternType: 3, principal: 'User:other', host: '*', operation: 3, permissionType: 3 }],
    })
    expect(gacl.results[0].errorCode).toBe(ErrorCodes.NONE)
    const refused = await c.request(ApiKeys.ShareGroupHeartbeat, 1, { groupId: 'g', memberId: 'm', memberEpoch: m.epoch, rackId: null, subscribedTopicNames: null })
    expect(refused.errorCode).toBe(ErrorCodes.GROUP_AUTHORIZATION_FAILED)
    const described = await c.request(ApiKeys.ShareGroupDescribe, 1, { groupIds: ['g'], includeAuthorizedOperations: false })
    expect(described.groups[0].errorCode).toBe(ErrorCodes.GROUP_AUTHORIZATION_FAILED)
  })

  it('every share handler\'s error answer encodes and decodes at every version it serves', () => {
    const registry = createRegistry()
    const samples: Record<number, unknown> = {
      [ApiKeys.ShareGroupHeartbeat]: { groupId: 'g', memberId: 'm', memberEpoch: 0, rackId: null, subscribedTopicNames: ['t'] },
      [ApiKeys.ShareGroupDescribe]: { groupIds: ['g'], includeAuthorizedOperations: false },
      [ApiKeys.ShareFetch]: { groupId: 'g', memberId: 'm', shareSessionEpoch: 0, maxWaitMs: 0, minBytes: 1, maxBytes: 1, maxRecords: 1, batchSize: 1, topics: [{ topicId: ZERO_UUID, partitions: [{ partitionIndex: 0, acknowledgementBatches: [{ firstOffset: 0n, lastOffset: 0n, acknowledgeTypes: [1] }] }] }], forgottenTopicsData: [] },
      [ApiKeys.ShareAcknowledge]: { groupId: 'g', memberId: 'm', shareSessionEpoch: 1, topics: [{ topicId: ZERO_UUID, partitions: [{ partitionIndex: 0, acknowledgementBatches: [] }] }] },
    }
    for (const [key, req] of Object.entries(samples)) {
      const h = registry.get(Number(key))!
      for (let v = h.minVersion; v <= h.maxVersion; v++) {
        const res = h.errorResponse(req, ErrorCodes.GROUP_AUTHORIZATION_FAILED, v)
        const w = new Writer()
        h.api.encodeResponse(w, res, v)
        expect(h.api.decodeResponse(new Reader(w.finish()), v), `${h.api.name} v${v}`).toBeDefined()
      }
    }
  })
})
