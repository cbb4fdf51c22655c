import { ApiKeys, ErrorCodes } from '@tidelog/protocol'
import { describe, expect, it } from 'vitest'
import { describeProducers, fetchPartition, init, produce, start } from './helpers.js'

describe('transaction admin APIs', () => {
  it('a hanging transaction is found with DescribeProducers and ended with WriteTxnMarkers (kafka-transactions.sh find-hanging / abort)', async () => {
    // Without verification a late write opens a transaction the coordinator does not know (KIP-890's "hanging transaction").
    const { c } = await start({ transactionPartitionVerificationEnable: false })
    const { producerId: pid, producerEpoch: epoch } = await init(c, 'tx-hang')
    expect((await produce(c, 'tx-hang', pid, epoch, 0, 0)).errorCode).toBe(0)
    const hanging = await describeProducers(c, 0)
    expect(hanging).toMatchObject({ errorCode: 0, activeProducers: [{ producerId: pid, producerEpoch: epoch, lastSequence: 1, currentTxnStartOffset: 0n }] })

    const r = await c.request(ApiKeys.WriteTxnMarkers, 1, {
      markers: [{ producerId: pid, producerEpoch: epoch, transactionResult: false, topics: [{ name: 't', partitionIndexes: [0, 9] }], coordinatorEpoch: -1 }],
    })
    expect(r.markers[0].topics[0].partitions).toEqual([
      { partitionIndex: 0, errorCode: 0 },
      { partitionIndex: 9, errorCode: ErrorCodes.UNKNOWN_TOPIC_OR_PARTITION },
    ])
    expect((await describeProducers(c, 0)).activeProducers[0].currentTxnStartOffset).toBe(-1n)
    expect((await fetchPartition(c, 0)).highWatermark).toBe(3n)
    // read_committed drops the aborted records (the aborted list names them) and is stable past the marker.
    const committed = await fetchPartition(c, 0, 1)
    expect(committed.abortedTransactions).toEqual([{ producerId: pid, firstOffset: 0n }])
    expect(committed.lastStableOffset).toBe(3n)
  })

  it('DescribeProducers of an unknown partition names it; an idempotent producer shows no transaction', async () => {
    const { c } = await start()
    const r = await c.request(ApiKeys.DescribeProducers, 0, { topics: [{ name: 'nope', partitionIndexes: [0] }] })
    expect(r.topics[0].partitions[0].errorCode).toBe(ErrorCodes.UNKNOWN_TOPIC_OR_PARTITION)
    const idem = await c.request(ApiKeys.InitProducerId, 4, { transactionalId: null, transactionTimeoutMs: 60000, producerId: -1n, producerEpoch: -1 })
    expect((await produce(c, null, idem.producerId, 0, 1, 0, { transactional: false })).errorCode).toBe(0)
    expect((await describeProducers(c, 1)).activeProducers).toEqual([
      expect.objectContaining({ producerId: idem.producerId, producerEpoch: 0, lastSequence: 1, currentTxnStartOffset: -1n }),
    ])
  })

  it('FindCoordinator for a transactional id (key type 1) names this broker', async () => {
    const { b, c } = await start()
    const r = await c.request(ApiKeys.FindCoordinator, 4, { keyType: 1, coordinatorKeys: ['tx-a', 'tx-b'] })
    expect(r.coordinators).toEqual([
      expect.objectContaining({ key: 'tx-a', nodeId: b.nodeId, port: b.port, errorCode: 0 }),
      expect.objectContaining({ key: 'tx-b', nodeId: b.nodeId, port: b.port, errorCode: 0 }),
    ])
  })
})
