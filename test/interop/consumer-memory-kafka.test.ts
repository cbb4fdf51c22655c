/**
 * The memory check at full size: a consumer with a slow handler reads 1 GiB from Apache
 * Kafka (its own process, so this process's memory is the consumer's). The buffer stays within
 * maxBufferedBytes plus one response, and live memory within the buffer, the response arriving
 * and a fixed overhead, whatever the size read.
 */
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { Consumer } from '@tidelog/consumer'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { peerUnavailable, startKafka, type KafkaNode } from '../helpers/kafka.js'
import { kafkaUse, recordsPeers } from '../helpers/peers.js'
import { TestProducer } from '../../packages/consumer/test/helpers/produce.js'

setFlagsFromString('--expose-gc')
const gc = runInNewContext('gc') as () => void

describe('consumer memory against Apache Kafka', () => {
  let kafka: KafkaNode | undefined
  recordsPeers(() => kafkaUse(kafka))
  let skip: string | undefined

  beforeAll(async () => {
    try {
      kafka = await startKafka({ properties: { 'num.partitions': 6 } })
    } catch (e) {
      skip = peerUnavailable('Apache Kafka', e) as string
    }
  })
  afterAll(async () => {
    await kafka?.stop()
  })

  it('reads 1 GiB with a slow handler in bounded memory', async (ctx) => {
    if (skip) return ctx.skip()
    const records = 1024 * 1024
    const producer = new TestProducer(kafka!.bootstrap)
    await producer.fill('gib', 6, records, { perBatch: 512, valueBytes: 1000 })
    await producer.close()

    const settle = async (): Promise<number> => {
      // Backing stores of collected ArrayBuffers are freed on a background thread: give it a turn.
      gc()
      await new Promise((r) => setTimeout(r, 20))
      gc()
      const m = process.memoryUsage()
      return m.heapUsed + m.arrayBuffers
    }
    const limit = 8 * 1024 * 1024
    const base = await settle()
    const consumer = new Consumer({ brokers: kafka!.bootstrap, autoOffsetReset: 'earliest', maxBufferedBytes: limit })
    consumer.assign([0, 1, 2, 3, 4, 5].map((partition) => ({ topic: 'gib', partition })))
    let peak = 0
    let bytes = 0
    let n = 0
    for await (const m of consumer) {
      bytes += m.value!.length
      if (++n % 512 === 0) await new Promise((r) => setTimeout(r, 1))
      if (n % 65_536 === 0) peak = Math.max(peak, (await settle()) - base)
      if (n === records) break
    }
    await consumer.close()
    expect(bytes).toBeGreaterThanOrEqual(records * 1000)
    // One response goes over the limit by at most the first batch it returns whole (KIP-74).
    expect(consumer.peakBufferedBytes).toBeLessThanOrEqual(limit + 1024 * 1024)
    // The buffer, the response arriving (at most the room left) and a fixed overhead; nothing
    // that grows with the 1 GiB read.
    expect(peak).toBeLessThan(2 * limit + 16 * 1024 * 1024)
    console.log(`1 GiB read: peak buffered ${(consumer.peakBufferedBytes / 2 ** 20).toFixed(1)} MiB, peak live growth ${(peak / 2 ** 20).toFixed(1)} MiB`)
  }, 600_000)
})
