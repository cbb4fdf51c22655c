/**
 * kafkajs' REQUEST_QUEUE_SIZE ({ broker, clientId, queueSize }): emitted each time a
 * connection's queue of waiting requests changes. Ours waits only while the broker throttles
 * the connection (KIP-219), so a fake broker answers one Metadata with throttle_time_ms and the
 * requests issued meanwhile are held, then written in order.
 */
import { Metadata } from '@tidelog/protocol'
import { afterEach, describe, expect, it } from 'vitest'
import { Kafka, logLevel } from '../src/index.js'
import { FakeBroker } from '../../client/test/fake-broker.js'
import { until } from '../../../test/kafkajs-compat/types.js'

const cleanup: (() => Promise<unknown>)[] = []
afterEach(async () => {
  for (const c of cleanup.splice(0).reverse()) await c().catch(() => undefined)
})

describe('network.request_queue_size', () => {
  it('reports the held requests while the broker throttles, then each one leaving the queue, down to 0', async () => {
    const b = await FakeBroker.start()
    cleanup.push(() => b.close())
    let throttleNext = false
    b.on(Metadata.apiKey, (req) => {
      const res = b.metadataResponse(req) as Record<string, unknown>
      if (!throttleNext) return res
      throttleNext = false
      return { ...res, throttleTimeMs: 400 }
    })
    const kafka = new Kafka({ clientId: 'queued', brokers: [b.address], logLevel: logLevel.NOTHING })
    const admin = kafka.admin()
    cleanup.push(() => admin.disconnect())
    const sizes: { broker: string; clientId: string; queueSize: number }[] = []
    admin.on(admin.events.REQUEST_QUEUE_SIZE, (e) => void sizes.push(e.payload as (typeof sizes)[number]))
    await admin.connect()
    await admin.fetchTopicMetadata({ topics: [] })
    expect(sizes).toEqual([])
    throttleNext = true
    await admin.fetchTopicMetadata({ topics: [] })
    // The connection is throttled now: these two wait in its queue.
    const held = [admin.fetchTopicMetadata({ topics: [] }), admin.fetchTopicMetadata({ topics: [] })]
    await until(() => sizes.length >= 2, 'two queued requests')
    expect(sizes.slice(0, 2).map((s) => s.queueSize)).toEqual([1, 2])
    await Promise.all(held)
    await until(() => sizes.length >= 4, 'the queue drained')
    expect(sizes.map((s) => s.queueSize)).toEqual([1, 2, 1, 0])
    expect(sizes[0]).toEqual({ broker: b.address, clientId: 'queued', queueSize: 1 })
  })
})
