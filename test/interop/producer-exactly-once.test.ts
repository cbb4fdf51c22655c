/**
 * The headline check against Apache Kafka (and the tidelog broker): 1,000,000 records over 6 partitions with
 * acks=all and idempotence, while a proxy in front of the broker (Kafka advertises the proxy's
 * port, so every connection passes through it) cuts all of the producer's connections five
 * times mid-flight. Read back, every record must be there exactly once, in per-partition send
 * order, at the offset the producer reported.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { KAFKA_VERSIONS, peerUnavailable, startKafka, type KafkaNode } from '../helpers/kafka.js'
import { kafkaUse, recordsPeers } from '../helpers/peers.js'
import { brokerSupportsIdempotence, startTestBroker } from '../../packages/producer/test/broker.js'
import { exactlyOnceUnderCuts } from '../../packages/producer/test/headline.js'
import { startCuttableProxy, type CuttableProxy } from '../../packages/producer/test/helpers.js'

for (const version of [KAFKA_VERSIONS.latest, KAFKA_VERSIONS.previous]) describe(`idempotent producer against Apache Kafka ${version}`, () => {
  let kafka: KafkaNode | undefined
  recordsPeers(() => kafkaUse(kafka))
  let proxy: CuttableProxy
  let skip: string | undefined

  beforeAll(async () => {
    let target = { host: '127.0.0.1', port: 0 }
    proxy = await startCuttableProxy(() => target)
    try {
      kafka = await startKafka({
        version,
        properties: { 'advertised.listeners': `PLAINTEXT://127.0.0.1:${proxy.port}`, 'num.partitions': 6 },
      })
    } catch (e) {
      skip = peerUnavailable('Apache Kafka', e) as string
      return
    }
    target = { host: kafka.host, port: kafka.port }
  })
  afterAll(async () => {
    await proxy?.close()
    await kafka?.stop()
  })

  it('1,000,000 records, connections cut 5 times: each exactly once, in order', async (ctx) => {
    if (skip) return ctx.skip()
    const r = await exactlyOnceUnderCuts({
      bootstrap: `127.0.0.1:${proxy.port}`,
      proxy,
      read: { host: kafka!.host, port: kafka!.port },
      topic: 'headline',
      partitions: 6,
      count: 1_000_000,
      cuts: 5,
    })
    expect(r.cuts).toBe(5)
    expect(r.failedRequests).toBeGreaterThan(0)
    console.log(`1,000,000 records in ${r.seconds.toFixed(1)} s through ${r.connections} connections, ${r.failedRequests} Produce requests lost to cuts and retried`)
  }, 600_000)
})

describe('idempotent producer against the tidelog broker', () => {
  it('1,000,000 records, connections cut 5 times: each exactly once, in order', async () => {
    expect(brokerSupportsIdempotence(), 'the tidelog broker serves InitProducerId').toBe(true)
    const b = await startTestBroker({ numPartitions: 6, proxied: true })
    try {
      const r = await exactlyOnceUnderCuts({
        bootstrap: b.bootstrap,
        proxy: b.proxy!,
        read: { host: '127.0.0.1', port: b.broker.port },
        topic: 'headline',
        partitions: 6,
        count: 1_000_000,
        cuts: 5,
      })
      expect(r.cuts).toBe(5)
      expect(r.failedRequests).toBeGreaterThan(0)
      console.log(`tidelog broker: 1,000,000 records in ${r.seconds.toFixed(1)} s through ${r.connections} connections, ${r.failedRequests} Produce requests lost to cuts and retried`)
    } finally {
      await b.close()
    }
  }, 600_000)
})
