import { describe, expect, it } from 'vitest'
import { endTxn, fetchPartition, init, produce, start } from './helpers.js'

describe('TV2 aborts seen by read_committed', () => {
  it('an abort marker with the bumped epoch lists the aborted transaction (finding F2)', async () => {
    const { c } = await start()
    const { producerId: pid, producerEpoch: epoch } = await init(c, 'tv2-abort')
    expect((await produce(c, 'tv2-abort', pid, epoch, 0, 0, { version: 12 })).errorCode).toBe(0)
    const e = await endTxn(c, 'tv2-abort', pid, epoch, false, 5)
    expect(e.errorCode).toBe(0)
    expect((await produce(c, 'tv2-abort', pid, e.producerEpoch, 0, 0, { version: 12 })).errorCode).toBe(0)
    expect((await endTxn(c, 'tv2-abort', pid, e.producerEpoch, true, 5)).errorCode).toBe(0)
    const f = await fetchPartition(c, 0, 1)
    expect(f.highWatermark).toBe(6n)
    expect(f.abortedTransactions).toEqual([{ producerId: pid, firstOffset: 0n }])
  })
})
