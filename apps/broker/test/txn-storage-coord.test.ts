import { ApiKeys, ErrorCodes, decodeRecordBatches } from '@tidelog/protocol'
import { describe, expect, it } from 'vitest'
import { addPartitions, connect, endTxn, init, produce, start } from './txn/helpers.js'
import type { RawClient } from './helpers/raw-client.js'

// The coordinator's markers (EndTxn -> WriteTxnMarkers path) meeting the storage side:
// a read_committed long poll wakes on the commit marker, aborts are reported, the LSO
// and ListOffsets follow, and all of it survives a restart.

async function fetchCommitted(c: RawClient, fetchOffset: number, maxWaitMs = 0) {
  const r = await c.request(ApiKeys.Fetch, 12, {
    replicaId: -1, maxWaitMs, minBytes: 1, maxBytes: 1 << 20, isolationLevel: 1, sessionId: 0, sessionEpoch: -1,
    topics: [{ topic: 't', partitions: [{ partition: 0, currentLeaderEpoch: -1, fetchOffset: BigInt(fetchOffset), lastFetchedEpoch: -1, logStartOffset: -1n, partitionMaxBytes: 1 << 20 }] }],
    forgottenTopicsData: [], rackId: '',
  })
  const p = r.responses[0].partitions[0]
  return {
    lastStableOffset: Number(p.lastStableOffset),
    highWatermark: Number(p.highWatermark),
    aborted: p.abortedTransactions as { producerId: bigint; firstOffset: bigint }[],
    batches: decodeRecordBatches(p.records ?? Buffer.alloc(0)).map((b) => ({ base: Number(b.baseOffset), control: b.isControl })),
  }
}

async function latestCommitted(c: RawClient): Promise<number> {
  const r = await c.request(ApiKeys.ListOffsets, 5, { replicaId: -1, isolationLevel: 1, topics: [{ name: 't', partitions: [{ partitionIndex: 0, timestamp: -1n, currentLeaderEpoch: -1 }] }] })
  return Number(r.topics[0].partitions[0].offset)
}

/** Polls until `check` holds (markers may be written after EndTxn answers), failing after 20 s. */
async function until<T>(read: () => Promise<T>, check: (v: T) => boolean): Promise<T> {
  const deadline = Date.now() + 20_000
  for (;;) {
    const v = await read()
    if (check(v) || Date.now() > deadline) return v
    await new Promise((r) => setTimeout(r, 20))
  }
}

describe('coordinator markers and the storage side together', () => {
  it('a read_committed long poll wakes on the commit marker; aborts are reported; state survives a restart', async () => {
    const s = await start({}, undefined, 1)
    const { c } = s
    const { producerId: pid, producerEpoch: epoch } = await init(c, 'tx-store')
    expect(await addPartitions(c, 'tx-store', pid, epoch, [0])).toEqual([0])
    expect((await produce(c, 'tx-store', pid, epoch, 0, 0)).errorCode).toBe(ErrorCodes.NONE) // 0-1
    expect(await fetchCommitted(c, 0)).toMatchObject({ lastStableOffset: 0, highWatermark: 2, batches: [] })
    expect(await latestCommitted(c)).toBe(0)

    // A consumer waiting at the LSO (on its own connection) is woken by the marker, not by max_wait.
    const consumer = await connect(s.b)
    const started = Date.now()
    let answered = false
    const waiting = fetchCommitted(consumer, 0, 60_000).finally(() => {
      answered = true
    })
    // Give the fetch time to reach the broker and park; nothing may answer it meanwhile.
    await new Promise((r) => setTimeout(r, 200))
    expect(answered).toBe(false)
    expect((await endTxn(c, 'tx-store', pid, epoch, true)).errorCode).toBe(ErrorCodes.NONE)
    const woken = await waiting
    expect(Date.now() - started).toBeLessThan(50_000)
    expect(woken.lastStableOffset).toBe(3)
    expect(woken.batches).toEqual([{ base: 0, control: false }, { base: 2, control: true }])
    expect(woken.aborted).toEqual([])

    // The second transaction is aborted: read_committed is told which records to drop.
    expect(await addPartitions(c, 'tx-store', pid, epoch, [0])).toEqual([0])
    expect((await produce(c, 'tx-store', pid, epoch, 0, 2)).errorCode).toBe(ErrorCodes.NONE) // 3-4
    expect((await endTxn(c, 'tx-store', pid, epoch, false)).errorCode).toBe(ErrorCodes.NONE) // marker 5
    const after = await until(() => fetchCommitted(c, 0), (f) => f.lastStableOffset === 6)
    expect(after).toMatchObject({ lastStableOffset: 6, highWatermark: 6, aborted: [{ producerId: pid, firstOffset: 3n }] })
    expect(after.batches.map((b) => b.base)).toEqual([0, 2, 3, 5])
    expect(await latestCommitted(c)).toBe(6)

    await s.close()
    const again = await start({}, s.dataDir, 1)
    const reread = await fetchCommitted(again.c, 0)
    expect(reread).toMatchObject({ lastStableOffset: 6, aborted: [{ producerId: pid, firstOffset: 3n }] })
    expect(await latestCommitted(again.c)).toBe(6)
  })
})
