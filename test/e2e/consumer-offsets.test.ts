import diagnostics from 'node:diagnostics_channel'
import { Consumer, NoOffsetForPartitionError, OffsetOutOfRangeError, type Batch, type ConsumerOptions, type Message } from '@tidelog/consumer'
import { describe, expect, it } from 'vitest'
import { cleanup, startTestBroker } from '../../packages/consumer/test/helpers/broker.js'

async function take(c: Consumer, n: number): Promise<Message[]> {
  const out: Message[] = []
  if (n === 0) return out
  for await (const m of c) {
    out.push(m)
    if (out.length === n) break
  }
  return out
}

function consumer(options: ConsumerOptions): Consumer {
  const c = new Consumer(options)
  cleanup(() => c.close())
  return c
}

const tps = (topic: string, n: number) => Array.from({ length: n }, (_, partition) => ({ topic, partition }))

describe('assigned partitions against the tidelog broker', () => {
  it('delivers every record in offset order per partition, with key, value, headers, timestamp and leader epoch', async () => {
    const { brokers, producer } = await startTestBroker(3)
    await producer.fill('basic', 3, 3000, { perBatch: 100 })
    await producer.send('basic', 0, [{ key: 'hk', value: 'hv', headers: [{ key: 'h1', value: 'x' }, { key: 'h1', value: null }], timestamp: 1234 }])
    const c = consumer({ brokers, autoOffsetReset: 'earliest' })
    c.assign(tps('basic', 3))
    const got = await take(c, 3001)
    expect(new Set(got.map((m) => m.value!.toString())).size).toBe(3001)
    for (const p of [0, 1, 2]) {
      const offsets = got.filter((m) => m.partition === p).map((m) => m.offset)
      expect(offsets).toEqual(offsets.map((_, i) => BigInt(i)))
    }
    const special = got.find((m) => m.key?.toString() === 'hk')!
    expect(special.headers.map((h) => [h.key, h.value?.toString() ?? null])).toEqual([
      ['h1', 'x'],
      ['h1', null],
    ])
    expect(special.timestamp).toBe(1234n)
    expect(special.timestampType).toBe(0)
    expect(special.leaderEpoch).toBeGreaterThanOrEqual(0)
  })

  it('reads batches compressed with gzip, snappy and lz4', async () => {
    const { brokers, producer } = await startTestBroker(1)
    for (const compression of ['gzip', 'snappy', 'lz4'] as const) {
      await producer.send('codecs', 0, Array.from({ length: 50 }, (_, i) => ({ value: `${compression}-${i}` })), { compression })
    }
    const c = consumer({ brokers, autoOffsetReset: 'earliest' })
    c.assign([{ topic: 'codecs', partition: 0 }])
    const got = await take(c, 150)
    expect(got.map((m) => m.value!.toString())).toEqual(['gzip', 'snappy', 'lz4'].flatMap((k) => Array.from({ length: 50 }, (_, i) => `${k}-${i}`)))
  })

  it('seeks: to an offset (inside a batch), to the beginning, to the end, and by timestamp', async () => {
    const { brokers, producer } = await startTestBroker(1)
    await producer.send('seek', 0, Array.from({ length: 20 }, (_, i) => ({ value: `v${i}`, timestamp: 1_000_000 + i * 1000 })))
    const c = consumer({ brokers, autoOffsetReset: 'earliest' })
    const tp = { topic: 'seek', partition: 0 }
    c.assign([tp])
    expect((await take(c, 1))[0]!.offset).toBe(0n)
    c.seek({ ...tp, offset: 13n })
    expect((await take(c, 2)).map((m) => m.offset)).toEqual([13n, 14n])
    expect(c.position(tp)).toBe(15n)
    await c.seekToBeginning()
    expect((await take(c, 1))[0]!.offset).toBe(0n)
    await c.seekToTimestamp(1_005_500)
    expect((await take(c, 1))[0]!.offset).toBe(6n)
    await c.seekToEnd([tp])
    expect(c.position(tp)).toBe(20n)
    await c.seekToTimestamp(2_000_000)
    expect(c.position(tp)).toBe(20n)
    await producer.send('seek', 0, [{ value: 'after' }])
    expect((await take(c, 1))[0]!.value!.toString()).toBe('after')
  })

  it('pauses and resumes partitions', async () => {
    const { brokers, producer } = await startTestBroker(2)
    await producer.fill('pause', 2, 200)
    const c = consumer({ brokers, autoOffsetReset: 'earliest' })
    c.assign(tps('pause', 2))
    c.pause([{ topic: 'pause', partition: 0 }])
    expect(c.paused()).toEqual([{ topic: 'pause', partition: 0 }])
    const first = await take(c, 100)
    expect(first.every((m) => m.partition === 1)).toBe(true)
    c.resume([{ topic: 'pause', partition: 0 }])
    const rest = await take(c, 100)
    expect(rest.every((m) => m.partition === 0)).toBe(true)
    expect(rest[0]!.offset).toBe(0n)
  })

  it('iterates batches: one partition at a time, in order, each record once', async () => {
    const { brokers, producer } = await startTestBroker(3)
    await producer.fill('batches', 3, 9000, { perBatch: 300 })
    const c = consumer({ brokers, autoOffsetReset: 'earliest', maxPartitionFetchBytes: 16 * 1024 })
    c.assign(tps('batches', 3))
    const next = new Map<number, bigint>()
    let total = 0
    let batches = 0
    for await (const b of c.batches() as AsyncIterable<Batch>) {
      batches++
      for (const m of b.messages) {
        expect(m.partition).toBe(b.partition)
        expect(m.offset).toBe(next.get(b.partition) ?? 0n)
        next.set(b.partition, m.offset + 1n)
      }
      expect(b.nextOffset).toBe(next.get(b.partition))
      total += b.messages.length
      if (total === 9000) break
    }
    expect(batches).toBeGreaterThan(3)
  })

  it("autoOffsetReset: 'latest' starts at the end; 'none' raises until a seek", async () => {
    const { brokers, producer } = await startTestBroker(1)
    await producer.fill('reset', 1, 10)
    const tp = { topic: 'reset', partition: 0 }
    const latest = consumer({ brokers, autoOffsetReset: 'latest' })
    latest.assign([tp])
    await expect.poll(() => latest.position(tp), { timeout: 10_000 }).toBe(10n)
    await producer.send('reset', 0, [{ value: 'new' }])
    expect((await take(latest, 1))[0]!.offset).toBe(10n)

    const none = consumer({ brokers, groupId: 'reset-none', autoOffsetReset: 'none' })
    none.assign([tp])
    await expect(take(none, 1)).rejects.toBeInstanceOf(NoOffsetForPartitionError)
    none.seek({ ...tp, offset: 3n })
    expect((await take(none, 1))[0]!.offset).toBe(3n)
  })

  it('an out-of-range position resets per autoOffsetReset, or raises with none', async () => {
    const { brokers, producer } = await startTestBroker(1)
    await producer.fill('range', 1, 5)
    const tp = { topic: 'range', partition: 0 }
    const earliest = consumer({ brokers, autoOffsetReset: 'earliest' })
    earliest.assign([tp])
    await take(earliest, 1)
    earliest.seek({ ...tp, offset: 1000n })
    expect((await take(earliest, 1))[0]!.offset).toBe(0n)

    const none = consumer({ brokers, autoOffsetReset: 'none' })
    none.assign([tp])
    none.seek({ ...tp, offset: 1000n })
    const err = await take(none, 1).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(OffsetOutOfRangeError)
    expect((err as OffsetOutOfRangeError).offset).toBe(1000n)
  })

  it('commits: commit() stores the position, a new consumer of the group starts there', async () => {
    const { brokers, producer } = await startTestBroker(1)
    await producer.fill('commit', 1, 100)
    const tp = { topic: 'commit', partition: 0 }
    const a = consumer({ brokers, groupId: 'committers', autoOffsetReset: 'earliest', autoCommit: false })
    a.assign([tp])
    await take(a, 40)
    await a.commit()
    expect((await a.committed([tp]))[0]!.offset).toBe(40n)
    await a.commit([{ ...tp, offset: 30n, metadata: 'by hand' }])
    const [c] = await a.committed([tp])
    expect(c!.offset).toBe(30n)
    expect(c!.metadata).toBe('by hand')
    await a.close()
    const b = consumer({ brokers, groupId: 'committers', autoOffsetReset: 'earliest' })
    b.assign([tp])
    expect((await take(b, 1))[0]!.offset).toBe(30n)
  })

  it('at-least-once: close commits what was processed; the message in hand when the loop is left is not', async () => {
    const { brokers, producer } = await startTestBroker(1)
    await producer.fill('alo', 1, 100)
    const tp = { topic: 'alo', partition: 0 }
    const a = consumer({ brokers, groupId: 'alo-group', autoOffsetReset: 'earliest' })
    a.assign([tp])
    const got = await take(a, 25) // breaks while holding offset 24
    expect(got.at(-1)!.offset).toBe(24n)
    await a.close()
    const b = consumer({ brokers, groupId: 'alo-group', autoOffsetReset: 'earliest' })
    expect((await b.committed([tp]))[0]!.offset).toBe(24n)
  })

  it('at-most-once: the end of each fetched chunk is committed before its first message is handed out', async () => {
    const { brokers, producer } = await startTestBroker(1)
    await producer.fill('amo', 1, 100, { perBatch: 100 })
    const tp = { topic: 'amo', partition: 0 }
    const a = consumer({ brokers, groupId: 'amo-group', autoOffsetReset: 'earliest', delivery: 'at-most-once' })
    a.assign([tp])
    const [first] = await take(a, 1)
    expect(first!.offset).toBe(0n)
    const watcher = consumer({ brokers, groupId: 'amo-group' })
    expect((await watcher.committed([tp]))[0]!.offset).toBe(100n)
  })

  it('waits for a topic that does not exist yet, asking for metadata with backoff, and reads it once it appears', async () => {
    const { brokers, producer } = await startTestBroker(1)
    let metadataRequests = 0
    const onStart = (e: unknown) => {
      if ((e as { apiName: string }).apiName === 'Metadata') metadataRequests++
    }
    diagnostics.subscribe('tidelog:request:start', onStart)
    cleanup(async () => void diagnostics.unsubscribe('tidelog:request:start', onStart))
    const c = consumer({ brokers, autoOffsetReset: 'earliest', allowAutoTopicCreation: false, retryBackoffMaxMs: 500 })
    c.assign([{ topic: 'later', partition: 0 }])
    // With a position, the fetcher itself needs the leader.
    c.seek({ topic: 'later', partition: 0, offset: 0n })
    const first = take(c, 1)
    await new Promise((r) => setTimeout(r, 2500))
    // The producer's own Metadata requests are counted too; a tight loop would make thousands.
    expect(metadataRequests).toBeLessThan(30)
    await producer.send('later', 0, [{ value: 'finally' }])
    expect((await first)[0]!.value!.toString()).toBe('finally')
  })
})
