/**
 * TRANSACTION_ABORTABLE (120, KIP-890 part 1; Kafka 3.8+), over a socket: what verification
 * answers for a partition or group that is not in the producer's open transaction, by request
 * version as Kafka answers it. The versions that know the code get it (Produce v11+,
 * AddPartitionsToTxn v5 verifyOnly, TxnOffsetCommit v4); older ones get INVALID_TXN_STATE. Either
 * way nothing is appended or committed, and the transaction can still be aborted and the
 * producer go on (the code is abortable, not fatal).
 */
import { ApiKeys, ErrorCodes } from '@tidelog/protocol'
import { describe, expect, it } from 'vitest'
import type { RawClient } from './helpers/raw-client.js'
import { addPartitions, describeTxn, endTxn, fetchPartition, init, produce, start } from './txn/helpers.js'

async function verifyOnly(c: RawClient, version: number, id: string, producerId: bigint, producerEpoch: number, partition: number): Promise<number> {
  const r = await c.request(ApiKeys.AddPartitionsToTxn, version, {
    transactions: [{ transactionalId: id, producerId, producerEpoch, verifyOnly: true, topics: [{ name: 't', partitions: [partition] }] }],
  })
  return r.resultsByTransaction[0].topicResults[0].resultsByPartition[0].partitionErrorCode as number
}

async function txnOffsetCommit(c: RawClient, version: number, id: string, producerId: bigint, producerEpoch: number, groupId: string): Promise<number> {
  const r = await c.request(ApiKeys.TxnOffsetCommit, version, {
    transactionalId: id,
    groupId,
    producerId,
    producerEpoch,
    generationId: -1,
    memberId: '',
    groupInstanceId: null,
    topics: [{ name: 't', partitions: [{ partitionIndex: 0, committedOffset: 9n, committedLeaderEpoch: -1, committedMetadata: '' }] }],
  })
  return r.topics[0].partitions[0].errorCode as number
}

describe('TRANSACTION_ABORTABLE (KIP-890) by request version', () => {
  it('Produce: v11 gets TRANSACTION_ABORTABLE, v3-v10 INVALID_TXN_STATE, for a partition not in the transaction; nothing is appended', async () => {
    const { c } = await start()
    const { producerId: pid, producerEpoch: epoch } = await init(c, 'tx-ab-p')
    // Partition 0 is in the transaction, partition 1 is not.
    expect(await addPartitions(c, 'tx-ab-p', pid, epoch, [0])).toEqual([0])
    for (const [version, want] of [[11, ErrorCodes.TRANSACTION_ABORTABLE], [10, ErrorCodes.INVALID_TXN_STATE], [9, ErrorCodes.INVALID_TXN_STATE], [3, ErrorCodes.INVALID_TXN_STATE]] as const) {
      expect((await produce(c, 'tx-ab-p', pid, epoch, 1, 0, { version })).errorCode, `Produce v${version}`).toBe(want)
    }
    expect((await fetchPartition(c, 1)).highWatermark).toBe(0n)
    // Still the same open transaction: its partition takes records, and the abort ends it.
    expect((await produce(c, 'tx-ab-p', pid, epoch, 0, 0)).errorCode).toBe(0)
    expect((await describeTxn(c, 'tx-ab-p')).transactionState).toBe('Ongoing')
    expect((await endTxn(c, 'tx-ab-p', pid, epoch, false)).errorCode).toBe(0)
    // The producer goes on: a new transaction on partition 1 commits.
    expect(await addPartitions(c, 'tx-ab-p', pid, epoch, [1])).toEqual([0])
    expect((await produce(c, 'tx-ab-p', pid, epoch, 1, 0)).errorCode).toBe(0)
    expect((await endTxn(c, 'tx-ab-p', pid, epoch, true)).errorCode).toBe(0)
    const f = await fetchPartition(c, 1, 1)
    expect(f.lastStableOffset).toBe(f.highWatermark)
    expect(f.abortedTransactions).toEqual([])
  })

  it('a transaction that already ended: the late produce is refused the same way (the write cannot slip into the next transaction)', async () => {
    const { c } = await start()
    const { producerId: pid, producerEpoch: epoch } = await init(c, 'tx-ab-late')
    await addPartitions(c, 'tx-ab-late', pid, epoch, [0])
    expect((await endTxn(c, 'tx-ab-late', pid, epoch, true)).errorCode).toBe(0)
    expect((await produce(c, 'tx-ab-late', pid, epoch, 0, 0, { version: 11 })).errorCode).toBe(ErrorCodes.TRANSACTION_ABORTABLE)
    expect((await produce(c, 'tx-ab-late', pid, epoch, 0, 0, { version: 8 })).errorCode).toBe(ErrorCodes.INVALID_TXN_STATE)
    expect((await fetchPartition(c, 0)).highWatermark).toBe(1n) // the commit marker only
  })

  it('AddPartitionsToTxn verifyOnly: v5 TRANSACTION_ABORTABLE, v4 INVALID_TXN_STATE; a partition in the transaction is NONE', async () => {
    const { c } = await start()
    const { producerId: pid, producerEpoch: epoch } = await init(c, 'tx-ab-v')
    await addPartitions(c, 'tx-ab-v', pid, epoch, [0])
    expect(await verifyOnly(c, 5, 'tx-ab-v', pid, epoch, 1)).toBe(ErrorCodes.TRANSACTION_ABORTABLE)
    expect(await verifyOnly(c, 4, 'tx-ab-v', pid, epoch, 1)).toBe(ErrorCodes.INVALID_TXN_STATE)
    expect(await verifyOnly(c, 5, 'tx-ab-v', pid, epoch, 0)).toBe(ErrorCodes.NONE)
    // Fencing keeps its own code, whatever the version.
    expect(await verifyOnly(c, 5, 'tx-ab-v', pid, epoch + 1, 0)).toBe(ErrorCodes.PRODUCER_FENCED)
  })

  it('TxnOffsetCommit without AddOffsetsToTxn (TV1): v4 TRANSACTION_ABORTABLE, v3 INVALID_TXN_STATE; v5 adds the group itself', async () => {
    const { c } = await start()
    const { producerId: pid, producerEpoch: epoch } = await init(c, 'tx-ab-o')
    await addPartitions(c, 'tx-ab-o', pid, epoch, [0])
    expect(await txnOffsetCommit(c, 4, 'tx-ab-o', pid, epoch, 'g-ab')).toBe(ErrorCodes.TRANSACTION_ABORTABLE)
    expect(await txnOffsetCommit(c, 3, 'tx-ab-o', pid, epoch, 'g-ab')).toBe(ErrorCodes.INVALID_TXN_STATE)
    expect((await endTxn(c, 'tx-ab-o', pid, epoch, false)).errorCode).toBe(0)
    const off = await c.request(ApiKeys.OffsetFetch, 7, { groupId: 'g-ab', topics: [{ name: 't', partitionIndexes: [0] }], requireStable: true })
    expect(off.topics[0].partitions[0].committedOffset).toBe(-1n)
  })
})
