/**
 * The Java consumer calls users reach for, over a real socket: beginningOffsets / endOffsets /
 * offsetsForTimes (the shared ListOffsets lookup), lag() from fetch responses, commitAsync's
 * order, enforceRebalance, aborting a waiting iterator, and max.poll.interval.ms under run().
 */
import { Consumer, type ConsumerOptions, type GroupGeneration, type TopicPartitionOffset } from '@tidelog/consumer'
import { describe, expect, it } from 'vitest'
import { cleanup, startTestBroker } from './helpers/broker.js'
import { waitFor } from './helpers/produce.js'

const options = (brokers: string[], groupId: string): ConsumerOptions => ({
  brokers,
  groupId,
  autoOffsetReset: 'earliest',
  autoCommitIntervalMs: 600_000,
  heartbeatIntervalMs: 100,
  sessionTimeoutMs: 6000,
  fetchMaxWaitMs: 50,
})

function consumer(o: ConsumerOptions): Consumer {
  const c = new Consumer(o)
  cleanup(() => c.close({ timeoutMs: 5000 }))
  return c
}

const values = (n: number, t0 = 0) => Array.from({ length: n }, (_, i) => ({ key: null, value: Buffer.from(`v${i}`), timestamp: t0 + i * 1000 }))

describe('Java consumer calls', () => {
  it('beginningOffsets, endOffsets and offsetsForTimes', async () => {
    const { brokers, producer } = await startTestBroker(2)
    await producer.send('lookup', 0, values(10, 1_000_000))
    await producer.send('lookup', 1, values(5, 1_000_000))
    const c = consumer(options(brokers, 'g-lookup'))
    const tps = [0, 1].map((partition) => ({ topic: 'lookup', partition }))
    expect((await c.beginningOffsets(tps)).map((o) => o.offset)).toEqual([0n, 0n])
    expect((await c.endOffsets(tps)).map((o) => o.offset)).toEqual([10n, 5n])
    const times = await c.offsetsForTimes([
      { topic: 'lookup', partition: 0, timestamp: 1_002_500 },
      { topic: 'lookup', partition: 1, timestamp: 9_000_000 },
    ])
    expect(times[0]).toMatchObject({ offset: 3n, timestamp: 1_003_000n })
    expect(times[1]).toMatchObject({ offset: null, timestamp: null })
    await expect(c.offsetsForTimes([{ topic: 'lookup', partition: 0, timestamp: -5 }])).rejects.toBeInstanceOf(TypeError)
  })

  it('lag() comes from the fetch responses, without a request', async () => {
    const { brokers, producer } = await startTestBroker(1)
    await producer.send('lag', 0, values(10))
    const c = consumer(options(brokers, 'g-lag'))
    c.assign([{ topic: 'lag', partition: 0 }])
    expect(c.lag({ topic: 'lag', partition: 0 })).toBeUndefined()
    const it = c.messages()
    for (let i = 0; i < 3; i++) await it.next()
    expect(c.lag({ topic: 'lag', partition: 0 })).toBe(7n)
    await it.return!()
  })

  it('commitAsync commits in call order: the later commit wins, callbacks run in order', async () => {
    const { brokers, producer } = await startTestBroker(1)
    await producer.send('async', 0, values(10))
    const c = consumer(options(brokers, 'g-async'))
    c.assign([{ topic: 'async', partition: 0 }])
    const order: bigint[] = []
    const at = (offset: bigint): TopicPartitionOffset[] => [{ topic: 'async', partition: 0, offset }]
    const cb = (err: Error | null, done: TopicPartitionOffset[]) => {
      expect(err).toBeNull()
      order.push(done[0]!.offset)
    }
    await Promise.all([c.commitAsync(at(5n), cb), c.commitAsync(at(8n), cb), c.commitAsync(at(3n), cb)])
    expect(order).toEqual([5n, 8n, 3n])
    expect((await c.committed([{ topic: 'async', partition: 0 }]))[0]!.offset).toBe(3n)
    // With a callback, an error goes to it and the promise still resolves.
    const errors: (Error | null)[] = []
    const noGroup = consumer({ brokers })
    await expect(noGroup.commitAsync(at(1n), (err) => errors.push(err))).resolves.toEqual([])
    expect(errors[0]).toMatchObject({ name: 'IllegalStateError' })
  })

  it('enforceRebalance starts a new generation; an AbortSignal ends a waiting loop', async () => {
    const { brokers } = await startTestBroker(1)
    const c = consumer(options(brokers, 'g-enforce'))
    const generations: number[] = []
    await c.subscribe(['enforce'], { listener: { onPartitionsAssigned: (_p, g: GroupGeneration) => void generations.push(g.generationId) } })
    await waitFor(() => generations.length === 1, 10_000, 'first generation')
    c.enforceRebalance()
    await waitFor(() => generations.length === 2, 10_000, 'second generation')
    expect(generations[1]).toBeGreaterThan(generations[0]!)

    const ac = new AbortController()
    const it = c.messages({ signal: ac.signal })
    const pending = it.next()
    ac.abort(new Error('wakeup'))
    await expect(pending).rejects.toThrow('wakeup')
    // The aborted loop has ended: another may read (it is not refused with IllegalStateError).
    const ac2 = new AbortController()
    const p2 = c.batches({ signal: ac2.signal }).next()
    ac2.abort(new Error('second wakeup'))
    await expect(p2).rejects.toThrow('second wakeup')
  })
})
