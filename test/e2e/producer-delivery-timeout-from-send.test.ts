/**
 * deliveryTimeoutMs counts from send(), as Java's delivery.timeout.ms counts from the send()
 * call: time spent waiting for the topic's metadata or for buffer room counts, so a record
 * fails with DeliveryTimeoutError about deliveryTimeoutMs after send(), not that long after
 * it finally got into a batch (and not only after maxBlockMs).
 */
import { afterEach, describe, expect, it } from 'vitest'
import { DeliveryTimeoutError, Producer } from '@tidelog/producer'
import { startTestBroker } from '../../packages/producer/test/broker.js'

const DELIVERY_MS = 1_500
// Timers, one metadata attempt in flight, a loaded CI machine.
const SLACK_MS = 700

const cleanup: (() => Promise<void>)[] = []
afterEach(async () => {
  for (const f of cleanup.splice(0).reverse()) await f()
})

async function timed(p: Promise<unknown>): Promise<{ error: unknown; ms: number }> {
  const started = performance.now()
  const error = await p.then(
    () => undefined,
    (e: unknown) => e,
  )
  return { error, ms: performance.now() - started }
}

describe('deliveryTimeoutMs from send()', () => {
  it('fails a record for a topic whose metadata never comes (broker down) after deliveryTimeoutMs, not maxBlockMs', async () => {
    const b = await startTestBroker({ numPartitions: 1 })
    const p = new Producer({ brokers: [b.bootstrap], deliveryTimeoutMs: DELIVERY_MS, maxBlockMs: 60_000, requestTimeoutMs: 500, lingerMs: 0, retryBackoffMs: 50, reconnectBackoffMaxMs: 200 })
    cleanup.push(() => p.close({ timeoutMs: 1_000 }))
    await p.send({ topic: 'known', value: 'warm-up' })
    await b.close()
    const { error, ms } = await timed(p.send({ topic: 'never-seen', value: 'x' }))
    expect(error).toBeInstanceOf(DeliveryTimeoutError)
    expect((error as Error).message).toMatch(/record for never-seen not acknowledged within deliveryTimeoutMs \(1500 ms\)/)
    expect(ms).toBeGreaterThanOrEqual(DELIVERY_MS - 50)
    expect(ms).toBeLessThan(DELIVERY_MS + SLACK_MS)
  }, 10_000)

  it('counts the time a record waited for buffer room', async () => {
    const b = await startTestBroker({ numPartitions: 1 })
    const p = new Producer({ brokers: [b.bootstrap], deliveryTimeoutMs: DELIVERY_MS, maxBlockMs: 60_000, requestTimeoutMs: 500, lingerMs: 0, retryBackoffMs: 50, reconnectBackoffMaxMs: 200, bufferMemory: 1_000 })
    cleanup.push(() => p.close({ timeoutMs: 1_000 }))
    await p.send({ topic: 'full', value: 'warm-up' })
    await b.close()
    const first = timed(p.send({ topic: 'full', value: 'a'.repeat(600) }))
    // No room for this one until the first expires: it has waited its whole delivery timeout by then.
    const second = timed(p.send({ topic: 'full', value: 'b'.repeat(600) }))
    const [a, c] = await Promise.all([first, second])
    expect(a.error).toBeInstanceOf(DeliveryTimeoutError)
    expect(c.error).toBeInstanceOf(DeliveryTimeoutError)
    expect(c.ms).toBeLessThan(DELIVERY_MS + SLACK_MS)
  }, 10_000)

  it('counts the time an array send waited behind another one for metadata', async () => {
    const b = await startTestBroker({ numPartitions: 1 })
    const p = new Producer({ brokers: [b.bootstrap], deliveryTimeoutMs: DELIVERY_MS, maxBlockMs: 60_000, requestTimeoutMs: 500, lingerMs: 0, retryBackoffMs: 50, reconnectBackoffMaxMs: 200 })
    cleanup.push(() => p.close({ timeoutMs: 1_000 }))
    await p.send({ topic: 'known', value: 'warm-up' })
    await b.close()
    const waiting = timed(p.send([{ topic: 'unknown-1', value: 'x' }, { topic: 'known', value: 'y' }]))
    const behind = timed(p.send({ topic: 'known', value: 'z' }))
    const [w, k] = await Promise.all([waiting, behind])
    expect(w.ms).toBeLessThan(DELIVERY_MS + SLACK_MS)
    expect(k.error).toBeInstanceOf(DeliveryTimeoutError)
    expect(k.ms).toBeLessThan(DELIVERY_MS + SLACK_MS)
  }, 10_000)
})
