/**
 * consumer.run() over a real socket against the in-process broker: order per partition, the
 * concurrency bound, eachBatch's resolveOffset, the handler error policies (stop: run() rejects
 * and the failed offset is not committed; skip: committed past it), stop() and AbortSignal.
 */
import { Consumer, HandlerFailedError, IllegalStateError, type ConsumerOptions } from '@tidelog/consumer'
import { describe, expect, it } from 'vitest'
import { cleanup, sleep, startTestBroker } from './helpers/broker.js'
import { waitFor } from './helpers/produce.js'

const options = (brokers: string[], groupId: string): ConsumerOptions => ({
  brokers,
  groupId,
  autoOffsetReset: 'earliest',
  autoCommitIntervalMs: 600_000,
  sessionTimeoutMs: 6000,
  heartbeatIntervalMs: 100,
  fetchMaxWaitMs: 50,
  retryBackoffMs: 5,
  retryBackoffMaxMs: 20,
})

async function fill(producer: { send: (t: string, p: number, r: { key: Buffer | null; value: Buffer }[]) => Promise<bigint> }, topic: string, partitions: number, perPartition: number): Promise<void> {
  for (let p = 0; p < partitions; p++) {
    const records = Array.from({ length: perPartition }, (_, i) => ({ key: null, value: Buffer.from(`${p}:${i}`) }))
    // Several batches per partition, so that a partition comes in several chunks.
    for (let i = 0; i < records.length; i += 10) await producer.send(topic, p, records.slice(i, i + 10))
  }
}

function consumer(brokers: string[], groupId: string, extra: Partial<ConsumerOptions> = {}): Consumer {
  const c = new Consumer({ ...options(brokers, groupId), ...extra })
  cleanup(() => c.close({ timeoutMs: 5000 }))
  return c
}

describe('consumer.run()', () => {
  it('keeps each partition in order and never runs more handlers than partitionsConsumedConcurrently', async () => {
    const { brokers, producer } = await startTestBroker(6)
    await fill(producer, 'order', 6, 40)
    const c = consumer(brokers, 'g-order')
    await c.subscribe(['order'])
    const seen = new Map<number, bigint[]>()
    let running = 0
    let max = 0
    const run = c.run({
      partitionsConsumedConcurrently: 3,
      eachMessage: async ({ partition, message }) => {
        running++
        max = Math.max(max, running)
        await sleep(1)
        const list = seen.get(partition) ?? []
        list.push(message.offset)
        seen.set(partition, list)
        running--
      },
    })
    await waitFor(() => [...seen.values()].reduce((n, l) => n + l.length, 0) >= 240, 15_000, 'all messages')
    await c.stop()
    await run
    expect(max).toBeLessThanOrEqual(3)
    expect(max).toBeGreaterThan(1)
    expect(c.peakHandlerConcurrency).toBeLessThanOrEqual(3)
    for (let p = 0; p < 6; p++) expect(seen.get(p)).toEqual(Array.from({ length: 40 }, (_, i) => BigInt(i)))
    // stop() committed what was processed.
    const committed = await c.committed(Array.from({ length: 6 }, (_, p) => ({ topic: 'order', partition: p })))
    expect(committed.map((o) => o.offset)).toEqual(Array(6).fill(40n))
  })

  it("'stop': run() rejects with HandlerFailedError, the failed offset is not committed and is read again", async () => {
    const { brokers, producer } = await startTestBroker(1)
    await fill(producer, 'fail', 1, 20)
    const c = consumer(brokers, 'g-fail')
    await c.subscribe(['fail'])
    let attempts = 0
    const handled: bigint[] = []
    const err = await c
      .run({
        retry: { retries: 2 },
        eachMessage: async ({ message }) => {
          if (message.offset === 7n) {
            attempts++
            throw new Error('boom')
          }
          handled.push(message.offset)
        },
      })
      .then(
        () => undefined,
        (e: unknown) => e,
      )
    expect(err).toBeInstanceOf(HandlerFailedError)
    expect(err).toMatchObject({ topic: 'fail', partition: 0, offset: 7n, attempts: 3 })
    expect(attempts).toBe(3)
    expect(handled).toEqual([0n, 1n, 2n, 3n, 4n, 5n, 6n])
    const [committed] = await c.committed([{ topic: 'fail', partition: 0 }])
    expect(committed!.offset).toBe(7n)
    // The position is back at the failed record: an iterator (or another run()) reads it next.
    expect(c.position({ topic: 'fail', partition: 0 })).toBe(7n)
    const it = c[Symbol.asyncIterator]()
    const next = await it.next()
    expect(next.value?.offset).toBe(7n)
    await it.return!()
  })

  it("'skip': the failed message counts as processed and is committed past", async () => {
    const { brokers, producer } = await startTestBroker(1)
    await fill(producer, 'skip', 1, 20)
    const c = consumer(brokers, 'g-skip')
    await c.subscribe(['skip'])
    const handled: bigint[] = []
    const run = c.run({
      onHandlerError: 'skip',
      retry: { retries: 1 },
      eachMessage: async ({ message }) => {
        if (message.offset === 3n) throw new Error('bad record')
        handled.push(message.offset)
      },
    })
    await waitFor(() => handled.length === 19, 10_000, '19 handled')
    await c.stop()
    await run
    expect(handled).not.toContain(3n)
    const [committed] = await c.committed([{ topic: 'skip', partition: 0 }])
    expect(committed!.offset).toBe(20n)
  })

  it('eachBatch: resolveOffset marks progress; an unresolved rest is handed over again, not lost', async () => {
    const { brokers, producer } = await startTestBroker(1)
    await fill(producer, 'batch', 1, 30)
    const c = consumer(brokers, 'g-batch')
    await c.subscribe(['batch'])
    const offsets: bigint[] = []
    let first = true
    const run = c.run({
      eachBatchAutoResolve: false,
      eachBatch: async ({ batch, resolveOffset, isRunning, isStale, uncommittedOffsets, commitOffsetsIfNecessary }) => {
        expect(isRunning()).toBe(true)
        expect(isStale()).toBe(false)
        for (const m of batch.messages) {
          // The first batch stops half way without resolving the rest.
          if (first && m.offset === 5n) break
          offsets.push(m.offset)
          resolveOffset(m.offset)
        }
        if (first) {
          expect(uncommittedOffsets()).toEqual([expect.objectContaining({ topic: 'batch', partition: 0, offset: 5n })])
          await commitOffsetsIfNecessary()
          expect(uncommittedOffsets()).toEqual([])
        }
        first = false
      },
    })
    await waitFor(() => offsets.length >= 30, 10_000, 'all offsets')
    await c.stop()
    await run
    expect(offsets).toEqual(Array.from({ length: 30 }, (_, i) => BigInt(i)))
  })

  it('stops on an AbortSignal, excludes iterators while running, and refuses a second run()', async () => {
    const { brokers, producer } = await startTestBroker(1)
    await fill(producer, 'abort', 1, 5)
    const c = consumer(brokers, 'g-abort')
    await c.subscribe(['abort'])
    const ac = new AbortController()
    let n = 0
    const run = c.run({ signal: ac.signal, eachMessage: () => void n++ })
    await expect(c.run({ eachMessage: () => undefined })).rejects.toBeInstanceOf(IllegalStateError)
    await expect(c[Symbol.asyncIterator]().next()).rejects.toBeInstanceOf(IllegalStateError)
    await waitFor(() => n === 5, 10_000, 'five messages')
    ac.abort()
    await run
    await expect(c.run({})).rejects.toBeInstanceOf(TypeError)
  })

  it('a handler running past maxPollIntervalMs makes the member leave; its record is not committed and is read again after the rejoin', async () => {
    const { brokers, producer } = await startTestBroker(1)
    await fill(producer, 'poll', 1, 3)
    const c = consumer(brokers, 'g-poll', { maxPollIntervalMs: 400, rebalanceTimeoutMs: 5000 })
    let lost = 0
    c.on('partitions.lost', () => void lost++)
    await c.subscribe(['poll'])
    const handled: bigint[] = []
    const run = c.run({
      eachMessage: async ({ message }) => {
        // The first time, hold the record until the member has left the group for it.
        if (message.offset === 0n && lost === 0) await waitFor(() => lost > 0, 10_000, 'the poll timeout')
        handled.push(message.offset)
      },
    })
    await waitFor(() => handled.length >= 4, 15_000, 'the records again after the rejoin')
    await c.stop()
    await run
    expect(lost).toBe(1)
    // Offset 0 finished only after its partition was lost: not counted, so handled again.
    expect(handled.slice(0, 2)).toEqual([0n, 0n])
    expect(handled.slice(1)).toEqual([0n, 1n, 2n])
    const [committed] = await c.committed([{ topic: 'poll', partition: 0 }])
    expect(committed!.offset).toBe(3n)
  })
})
