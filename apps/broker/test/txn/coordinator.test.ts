import { ApiKeys, ErrorCodes } from '@tidelog/protocol'
import { describe, expect, it } from 'vitest'
import { addPartitions, connect, describeProducers, describeTxn, endTxn, fetchPartition, init, produce, start } from './helpers.js'

describe('transaction coordinator over the wire', () => {
  it('TV1: init, add, produce, commit; the markers end the transaction in every partition', async () => {
    const { c } = await start()
    const i = await init(c, 'tx1')
    expect(i.errorCode).toBe(ErrorCodes.NONE)
    expect(i.producerEpoch).toBe(0)
    const { producerId: pid, producerEpoch: epoch } = i
    expect(await addPartitions(c, 'tx1', pid, epoch, [0, 1])).toEqual([0, 0])
    expect((await produce(c, 'tx1', pid, epoch, 0, 0)).errorCode).toBe(0)
    expect((await produce(c, 'tx1', pid, epoch, 1, 0)).errorCode).toBe(0)
    const open = await describeTxn(c, 'tx1')
    expect(open.transactionState).toBe('Ongoing')
    expect(open.topics).toEqual([{ topic: 't', partitions: [0, 1] }])
    expect((await describeProducers(c, 0)).activeProducers[0]).toMatchObject({ producerId: pid, currentTxnStartOffset: 0n })
    // Open transaction: the last stable offset stays at its first offset.
    expect((await fetchPartition(c, 0, 1)).lastStableOffset).toBe(0n)

    expect((await endTxn(c, 'tx1', pid, epoch, true)).errorCode).toBe(0)
    const done = await describeTxn(c, 'tx1')
    expect(done.transactionState).toBe('CompleteCommit')
    expect(done.topics).toEqual([])
    for (const p of [0, 1]) {
      const f = await fetchPartition(c, p)
      // Two records and the commit marker.
      expect(f.highWatermark).toBe(3n)
      expect((await describeProducers(c, p)).activeProducers[0].currentTxnStartOffset).toBe(-1n)
    }
    // A retried commit is answered as the first was; an abort now is a wrong transition.
    expect((await endTxn(c, 'tx1', pid, epoch, true)).errorCode).toBe(0)
    expect((await endTxn(c, 'tx1', pid, epoch, false)).errorCode).toBe(ErrorCodes.INVALID_TXN_STATE)
  })

  it('TV1 abort: the abort marker ends the transaction in its partition', async () => {
    const { c } = await start()
    const { producerId: pid, producerEpoch: epoch } = await init(c, 'tx-abort')
    await addPartitions(c, 'tx-abort', pid, epoch, [0])
    await produce(c, 'tx-abort', pid, epoch, 0, 0)
    expect((await endTxn(c, 'tx-abort', pid, epoch, false)).errorCode).toBe(0)
    expect((await describeTxn(c, 'tx-abort')).transactionState).toBe('CompleteAbort')
    expect((await fetchPartition(c, 0)).highWatermark).toBe(3n)
    expect((await describeProducers(c, 0)).activeProducers[0]).toMatchObject({ producerId: pid, producerEpoch: epoch, currentTxnStartOffset: -1n })
    // read_committed: the aborted transaction is listed, and the stable offset is past the marker.
    const f = await fetchPartition(c, 0, 1)
    expect(f.abortedTransactions).toEqual([{ producerId: pid, firstOffset: 0n }])
    expect(f.lastStableOffset).toBe(3n)
  })

  it('KIP-890 part 1: a transactional produce to a partition not in the transaction is refused and nothing is appended', async () => {
    const { c } = await start()
    const { producerId: pid, producerEpoch: epoch } = await init(c, 'tx-verify')
    const r = await produce(c, 'tx-verify', pid, epoch, 0, 0)
    // Produce v11 knows TRANSACTION_ABORTABLE (KIP-890); older versions: apps/broker/test/txn-abortable.test.ts.
    expect(r.errorCode).toBe(ErrorCodes.TRANSACTION_ABORTABLE)
    expect((await fetchPartition(c, 0)).highWatermark).toBe(0n)
    // verifyOnly (AddPartitionsToTxn v4+) reports the same without adding.
    const v = await c.request(ApiKeys.AddPartitionsToTxn, 4, {
      transactions: [{ transactionalId: 'tx-verify', producerId: pid, producerEpoch: epoch, verifyOnly: true, topics: [{ name: 't', partitions: [0] }] }],
    })
    expect(v.resultsByTransaction[0].topicResults[0].resultsByPartition[0].partitionErrorCode).toBe(ErrorCodes.INVALID_TXN_STATE)
    expect((await describeTxn(c, 'tx-verify')).transactionState).toBe('Empty')
  })

  it('verification off (transaction.partition.verification.enable=false): the produce is appended as before KIP-890', async () => {
    const { c } = await start({ transactionPartitionVerificationEnable: false })
    const { producerId: pid, producerEpoch: epoch } = await init(c, 'tx-noverify')
    expect((await produce(c, 'tx-noverify', pid, epoch, 0, 0)).errorCode).toBe(0)
  })

  it('TV2: Produce v12 adds the partition, EndTxn v5 bumps the epoch at every end and returns it', async () => {
    const { c } = await start()
    const { producerId: pid, producerEpoch: epoch } = await init(c, 'tx2')
    expect((await produce(c, 'tx2', pid, epoch, 1, 0, { version: 12 })).errorCode).toBe(0)
    expect((await describeTxn(c, 'tx2')).topics).toEqual([{ topic: 't', partitions: [1] }])
    const e = await endTxn(c, 'tx2', pid, epoch, true, 5)
    expect(e).toMatchObject({ errorCode: 0, producerId: pid, producerEpoch: epoch + 1 })
    // The marker carries the bumped epoch (KIP-890 part 2).
    expect((await fetchPartition(c, 1)).highWatermark).toBe(3n)
    expect((await describeProducers(c, 1)).activeProducers[0]).toMatchObject({ producerEpoch: epoch + 1, currentTxnStartOffset: -1n })
    // The retry of that EndTxn (old epoch) gets the same answer; the old epoch cannot start anything.
    expect(await endTxn(c, 'tx2', pid, epoch, true, 5)).toMatchObject({ errorCode: 0, producerId: pid, producerEpoch: epoch + 1 })
    expect((await produce(c, 'tx2', pid, epoch, 1, 2, { version: 12 })).errorCode).toBe(ErrorCodes.INVALID_PRODUCER_EPOCH)
    // The next transaction with the new epoch; an abort with nothing open still bumps.
    expect((await produce(c, 'tx2', pid, epoch + 1, 1, 0, { version: 12 })).errorCode).toBe(0)
    expect(await endTxn(c, 'tx2', pid, epoch + 1, false, 5)).toMatchObject({ errorCode: 0, producerEpoch: epoch + 2 })
    expect(await endTxn(c, 'tx2', pid, epoch + 2, false, 5)).toMatchObject({ errorCode: 0, producerEpoch: epoch + 3 })
    expect((await endTxn(c, 'tx2', pid, epoch + 3, true, 5)).errorCode).toBe(ErrorCodes.INVALID_TXN_STATE)
  })

  it('fencing: a second InitProducerId aborts the open transaction; the old producer gets the error of its version', async () => {
    const { b, c } = await start()
    const old = await init(c, 'tx-fence')
    await addPartitions(c, 'tx-fence', old.producerId, old.producerEpoch, [0])
    await produce(c, 'tx-fence', old.producerId, old.producerEpoch, 0, 0)
    const c2 = await connect(b)
    // Kafka answers CONCURRENT_TRANSACTIONS while it aborts the open transaction; the new producer retries.
    expect((await init(c2, 'tx-fence')).errorCode).toBe(ErrorCodes.CONCURRENT_TRANSACTIONS)
    expect((await describeTxn(c2, 'tx-fence')).transactionState).toBe('CompleteAbort')
    const fresh = await init(c2, 'tx-fence')
    expect(fresh.errorCode).toBe(0)
    expect(fresh.producerId).toBe(old.producerId)
    expect(fresh.producerEpoch).toBe(old.producerEpoch + 2)
    // The zombie: its data was aborted under the fencing epoch, and each API answers it as Kafka does by version.
    expect((await describeProducers(c, 0)).activeProducers[0]).toMatchObject({ producerEpoch: old.producerEpoch + 1, currentTxnStartOffset: -1n })
    expect((await endTxn(c, 'tx-fence', old.producerId, old.producerEpoch, true, 1)).errorCode).toBe(ErrorCodes.INVALID_PRODUCER_EPOCH)
    expect((await endTxn(c, 'tx-fence', old.producerId, old.producerEpoch, true, 2)).errorCode).toBe(ErrorCodes.PRODUCER_FENCED)
    expect(await addPartitions(c, 'tx-fence', old.producerId, old.producerEpoch, [1], 1)).toEqual([ErrorCodes.INVALID_PRODUCER_EPOCH])
    expect(await addPartitions(c, 'tx-fence', old.producerId, old.producerEpoch, [1], 3)).toEqual([ErrorCodes.PRODUCER_FENCED])
    expect((await produce(c, 'tx-fence', old.producerId, old.producerEpoch, 0, 2)).errorCode).toBe(ErrorCodes.INVALID_PRODUCER_EPOCH)
  })

  it('KIP-360: InitProducerId with the current id and epoch bumps it; a stale pair is fenced', async () => {
    const { c } = await start()
    const a = await init(c, 'tx-360')
    const b = await init(c, 'tx-360', 4, { producerId: a.producerId, producerEpoch: a.producerEpoch })
    expect(b).toMatchObject({ errorCode: 0, producerId: a.producerId, producerEpoch: a.producerEpoch + 1 })
    // Retried with the same (now previous) pair: the same answer, no second bump.
    expect(await init(c, 'tx-360', 4, { producerId: a.producerId, producerEpoch: a.producerEpoch })).toMatchObject({ errorCode: 0, producerEpoch: a.producerEpoch + 1 })
    expect((await init(c, 'tx-360', 4, { producerId: a.producerId + 99n, producerEpoch: 0 })).errorCode).toBe(ErrorCodes.PRODUCER_FENCED)
    expect((await init(c, 'tx-360', 3, { producerId: a.producerId + 99n, producerEpoch: 0 })).errorCode).toBe(ErrorCodes.INVALID_PRODUCER_EPOCH)
  })

  it('transaction.timeout.ms above transaction.max.timeout.ms, an empty id, and an unknown id are refused by name', async () => {
    const { c } = await start({ transactionMaxTimeoutMs: 10_000 })
    expect((await init(c, 'tx-t', 5, { timeoutMs: 10_001 })).errorCode).toBe(ErrorCodes.INVALID_TRANSACTION_TIMEOUT)
    expect((await init(c, 'tx-t', 5, { timeoutMs: 0 })).errorCode).toBe(ErrorCodes.INVALID_TRANSACTION_TIMEOUT)
    expect((await init(c, '', 5)).errorCode).toBe(ErrorCodes.INVALID_REQUEST)
    expect((await endTxn(c, 'nobody', 1n, 0, true)).errorCode).toBe(ErrorCodes.INVALID_PRODUCER_ID_MAPPING)
    expect((await describeTxn(c, 'nobody')).errorCode).toBe(ErrorCodes.TRANSACTIONAL_ID_NOT_FOUND)
    const i = await init(c, 'tx-t', 5, { timeoutMs: 10_000 })
    expect(await addPartitions(c, 'tx-t', i.producerId, i.producerEpoch, [0, 7])).toEqual([ErrorCodes.OPERATION_NOT_ATTEMPTED, ErrorCodes.UNKNOWN_TOPIC_OR_PARTITION])
    expect((await endTxn(c, 'tx-t', i.producerId, i.producerEpoch, true)).errorCode).toBe(ErrorCodes.INVALID_TXN_STATE)
  })

  it('an open transaction past its timeout is aborted and its producer fenced', async () => {
    const { c } = await start({ transactionAbortTimedOutTransactionCleanupIntervalMs: 20 })
    const i = await init(c, 'tx-timeout', 5, { timeoutMs: 50 })
    await addPartitions(c, 'tx-timeout', i.producerId, i.producerEpoch, [0])
    await produce(c, 'tx-timeout', i.producerId, i.producerEpoch, 0, 0)
    const deadline = Date.now() + 10_000
    while ((await describeTxn(c, 'tx-timeout')).transactionState !== 'CompleteAbort') {
      if (Date.now() > deadline) throw new Error('the transaction was never aborted')
      await new Promise((r) => setTimeout(r, 20))
    }
    expect((await describeTxn(c, 'tx-timeout')).producerEpoch).toBe(i.producerEpoch + 1)
    expect((await endTxn(c, 'tx-timeout', i.producerId, i.producerEpoch, true)).errorCode).toBe(ErrorCodes.PRODUCER_FENCED)
    expect((await describeProducers(c, 0)).activeProducers[0]).toMatchObject({ producerEpoch: i.producerEpoch + 1, currentTxnStartOffset: -1n })
  })

  it('TV2: a timed-out transaction is aborted with a bumped epoch; InitProducerId on an open one aborts it first', async () => {
    const { b, c } = await start({ transactionAbortTimedOutTransactionCleanupIntervalMs: 20 })
    const i = await init(c, 'tv2-timeout', 5, { timeoutMs: 50 })
    expect((await produce(c, 'tv2-timeout', i.producerId, i.producerEpoch, 0, 0, { version: 12 })).errorCode).toBe(0)
    const deadline = Date.now() + 10_000
    while ((await describeTxn(c, 'tv2-timeout')).transactionState !== 'CompleteAbort') {
      if (Date.now() > deadline) throw new Error('the transaction was never aborted')
      await new Promise((r) => setTimeout(r, 20))
    }
    expect((await describeTxn(c, 'tv2-timeout')).producerEpoch).toBe(i.producerEpoch + 1)
    expect((await fetchPartition(c, 0, 1)).abortedTransactions).toEqual([{ producerId: i.producerId, firstOffset: 0n }])
    expect((await endTxn(c, 'tv2-timeout', i.producerId, i.producerEpoch, true, 5)).errorCode).toBe(ErrorCodes.INVALID_TXN_STATE)

    const j = await init(c, 'tv2-open')
    expect((await produce(c, 'tv2-open', j.producerId, j.producerEpoch, 1, 0, { version: 12 })).errorCode).toBe(0)
    const c2 = await connect(b)
    expect((await init(c2, 'tv2-open')).errorCode).toBe(ErrorCodes.CONCURRENT_TRANSACTIONS)
    expect(await init(c2, 'tv2-open')).toMatchObject({ errorCode: 0, producerEpoch: j.producerEpoch + 2 })
    expect((await produce(c, 'tv2-open', j.producerId, j.producerEpoch, 1, 2, { version: 12 })).errorCode).toBe(ErrorCodes.INVALID_PRODUCER_EPOCH)
  })

  it('ListTransactions filters by state, producer id and (v1) duration; unknown state names come back', async () => {
    const { c } = await start()
    const a = await init(c, 'l-a')
    const b = await init(c, 'l-b')
    await addPartitions(c, 'l-a', a.producerId, a.producerEpoch, [0])
    const all = await c.request(ApiKeys.ListTransactions, 1, { stateFilters: [], producerIdFilters: [], durationFilter: -1n })
    expect(all.transactionStates.map((t: { transactionalId: string }) => t.transactionalId).sort()).toEqual(['l-a', 'l-b'])
    const ongoing = await c.request(ApiKeys.ListTransactions, 0, { stateFilters: ['Ongoing', 'Bogus'], producerIdFilters: [] })
    expect(ongoing.transactionStates).toEqual([{ transactionalId: 'l-a', producerId: a.producerId, transactionState: 'Ongoing' }])
    expect(ongoing.unknownStateFilters).toEqual(['Bogus'])
    const byPid = await c.request(ApiKeys.ListTransactions, 0, { stateFilters: [], producerIdFilters: [b.producerId] })
    expect(byPid.transactionStates.map((t: { transactionalId: string }) => t.transactionalId)).toEqual(['l-b'])
    const long = await c.request(ApiKeys.ListTransactions, 1, { stateFilters: [], producerIdFilters: [], durationFilter: 3_600_000n })
    expect(long.transactionStates).toEqual([])
  })
})
