import { ApiKeys, ErrorCodes } from '@tidelog/protocol'
import { cpSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { silentLogger } from '../../src/logger.js'
import { TxnState } from '../../src/txn/state.js'
import { TransactionStore } from '../../src/txn/store.js'
import { tempDir } from '../helpers/tmp.js'
import { addPartitions, describeProducers, describeTxn, fetchPartition, init, produce, start } from './helpers.js'

/** The data directory as a kill -9 leaves it: every write the running broker made, nothing from a shutdown. */
function crashImage(dataDir: string): string {
  const copy = tempDir('tidelog-txn-crash-')
  cpSync(dataDir, copy, { recursive: true })
  return copy
}

describe('the transaction log across crashes', () => {
  it('a crash after PrepareCommit: the restart writes the markers and the group offsets become visible', async () => {
    const s = await start()
    const { producerId: pid, producerEpoch: epoch } = await init(s.c, 'tx-crash')
    await addPartitions(s.c, 'tx-crash', pid, epoch, [0, 1])
    await produce(s.c, 'tx-crash', pid, epoch, 0, 0)
    await produce(s.c, 'tx-crash', pid, epoch, 1, 0)
    await s.c.request(ApiKeys.AddOffsetsToTxn, 3, { transactionalId: 'tx-crash', producerId: pid, producerEpoch: epoch, groupId: 'gc' })
    await s.c.request(ApiKeys.TxnOffsetCommit, 3, {
      transactionalId: 'tx-crash', groupId: 'gc', producerId: pid, producerEpoch: epoch, generationId: -1, memberId: '', groupInstanceId: null,
      topics: [{ name: 't', partitions: [{ partitionIndex: 0, committedOffset: 2n, committedLeaderEpoch: -1, committedMetadata: null }] }],
    })
    const image = crashImage(s.dataDir)
    await s.close()
    // The prepare record is the last thing the crashed broker wrote: no marker made it.
    const store = TransactionStore.open(image, silentLogger)
    const t = store.all().get('tx-crash')!
    expect(t.state).toBe(TxnState.Ongoing)
    store.put('tx-crash', { ...t, state: TxnState.PrepareCommit })
    await store.close()

    const s2 = await start({}, image)
    expect((await describeTxn(s2.c, 'tx-crash')).transactionState).toBe('CompleteCommit')
    for (const p of [0, 1]) {
      expect((await fetchPartition(s2.c, p)).highWatermark).toBe(3n)
      expect((await describeProducers(s2.c, p)).activeProducers[0].currentTxnStartOffset).toBe(-1n)
    }
    const f = await s2.c.request(ApiKeys.OffsetFetch, 7, { groupId: 'gc', topics: [{ name: 't', partitionIndexes: [0] }], requireStable: true })
    expect(f.topics[0].partitions[0]).toMatchObject({ committedOffset: 2n, errorCode: 0 })
  })

  it('a crash with a transaction open: after the restart it is aborted once its timeout passes', async () => {
    const s = await start()
    const i = await init(s.c, 'tx-open', 5, { timeoutMs: 100 })
    await addPartitions(s.c, 'tx-open', i.producerId, i.producerEpoch, [0])
    await produce(s.c, 'tx-open', i.producerId, i.producerEpoch, 0, 0)
    const image = crashImage(s.dataDir)
    await s.close()
    const s2 = await start({ transactionAbortTimedOutTransactionCleanupIntervalMs: 20 }, image)
    const deadline = Date.now() + 10_000
    while ((await describeTxn(s2.c, 'tx-open')).transactionState !== 'CompleteAbort') {
      if (Date.now() > deadline) throw new Error('the open transaction was never aborted')
      await new Promise((r) => setTimeout(r, 20))
    }
    expect((await describeProducers(s2.c, 0)).activeProducers[0]).toMatchObject({ producerEpoch: i.producerEpoch + 1, currentTxnStartOffset: -1n })
    // The fenced producer cannot go on; a new InitProducerId can.
    expect((await produce(s2.c, 'tx-open', i.producerId, i.producerEpoch, 0, 2)).errorCode).toBe(ErrorCodes.INVALID_PRODUCER_EPOCH)
    expect((await init(s2.c, 'tx-open')).errorCode).toBe(0)
  })
})
