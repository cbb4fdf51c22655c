/**
 * Partial cleaning, as Kafka's cleaner does it: the dirty section ends at the first uncleanable
 * offset, which an open transaction puts inside a segment (the last stable offset). That segment
 * is cleaned below it; its batches from there on are kept byte for byte, with the transactions
 * they belong to (an aborted one's .txnindex entry included). Once the transaction ends, the
 * next pass goes on from the checkpoint.
 */
import { decodeRecordBatches } from '@tidelog/protocol'
import { describe, expect, it } from 'vitest'
import { planCleaning } from '../src/log/compaction/clean-log.js'
import type { PartitionLog } from '../src/log/index.js'
import { cleanOnce, openCompacted, put, readAll } from './compaction-fixtures.js'
import { makeBatch } from './helpers/batches.js'
import { tempDir } from './helpers/tmp.js'

const txn = (log: PartitionLog, producerId: number, records: [string, string][]) =>
  log.append(makeBatch(records.map(([key, value]) => ({ key, value })), { producerId: BigInt(producerId), producerEpoch: 0, baseSequence: 0, isTransactional: true })).baseOffset
const marker = (log: PartitionLog, producerId: number, commit: boolean) =>
  log.appendTxnMarker({ producerId, producerEpoch: 0, commit, coordinatorEpoch: 0, transactionVersion: 1 }).baseOffset

/** The stored bytes of every batch from `from` on, by base offset. */
async function rawBatchesFrom(log: PartitionLog, from: number): Promise<Map<number, string>> {
  const r = await log.read(log.logStartOffset, 1 << 24)
  const out = new Map<number, string>()
  let pos = 0
  const buf = Buffer.from(r.records)
  for (const b of decodeRecordBatches(r.records)) {
    const size = 12 + buf.readInt32BE(pos + 8)
    if (Number(b.baseOffset) >= from) out.set(Number(b.baseOffset), buf.subarray(pos, pos + size).toString('hex'))
    pos += size
  }
  return out
}

const view = async (log: PartitionLog) => (await readAll(log)).map((r) => `${r.offset}:${r.key}=${r.value}`)

describe('partial cleaning up to the last stable offset', () => {
  it('cleans a segment below an open transaction, keeps everything from its first offset as it is, and goes on once it ends', async () => {
    const log = openCompacted(tempDir())
    put(log, [['a', '0']]) // 0
    put(log, [['a', '1']]) // 1
    put(log, [['b', '1']]) // 2
    const open = txn(log, 7, [['a', 'in-open-txn']]) // 3: the last stable offset from here
    put(log, [['a', '2']]) // 4
    put(log, [['b', '2']]) // 5
    txn(log, 8, [['c', 'aborted']]) // 6: a transaction aborted while 7 is still open
    const abortAt = marker(log, 8, false) // 7
    log.roll()
    put(log, [['z', 'active']]) // 8
    expect(log.lastStableOffset).toBe(open)
    const above = await rawBatchesFrom(log, open)

    const now = Date.now()
    const plan = planCleaning(log, 0, now)
    expect([plan.firstUncleanable, plan.dirty.length]).toEqual([open, 1])
    const first = await cleanOnce(log, 0, { now })
    // Before, a segment holding the LSO waited for a later pass: nothing was cleaned.
    expect(first).toMatchObject({ endOffset: open, segmentsCleaned: 1, recordsRemoved: 1 })
    expect(await view(log)).toEqual(['1:a=1', '2:b=1', '3:a=in-open-txn', '4:a=2', '5:b=2', '6:c=aborted', '8:z=active'])
    // From the LSO on, byte for byte; the aborted transaction past it is still indexed, so
    // read_committed readers will skip its data once the LSO passes it.
    expect(await rawBatchesFrom(log, open)).toEqual(above)
    expect(log.segments[0]!.txnIndex.entries.map((t) => [t.producerId, t.lastOffset])).toEqual([[8, abortAt]])
    // The checkpoint stands at the LSO: with the transaction still open, nothing is dirty.
    expect(planCleaning(log, first!.endOffset, now).dirtyBytes).toBe(0)

    marker(log, 7, true) // 9, in the active segment
    expect(log.lastStableOffset).toBe(log.logEndOffset)
    const second = await cleanOnce(log, first!.endOffset, { now })
    expect(second?.endOffset).toBe(8)
    // The latest of every key; the aborted data is gone, its marker stays with its index entry
    // while an empty batch of producer 8 remains (as the first pass of compaction-txn.test.ts).
    expect(await view(log)).toEqual(['4:a=2', '5:b=2', '8:z=active'])
    const committed = await log.readCommitted(0, 1 << 20)
    expect(committed.abortedTransactions.map((t) => Number(t.producerId))).toEqual([8])
    await log.close()
  })
})
