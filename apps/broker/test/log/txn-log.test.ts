import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { ErrorCodes, decodeRecordBatch } from '@tidelog/protocol'
import { describe, expect, it } from 'vitest'
import { KafkaStorageError, PartitionLog, ProducerStateError, TXN_INDEX_ENTRY, encodeTxnMarkerBatch, readTxnMarker } from '../../src/log/index.js'
import { makeBatch } from '../helpers/batches.js'
import { tempDir } from '../helpers/tmp.js'

const T = 1_700_000_000_000
const open = () => PartitionLog.open({ dir: join(tempDir(), 't-0'), topic: 't', partition: 0, now: T })
const txn = (pid: number, seq: number, n = 2, epoch = 0) =>
  makeBatch(n, { producerId: BigInt(pid), producerEpoch: epoch, baseSequence: seq, isTransactional: true, baseTimestamp: T })
const idem = (pid: number, seq: number, n = 1, epoch = 0) => makeBatch(n, { producerId: BigInt(pid), producerEpoch: epoch, baseSequence: seq, baseTimestamp: T })
const marker = (pid: number, commit: boolean, epoch = 0, coordinatorEpoch = 0, transactionVersion = 1) => ({
  producerId: pid,
  producerEpoch: epoch,
  commit,
  coordinatorEpoch,
  transactionVersion,
})

function code(fn: () => unknown): number {
  try {
    fn()
  } catch (err) {
    if (err instanceof ProducerStateError) return err.code
    throw err
  }
  throw new Error('expected a ProducerStateError')
}

describe('transactions in the partition log', () => {
  it('a transactional batch holds the last stable offset at its first offset until the marker', async () => {
    const log = open()
    log.append(makeBatch(1, { baseTimestamp: T }))
    expect(log.lastStableOffset).toBe(1)
    log.append(txn(7, 0))
    log.append(txn(7, 2))
    expect(log.highWatermark).toBe(5)
    expect(log.lastStableOffset).toBe(1)
    expect(log.producerStates()).toEqual([
      { producerId: 7, producerEpoch: 0, lastSequence: 3, lastTimestamp: T, coordinatorEpoch: -1, currentTxnStartOffset: 1 },
    ])
    const r = log.appendTxnMarker(marker(7, true, 0, 3), T + 1)
    expect(r).toMatchObject({ baseOffset: 5, lastOffset: 5, count: 1, duplicate: false })
    expect(log.lastStableOffset).toBe(6)
    expect(log.producerStates()[0]).toMatchObject({ coordinatorEpoch: 3, currentTxnStartOffset: -1 })
    expect(log.abortedTransactions(0, 6)).toEqual([])

    // The marker is a control batch as Kafka writes it.
    const read = await log.read(5, 1 << 20)
    const b = decodeRecordBatch(read.records)
    expect(b).toMatchObject({ isControl: true, isTransactional: true, producerId: 7n, producerEpoch: 0, baseSequence: -1, baseOffset: 5n })
    const rec = b.toArray()[0]!
    expect(Buffer.from(rec.key!).toString('hex')).toBe('00000001')
    expect(Buffer.from(rec.value!).toString('hex')).toBe('000000000003')
    await log.close()
  })

  it('an abort is indexed with its range and the last stable offset, and the earliest open transaction bounds the LSO', async () => {
    const log = open()
    log.append(txn(1, 0)) // 0-1
    log.append(txn(2, 0)) // 2-3
    log.append(txn(1, 2)) // 4-5
    expect(log.lastStableOffset).toBe(0)
    log.appendTxnMarker(marker(1, false)) // 6
    expect(log.lastStableOffset).toBe(2)
    expect(log.abortedTransactions(0, 7)).toEqual([{ producerId: 1, firstOffset: 0, lastOffset: 6, lastStableOffset: 2 }])
    log.appendTxnMarker(marker(2, false)) // 7
    expect(log.lastStableOffset).toBe(8)
    expect(log.abortedTransactions(7, 8)).toEqual([{ producerId: 2, firstOffset: 2, lastOffset: 7, lastStableOffset: 8 }])
    // A range past both aborts overlaps neither.
    log.append(makeBatch(1, { baseTimestamp: T }))
    expect(log.abortedTransactions(8, 9)).toEqual([])
    await log.close()
  })

  it('refuses a plain idempotent batch during the transaction, and fences stale epochs and coordinators', async () => {
    const log = open()
    log.append(txn(7, 0, 2, 3))
    expect(code(() => log.append(idem(7, 2, 1, 3)))).toBe(ErrorCodes.INVALID_TXN_STATE)
    expect(code(() => log.append(txn(7, 0, 1, 2)))).toBe(ErrorCodes.INVALID_PRODUCER_EPOCH)
    expect(code(() => log.appendTxnMarker(marker(7, true, 2)))).toBe(ErrorCodes.INVALID_PRODUCER_EPOCH)
    // KIP-890 (transaction version 2): the marker must carry a bumped epoch.
    expect(code(() => log.appendTxnMarker(marker(7, true, 3, 0, 2)))).toBe(ErrorCodes.INVALID_PRODUCER_EPOCH)
    const leo = log.logEndOffset
    expect(log.lastStableOffset).toBe(0)
    log.appendTxnMarker(marker(7, true, 4, 5, 2))
    expect(log.lastStableOffset).toBe(leo + 1)
    // Its retry (same epoch, nothing open) is written again, as Kafka does since KAFKA-19999.
    log.appendTxnMarker(marker(7, true, 4, 5, 2))
    expect(code(() => log.appendTxnMarker(marker(7, true, 5, 4, 2)))).toBe(ErrorCodes.TRANSACTION_COORDINATOR_FENCED)
    // The bumped epoch starts again at sequence 0; a plain batch is fine once the transaction ended.
    expect(log.append(idem(7, 0, 1, 4)).duplicate).toBe(false)
    expect(log.producerStates()[0]).toMatchObject({ producerEpoch: 4, coordinatorEpoch: 5, currentTxnStartOffset: -1, lastSequence: 0 })
    await log.close()
  })

  it('writes a marker for a producer with no open transaction and changes neither the LSO nor the index', async () => {
    const log = open()
    log.append(makeBatch(2, { baseTimestamp: T }))
    const r = log.appendTxnMarker(marker(9, false))
    expect(r.baseOffset).toBe(2)
    expect(log.lastStableOffset).toBe(3)
    expect(log.abortedTransactions(0, 3)).toEqual([])
    expect(log.producerStates()).toMatchObject([{ producerId: 9, currentTxnStartOffset: -1 }])
    await log.close()
  })

  it('refuses control batches through append', async () => {
    const log = open()
    const ctl = makeBatch(1, { producerId: 1n, producerEpoch: 0, baseSequence: -1, isTransactional: true, isControl: true })
    expect(() => log.append(ctl)).toThrow(/appendTxnMarker/)
    expect(log.logEndOffset).toBe(0)
    await log.close()
  })

  it('a marker wakes long polls (onAppend), and DeleteRecords past an open transaction keeps the LSO at the log start', async () => {
    const log = open()
    let woken = 0
    log.onAppend = () => woken++
    log.append(txn(7, 0)) // 0-1
    log.append(makeBatch(2, { baseTimestamp: T })) // 2-3
    expect(woken).toBe(2)
    // DeleteRecords is bounded by the high watermark only, as in Kafka.
    expect(log.deleteRecordsBefore(3)).toBe(3)
    expect(log.lastStableOffset).toBe(3)
    log.appendTxnMarker(marker(7, false))
    expect(woken).toBe(3)
    expect(log.lastStableOffset).toBe(5)
    expect(log.abortedTransactions(3, 5)).toEqual([{ producerId: 7, firstOffset: 0, lastOffset: 4, lastStableOffset: 5 }])
    await log.close()
  })

  it('answers KAFKA_STORAGE_ERROR for a marker once the directory is offline, and writes nothing', async () => {
    const log = open()
    log.append(txn(7, 0))
    log.dirState.fail(new Error('EIO'), 'a test write')
    expect(() => log.appendTxnMarker(marker(7, true))).toThrow(KafkaStorageError)
    expect(log.logEndOffset).toBe(2)
    expect(log.lastStableOffset).toBe(0)
    await expect(log.close()).rejects.toThrow(KafkaStorageError)
  })

  it("stores aborts in Kafka's .txnindex layout, and reads its own markers back", async () => {
    const log = open()
    log.append(txn(0x1_0000_0001, 0)) // 0-1: a producer id above 2^32
    log.appendTxnMarker(marker(0x1_0000_0001, false), T) // 2
    const bytes = readFileSync(log.active.txnIndex.path)
    expect(bytes.length).toBe(TXN_INDEX_ENTRY)
    expect(bytes.readInt16BE(0)).toBe(0)
    expect(bytes.readBigInt64BE(2)).toBe(0x1_0000_0001n)
    expect(bytes.readBigInt64BE(10)).toBe(0n)
    expect(bytes.readBigInt64BE(18)).toBe(2n)
    expect(bytes.readBigInt64BE(26)).toBe(3n)
    const stored = (await log.read(2, 1 << 20)).records
    expect(readTxnMarker(stored)).toEqual({ commit: false, coordinatorEpoch: 0 })
    expect(readTxnMarker(encodeTxnMarkerBatch({ producerId: 1, producerEpoch: 0, commit: true, coordinatorEpoch: 0x7fff_fffe }, T))).toEqual({ commit: true, coordinatorEpoch: 0x7fff_fffe })
    // A data batch is not read as a marker.
    expect(readTxnMarker(makeBatch(1))).toBeUndefined()
    await log.close()
  })
})
