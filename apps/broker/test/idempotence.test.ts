import { rmSync } from 'node:fs'
import { join } from 'node:path'
import { ApiKeys, ErrorCodes, ZERO_UUID } from '@tidelog/protocol'
import { Kafka, logLevel } from 'kafkajs'
import { afterEach, describe, expect, it } from 'vitest'
import { type Broker, PRODUCER_SNAPSHOT, PartitionLog, startBroker } from '../src/index.js'
import { makeBatch } from './helpers/batches.js'
import { RawClient } from './helpers/raw-client.js'
import { tempDir } from './helpers/tmp.js'

const cleanup: (() => unknown)[] = []
afterEach(async () => {
  for (const f of cleanup.splice(0).reverse()) await f()
})

async function start(dataDir = tempDir()) {
  const b = await startBroker({ port: 0, dataDir })
  let closed = false
  cleanup.push(() => (closed ? undefined : b.close()))
  const c = await RawClient.connect(b.port)
  cleanup.push(() => c.close())
  const meta = await c.request(ApiKeys.Metadata, 12, { topics: [{ name: 't', topicId: ZERO_UUID }], allowAutoTopicCreation: true, includeTopicAuthorizedOperations: false })
  expect(meta.topics[0].errorCode).toBe(0)
  return {
    b,
    c,
    async close() {
      c.close()
      closed = true
      await b.close()
    },
  }
}

const send = async (c: RawClient, producerId: bigint, producerEpoch: number, baseSequence: number, n = 2) => {
  const r = await c.request(ApiKeys.Produce, 9, {
    transactionalId: null,
    acks: -1,
    timeoutMs: 1000,
    topicData: [{ name: 't', partitionData: [{ index: 0, records: makeBatch(n, { producerId, producerEpoch, baseSequence }) }] }],
  })
  return r.responses[0].partitionResponses[0] as { errorCode: number; baseOffset: bigint }
}

describe('idempotent producers', () => {
  it('hands out producer ids, checks sequences and epochs, and answers retries with the original offsets', async () => {
    const { c } = await start()
    const a = await c.request(ApiKeys.InitProducerId, 4, { transactionalId: null, transactionTimeoutMs: 60000, producerId: -1n, producerEpoch: -1 })
    const b = await c.request(ApiKeys.InitProducerId, 4, { transactionalId: null, transactionTimeoutMs: 60000, producerId: -1n, producerEpoch: -1 })
    expect(a.errorCode).toBe(0)
    expect(b.producerId).not.toBe(a.producerId)
    const pid = a.producerId as bigint
    expect(await send(c, pid, 0, 0)).toMatchObject({ errorCode: 0, baseOffset: 0n })
    expect(await send(c, pid, 0, 2)).toMatchObject({ errorCode: 0, baseOffset: 2n })
    // A retry of either of the last batches: same offsets, nothing appended.
    expect(await send(c, pid, 0, 0)).toMatchObject({ errorCode: 0, baseOffset: 0n })
    expect(await send(c, pid, 0, 2)).toMatchObject({ errorCode: 0, baseOffset: 2n })
    expect((await send(c, pid, 0, 9)).errorCode).toBe(ErrorCodes.OUT_OF_ORDER_SEQUENCE_NUMBER)
    expect((await send(c, pid, 1, 3)).errorCode).toBe(ErrorCodes.OUT_OF_ORDER_SEQUENCE_NUMBER)
    expect(await send(c, pid, 1, 0)).toMatchObject({ errorCode: 0, baseOffset: 4n })
    expect((await send(c, pid, 0, 4)).errorCode).toBe(ErrorCodes.INVALID_PRODUCER_EPOCH)
    // A producer with no state here may start anywhere (KIP-360: its state may have expired).
    expect((await send(c, b.producerId, 0, 1)).errorCode).toBe(0)
    const tx = await c.request(ApiKeys.InitProducerId, 4, { transactionalId: 'tx', transactionTimeoutMs: 60000, producerId: -1n, producerEpoch: -1 })
    // A transactional id is the transaction coordinator's (apps/broker/test/txn/): no longer refused.
    expect(tx.errorCode).toBe(ErrorCodes.NONE)
  })

  it('keeps producer state across a clean restart, and rebuilds it from the log without a snapshot', async () => {
    const dataDir = tempDir()
    let s = await start(dataDir)
    const pid = (await s.c.request(ApiKeys.InitProducerId, 4, { transactionalId: null, transactionTimeoutMs: 60000, producerId: -1n, producerEpoch: -1 })).producerId as bigint
    await send(s.c, pid, 0, 0)
    await send(s.c, pid, 0, 2)
    await s.close()
    s = await start(dataDir)
    expect(await send(s.c, pid, 0, 2)).toMatchObject({ errorCode: 0, baseOffset: 2n })
    expect((await send(s.c, pid, 0, 7)).errorCode).toBe(ErrorCodes.OUT_OF_ORDER_SEQUENCE_NUMBER)
    const next = (await s.c.request(ApiKeys.InitProducerId, 4, { transactionalId: null, transactionTimeoutMs: 60000, producerId: -1n, producerEpoch: -1 })).producerId
    expect(next).toBeGreaterThan(pid)
    await s.close()
    rmSync(join(dataDir, 't-0', PRODUCER_SNAPSHOT))
    s = await start(dataDir)
    expect(await send(s.c, pid, 0, 0)).toMatchObject({ errorCode: 0, baseOffset: 0n })
    expect(await send(s.c, pid, 0, 4)).toMatchObject({ errorCode: 0, baseOffset: 4n })
  })

  it('rebuilds from the snapshot plus the batches after it', async () => {
    const dir = join(tempDir(), 't-0')
    let log = PartitionLog.open({ dir, topic: 't', partition: 0, clean: true, config: { segmentBytes: 400 } })
    for (let seq = 0; seq < 40; seq += 2) log.append(makeBatch(2, { producerId: 7n, producerEpoch: 3, baseSequence: seq }))
    expect(log.segments.length).toBeGreaterThan(2)
    // Not closed (a crash): the last snapshot is the one of the last roll, once written.
    await log.snapshotsWritten()
    const leo = log.logEndOffset
    log = PartitionLog.open({ dir: dir, topic: 't', partition: 0, clean: false, recoveryPoint: 0, config: { segmentBytes: 400 } })
    expect(log.logEndOffset).toBe(leo)
    expect(log.producers.check(7, 3, 38, 39)).toMatchObject({ firstOffset: 38 })
    expect(() => log.producers.check(7, 3, 41, 41)).toThrow(/expected 40/)
    await log.close()
  })

  it('works with kafkajs idempotent producers', async () => {
    const { b } = await start()
    const kafka = new Kafka({ clientId: 'idem', brokers: [`127.0.0.1:${b.port}`], logLevel: logLevel.NOTHING })
    const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 })
    await producer.connect()
    cleanup.push(() => producer.disconnect())
    for (let i = 0; i < 5; i++) {
      const r = await producer.send({ topic: 't', acks: -1, messages: [{ value: `m${i}` }, { value: `n${i}` }] })
      expect(r[0]).toMatchObject({ errorCode: 0, baseOffset: String(i * 2) })
    }
  })
})
