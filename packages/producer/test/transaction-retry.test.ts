/**
 * How long the transactional producer waits before asking the coordinator again, as Java's
 * TransactionManager: a fixed retry.backoff.ms for every transactional request, except the first
 * AddPartitionsToTxn of a transaction answered CONCURRENT_TRANSACTIONS (the previous transaction's
 * markers are still being written), which is asked again after ADD_PARTITIONS_RETRY_BACKOFF_MS.
 * Under TV2 the same short wait applies to TxnOffsetCommit v5, which adds the offsets partition
 * implicitly (the pace Kafka's brokers keep for Produce v12's implicit add).
 * The delays asserted are the ones the producer chose (its debug log), never measured times.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { ErrorCodes } from '@tidelog/protocol'
import type { Logger } from '@tidelog/client'
import { ADD_PARTITIONS_RETRY_BACKOFF_MS } from '../src/transaction-manager.js'
import { closeAll, setup } from './transaction-fake.js'

afterEach(closeAll)

const RETRY_BACKOFF_MS = 150
const group = { groupId: 'g', generationId: 1, memberId: 'm', groupInstanceId: null }

/** The producer's "retrying" debug records: which request, which error, how long it chose to wait. */
function retries(): { logger: Logger; seen: { api: string; error: string; delayMs: number }[] } {
  const seen: { api: string; error: string; delayMs: number }[] = []
  const noop = (): void => {}
  const logger: Logger = {
    debug: (o: object, msg?: string) => {
      if (msg !== 'transactional request failed, retrying') return
      const r = o as { api?: string; err?: { type?: string }; delayMs: number }
      seen.push({ api: r.api ?? '?', error: r.err?.type ?? '?', delayMs: r.delayMs })
    },
    info: noop,
    warn: noop,
    error: noop,
  }
  return { logger, seen }
}

describe('transactional retries (TV1, scripted coordinator)', () => {
  it("Java's value: 20 ms", () => {
    expect(ADD_PARTITIONS_RETRY_BACKOFF_MS).toBe(20)
  })

  it('the first AddPartitionsToTxn answered CONCURRENT_TRANSACTIONS is asked again after 20 ms, not retry.backoff.ms, and the transaction commits', async () => {
    const { logger, seen } = retries()
    const busy = new Set([0, 1])
    const { p, log } = await setup({ addPartitions: (call) => (busy.has(call) ? ErrorCodes.CONCURRENT_TRANSACTIONS : ErrorCodes.NONE) }, { logger, retryBackoffMs: RETRY_BACKOFF_MS, retryBackoffMaxMs: 1000 })
    await p.initTransactions()
    p.beginTransaction()
    await p.send({ topic: 't', partition: 0, value: 'a' })
    await p.commitTransaction()
    expect(p.transactionState).toBe('READY')
    expect(log.filter((l) => !l.startsWith('InitProducerId'))).toEqual(['AddPartitionsToTxn(t-0)=51', 'AddPartitionsToTxn(t-0)=51', 'AddPartitionsToTxn(t-0)=0', 'Produce(t-0,epoch 0,txn true)', 'EndTxn v4(commit,0)=0'])
    expect(seen).toEqual([
      { api: 'AddPartitionsToTxn', error: 'CONCURRENT_TRANSACTIONS', delayMs: ADD_PARTITIONS_RETRY_BACKOFF_MS },
      { api: 'AddPartitionsToTxn', error: 'CONCURRENT_TRANSACTIONS', delayMs: ADD_PARTITIONS_RETRY_BACKOFF_MS },
    ])
  })

  it('with a partition already in the transaction, CONCURRENT_TRANSACTIONS waits retry.backoff.ms (Java shortens only the first add)', async () => {
    const { logger, seen } = retries()
    const { p, log } = await setup({ addPartitions: (call) => (call === 1 ? ErrorCodes.CONCURRENT_TRANSACTIONS : ErrorCodes.NONE) }, { logger, retryBackoffMs: RETRY_BACKOFF_MS, retryBackoffMaxMs: 1000 })
    await p.initTransactions()
    await p.transaction(async () => {
      await p.send({ topic: 't', partition: 0, value: 'a' })
      await p.send({ topic: 't', partition: 1, value: 'b' })
    })
    expect(log.filter((l) => l.startsWith('AddPartitionsToTxn'))).toEqual(['AddPartitionsToTxn(t-0)=0', 'AddPartitionsToTxn(t-1)=51', 'AddPartitionsToTxn(t-1)=0'])
    expect(seen).toEqual([{ api: 'AddPartitionsToTxn', error: 'CONCURRENT_TRANSACTIONS', delayMs: RETRY_BACKOFF_MS }])
  })

  it('the next transaction starts short again: the override follows the transaction, not the producer', async () => {
    const { logger, seen } = retries()
    // Calls 0 and 1 add t-0 and t-1 to the first transaction; call 2 is the second transaction's first add.
    const { p } = await setup({ addPartitions: (call) => (call === 2 ? ErrorCodes.CONCURRENT_TRANSACTIONS : ErrorCodes.NONE) }, { logger, retryBackoffMs: RETRY_BACKOFF_MS, retryBackoffMaxMs: 1000 })
    await p.initTransactions()
    await p.transaction(async () => {
      await p.send({ topic: 't', partition: 0, value: 'a' })
      await p.send({ topic: 't', partition: 1, value: 'b' })
    })
    await p.transaction(async () => void (await p.send({ topic: 't', partition: 0, value: 'c' })))
    expect(seen).toEqual([{ api: 'AddPartitionsToTxn', error: 'CONCURRENT_TRANSACTIONS', delayMs: ADD_PARTITIONS_RETRY_BACKOFF_MS }])
  })

  it('AddOffsetsToTxn and EndTxn retry CONCURRENT_TRANSACTIONS after a fixed retry.backoff.ms, as Java (no growing backoff)', async () => {
    const { logger, seen } = retries()
    const { p, log } = await setup(
      { addOffsets: (call) => (call < 2 ? ErrorCodes.CONCURRENT_TRANSACTIONS : ErrorCodes.NONE), endTxn: (call) => (call < 2 ? ErrorCodes.CONCURRENT_TRANSACTIONS : ErrorCodes.NONE) },
      { logger, retryBackoffMs: RETRY_BACKOFF_MS, retryBackoffMaxMs: 1000 },
    )
    await p.initTransactions()
    p.beginTransaction()
    await p.sendOffsetsToTransaction([{ topic: 'in', partition: 0, offset: 3n }], group)
    await p.commitTransaction()
    expect(log.filter((l) => !l.startsWith('InitProducerId'))).toEqual([
      'AddOffsetsToTxn(g)=51',
      'AddOffsetsToTxn(g)=51',
      'AddOffsetsToTxn(g)',
      'TxnOffsetCommit(g,1,m)=0',
      'EndTxn v4(commit,0)=51',
      'EndTxn v4(commit,0)=51',
      'EndTxn v4(commit,0)=0',
    ])
    expect(seen.map((s) => `${s.api} ${s.error} ${s.delayMs}`)).toEqual([
      `AddOffsetsToTxn CONCURRENT_TRANSACTIONS ${RETRY_BACKOFF_MS}`,
      `AddOffsetsToTxn CONCURRENT_TRANSACTIONS ${RETRY_BACKOFF_MS}`,
      `EndTxn CONCURRENT_TRANSACTIONS ${RETRY_BACKOFF_MS}`,
      `EndTxn CONCURRENT_TRANSACTIONS ${RETRY_BACKOFF_MS}`,
    ])
  })

  it('TxnOffsetCommit (TV1) answered CONCURRENT_TRANSACTIONS waits retry.backoff.ms, as Java', async () => {
    const { logger, seen } = retries()
    const { p } = await setup({ txnOffsetCommit: (call) => (call === 0 ? ErrorCodes.CONCURRENT_TRANSACTIONS : ErrorCodes.NONE) }, { logger, retryBackoffMs: RETRY_BACKOFF_MS, retryBackoffMaxMs: 1000 })
    await p.initTransactions()
    p.beginTransaction()
    await p.sendOffsetsToTransaction([{ topic: 'in', partition: 0, offset: 3n }], group)
    await p.commitTransaction()
    expect(seen).toEqual([{ api: 'TxnOffsetCommit', error: 'CONCURRENT_TRANSACTIONS', delayMs: RETRY_BACKOFF_MS }])
  })
})

describe('transactional retries (TV2, scripted coordinator)', () => {
  it('TxnOffsetCommit v5, which adds the offsets partition itself, is asked again after 20 ms while the previous transaction completes', async () => {
    const { logger, seen } = retries()
    const busy = new Set([0, 1])
    const { p, log } = await setup({ txnOffsetCommit: (call) => (busy.has(call) ? ErrorCodes.CONCURRENT_TRANSACTIONS : ErrorCodes.NONE) }, { logger, retryBackoffMs: RETRY_BACKOFF_MS, retryBackoffMaxMs: 1000 }, true)
    await p.initTransactions()
    expect(p.transactionVersion).toBe(2)
    await p.transaction(async () => {
      await p.send({ topic: 't', partition: 0, value: 'a' })
      await p.sendOffsetsToTransaction([{ topic: 'in', partition: 0, offset: 3n }], group)
    })
    expect(log.filter((l) => l.startsWith('TxnOffsetCommit') || l.startsWith('EndTxn'))).toEqual(['TxnOffsetCommit(g,1,m)=51', 'TxnOffsetCommit(g,1,m)=51', 'TxnOffsetCommit(g,1,m)=0', 'EndTxn v5(commit,0)=0'])
    expect(seen).toEqual([
      { api: 'TxnOffsetCommit', error: 'CONCURRENT_TRANSACTIONS', delayMs: ADD_PARTITIONS_RETRY_BACKOFF_MS },
      { api: 'TxnOffsetCommit', error: 'CONCURRENT_TRANSACTIONS', delayMs: ADD_PARTITIONS_RETRY_BACKOFF_MS },
    ])
  })
})
