import { join } from 'node:path'
import { ApiKeys, ZERO_UUID, decodeRecordBatches } from '@tidelog/protocol'
import { describe, expect, it } from 'vitest'
import { PartitionLog, startBroker } from '../src/index.js'
import { makeBatch } from './helpers/batches.js'
import { RawClient } from './helpers/raw-client.js'
import { tempDir } from './helpers/tmp.js'
import { trackOpened } from './helpers/opened.js'

const open = trackOpened()
const T = Date.now()
const P = 4000
const Q = 4001

async function connect(dataDir: string) {
  const b = await startBroker({ port: 0, dataDir })
  open.brokers.push(b)
  const c = await RawClient.connect(b.port)
  open.clients.push(c)
  return { b, c }
}

async function produce(c: RawClient, records: Buffer) {
  const r = await c.request(ApiKeys.Produce, 9, {
    transactionalId: null, acks: -1, timeoutMs: 5000,
    topicData: [{ name: 't', partitionData: [{ index: 0, records }] }],
  })
  return r.responses[0].partitionResponses[0] as { errorCode: number; baseOffset: bigint }
}

async function fetch(c: RawClient, isolationLevel: 0 | 1, fetchOffset: number, o: { maxWaitMs?: number; minBytes?: number } = {}) {
  const r = await c.request(ApiKeys.Fetch, 12, {
    replicaId: -1, maxWaitMs: o.maxWaitMs ?? 0, minBytes: o.minBytes ?? 1, maxBytes: 1 << 20, isolationLevel, sessionId: 0, sessionEpoch: -1,
    topics: [{ topic: 't', partitions: [{ partition: 0, currentLeaderEpoch: -1, fetchOffset: BigInt(fetchOffset), lastFetchedEpoch: -1, logStartOffset: -1n, partitionMaxBytes: 1 << 20 }] }],
    forgottenTopicsData: [], rackId: '',
  })
  const p = r.responses[0].partitions[0]
  const batches = decodeRecordBatches(p.records ?? Buffer.alloc(0))
  return {
    errorCode: p.errorCode as number,
    highWatermark: Number(p.highWatermark),
    lastStableOffset: Number(p.lastStableOffset),
    aborted: p.abortedTransactions as { producerId: bigint; firstOffset: bigint }[] | null,
    batches: batches.map((b) => ({ base: Number(b.baseOffset), control: b.isControl, pid: Number(b.producerId), count: b.recordCount })),
  }
}

async function latest(c: RawClient, isolationLevel: 0 | 1, timestamp = -1n): Promise<number> {
  const r = await c.request(ApiKeys.ListOffsets, 5, { replicaId: -1, isolationLevel, topics: [{ name: 't', partitions: [{ partitionIndex: 0, timestamp, currentLeaderEpoch: -1 }] }] })
  return Number(r.topics[0].partitions[0].offset)
}

const txn = (pid: number, seq: number, n: number) =>
  makeBatch(n, { producerId: BigInt(pid), producerEpoch: 0, baseSequence: seq, isTransactional: true, baseTimestamp: T + 1000 })

describe('transactions over the wire (storage side)', () => {
  it('read_committed stops at the open transaction, then sees commits and is told of aborts; ListOffsets follows the LSO', async () => {
    const dataDir = tempDir()
    let { b, c } = await connect(dataDir)
    await c.request(ApiKeys.Metadata, 12, { topics: [{ name: 't', topicId: ZERO_UUID }], allowAutoTopicCreation: true, includeTopicAuthorizedOperations: false })
    expect((await produce(c, makeBatch(1, { baseTimestamp: T }))).baseOffset).toBe(0n)
    expect(await produce(c, txn(P, 0, 2))).toMatchObject({ errorCode: 0, baseOffset: 1n }) // 1-2
    expect(await produce(c, txn(Q, 0, 2))).toMatchObject({ errorCode: 0, baseOffset: 3n }) // 3-4
    // A plain idempotent batch from a producer inside its transaction: INVALID_TXN_STATE (48).
    expect((await produce(c, makeBatch(1, { producerId: BigInt(P), producerEpoch: 0, baseSequence: 2 }))).errorCode).toBe(48)
    // A client may not write a control batch (INVALID_RECORD, 87).
    const ctl = makeBatch(1, { producerId: BigInt(P), producerEpoch: 0, baseSequence: -1, isTransactional: true, isControl: true })
    expect((await produce(c, ctl)).errorCode).toBe(87)

    const all = await fetch(c, 0, 0)
    expect(all).toMatchObject({ errorCode: 0, highWatermark: 5, lastStableOffset: 1, aborted: null })
    expect(all.batches.map((x) => x.base)).toEqual([0, 1, 3])
    const committed = await fetch(c, 1, 0)
    expect(committed).toMatchObject({ errorCode: 0, highWatermark: 5, lastStableOffset: 1, aborted: [] })
    expect(committed.batches.map((x) => x.base)).toEqual([0])
    // Out of range: OFFSET_OUT_OF_RANGE with the partition's offsets and no aborted list (null, as Kafka's error answers).
    expect(await fetch(c, 1, 99)).toMatchObject({ errorCode: 1, highWatermark: 5, lastStableOffset: 1, aborted: null, batches: [] })
    // At the LSO: nothing, after the long poll's wait (no error, no records past it).
    const waited = await fetch(c, 1, 1, { maxWaitMs: 100 })
    expect(waited).toMatchObject({ errorCode: 0, lastStableOffset: 1, batches: [] })
    expect(await latest(c, 0)).toBe(5)
    expect(await latest(c, 1)).toBe(1)
    // A timestamp lookup that lands in the open transaction finds nothing for read_committed.
    expect(await latest(c, 0, BigInt(T + 500))).toBe(1)
    expect(await latest(c, 1, BigInt(T + 500))).toBe(-1)

    // The coordinator's markers, written through the log API while the broker is down
    // (the coordinator's handlers are another module): commit P, abort Q.
    c.close()
    await b.close()
    open.brokers.length = 0
    open.clients.length = 0
    const log = PartitionLog.open({ dir: join(dataDir, 't-0'), topic: 't', partition: 0, clean: true })
    expect(log.lastStableOffset).toBe(1)
    log.appendTxnMarker({ producerId: P, producerEpoch: 0, commit: true, coordinatorEpoch: 0, transactionVersion: 1 }) // 5
    log.appendTxnMarker({ producerId: Q, producerEpoch: 0, commit: false, coordinatorEpoch: 0, transactionVersion: 1 }) // 6
    await log.close()
    ;({ b, c } = await connect(dataDir))

    const after = await fetch(c, 1, 0)
    expect(after).toMatchObject({ errorCode: 0, highWatermark: 7, lastStableOffset: 7, aborted: [{ producerId: BigInt(Q), firstOffset: 3n }] })
    expect(after.batches).toEqual([
      { base: 0, control: false, pid: -1, count: 1 },
      { base: 1, control: false, pid: P, count: 2 },
      { base: 3, control: false, pid: Q, count: 2 },
      { base: 5, control: true, pid: P, count: 1 },
      { base: 6, control: true, pid: Q, count: 1 },
    ])
    // A read that holds only the abort marker still names it (its last offset is in range, as Kafka's collectAbortedTxns).
    expect((await fetch(c, 1, 6)).aborted).toEqual([{ producerId: BigInt(Q), firstOffset: 3n }])
    expect(await latest(c, 1)).toBe(7)
    expect(await latest(c, 1, BigInt(T + 500))).toBe(1)
    // New transactional data after the markers holds the LSO again, and the broker keeps running.
    expect(await produce(c, txn(P, 2, 1))).toMatchObject({ errorCode: 0, baseOffset: 7n })
    expect((await fetch(c, 1, 0)).lastStableOffset).toBe(7)
    expect(await latest(c, 1)).toBe(7)
    expect(await latest(c, 0)).toBe(8)
  })
})
