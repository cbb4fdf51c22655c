/**
 * bufferMemory: a send() larger than the buffer waits for room and completes in order; with
 * the broker stalled, a send that finds no room within maxBlockMs fails with
 * BufferExhaustedError while what was queued before it completes once the broker answers.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { BufferExhaustedError, Producer, SendError } from '@tidelog/producer'
import { startTestBroker, type TestBroker } from '../../packages/producer/test/broker.js'
import { readTopic } from '../../packages/producer/test/helpers.js'

const cleanup: (() => Promise<void>)[] = []
afterEach(async () => {
  for (const f of cleanup.splice(0).reverse()) await f()
})

async function broker(proxied = false): Promise<TestBroker> {
  const b = await startTestBroker({ numPartitions: 3, proxied })
  cleanup.push(() => b.close())
  return b
}

describe('backpressure', () => {
  it('a send() far larger than bufferMemory waits for room and completes in order', async () => {
    const b = await broker()
    const p = new Producer({ brokers: [b.bootstrap], bufferMemory: 32 * 1024, batchBytes: 4 * 1024 })
    cleanup.push(() => p.close())
    const value = 'v'.repeat(100)
    const results = await p.send(Array.from({ length: 20_000 }, (_, i) => ({ topic: 'bp', key: String(i % 7), value: `${i} ${value}` })))
    expect(results).toHaveLength(20_000)
    const read = await readTopic('127.0.0.1', b.broker.port, 'bp', 3, 20_000)
    for (const part of read) {
      const nums = part.map((r) => Number(r.value!.split(' ')[0]))
      for (let i = 1; i < nums.length; i++) expect(nums[i]).toBeGreaterThan(nums[i - 1]!)
    }
    expect(read.flat()).toHaveLength(20_000)
  })

  it('fails with BufferExhaustedError after maxBlockMs while the broker does not answer', async () => {
    const b = await broker(true)
    const p = new Producer({ brokers: [b.bootstrap], bufferMemory: 8 * 1024, batchBytes: 1024, maxBlockMs: 300, lingerMs: 0 })
    cleanup.push(() => p.close())
    await p.send({ topic: 'stall', value: 'warm-up' })
    b.proxy!.stall(true)
    const value = 'x'.repeat(200)
    // About 7.5 KiB: fits, and is sent (then stuck in the stalled network).
    const queued = p.send(Array.from({ length: 36 }, () => ({ topic: 'stall', value })))
    const started = Date.now()
    const overflow = await p.send({ topic: 'stall', value: 'y'.repeat(1_000) }).catch((e: unknown) => e)
    const waited = Date.now() - started
    expect(overflow).toBeInstanceOf(BufferExhaustedError)
    expect(waited).toBeGreaterThanOrEqual(250)
    // An array's promise settles once all its records have: the ones queued before room ran out wait for the broker.
    const partly = p.send([{ topic: 'stall', value: 'z'.repeat(100) }, { topic: 'stall', value: 'y'.repeat(1_000) }]).catch((e: unknown) => e)
    await new Promise((r) => setTimeout(r, 500))
    b.proxy!.stall(false)
    expect(await queued).toHaveLength(36)
    const err = (await partly) as SendError
    expect(err).toBeInstanceOf(SendError)
    expect(err.errors[0]).toBeUndefined()
    expect(err.errors[1]).toBeInstanceOf(BufferExhaustedError)
    expect((await p.send({ topic: 'stall', value: 'after' })).offset).toBeGreaterThan(0n)
  })
})
