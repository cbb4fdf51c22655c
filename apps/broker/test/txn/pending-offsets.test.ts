import { describe, expect, it } from 'vitest'
import { commitTxnOffsets } from '../../src/groups/txn-offsets.js'
import { silentLogger } from '../../src/logger.js'
import { harness } from '../groups/helpers.js'

const offset = (o: bigint) => ({ topic: 't', partition: 0, offset: o, leaderEpoch: -1, metadata: null })

describe('pending transactional offsets in the offsets store', () => {
  it('survive offset expiry and compaction of the store, and only the commit marker makes them the group\'s', async () => {
    let h = harness({ offsetsRetentionMs: 1 })
    const req = { groupId: 'g', generationId: -1, memberId: '', groupInstanceId: null, producerId: 7n, offsets: [offset(10n)] }
    expect(await commitTxnOffsets(h.coord, silentLogger, req)).toEqual([0])
    // Retention runs: an empty group with nothing but pending offsets is not removed, so they are not lost.
    h.coord.expireOffsets(Date.now() + 60_000)
    expect(h.coord.group('g')).toBeDefined()
    expect(h.store.hasPending('g', 't', 0)).toBe(true)
    h = await h.reopen()
    expect(h.store.hasPending('g', 't', 0)).toBe(true)
    expect(h.coord.fetchOffsets('g', [{ name: 't', partitions: [0] }])[0]!.partitions[0]!.offset).toBe(-1n)
    // A second transaction of another producer is independent of the first.
    expect(await commitTxnOffsets(h.coord, silentLogger, { ...req, producerId: 8n, offsets: [offset(99n)] })).toEqual([0])
    h.store.completePending('g', 8n, false)
    h.store.completePending('g', 7n, true)
    expect(h.store.hasPending('g', 't', 0)).toBe(false)
    h = await h.reopen()
    expect(h.coord.fetchOffsets('g', [{ name: 't', partitions: [0] }])[0]!.partitions[0]!.offset).toBe(10n)
    await h.close()
  })

  it('a member id or generation for a group this coordinator does not know is refused, and nothing is stored', async () => {
    const h = harness()
    const base = { groupId: 'nobody', groupInstanceId: null, producerId: 1n, offsets: [offset(1n)] }
    expect(await commitTxnOffsets(h.coord, silentLogger, { ...base, generationId: 3, memberId: '' })).toEqual([22])
    expect(await commitTxnOffsets(h.coord, silentLogger, { ...base, generationId: -1, memberId: 'm-1' })).toEqual([25])
    expect(h.store.hasPendingFor('nobody')).toBe(false)
    await h.close()
  })
})
