import { rmSync } from 'node:fs'
import { join } from 'node:path'
import { decodeRecordBatches } from '@tidelog/protocol'
import { describe, expect, it } from 'vitest'
import { PRODUCER_SNAPSHOT, PartitionLog } from '../src/log/index.js'
import { COMPACT, cleanOnce, openCompacted, put, readAll } from './compaction-fixtures.js'
import { makeBatch } from './helpers/batches.js'
import { tempDir } from './helpers/tmp.js'

interface BatchView {
  base: number
  last: number
  control: boolean
  producerId: number
  count: number
}

async function batches(log: PartitionLog): Promise<BatchView[]> {
  const r = await log.read(log.logStartOffset, 1 << 24)
  return decodeRecordBatches(r.records).map((b) => ({
    base: Number(b.baseOffset),
    last: Number(b.baseOffset) + b.lastOffsetDelta,
    control: b.isControl,
    producerId: Number(b.producerId),
    count: b.recordCount,
  }))
}

const txn = (log: PartitionLog, producerId: number, seq: number, records: [string, string][]) =>
  log.append(makeBatch(records.map(([key, value]) => ({ key, value })), { producerId: BigInt(producerId), producerEpoch: 0, baseSequence: seq, isTransactional: true })).baseOffset
const marker = (log: PartitionLog, producerId: number, commit: boolean) =>
  log.appendTxnMarker({ producerId, producerEpoch: 0, commit, coordinatorEpoch: 0, transactionVersion: 1 }).baseOffset

describe('compaction with transactions and idempotent producers', () => {
  it('removes aborted data, keeps committed data, and removes markers only once safe (Kafka\'s rules)', async () => {
    const log = openCompacted(tempDir(), { deleteRetentionMs: 1000 })
    txn(log, 1, 0, [['a', 'aborted']]) // 0
    const abortAt = marker(log, 1, false) // 1
    txn(log, 2, 0, [['b', 'committed']]) // 2
    const commitAt = marker(log, 2, true) // 3
    put(log, [['c', '1']]) // 4
    log.roll()
    put(log, [['z', 'active']])
    expect(log.segments[0]!.txnIndex.entries.map((t) => t.lastOffset)).toEqual([abortAt])

    const t0 = Date.now()
    await cleanOnce(log, 0, { now: t0 })
    expect((await readAll(log)).map((r) => `${r.offset}:${r.key}=${r.value}`)).toEqual(['2:b=committed', '4:c=1', '5:z=active'])
    // The abort marker stays while the pass removed its data (and its index entry with it); the
    // commit marker stays while its transaction has data.
    let views = await batches(log)
    expect(views.filter((b) => b.control).map((b) => b.base)).toEqual([abortAt, commitAt])
    expect(log.segments[0]!.txnIndex.entries.map((t) => t.lastOffset)).toEqual([abortAt])
    // The aborted transaction's batch was producer 1's last: it stays as an empty batch with its offsets.
    expect(views.find((b) => b.producerId === 1 && !b.control)).toEqual({ base: 0, last: 0, control: false, producerId: 1, count: 0 })

    // As in Kafka, that empty batch counts as data of the aborted transaction: the marker stays with it.
    await cleanOnce(log, 0, { now: t0 + 10 })
    expect((await batches(log)).filter((b) => b.control).map((b) => b.base)).toEqual([abortAt, commitAt])
    // Once producer 1 expires (producer.id.expiration.ms) its empty batch goes; the pass after that
    // finds no data of the transaction and stamps the marker's delete horizon; after it, the marker goes.
    expect(log.removeExpiredProducers(t0 + 86_400_000 + 60_000)).toBeGreaterThanOrEqual(1)
    await cleanOnce(log, 0, { now: t0 + 20 })
    expect((await batches(log)).some((b) => b.producerId === 1 && !b.control)).toBe(false)
    await cleanOnce(log, 0, { now: t0 + 30 })
    expect((await batches(log)).filter((b) => b.control).map((b) => b.base)).toEqual([abortAt, commitAt])
    await cleanOnce(log, 0, { now: t0 + 30 + 1001 })
    views = await batches(log)
    expect(views.filter((b) => b.control).map((b) => b.base)).toEqual([commitAt])
    expect(log.segments[0]!.txnIndex.entries).toEqual([])
    // read_committed readers see the committed record and no aborted one.
    const rc = await log.readCommitted(0, 1 << 20)
    expect(rc.abortedTransactions).toEqual([])
    await log.close()
  })

  it('keeps the last batch of every idempotent producer, so its sequence survives compaction and a restart', async () => {
    const dir = tempDir()
    const log = openCompacted(dir)
    const idem = (seq: number, key: string, value: string) =>
      log.append(makeBatch([{ key, value }], { producerId: 7n, producerEpoch: 3, baseSequence: seq }))
    idem(0, 'k', 'one')
    idem(1, 'k', 'two')
    put(log, [['k', 'three']]) // a plain producer overwrites the key
    log.roll()
    put(log, [['z', 'active']])
    await cleanOnce(log)
    expect((await readAll(log)).map((r) => r.value)).toEqual(['three', 'active'])
    const empty = (await batches(log)).filter((b) => b.producerId === 7)
    expect(empty).toEqual([{ base: 1, last: 1, control: false, producerId: 7, count: 0 }])
    await log.close()
    // Without the snapshot, the state is rebuilt from the log, the empty batch included.
    rmSync(join(dir, 'c-0', PRODUCER_SNAPSHOT), { force: true })
    const again = PartitionLog.open({ dir: join(dir, 'c-0'), topic: 'c', partition: 0, config: COMPACT, clean: false, recoveryPoint: 0 })
    expect(again.producerStates().find((p) => p.producerId === 7)).toMatchObject({ producerEpoch: 3, lastSequence: 1 })
    // A retry of the last batch is still a duplicate, answered with its original offset.
    const retry = again.append(makeBatch([{ key: 'k', value: 'two' }], { producerId: 7n, producerEpoch: 3, baseSequence: 1 }))
    expect(retry).toMatchObject({ duplicate: true, baseOffset: 1 })
    expect(again.append(makeBatch([{ key: 'k', value: 'four' }], { producerId: 7n, producerEpoch: 3, baseSequence: 2 })).duplicate).toBe(false)
    await again.close()
  })
})
