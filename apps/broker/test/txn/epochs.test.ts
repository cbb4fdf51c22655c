import { ErrorCodes } from '@tidelog/protocol'
import { describe, expect, it } from 'vitest'
import { silentLogger } from '../../src/logger.js'
import { TxnState } from '../../src/txn/state.js'
import { TransactionStore } from '../../src/txn/store.js'
import { describeTxn, endTxn, init, produce, start } from './helpers.js'

/** Rewrites a stopped broker's transactional id to the epoch given (32766 takes 32766 InitProducerIds to reach otherwise). */
async function setEpoch(dataDir: string, id: string, producerEpoch: number): Promise<void> {
  const store = TransactionStore.open(dataDir, silentLogger)
  const t = store.all().get(id)!
  store.put(id, { ...t, producerEpoch, lastProducerEpoch: producerEpoch - 1, state: TxnState.Empty })
  await store.close()
}

async function waitFor(cond: () => Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + 10_000
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 20))
  }
}

describe('producer epochs and transactional id lifetime', () => {
  it('an exhausted epoch: InitProducerId hands out a new producer id from epoch 0', async () => {
    const s = await start()
    const first = await init(s.c, 'tx-exhaust')
    await s.close()
    await setEpoch(s.dataDir, 'tx-exhaust', 32766)
    const s2 = await start({}, s.dataDir)
    const next = await init(s2.c, 'tx-exhaust')
    expect(next.errorCode).toBe(0)
    expect(next.producerId).not.toBe(first.producerId)
    expect(next.producerEpoch).toBe(0)
  })

  it('TV2 at the last epoch: the end returns a new producer id with epoch 0, and the old id is fenced', async () => {
    const s = await start()
    const first = await init(s.c, 'tx-exhaust2')
    await s.close()
    await setEpoch(s.dataDir, 'tx-exhaust2', 32766)
    const s2 = await start({}, s.dataDir)
    expect((await produce(s2.c, 'tx-exhaust2', first.producerId, 32766, 0, 0, { version: 12 })).errorCode).toBe(0)
    const e = await endTxn(s2.c, 'tx-exhaust2', first.producerId, 32766, true, 5)
    expect(e.errorCode).toBe(0)
    expect(e.producerId).not.toBe(first.producerId)
    expect(e.producerEpoch).toBe(0)
    // The retry of that end (old id, old epoch) gets the same answer.
    expect(await endTxn(s2.c, 'tx-exhaust2', first.producerId, 32766, true, 5)).toMatchObject({ errorCode: 0, producerId: e.producerId, producerEpoch: 0 })
    expect((await produce(s2.c, 'tx-exhaust2', e.producerId, 0, 0, 0, { version: 12 })).errorCode).toBe(0)
    expect((await endTxn(s2.c, 'tx-exhaust2', first.producerId, 32766, false, 5)).errorCode).toBe(ErrorCodes.INVALID_PRODUCER_ID_MAPPING)
  })

  it('a transactional id idle past transactional.id.expiration.ms is forgotten; an open one is kept', async () => {
    const { c } = await start({ transactionalIdExpirationMs: 100, transactionRemoveExpiredTransactionCleanupIntervalMs: 20 })
    await init(c, 'tx-idle')
    const busy = await init(c, 'tx-busy', 5, { timeoutMs: 60_000 })
    expect((await produce(c, 'tx-busy', busy.producerId, busy.producerEpoch, 0, 0, { version: 12 })).errorCode).toBe(0)
    await waitFor(async () => (await describeTxn(c, 'tx-idle')).errorCode === ErrorCodes.TRANSACTIONAL_ID_NOT_FOUND, 'tx-idle to expire')
    expect((await describeTxn(c, 'tx-busy')).transactionState).toBe('Ongoing')
    // Forgotten means a fresh start: a new producer id at epoch 0.
    expect((await init(c, 'tx-idle')).producerEpoch).toBe(0)
  })
})
