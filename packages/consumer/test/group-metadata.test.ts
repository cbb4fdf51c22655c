/**
 * consumer.groupMetadata() (Java's ConsumerGroupMetadata, KIP-447) over a real socket: what a
 * transactional producer's sendOffsetsToTransaction() needs, as the group coordinator knows it.
 */
import { Consumer } from '@tidelog/consumer'
import { ProtocolError } from '@tidelog/protocol'
import { describe, expect, it } from 'vitest'
import { cleanup, startTestBroker } from './helpers/broker.js'
import { waitFor } from './helpers/produce.js'

describe('consumer.groupMetadata()', () => {
  it('names the group, generation and member the coordinator assigned, and follows a rebalance', async () => {
    const { brokers } = await startTestBroker(2)
    const a = new Consumer({ brokers, groupId: 'gm', groupInstanceId: 'static-a' })
    cleanup(() => a.close())
    expect(a.groupMetadata()).toEqual({ groupId: 'gm', generationId: -1, memberId: '', groupInstanceId: 'static-a' })
    await a.subscribe(['gm-topic'])
    await waitFor(() => a.assigned().length === 2, 15_000, 'the first assignment')
    const first = a.groupMetadata()
    expect(first.generationId).toBeGreaterThanOrEqual(1)
    expect(first.memberId).toMatch(/.+/)
    expect(first.generationId).toBe(a.generation?.generationId)
    expect(first.memberId).toBe(a.generation?.memberId)
    const b = new Consumer({ brokers, groupId: 'gm' })
    cleanup(() => b.close())
    await b.subscribe(['gm-topic'])
    await waitFor(() => a.assigned().length === 1 && b.assigned().length === 1, 15_000, 'the rebalance')
    expect(a.groupMetadata().generationId).toBeGreaterThan(first.generationId)
    expect(b.groupMetadata().groupInstanceId).toBeNull()
  })

  it('a consumer without groupId has no group metadata: INVALID_GROUP_ID', () => {
    const c = new Consumer({ brokers: ['127.0.0.1:1'] })
    let err: unknown
    try {
      c.groupMetadata()
    } catch (e) {
      err = e
    }
    expect(err).toBeInstanceOf(ProtocolError)
    expect((err as ProtocolError).type).toBe('INVALID_GROUP_ID')
    void c.close()
  })
})
