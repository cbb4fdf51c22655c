/**
 * Serdes end to end over a real socket: Producer<K, V> serializes inside send(), Consumer<K, V>
 * deserializes for run() and the iterators; a value that is not JSON raises
 * RecordDeserializationError with its topic, partition and offset ('stop': not committed,
 * position kept at it) or is skipped ('skip').
 */
import { Consumer, RecordDeserializationError, serdes, type ConsumerOptions, type Message } from '@tidelog/consumer'
import { Producer } from '@tidelog/producer'
import { describe, expect, it } from 'vitest'
import { cleanup, startTestBroker } from './helpers/broker.js'
import { waitFor } from './helpers/produce.js'

interface Order {
  id: number
  item: string
}

const base = (brokers: string[], groupId: string): ConsumerOptions<string, Order> => ({
  brokers,
  groupId,
  autoOffsetReset: 'earliest',
  autoCommitIntervalMs: 600_000,
  heartbeatIntervalMs: 100,
  sessionTimeoutMs: 6000,
  fetchMaxWaitMs: 50,
  keyDeserializer: serdes.string,
  valueDeserializer: serdes.json<Order>(),
})

async function produce(brokers: string[], topic: string, orders: (Order | string)[]): Promise<void> {
  // Typed producer for orders; a raw one writes the records that are not JSON.
  const typed = new Producer<string, Order>({ brokers, keySerializer: serdes.string, valueSerializer: serdes.json<Order>(), lingerMs: 0 })
  const raw = new Producer({ brokers, lingerMs: 0 })
  try {
    for (const o of orders) {
      if (typeof o === 'string') await raw.send({ topic, partition: 0, key: 'bad', value: Buffer.from(o) })
      else await typed.send({ topic, partition: 0, key: `k${o.id}`, value: o })
    }
  } finally {
    await typed.close()
    await raw.close()
  }
}

describe('serdes', () => {
  it('JSON round trip through run(), with an async deserializer too', async () => {
    const { brokers } = await startTestBroker(1)
    const orders = Array.from({ length: 10 }, (_, id) => ({ id, item: `item-${id}` }))
    await produce(brokers, 'orders', orders)
    const asyncJson = { deserialize: async (b: Buffer) => JSON.parse(b.toString()) as Order }
    const c = new Consumer<string, Order>({ ...base(brokers, 'g-json'), valueDeserializer: asyncJson })
    cleanup(() => c.close({ timeoutMs: 5000 }))
    await c.subscribe(['orders'])
    const got: Message<string, Order>[] = []
    const run = c.run({ eachMessage: ({ message }) => void got.push(message) })
    await waitFor(() => got.length === 10, 10_000, 'ten orders')
    await c.stop()
    await run
    expect(got.map((m) => m.value)).toEqual(orders)
    expect(got.map((m) => m.key)).toEqual(orders.map((o) => `k${o.id}`))
  })

  it("a value that is not JSON: 'stop' rejects run() with RecordDeserializationError at its offset, not committed", async () => {
    const { brokers } = await startTestBroker(1)
    await produce(brokers, 'bad-json', [{ id: 0, item: 'a' }, { id: 1, item: 'b' }, '{not json', { id: 3, item: 'd' }])
    const c = new Consumer<string, Order>(base(brokers, 'g-bad'))
    cleanup(() => c.close({ timeoutMs: 5000 }))
    await c.subscribe(['bad-json'])
    const ids: number[] = []
    const err = await c.run({ eachMessage: ({ message }) => void ids.push(message.value!.id) }).then(
      () => undefined,
      (e: unknown) => e,
    )
    expect(err).toBeInstanceOf(RecordDeserializationError)
    expect(err).toMatchObject({ topic: 'bad-json', partition: 0, offset: 2n, isKey: false })
    expect((err as Error).cause).toBeInstanceOf(SyntaxError)
    expect(ids).toEqual([0, 1])
    const [committed] = await c.committed([{ topic: 'bad-json', partition: 0 }])
    expect(committed!.offset).toBe(2n)
    // The iterator meets it too, as Java's poll() does, until the application seeks past it.
    const it = c[Symbol.asyncIterator]()
    await expect(it.next()).rejects.toMatchObject({ name: 'RecordDeserializationError', offset: 2n })
    c.seek({ topic: 'bad-json', partition: 0, offset: 3n })
    const next = await c[Symbol.asyncIterator]().next()
    expect(next.value?.value).toEqual({ id: 3, item: 'd' })
  })

  it("'skip' moves on past the bad record and commits past it", async () => {
    const { brokers } = await startTestBroker(1)
    await produce(brokers, 'skip-json', [{ id: 0, item: 'a' }, 'oops', { id: 2, item: 'c' }])
    const c = new Consumer<string, Order>({ ...base(brokers, 'g-skip'), onDeserializationError: 'skip' })
    cleanup(() => c.close({ timeoutMs: 5000 }))
    await c.subscribe(['skip-json'])
    const ids: number[] = []
    const run = c.run({ eachBatch: ({ batch }) => void ids.push(...batch.messages.map((m) => m.value!.id)) })
    await waitFor(() => ids.length === 2, 10_000, 'two orders')
    await c.stop()
    await run
    expect(ids).toEqual([0, 2])
    const [committed] = await c.committed([{ topic: 'skip-json', partition: 0 }])
    expect(committed!.offset).toBe(3n)
  })

  it('the producer serializes inside send(): a failing serializer rejects that send with SerializationError', async () => {
    const { brokers } = await startTestBroker(1)
    const p = new Producer<string, Order>({ brokers, keySerializer: serdes.string, valueSerializer: serdes.json<Order>() })
    cleanup(() => p.close())
    await expect(p.send({ topic: 'x', key: 42 as unknown as string, value: { id: 1, item: 'a' } })).rejects.toMatchObject({ name: 'SerializationError', field: 'key' })
    const md = await p.send({ topic: 'x', partition: 0, key: 'ok', value: { id: 1, item: 'a' } })
    expect(md.offset).toBe(0n)
  })
})
