/** When the broker is gone, records fail with DeliveryTimeoutError after deliveryTimeoutMs, and close() still returns. */
import { describe, expect, it } from 'vitest'
import { DeliveryTimeoutError, Producer } from '@tidelog/producer'
import { startTestBroker } from '../../packages/producer/test/broker.js'

describe('delivery timeout', () => {
  it('fails records once deliveryTimeoutMs passed without a broker', async () => {
    const b = await startTestBroker({ numPartitions: 2 })
    const p = new Producer({ brokers: [b.bootstrap], deliveryTimeoutMs: 1_500, requestTimeoutMs: 500, lingerMs: 0, retryBackoffMs: 50, reconnectBackoffMaxMs: 200 })
    expect((await p.send({ topic: 'gone', key: 'k', value: 'before' })).offset).toBe(0n)
    await b.close()
    const started = Date.now()
    const results = await Promise.allSettled([p.send({ topic: 'gone', key: 'k', value: 'after' }), p.send([{ topic: 'gone', value: 'a' }, { topic: 'gone', value: 'b' }])])
    const elapsed = Date.now() - started
    expect(results[0].status).toBe('rejected')
    const err = (results[0] as PromiseRejectedResult).reason
    expect(err).toBeInstanceOf(DeliveryTimeoutError)
    expect((err as DeliveryTimeoutError).message).toMatch(/gone-\d not acknowledged within deliveryTimeoutMs \(1500 ms\)/)
    expect(results[1].status).toBe('rejected')
    expect(elapsed).toBeGreaterThanOrEqual(1_300)
    expect(elapsed).toBeLessThan(10_000)
    await p.close()
  })
})
