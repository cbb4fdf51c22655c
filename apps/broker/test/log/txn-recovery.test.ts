import { existsSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { PRODUCER_SNAPSHOT, PRODUCER_SNAPSHOT_VERSION, PartitionLog, TXN_INDEX_ENTRY, segmentFileName, segmentsToDelete } from '../../src/log/index.js'
import { makeBatch } from '../helpers/batches.js'
import { tempDir } from '../helpers/tmp.js'

const T = 1_700_000_000_000
const BATCH = makeBatch(2, { producerId: 1n, producerEpoch: 0, baseSequence: 0, isTransactional: true, baseTimestamp: T }).length
const config = { segmentBytes: BATCH * 3, indexIntervalBytes: 64 }
const txn = (pid: number, seq: number) => makeBatch(2, { producerId: BigInt(pid), producerEpoch: 0, baseSequence: seq, isTransactional: true, baseTimestamp: T })
const marker = (pid: number, commit: boolean) => ({ producerId: pid, producerEpoch: 0, commit, coordinatorEpoch: 0, transactionVersion: 1 })

function setup() {
  const dir = join(tempDir(), 't-0')
  const open = (opts: { clean?: boolean; recoveryPoint?: number } = {}) =>
    PartitionLog.open({ dir, topic: 't', partition: 0, config, now: T, clean: false, recoveryPoint: 0, ...opts })
  return { dir, open }
}

/** Producer 1 aborts 0-3 (marker 6, with producer 2's 4-5 in between), producer 2 stays open from 4, plus a committed one. */
function history(log: PartitionLog): void {
  log.append(txn(1, 0)) // 0-1
  log.append(txn(1, 2)) // 2-3
  log.append(txn(2, 0)) // 4-5, still open at the end
  log.appendTxnMarker(marker(1, false), T) // 6
  log.append(txn(3, 0)) // 7-8
  log.appendTxnMarker(marker(3, true), T) // 9
  log.append(txn(2, 2)) // 10-11
}

const aborted = [{ producerId: 1, firstOffset: 0, lastOffset: 6, lastStableOffset: 4 }]

describe('transaction state across restarts', () => {
  it('survives a clean restart through the producer-state snapshot', async () => {
    const s = setup()
    let log = s.open()
    history(log)
    expect(log.lastStableOffset).toBe(4)
    await log.close()
    const snap = JSON.parse(readFileSync(join(s.dir, PRODUCER_SNAPSHOT), 'utf8')) as { version: number }
    expect(snap.version).toBe(PRODUCER_SNAPSHOT_VERSION)
    log = s.open({ clean: true })
    expect(log.recovery.recoveredSegments).toBe(0)
    expect(log.lastStableOffset).toBe(4)
    expect(log.producerStates().find((p) => p.producerId === 2)?.currentTxnStartOffset).toBe(4)
    expect(log.abortedTransactions(0, 12)).toEqual(aborted)
    log.appendTxnMarker(marker(2, true))
    expect(log.lastStableOffset).toBe(13)
    await log.close()
  })

  it('rebuilds open transactions, the LSO and the aborted index from the log after a kill-like stop', async () => {
    const s = setup()
    let log = s.open()
    history(log)
    expect(log.segments.length).toBeGreaterThan(2)
    await log.snapshotsWritten()
    const txnIndexes = log.segments.map((x) => x.txnIndex.path).filter((f) => existsSync(f))
    // No close: nothing more is written, as when the process is killed.
    log.discard()
    // The page cache lost the aborted index and the snapshot too.
    expect(txnIndexes.length).toBe(1)
    for (const f of txnIndexes) unlinkSync(f)
    if (existsSync(join(s.dir, PRODUCER_SNAPSHOT))) unlinkSync(join(s.dir, PRODUCER_SNAPSHOT))
    log = s.open()
    expect(log.recovery.recoveredSegments).toBeGreaterThan(0)
    expect(log.logEndOffset).toBe(12)
    expect(log.lastStableOffset).toBe(4)
    expect(log.abortedTransactions(0, 12)).toEqual(aborted)
    expect(readFileSync(txnIndexes[0]!).length).toBe(TXN_INDEX_ENTRY)
    // read_committed stops at the open transaction and names the aborted one.
    const r = await log.readCommitted(0, 1 << 20)
    expect(r.lastStableOffset).toBe(4)
    expect(r.abortedTransactions).toEqual(aborted)
    await log.close()
  })

  it('replays from a snapshot taken mid-transaction, keeping index entries before it and rewriting a torn one after it', async () => {
    const s = setup()
    let log = s.open()
    history(log)
    await log.snapshotsWritten()
    const f = log.segments.find((x) => x.baseOffset <= 6 && x.nextOffset > 6)!.txnIndex.path
    const snapshotAt = (JSON.parse(readFileSync(join(s.dir, PRODUCER_SNAPSHOT), 'utf8')) as { offset: number }).offset
    expect(snapshotAt).toBeGreaterThan(4) // taken while producer 2's transaction was open
    log.discard()
    // A torn write of a second entry: half an entry at the end of the file.
    writeFileSync(f, Buffer.concat([readFileSync(f), Buffer.alloc(TXN_INDEX_ENTRY / 2, 1)]))
    log = s.open()
    expect(log.lastStableOffset).toBe(4)
    expect(log.abortedTransactions(0, 12)).toEqual(aborted)
    expect(readFileSync(f).length).toBe(TXN_INDEX_ENTRY)
    await log.close()
  })

  it('loads a version 1 snapshot (no transaction fields)', async () => {
    const s = setup()
    let log = s.open()
    log.append(makeBatch(1, { producerId: 5n, producerEpoch: 2, baseSequence: 0, baseTimestamp: T }))
    await log.close()
    writeFileSync(join(s.dir, PRODUCER_SNAPSHOT), JSON.stringify({ version: 1, offset: 1, producers: [[5, 2, [[0, 0, 0, 0]], T]] }))
    log = s.open({ clean: true })
    expect(log.producerStates()).toEqual([{ producerId: 5, producerEpoch: 2, lastSequence: 0, lastTimestamp: T, coordinatorEpoch: -1, currentTxnStartOffset: -1 }])
    expect(log.lastStableOffset).toBe(1)
    await log.close()
  })

  it('deletes the aborted index with its segment, and retention stops at the open transaction', async () => {
    const s = setup()
    const log = PartitionLog.open({ dir: s.dir, topic: 't', partition: 0, config: { ...config, retentionMs: 1000 }, now: T })
    history(log)
    log.appendTxnMarker(marker(2, false), T) // 12: producer 2's transaction 4..12 aborted
    log.append(txn(4, 0)) // 13-14: open
    const markerIndexes = log.segments.filter((x) => x.nextOffset <= 13 && !x.txnIndex.isEmpty).map((x) => x.txnIndex.path)
    expect(markerIndexes.length).toBeGreaterThan(0)
    // Everything is expired; only segments wholly below the LSO (13) may go.
    const n = log.deleteOldSegments(T + 10_000)
    expect(n).toBeGreaterThan(0)
    for (const x of log.segments) expect(x.nextOffset > 13 || x === log.active).toBe(true)
    expect(log.logStartOffset).toBeLessThanOrEqual(13)
    for (const p of markerIndexes) expect(existsSync(p)).toBe(false)
    expect(log.lastStableOffset).toBe(13)
    await log.close()
  })

  it('segmentsToDelete bounds time and size retention by the stable offset only', () => {
    const seg = (baseOffset: number, nextOffset: number) => ({ baseOffset, nextOffset, size: 100, maxTimestamp: 0, lastModified: 0 })
    const segs = [seg(0, 10), seg(10, 20), seg(20, 30)]
    expect(segmentsToDelete(segs, { retentionMs: 1, retentionBytes: -1 }, 1000, 0, 15).count).toBe(1)
    expect(segmentsToDelete(segs, { retentionMs: -1, retentionBytes: 0 }, 1000, 0, 20).count).toBe(2)
    // DeleteRecords moved the log start offset: that rule is not bounded.
    expect(segmentsToDelete(segs, { retentionMs: -1, retentionBytes: -1 }, 1000, 20, 5)).toEqual({ count: 2, reason: 'log-start-offset' })
  })
})
