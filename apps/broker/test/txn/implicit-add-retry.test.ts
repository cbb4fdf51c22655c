import { ErrorCodes } from '@tidelog/protocol'
import { describe, expect, it, vi } from 'vitest'
import { TransactionCoordinator } from '../../src/txn/coordinator.js'
import { faultyFs } from '../helpers/faulty-fs.js'
import { describeTxn, endTxn, init, produce, start } from './helpers.js'

/**
 * Produce v12 (transaction version 2) adds its partition to the transaction
 * itself. Right after an EndTxn the last transaction may still be writing its
 * markers; Kafka 4's broker then retries the add every
 * add.partitions.to.txn.retry.backoff.ms (20) for up to ...backoff.max.ms
 * (100) before it answers NOT_ENOUGH_REPLICAS. Markers that a partition cannot
 * take keep the transaction prepared here until the coordinator's retry.
 */
async function preparedCommit(opts: Parameters<typeof start>[0]) {
  const fs = faultyFs()
  const s = await start({ fs, ...opts })
  const id = 'tv2-wait'
  const { producerId: pid, producerEpoch: epoch } = await init(s.c, id)
  expect((await produce(s.c, id, pid, epoch, 0, 0, { version: 12 })).errorCode).toBe(0)
  expect((await produce(s.c, id, pid, epoch, 1, 0, { version: 12 })).errorCode).toBe(0)
  fs.plan.failWrite = (path) => path.includes('t-1') && path.endsWith('.log')
  const e = await endTxn(s.c, id, pid, epoch, true, 5)
  expect(e.errorCode).toBe(0)
  expect((await describeTxn(s.c, id)).transactionState).toBe('PrepareCommit')
  return { s, fs, id, pid, epoch: e.producerEpoch }
}

describe('Produce v12 while the last transaction completes', () => {
  it('waits while the transaction completes instead of failing, and the batch behind it on the connection is appended after it', async () => {
    // Our coordinator writes markers synchronously, so "still completing" is held open here by hand;
    // everything else (the two produces, the coordinator's real add) runs for real over the socket.
    let completing = false
    const real = TransactionCoordinator.prototype.completing
    const spy = vi.spyOn(TransactionCoordinator.prototype, 'completing').mockImplementation(function (this: TransactionCoordinator, id: string) {
      return completing || real.call(this, id)
    })
    try {
      const s = await start({ addPartitionsToTxnRetryBackoffMaxMs: 4000 })
      const id = 'tv2-wait'
      const { producerId: pid, producerEpoch: epoch } = await init(s.c, id)
      expect((await produce(s.c, id, pid, epoch, 0, 0, { version: 12 })).errorCode).toBe(0)
      const e = await endTxn(s.c, id, pid, epoch, true, 5)
      expect(e.errorCode).toBe(0)
      completing = true
      const answered: string[] = []
      const first = produce(s.c, id, pid, e.producerEpoch, 0, 0, { version: 12 }).then((r) => (answered.push('first'), r))
      const second = produce(s.c, id, pid, e.producerEpoch, 0, 2, { version: 12 }).then((r) => (answered.push('second'), r))
      await new Promise((r) => setTimeout(r, 150))
      // Past Kafka's default 100 ms budget, still waiting: this broker was given 4 s.
      expect(answered).toEqual([])
      completing = false
      const [a, b] = await Promise.all([first, second])
      expect(a.errorCode).toBe(ErrorCodes.NONE)
      expect(b.errorCode).toBe(ErrorCodes.NONE)
      expect(b.baseOffset).toBe(a.baseOffset + 2n)
      expect(answered).toEqual(['first', 'second'])
      expect((await describeTxn(s.c, id)).transactionState).toBe('Ongoing')
    } finally {
      spy.mockRestore()
    }
  })

  it('answers NOT_ENOUGH_REPLICAS (which every client retries) once add.partitions.to.txn.retry.backoff.max.ms has passed', async () => {
    const { s, id, pid, epoch } = await preparedCommit({})
    const t0 = performance.now()
    const r = await produce(s.c, id, pid, epoch, 0, 0, { version: 12 })
    expect(r.errorCode).toBe(ErrorCodes.NOT_ENOUGH_REPLICAS)
    // Kafka's default budget is 100 ms: the broker tried for at least that long.
    expect(performance.now() - t0).toBeGreaterThanOrEqual(95)
    expect((await describeTxn(s.c, id)).transactionState).toBe('PrepareCommit')
  })

  it('with a budget of 0 answers at once, as before', async () => {
    const { s, id, pid, epoch } = await preparedCommit({ addPartitionsToTxnRetryBackoffMaxMs: 0 })
    expect((await produce(s.c, id, pid, epoch, 0, 0, { version: 12 })).errorCode).toBe(ErrorCodes.NOT_ENOUGH_REPLICAS)
  })

  it('leaves Produce up to v11 alone: the partition must already be in the transaction', async () => {
    const { s, fs, id, pid, epoch } = await preparedCommit({ addPartitionsToTxnRetryBackoffMaxMs: 4000 })
    const answer = produce(s.c, id, pid, epoch, 0, 0, { version: 11 })
    // Had it waited, the markers would complete meanwhile and the answer would be another one.
    setTimeout(() => (fs.plan.failWrite = undefined), 50)
    expect((await answer).errorCode).toBe(ErrorCodes.NOT_ENOUGH_REPLICAS)
  })
})
