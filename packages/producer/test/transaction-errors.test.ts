/**
 * The transactional producer against a scripted fake coordinator (TV1: no transaction.version
 * feature finalized): the order of AddPartitionsToTxn and Produce, retries, a commit that timed
 * out and is resumed (never aborted), fatal and abortable errors, the KIP-360 epoch bump after a
 * sequence error, and API misuse, each with Kafka's error names.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { ErrorCodes, ProtocolError } from '@tidelog/protocol'
import { InvalidTxnStateError, Producer, ProducerFencedError, TransactionAbortableError, TransactionTimeoutError } from '../src/index.js'
import { closeAll, setup } from './transaction-fake.js'

afterEach(closeAll)

describe('transactional producer (TV1, scripted coordinator)', () => {
  it('adds each partition before its first batch, retries CONCURRENT_TRANSACTIONS, commits once', async () => {
    const { p, log, produceVersions } = await setup({ addPartitions: (call) => (call === 0 ? ErrorCodes.CONCURRENT_TRANSACTIONS : 0) })
    await p.initTransactions()
    expect(p.transactionVersion).toBe(1)
    p.beginTransaction()
    await p.send([{ topic: 't', partition: 0, value: 'a' }, { topic: 't', partition: 1, value: 'b' }])
    await p.send({ topic: 't', partition: 0, value: 'c' })
    await p.sendOffsetsToTransaction([{ topic: 'in', partition: 0, offset: 5n }], { groupId: 'g', generationId: 3, memberId: 'm-1', groupInstanceId: null })
    await p.commitTransaction()
    expect(log.filter((l) => !l.startsWith('Produce'))).toEqual([
      'InitProducerId(tx,-1,-1)',
      expect.stringMatching(/^AddPartitionsToTxn\(t-[01],t-[01]\)=51$/),
      expect.stringMatching(/^AddPartitionsToTxn\(t-[01],t-[01]\)=0$/),
      'AddOffsetsToTxn(g)',
      'TxnOffsetCommit(g,3,m-1)=0',
      'EndTxn v4(commit,0)=0',
    ])
    expect(new Set(produceVersions)).toEqual(new Set([11]))
    const firstProduce = log.findIndex((l) => l.startsWith('Produce'))
    expect(firstProduce).toBeGreaterThan(2)
    expect(log.filter((l) => l.startsWith('Produce')).every((l) => l.endsWith('txn true)'))).toBe(true)
    expect(p.transactionState).toBe('READY')
  })

  it('a commit that timed out is resumed by calling commitTransaction() again, never aborted', async () => {
    const { p, b, log, held } = await setup({ endTxn: (call) => (call === 0 ? 'hold' : 0) }, { maxBlockMs: 300 })
    await p.initTransactions()
    p.beginTransaction()
    await p.send({ topic: 't', partition: 0, value: 'a' })
    await expect(p.commitTransaction()).rejects.toBeInstanceOf(TransactionTimeoutError)
    expect(p.transactionState).toBe('COMMITTING_TRANSACTION')
    await expect(p.abortTransaction()).rejects.toBeInstanceOf(InvalidTxnStateError)
    expect(() => p.beginTransaction()).toThrow(InvalidTxnStateError)
    const again = p.commitTransaction()
    b.respond(held[0]!, { throttleTimeMs: 0, errorCode: 0 })
    await again
    expect(p.transactionState).toBe('READY')
    expect(log.filter((l) => l.startsWith('EndTxn'))).toEqual(['EndTxn v4(commit,0)'])
  })

  it('PRODUCER_FENCED from EndTxn is fatal: ProducerFencedError from then on', async () => {
    const { p } = await setup({ endTxn: () => ErrorCodes.PRODUCER_FENCED })
    await p.initTransactions()
    p.beginTransaction()
    await p.send({ topic: 't', partition: 0, value: 'a' })
    const err = await p.commitTransaction().catch((e: unknown) => e)
    expect(err).toBeInstanceOf(ProducerFencedError)
    expect((err as ProtocolError).type).toBe('PRODUCER_FENCED')
    expect(p.transactionState).toBe('FATAL_ERROR')
    await expect(p.send({ topic: 't', value: 'b' })).rejects.toBeInstanceOf(ProducerFencedError)
    expect(() => p.beginTransaction()).toThrow(ProducerFencedError)
    await expect(p.abortTransaction()).rejects.toBeInstanceOf(ProducerFencedError)
  })

  it('INVALID_PRODUCER_EPOCH on Produce means fencing for a transactional producer', async () => {
    const { p, k } = await setup()
    await p.initTransactions()
    p.beginTransaction()
    k.fault = () => ErrorCodes.INVALID_PRODUCER_EPOCH
    await expect(p.send({ topic: 't', partition: 0, value: 'a' })).rejects.toBeInstanceOf(ProducerFencedError)
    await expect(p.commitTransaction()).rejects.toBeInstanceOf(ProducerFencedError)
    expect(p.transactionState).toBe('FATAL_ERROR')
  })

  it('a record refused for good makes the transaction abortable; after the abort the next one commits', async () => {
    const { p, k, log } = await setup()
    await p.initTransactions()
    p.beginTransaction()
    k.fault = (ctx) => (ctx.partition === 1 ? ErrorCodes.TOPIC_AUTHORIZATION_FAILED : undefined)
    const sent = p.send([{ topic: 't', partition: 0, value: 'ok' }, { topic: 't', partition: 1, value: 'refused' }])
    await expect(sent).rejects.toThrow(/1 of 2/)
    const err = await p.commitTransaction().catch((e: unknown) => e)
    expect(err).toBeInstanceOf(TransactionAbortableError)
    expect(((err as Error).cause as ProtocolError).type).toBe('TOPIC_AUTHORIZATION_FAILED')
    expect(p.transactionState).toBe('ABORTABLE_ERROR')
    await expect(p.send({ topic: 't', partition: 0, value: 'x' })).rejects.toBeInstanceOf(TransactionAbortableError)
    await p.abortTransaction()
    k.fault = () => undefined
    await p.transaction(async () => void (await p.send({ topic: 't', partition: 0, value: 'next' })))
    // The failed batch spent its sequence: the abort re-initialised under a new epoch.
    expect(log.filter((l) => l.startsWith('EndTxn'))).toEqual(['EndTxn v4(abort,0)=0', 'EndTxn v4(commit,1)=0'])
  })

  it('OUT_OF_ORDER_SEQUENCE_NUMBER: abortable, and the abort gets a new epoch from the coordinator (KIP-360)', async () => {
    const { p, k, log } = await setup()
    await p.initTransactions()
    p.beginTransaction()
    k.fault = () => ErrorCodes.OUT_OF_ORDER_SEQUENCE_NUMBER
    await expect(p.send({ topic: 't', partition: 0, value: 'a' })).rejects.toBeInstanceOf(ProtocolError)
    await expect(p.commitTransaction()).rejects.toBeInstanceOf(TransactionAbortableError)
    await p.abortTransaction()
    expect(log.filter((l) => l.startsWith('InitProducerId'))).toEqual(['InitProducerId(tx,-1,-1)', 'InitProducerId(tx,7000,0)'])
    k.fault = (ctx) => {
      log.push(`Produce(${ctx.topic}-${ctx.partition},epoch ${ctx.header.producerEpoch},seq ${ctx.header.baseSequence})`)
      return undefined
    }
    await p.transaction(async () => void (await p.send({ topic: 't', partition: 0, value: 'b' })))
    expect(log).toContain('Produce(t-0,epoch 1,seq 0)')
  })

  it('an offset commit from a stale generation makes the transaction abortable', async () => {
    const { p } = await setup({ txnOffsetCommit: () => ErrorCodes.ILLEGAL_GENERATION })
    await p.initTransactions()
    p.beginTransaction()
    const err = await p.sendOffsetsToTransaction([{ topic: 'in', partition: 0, offset: 1n }], { groupId: 'g', generationId: 1, memberId: 'm', groupInstanceId: null }).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(TransactionAbortableError)
    expect(((err as Error).cause as ProtocolError).type).toBe('ILLEGAL_GENERATION')
    await p.abortTransaction()
    expect(p.transactionState).toBe('READY')
  })

  it('refuses calls out of order with InvalidTxnStateError and changes nothing', async () => {
    const { p } = await setup()
    await expect(p.send({ topic: 't', value: 'a' })).rejects.toBeInstanceOf(InvalidTxnStateError)
    expect(() => p.beginTransaction()).toThrow(InvalidTxnStateError)
    await p.initTransactions()
    await expect(p.initTransactions()).rejects.toBeInstanceOf(InvalidTxnStateError)
    await expect(p.send({ topic: 't', value: 'a' })).rejects.toBeInstanceOf(InvalidTxnStateError)
    await expect(p.commitTransaction()).rejects.toBeInstanceOf(InvalidTxnStateError)
    p.beginTransaction()
    expect(() => p.beginTransaction()).toThrow(InvalidTxnStateError)
    expect(p.transactionState).toBe('IN_TRANSACTION')
    // Nothing was sent: the commit is local, as Java's (no EndTxn for an empty transaction).
    await p.commitTransaction()
    expect(p.transactionState).toBe('READY')
    const plain = new Producer({ brokers: ['127.0.0.1:1'] })
    await expect(plain.initTransactions()).rejects.toBeInstanceOf(InvalidTxnStateError)
    await plain.close()
  })

  it('TV2 (KIP-890): no AddPartitionsToTxn or AddOffsetsToTxn, Produce v12, and the epoch EndTxn v5 returns is used next', async () => {
    const { p, log, produceVersions } = await setup({}, {}, true)
    await p.initTransactions()
    expect(p.transactionVersion).toBe(2)
    for (let i = 0; i < 2; i++) {
      await p.transaction(async () => {
        await p.send([{ topic: 't', partition: 0, value: `a${i}` }, { topic: 't', partition: 1, value: `b${i}` }])
        await p.sendOffsetsToTransaction([{ topic: 'in', partition: 0, offset: BigInt(i + 1) }], { groupId: 'g', generationId: 1, memberId: 'm', groupInstanceId: null })
      })
    }
    expect(log.filter((l) => /^(AddPartitions|AddOffsets)/.test(l))).toEqual([])
    expect(log.filter((l) => l.startsWith('EndTxn'))).toEqual(['EndTxn v5(commit,0)=0', 'EndTxn v5(commit,1)=0'])
    expect(log.filter((l) => l.startsWith('Produce')).sort()).toEqual(['Produce(t-0,epoch 0,txn true)', 'Produce(t-0,epoch 1,txn true)', 'Produce(t-1,epoch 0,txn true)', 'Produce(t-1,epoch 1,txn true)'])
    expect(new Set(produceVersions)).toEqual(new Set([12]))
  })

  it('close() aborts an open transaction, as Java does; close({ timeoutMs: 0 }) leaves it to the coordinator', async () => {
    const { p, log } = await setup()
    await p.initTransactions()
    p.beginTransaction()
    await p.send({ topic: 't', partition: 0, value: 'a' })
    await p.close()
    expect(log.filter((l) => l.startsWith('EndTxn'))).toEqual(['EndTxn v4(abort,0)=0'])
    const second = await setup()
    await second.p.initTransactions()
    second.p.beginTransaction()
    await second.p.send({ topic: 't', partition: 0, value: 'a' })
    await second.p.close({ timeoutMs: 0 })
    expect(second.log.filter((l) => l.startsWith('EndTxn'))).toEqual([])
  })
})

// KIP-890 part 1 (Kafka 3.8+): TRANSACTION_ABORTABLE (120) from Produce v11+, AddPartitionsToTxn
// v5, AddOffsetsToTxn v4, EndTxn v4, TxnOffsetCommit v4 and InitProducerId v5. Java's
// TransactionManager handles it as an abortable error in every handler: never retried, never fatal.
describe('TRANSACTION_ABORTABLE (KIP-890): abortable, not retried, not fatal', () => {
  const abortableThenNext = async (p: Producer, log: string[], countOf: string, expected: number) => {
    const err = await p.commitTransaction().catch((e: unknown) => e)
    expect(err).toBeInstanceOf(TransactionAbortableError)
    expect(p.transactionState).toBe('ABORTABLE_ERROR')
    expect(log.filter((l) => l.startsWith(countOf)), `${countOf} not retried`).toHaveLength(expected)
    await p.abortTransaction()
    expect(p.transactionState).toBe('READY')
  }

  it('from Produce: the record fails, the commit is refused, the abort recovers and the next transaction commits', async () => {
    const { p, k, log } = await setup()
    await p.initTransactions()
    p.beginTransaction()
    k.fault = (ctx) => {
      log.push(`Produce(${ctx.topic}-${ctx.partition})`)
      return ErrorCodes.TRANSACTION_ABORTABLE
    }
    const err = await p.send({ topic: 't', partition: 0, value: 'a' }).catch((e: unknown) => e)
    expect((err as ProtocolError).type).toBe('TRANSACTION_ABORTABLE')
    await abortableThenNext(p, log, 'Produce', 1)
    k.fault = () => undefined
    await p.transaction(async () => void (await p.send({ topic: 't', partition: 0, value: 'b' })))
    expect(log.filter((l) => l.startsWith('EndTxn'))).toEqual([expect.stringMatching(/^EndTxn v4\(abort,\d\)=0$/), expect.stringMatching(/^EndTxn v4\(commit,\d\)=0$/)])
  })

  it('INVALID_TXN_STATE on Produce (what Kafka tells clients below Produce v11) is abortable too, as in Java', async () => {
    const { p, k, log } = await setup()
    await p.initTransactions()
    p.beginTransaction()
    k.fault = () => ErrorCodes.INVALID_TXN_STATE
    await expect(p.send({ topic: 't', partition: 0, value: 'a' })).rejects.toBeInstanceOf(ProtocolError)
    await abortableThenNext(p, log, 'EndTxn v4(commit', 0)
  })

  it('from EndTxn: the commit is refused once and the transaction aborted on request', async () => {
    const { p, log } = await setup({ endTxn: (call) => (call === 0 ? ErrorCodes.TRANSACTION_ABORTABLE : 0) })
    await p.initTransactions()
    p.beginTransaction()
    await p.send({ topic: 't', partition: 0, value: 'a' })
    await abortableThenNext(p, log, 'EndTxn v4(commit', 1)
    expect(log.filter((l) => l.startsWith('EndTxn'))).toEqual(['EndTxn v4(commit,0)=120', 'EndTxn v4(abort,0)=0'])
  })

  it('from AddPartitionsToTxn and TxnOffsetCommit: abortable, one request each', async () => {
    const add = await setup({ addPartitions: () => ErrorCodes.TRANSACTION_ABORTABLE })
    await add.p.initTransactions()
    add.p.beginTransaction()
    await expect(add.p.send({ topic: 't', partition: 0, value: 'a' })).rejects.toBeInstanceOf(TransactionAbortableError)
    await abortableThenNext(add.p, add.log, 'AddPartitionsToTxn', 1)

    const offsets = await setup({ txnOffsetCommit: () => ErrorCodes.TRANSACTION_ABORTABLE })
    await offsets.p.initTransactions()
    offsets.p.beginTransaction()
    const err = await offsets.p.sendOffsetsToTransaction([{ topic: 'in', partition: 0, offset: 1n }], { groupId: 'g', generationId: 1, memberId: 'm', groupInstanceId: null }).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(TransactionAbortableError)
    await abortableThenNext(offsets.p, offsets.log, 'TxnOffsetCommit', 1)
  })
})
