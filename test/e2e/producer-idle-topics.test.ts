/**
 * metadataMaxIdleMs (Java's metadata.max.idle.ms): a producer writing to ever new topic names
 * forgets the topics it stopped writing to, so its state and its metadata requests stay
 * bounded; writing to a forgotten topic again still works (with idempotence, in sequence).
 */
import { afterEach, describe, expect, it } from 'vitest'
import { Producer } from '@tidelog/producer'
import { startTestBroker } from '../../packages/producer/test/broker.js'
import { readTopic } from '../../packages/producer/test/helpers.js'

const IDLE_MS = 1_000
const TOPICS = 1_000

const cleanup: (() => Promise<void>)[] = []
afterEach(async () => {
  for (const f of cleanup.splice(0).reverse()) await f()
})

async function until(check: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!check() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20))
}

describe('metadataMaxIdleMs', () => {
  it('forgets 1,000 topics once idle, and sends to a forgotten topic again', async () => {
    const b = await startTestBroker({ numPartitions: 1 })
    cleanup.push(() => b.close())
    const p = new Producer({ brokers: [b.bootstrap], metadataMaxIdleMs: IDLE_MS, lingerMs: 0 })
    cleanup.push(() => p.close())
    const names = Array.from({ length: TOPICS }, (_, i) => `dyn-${i}`)
    const sent = await p.send(names.map((topic) => ({ topic, value: `first ${topic}` })))
    expect(sent.every((m) => m.offset === 0n)).toBe(true)
    // Just used: known (one metadata request looked all of them up; on a slow machine the
    // acknowledgements may take long enough for some to be idle already).
    expect(p.topicCount).toBeGreaterThanOrEqual(TOPICS / 2)
    await until(() => p.topicCount === 0, IDLE_MS * 3 + 2_000)
    expect(p.topicCount).toBe(0)
    // A topic in use is kept while the others go.
    const again = await p.send({ topic: 'dyn-7', value: 'second' })
    expect(again.offset).toBe(1n)
    expect(p.topicCount).toBe(1)
    const [records] = await readTopic('127.0.0.1', b.broker.port, 'dyn-7', 1, 2)
    expect(records!.map((r) => [r.offset, r.value])).toEqual([[0n, 'first dyn-7'], [1n, 'second']])
    // With idempotence, the partition's sequence went on from where it was before the topic was forgotten.
    expect(records!.map((r) => r.baseSequence)).toEqual([0, 1])
    await until(() => p.topicCount === 0, IDLE_MS * 3 + 2_000)
    expect(p.topicCount).toBe(0)
  }, 60_000)
})
