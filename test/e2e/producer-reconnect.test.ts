/**
 * The headline check against the tidelog broker, at 100,000 records to keep `npm test` fast
 * (the million-record run is in test/interop against Apache Kafka): acks=all with idempotence
 * while a proxy cuts the producer's connections several times; every record exactly once, in
 * per-partition order.
 */
import { describe, expect, it } from 'vitest'
import { brokerSupportsIdempotence, startTestBroker } from '../../packages/producer/test/broker.js'
import { exactlyOnceUnderCuts } from '../../packages/producer/test/headline.js'

describe('exactly once through lost connections (tidelog broker)', () => {
  it('100,000 records over 6 partitions, connections cut 5 times', async () => {
    expect(brokerSupportsIdempotence(), 'the tidelog broker serves InitProducerId').toBe(true)
    const b = await startTestBroker({ numPartitions: 6, proxied: true })
    try {
      const r = await exactlyOnceUnderCuts({
        bootstrap: b.bootstrap,
        proxy: b.proxy!,
        read: { host: '127.0.0.1', port: b.broker.port },
        topic: 'headline',
        partitions: 6,
        count: 100_000,
        cuts: 5,
      })
      expect(r.cuts).toBe(5)
      // The cuts hit requests in flight, which were retried.
      expect(r.failedRequests).toBeGreaterThan(0)
      expect(r.connections).toBeGreaterThan(5)
    } finally {
      await b.close()
    }
  })
})
