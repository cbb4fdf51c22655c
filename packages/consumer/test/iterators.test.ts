/**
 * One loop at a time over a consumer. A message counts as processed when its loop asks for the
 * next one, so a second loop asking while the first still handles a message would mark that
 * message processed (and auto-commit it): the second loop is refused with IllegalStateError
 * while the first is active; once the first has ended (break, error, close) a new loop reads on.
 */
import { Consumer, IllegalStateError, NoOffsetForPartitionError, type ConsumerOptions, type Message } from '@tidelog/consumer'
import { describe, expect, it } from 'vitest'
import { cleanup, sleep, startTestBroker } from './helpers/broker.js'

function consumer(options: ConsumerOptions): Consumer {
  const c = new Consumer({ autoOffsetReset: 'earliest', fetchMaxWaitMs: 50, ...options })
  cleanup(() => c.close())
  return c
}

const tp = { topic: 'loops', partition: 0 }

/** What a second loop started now gets: its first value, or the error it ends with. */
async function secondLoop(c: Consumer, kind: 'messages' | 'batches'): Promise<unknown> {
  try {
    if (kind === 'messages') for await (const m of c) return m.offset
    else for await (const b of c.batches()) return b.messages[0]!.offset
    return 'done'
  } catch (err) {
    return err
  }
}

describe('one loop at a time', () => {
  it('refuses a second loop while the first holds a message, and leaves that message unprocessed', async () => {
    const { brokers, producer } = await startTestBroker(1)
    await producer.fill('loops', 1, 5)
    const c = consumer({ brokers, groupId: 'loops-a', autoCommit: true, autoCommitIntervalMs: 100 })
    c.assign([tp])
    const refusals: unknown[] = []
    let held: Message | undefined
    for await (const m of c) {
      held = m
      // While this loop handles offset 0, another loop (messages or batches) must not take over.
      refusals.push(await secondLoop(c, 'messages'), await secondLoop(c, 'batches'))
      // Give auto-commit a chance to commit what a second loop would have marked processed.
      await sleep(300)
      break
    }
    expect(held!.offset).toBe(0n)
    expect(refusals).toHaveLength(2)
    for (const r of refusals) {
      expect(r).toBeInstanceOf(IllegalStateError)
      expect((r as Error).message).toMatch(/already being iterated: one loop at a time/)
    }
    await c.close()
    // Offset 0 was in hand when the loop was left: the group's next offset is still 0 (a second
    // loop asking for a message would have made it 1, losing offset 0 on a crash).
    const check = consumer({ brokers, groupId: 'loops-a' })
    expect((await check.committed([tp]))[0]!.offset).toBe(0n)
  }, 15_000)

  it('refuses a second loop while the first waits for data; the first still gets what arrives', async () => {
    const { brokers, producer } = await startTestBroker(1)
    const c = consumer({ brokers })
    c.assign([tp])
    const first = (async () => {
      for await (const m of c) return m.value!.toString()
      return 'done'
    })()
    await sleep(200) // the first loop is parked in next(), waiting
    const refused = await secondLoop(c, 'messages')
    expect(refused).toBeInstanceOf(IllegalStateError)
    await producer.fill('loops', 1, 1, { prefix: 'late-' })
    expect(await first).toBe('late-0')
  }, 15_000)

  it('after the first loop ends (break, an error, done at close) a new loop reads on from the position', async () => {
    const { brokers, producer } = await startTestBroker(1)
    await producer.fill('loops', 1, 6)
    // autoOffsetReset none and no committed offset: the first loop ends with an error.
    const c = consumer({ brokers, groupId: 'loops-b', autoOffsetReset: 'none', autoCommit: false })
    c.assign([tp])
    const failed = await secondLoop(c, 'messages')
    expect(failed).toBeInstanceOf(NoOffsetForPartitionError)
    await c.seekToBeginning([tp])
    const read: bigint[] = []
    // A loop left with break.
    for await (const m of c) {
      read.push(m.offset)
      if (read.length === 2) break
    }
    // A new loop is fine now: messages, then batches.
    for await (const m of c) {
      read.push(m.offset)
      if (read.length === 4) break
    }
    for await (const b of c.batches()) {
      read.push(...b.messages.map((m) => m.offset))
      if (read.length >= 6) break
    }
    expect(read).toEqual([0n, 1n, 2n, 3n, 4n, 5n])
    // A loop parked in next() ends (done) when the consumer closes; so does any loop after it.
    const parked = (async () => {
      for await (const m of c) return m.offset
      return 'done'
    })()
    await sleep(100)
    await c.close()
    expect(await parked).toBe('done')
    expect(await secondLoop(c, 'messages')).toBe('done')
  }, 15_000)
})
