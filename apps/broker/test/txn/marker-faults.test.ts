import { ErrorCodes } from '@tidelog/protocol'
import { describe, expect, it } from 'vitest'
import { faultyFs } from '../helpers/faulty-fs.js'
import { addPartitions, describeProducers, describeTxn, endTxn, fetchPartition, init, produce, start } from './helpers.js'

describe('markers a partition cannot take', () => {
  it('a storage error on one partition leaves the commit prepared (CONCURRENT_TRANSACTIONS to a new producer); the restart completes it', async () => {
    const fs = faultyFs()
    const s = await start({ fs })
    const { producerId: pid, producerEpoch: epoch } = await init(s.c, 'tx-eio')
    await addPartitions(s.c, 'tx-eio', pid, epoch, [0, 1])
    await produce(s.c, 'tx-eio', pid, epoch, 0, 0)
    await produce(s.c, 'tx-eio', pid, epoch, 1, 0)
    fs.plan.failWrite = (path) => path.includes('t-1') && path.endsWith('.log')
    // As Kafka: the commit is decided once PrepareCommit is in the transaction log; markers follow.
    expect((await endTxn(s.c, 'tx-eio', pid, epoch, true)).errorCode).toBe(0)
    expect((await describeTxn(s.c, 'tx-eio')).transactionState).toBe('PrepareCommit')
    expect((await init(s.c, 'tx-eio')).errorCode).toBe(ErrorCodes.CONCURRENT_TRANSACTIONS)
    expect((await endTxn(s.c, 'tx-eio', pid, epoch, true)).errorCode).toBe(ErrorCodes.CONCURRENT_TRANSACTIONS)
    expect((await endTxn(s.c, 'tx-eio', pid, epoch, false)).errorCode).toBe(ErrorCodes.INVALID_TXN_STATE)
    // The partition that took its marker is already stable.
    expect((await describeProducers(s.c, 0)).activeProducers[0].currentTxnStartOffset).toBe(-1n)
    fs.plan.failWrite = undefined
    await s.close().catch(() => {})

    const s2 = await start({}, s.dataDir)
    expect((await describeTxn(s2.c, 'tx-eio')).transactionState).toBe('CompleteCommit')
    expect((await describeProducers(s2.c, 1)).activeProducers[0].currentTxnStartOffset).toBe(-1n)
    expect((await fetchPartition(s2.c, 1, 1)).lastStableOffset).toBe((await fetchPartition(s2.c, 1)).highWatermark)
    expect((await init(s2.c, 'tx-eio')).errorCode).toBe(0)
  })
})
