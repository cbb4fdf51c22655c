import { ApiKeys, ErrorCodes } from '@tidelog/protocol'
import { describe, expect, it } from 'vitest'
import type { RawClient } from '../helpers/raw-client.js'
import { addPartitions, endTxn, init, produce, start } from './helpers.js'

async function addOffsets(c: RawClient, id: string, producerId: bigint, producerEpoch: number, groupId: string, version = 3) {
  return (await c.request(ApiKeys.AddOffsetsToTxn, version, { transactionalId: id, producerId, producerEpoch, groupId })).errorCode as number
}

async function txnCommit(
  c: RawClient,
  id: string,
  producerId: bigint,
  producerEpoch: number,
  groupId: string,
  offset: bigint,
  opts: { version?: number; generationId?: number; memberId?: string } = {},
) {
  const r = await c.request(ApiKeys.TxnOffsetCommit, opts.version ?? 3, {
    transactionalId: id,
    groupId,
    producerId,
    producerEpoch,
    generationId: opts.generationId ?? -1,
    memberId: opts.memberId ?? '',
    groupInstanceId: null,
    topics: [{ name: 't', partitions: [{ partitionIndex: 0, committedOffset: offset, committedLeaderEpoch: -1, committedMetadata: 'm' }] }],
  })
  return r.topics[0].partitions[0].errorCode as number
}

async function fetchOffset(c: RawClient, groupId: string, requireStable: boolean) {
  const r = await c.request(ApiKeys.OffsetFetch, 7, { groupId, topics: [{ name: 't', partitionIndexes: [0] }], requireStable })
  return r.topics[0].partitions[0] as { committedOffset: bigint; errorCode: number }
}

async function joinedMember(c: RawClient, groupId: string) {
  const meta = Buffer.from([0, 1, 0, 0, 0, 1, 0, 1, 0x74, 0, 0, 0, 0])
  const body = { groupId, sessionTimeoutMs: 10_000, rebalanceTimeoutMs: 10_000, memberId: '', groupInstanceId: null, protocolType: 'consumer', protocols: [{ name: 'range', metadata: meta }], reason: null }
  let j = await c.request(ApiKeys.JoinGroup, 9, body)
  if (j.errorCode === ErrorCodes.MEMBER_ID_REQUIRED) j = await c.request(ApiKeys.JoinGroup, 9, { ...body, memberId: j.memberId })
  expect(j.errorCode).toBe(0)
  return { memberId: j.memberId as string, generationId: j.generationId as number }
}

describe('transactional offsets', () => {
  it('pending until the commit marker: OffsetFetch shows the old offset, requireStable answers UNSTABLE_OFFSET_COMMIT', async () => {
    const { c } = await start()
    const { producerId: pid, producerEpoch: epoch } = await init(c, 'tx-o')
    await addPartitions(c, 'tx-o', pid, epoch, [0])
    await produce(c, 'tx-o', pid, epoch, 0, 0)
    expect(await addOffsets(c, 'tx-o', pid, epoch, 'g1')).toBe(0)
    expect(await txnCommit(c, 'tx-o', pid, epoch, 'g1', 42n)).toBe(0)
    expect(await fetchOffset(c, 'g1', false)).toMatchObject({ committedOffset: -1n, errorCode: 0 })
    expect(await fetchOffset(c, 'g1', true)).toMatchObject({ errorCode: ErrorCodes.UNSTABLE_OFFSET_COMMIT })
    expect((await endTxn(c, 'tx-o', pid, epoch, true)).errorCode).toBe(0)
    expect(await fetchOffset(c, 'g1', true)).toMatchObject({ committedOffset: 42n, errorCode: 0 })
  })

  it('aborted: the pending offsets are dropped', async () => {
    const { c } = await start()
    const { producerId: pid, producerEpoch: epoch } = await init(c, 'tx-oa')
    await addOffsets(c, 'tx-oa', pid, epoch, 'g2')
    await txnCommit(c, 'tx-oa', pid, epoch, 'g2', 7n)
    expect((await endTxn(c, 'tx-oa', pid, epoch, false)).errorCode).toBe(0)
    expect(await fetchOffset(c, 'g2', true)).toMatchObject({ committedOffset: -1n, errorCode: 0 })
  })

  it('TV1 without AddOffsetsToTxn is INVALID_TXN_STATE; v5 (TV2) adds the group itself', async () => {
    const { c } = await start()
    const { producerId: pid, producerEpoch: epoch } = await init(c, 'tx-o5')
    expect(await txnCommit(c, 'tx-o5', pid, epoch, 'g5', 3n)).toBe(ErrorCodes.INVALID_TXN_STATE)
    expect(await txnCommit(c, 'tx-o5', pid, epoch, 'g5', 3n, { version: 5 })).toBe(0)
    const e = await endTxn(c, 'tx-o5', pid, epoch, true, 5)
    expect(e.errorCode).toBe(0)
    expect(await fetchOffset(c, 'g5', true)).toMatchObject({ committedOffset: 3n, errorCode: 0 })
  })

  it('KIP-447: a stale generation or an unknown member is fenced by the group; a fenced producer by its epoch', async () => {
    const { c } = await start()
    const member = await joinedMember(c, 'g447')
    const { producerId: pid, producerEpoch: epoch } = await init(c, 'tx-447')
    await addOffsets(c, 'tx-447', pid, epoch, 'g447')
    expect(await txnCommit(c, 'tx-447', pid, epoch, 'g447', 1n, { generationId: member.generationId + 1, memberId: member.memberId })).toBe(ErrorCodes.ILLEGAL_GENERATION)
    expect(await txnCommit(c, 'tx-447', pid, epoch, 'g447', 1n, { generationId: member.generationId, memberId: 'someone-else' })).toBe(ErrorCodes.UNKNOWN_MEMBER_ID)
    expect(await txnCommit(c, 'tx-447', pid, epoch, 'g447', 1n, { generationId: member.generationId, memberId: member.memberId })).toBe(0)
    expect(await txnCommit(c, 'tx-447', pid, epoch + 1, 'g447', 1n, { version: 2 })).toBe(ErrorCodes.INVALID_PRODUCER_EPOCH)
    expect(await txnCommit(c, 'tx-447', pid, epoch + 1, 'g447', 1n, { version: 3 })).toBe(ErrorCodes.PRODUCER_FENCED)
  })

  it('pending offsets survive a restart and complete with the commit after it', async () => {
    const s = await start()
    const { producerId: pid, producerEpoch: epoch } = await init(s.c, 'tx-or')
    await addOffsets(s.c, 'tx-or', pid, epoch, 'gr')
    await txnCommit(s.c, 'tx-or', pid, epoch, 'gr', 11n)
    await s.close()
    const s2 = await start({}, s.dataDir)
    expect(await fetchOffset(s2.c, 'gr', true)).toMatchObject({ errorCode: ErrorCodes.UNSTABLE_OFFSET_COMMIT })
    // The group exists through its pending offsets alone, and offset expiry keeps it.
    const listed = await s2.c.request(ApiKeys.ListGroups, 4, { statesFilter: [] })
    expect(listed.groups.map((g: { groupId: string }) => g.groupId)).toContain('gr')
    expect((await endTxn(s2.c, 'tx-or', pid, epoch, true)).errorCode).toBe(0)
    expect(await fetchOffset(s2.c, 'gr', false)).toMatchObject({ committedOffset: 11n, errorCode: 0 })
  })
})
