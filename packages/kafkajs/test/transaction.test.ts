// What @tidelog/kafkajs' transactions do beyond kafkajs 2.2.4 (compat-transactions.test.ts
// shows where they are the same): sendOffsets({ consumer }) with KIP-447 fencing, abort after a
// failed commit, transactionTimeout, typed errors for misuse, disconnect() aborting.
import { ApiKeys } from '@tidelog/protocol'
import { describe, expect, it } from 'vitest'
import { Kafka, logLevel, type LogEntry, type Transaction } from '@tidelog/kafkajs'
import { RawClient } from '../../../apps/broker/test/helpers/raw-client.js'
import { cleanup, startTestBroker } from '../../consumer/test/helpers/broker.js'
import { until } from '../../../test/kafkajs-compat/types.js'

async function setup(topics: { topic: string; numPartitions?: number; configEntries?: { name: string; value: string }[] }[]) {
  const { broker, brokers } = await startTestBroker(1)
  const logs: LogEntry[] = []
  const kafka = new Kafka({ clientId: 'txn-test', brokers, logLevel: logLevel.WARN, logCreator: () => (e) => void logs.push(e) })
  const admin = kafka.admin()
  await admin.connect()
  cleanup(() => admin.disconnect())
  await admin.createTopics({ topics })
  const producer = (transactionalId: string, extra: { transactionTimeout?: number } = {}) => {
    const p = kafka.producer({ transactionalId, idempotent: true, maxInFlightRequests: 1, ...extra })
    cleanup(() => p.disconnect())
    return p
  }
  /** Every value a read_committed consumer reads from `topic`, once `count` arrived. */
  const readCommitted = async (topic: string, count: number, last?: string) => {
    const consumer = kafka.consumer({ groupId: `reader-${topic}-${Math.random()}`, maxWaitTimeInMs: 100 })
    const got: string[] = []
    await consumer.connect()
    await consumer.subscribe({ topic, fromBeginning: true })
    await consumer.run({ eachMessage: async ({ message }) => void got.push(message.value!.toString()) })
    await until(() => got.length >= count && (last === undefined || got.includes(last)), `${count} records of ${topic}`)
    await consumer.disconnect()
    return got
  }
  return { broker, kafka, admin, producer, readCommitted, logs }
}

async function error(p: Promise<unknown> | (() => unknown)): Promise<{ name: string; message: string; type?: string; retriable?: boolean }> {
  try {
    await (typeof p === 'function' ? p() : p)
  } catch (e) {
    const { name, message, type, retriable } = e as { name: string; message: string; type?: string; retriable?: boolean }
    return { name, message, type, retriable }
  }
  throw new Error('expected an error')
}

describe('@tidelog/kafkajs transactions', () => {
  it('eachBatch copier with sendOffsets({ consumer }): offsets commit with the member generation; a stale generation is refused (KIP-447) and the transaction aborts', async () => {
    const { kafka, admin, producer, readCommitted } = await setup([{ topic: 'in' }, { topic: 'out' }])
    const plain = kafka.producer()
    await plain.connect()
    cleanup(() => plain.disconnect())
    await plain.send({ topic: 'in', messages: Array.from({ length: 8 }, (_, i) => ({ value: `v${i}` })) })
    const p = producer('copier')
    await p.connect()
    const consumer = kafka.consumer({ groupId: 'copiers', maxWaitTimeInMs: 100 })
    await consumer.connect()
    cleanup(() => consumer.disconnect())
    await consumer.subscribe({ topic: 'in', fromBeginning: true })
    let copied = 0
    let staleError: Awaited<ReturnType<typeof error>> | undefined
    await consumer.run({
      autoCommit: false,
      eachBatch: async ({ batch }) => {
        const next = (BigInt(batch.lastOffset()) + 1n).toString()
        const topics = [{ topic: batch.topic, partitions: [{ partition: batch.partition, offset: next }] }]
        if (staleError === undefined) {
          // A zombie: the same member one generation back.
          const t = await p.transaction()
          await t.send({ topic: 'out', messages: [{ value: 'from-a-zombie' }] })
          const meta = consumer.groupMetadata()
          staleError = await error(t.sendOffsets({ consumer: { groupMetadata: () => ({ ...meta, generationId: meta.generationId - 1 }) }, topics }))
          expect(t.isActive()).toBe(true)
          await t.abort()
        }
        const t = await p.transaction()
        await t.send({ topic: 'out', messages: batch.messages.map((m) => ({ value: `copy-${m.value!.toString()}` })) })
        await t.sendOffsets({ consumer, topics })
        await t.commit()
        copied += batch.messages.length
      },
    })
    await until(() => copied >= 8, 'the copy')
    expect(staleError).toMatchObject({ name: 'KafkaJSProtocolError', type: 'TRANSACTION_ABORTABLE', retriable: false })
    expect(staleError!.message).toMatch(/ILLEGAL_GENERATION|generation/i)
    expect(consumer.groupMetadata()).toMatchObject({ groupId: 'copiers', generationId: expect.any(Number), memberId: expect.stringMatching(/./) })
    await consumer.disconnect()
    expect(await readCommitted('out', 8)).toEqual(Array.from({ length: 8 }, (_, i) => `copy-v${i}`))
    expect(await admin.fetchOffsets({ groupId: 'copiers', topics: ['in'] })).toEqual([{ topic: 'in', partitions: [expect.objectContaining({ partition: 0, offset: '8' })] }])
  }, 60_000)

  it('a commit that failed (a record the broker refuses) can be aborted, as kafkajs documents; the next transaction commits', async () => {
    const { producer, readCommitted } = await setup([{ topic: 'small', configEntries: [{ name: 'max.message.bytes', value: '512' }] }])
    const p = producer('refused')
    await p.connect()
    const t: Transaction = await p.transaction()
    await t.send({ topic: 'small', messages: [{ value: 'fits' }] })
    const tooLarge = await error(t.send({ topic: 'small', messages: [{ value: Buffer.alloc(4096, 1) }] }))
    expect(tooLarge).toMatchObject({ name: 'KafkaJSProtocolError', type: expect.stringMatching(/MESSAGE_TOO_LARGE|RECORD_LIST_TOO_LARGE/) })
    const commit = await error(t.commit())
    expect(commit).toMatchObject({ name: 'KafkaJSProtocolError', type: 'TRANSACTION_ABORTABLE', retriable: false })
    expect(t.isActive()).toBe(true)
    await t.abort()
    expect(t.isActive()).toBe(false)
    const next = await p.transaction()
    await next.send({ topic: 'small', messages: [{ value: 'after' }] })
    await next.commit()
    expect(await readCommitted('small', 1, 'after')).toEqual(['after'])
  }, 60_000)

  it('transactionTimeout: 60000 by default, as kafkajs; a value above transaction.max.timeout.ms is refused with INVALID_TRANSACTION_TIMEOUT', async () => {
    const { broker, producer } = await setup([{ topic: 't' }])
    const p = producer('default-timeout')
    await p.connect()
    const t = await p.transaction()
    await t.send({ topic: 't', messages: [{ value: 'x' }] })
    const raw = await RawClient.connect(broker.port)
    cleanup(async () => raw.close())
    const described = (await raw.request(ApiKeys.DescribeTransactions, 0, { transactionalIds: ['default-timeout'] })).transactionStates[0]
    expect(described).toMatchObject({ transactionState: 'Ongoing', transactionTimeoutMs: 60_000 })
    await t.commit()

    const tooLong = producer('too-long', { transactionTimeout: 3_600_000 })
    await tooLong.connect()
    expect(await error(tooLong.transaction())).toMatchObject({ name: 'KafkaJSProtocolError', type: 'INVALID_TRANSACTION_TIMEOUT', retriable: false })
    // The failed initialisation is tried again by the next transaction(), as in kafkajs.
    expect(await error(tooLong.transaction())).toMatchObject({ type: 'INVALID_TRANSACTION_TIMEOUT' })
  }, 60_000)

  it('misuse gets kafkajs error classes and sends nothing; per-call compression in a transaction is not applied and a warning says so; disconnect() aborts the open transaction', async () => {
    const { producer, readCommitted, logs } = await setup([{ topic: 'm' }])
    const p = producer('misuse')
    expect(await error(p.transaction())).toEqual({ name: 'KafkaJSError', message: 'The producer is disconnected', retriable: true, type: undefined })
    await p.connect()
    const [first, second] = await Promise.allSettled([p.transaction(), p.transaction()])
    expect(first.status).toBe('fulfilled')
    expect(second).toMatchObject({ status: 'rejected', reason: { name: 'KafkaJSNonRetriableError', message: expect.stringMatching(/^There is already an ongoing transaction/) } })
    const t = (first as PromiseFulfilledResult<Transaction>).value
    expect(await error(t.send({ topic: 'm', acks: 1, messages: [{ value: 'x' }] }))).toMatchObject({
      name: 'KafkaJSNonRetriableError',
      message: "Not requiring ack for all messages invalidates the idempotent producer's EoS guarantees",
    })
    expect(await error(t.sendOffsets({ topics: [] }))).toMatchObject({ name: 'KafkaJSNonRetriableError', message: 'Missing consumerGroupId' })
    expect(await error(t.sendOffsets({ consumerGroupId: 'g' } as never))).toMatchObject({ name: 'KafkaJSNonRetriableError', message: 'Missing offset topics' })
    expect(await error(t.sendOffsets({ consumerGroupId: 'g', topics: [{ topic: 'm', partitions: [{ partition: 0, offset: 'soon' }] }] }))).toMatchObject({
      name: 'KafkaJSNonRetriableError',
      message: 'Invalid offset "soon" for m-0',
    })
    expect(await error(t.sendOffsets({ consumer: {} as never, topics: [] }))).toMatchObject({ name: 'KafkaJSNonRetriableError', message: 'sendOffsets({ consumer }) needs a @tidelog/kafkajs consumer' })
    expect(t.isActive()).toBe(true)
    await t.send({ topic: 'm', compression: 1, messages: [{ value: 'gzip asked' }] })
    expect(logs.filter((l) => l.level === logLevel.WARN).map((l) => l.log.message)).toEqual([expect.stringMatching(/compression is not applied to records sent in a transaction/)])
    await t.commit()

    const open = await p.transaction()
    await open.send({ topic: 'm', messages: [{ value: 'left open' }] })
    await p.disconnect()
    // Aborted at disconnect (kafkajs leaves it to the coordinator's timeout): a successor with
    // the same id and a read_committed reader go on at once.
    const successor = producer('misuse')
    await successor.connect()
    const s = await successor.transaction()
    await s.send({ topic: 'm', messages: [{ value: 'successor' }] })
    await s.commit()
    expect(await readCommitted('m', 2, 'successor')).toEqual(['gzip asked', 'successor'])
  }, 60_000)
})
