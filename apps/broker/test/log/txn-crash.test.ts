import { spawnSync } from 'node:child_process'
import { existsSync, unlinkSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { decodeRecordBatches } from '@tidelog/protocol'
import { describe, expect, it } from 'vitest'
import { CLEAN_SHUTDOWN_MARKER, LogManager, PRODUCER_SNAPSHOT } from '../../src/log/index.js'
import { tempDir } from '../helpers/tmp.js'

const ROOT = fileURLToPath(new URL('../../../..', import.meta.url))
const CHILD = fileURLToPath(new URL('./txn-crash-child.ts', import.meta.url))

describe('transactions after kill -9', () => {
  it('recovery rebuilds the open transaction, the LSO and the aborted index, and read_committed skips the aborted records', async () => {
    const dataDir = tempDir()
    const r = spawnSync(process.execPath, ['--import', 'tsx', CHILD, dataDir], { cwd: ROOT, encoding: 'utf8', timeout: 30_000 })
    expect(r.signal).toBe('SIGKILL')
    const before = JSON.parse(r.stdout) as { segments: number; leo: number; lso: number }
    expect(before).toMatchObject({ leo: 24, lso: 18 })
    expect(before.segments).toBeGreaterThan(3)
    expect(existsSync(join(dataDir, CLEAN_SHUTDOWN_MARKER))).toBe(false)
    // The snapshots written at rolls may be missing too (they are not fsynced): drop this one.
    const snapshot = join(dataDir, 't-0', PRODUCER_SNAPSHOT)
    if (existsSync(snapshot)) unlinkSync(snapshot)

    const mgr = LogManager.open({ dataDir, config: { segmentBytes: 400 } })
    const log = mgr.get('t', 0)!
    expect(log.logEndOffset).toBe(24)
    expect(log.lastStableOffset).toBe(18)
    expect(log.producerStates().find((p) => p.producerId === 3)?.currentTxnStartOffset).toBe(18)
    expect(log.abortedTransactions(0, 24)).toEqual([{ producerId: 1, firstOffset: 0, lastOffset: 10, lastStableOffset: 11 }])

    // What a read_committed consumer sees: reads up to the LSO, dropping records of aborted
    // transactions and control records, as the Java consumer does with aborted_transactions.
    const seen: number[] = []
    let next = 0
    const aborted = new Set<number>()
    while (next < log.lastStableOffset) {
      const rr = await log.readCommitted(next, 300)
      for (const a of rr.abortedTransactions) aborted.add(a.producerId)
      for (const b of decodeRecordBatches(rr.records)) {
        if (!b.isControl && !(b.isTransactional && aborted.has(Number(b.producerId)))) for (const rec of b) seen.push(Number(rec.offset))
        next = Number(b.baseOffset) + b.lastOffsetDelta + 1
      }
    }
    expect(seen).toEqual([11, 12, 13, 14, 15, 16])
    // The open transaction is aborted later by its coordinator; the LSO moves past everything.
    log.appendTxnMarker({ producerId: 3, producerEpoch: 0, commit: false, coordinatorEpoch: 0, transactionVersion: 1 })
    expect(log.lastStableOffset).toBe(25)
    expect(log.abortedTransactions(18, 25)).toEqual([{ producerId: 3, firstOffset: 18, lastOffset: 24, lastStableOffset: 25 }])
    await mgr.close()
  })
})
