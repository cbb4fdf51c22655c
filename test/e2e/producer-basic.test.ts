/**
 * The producer against the tidelog broker over real sockets: results, what lands in the log
 * (keys, values, headers, timestamps), acks, and the typed per-record failures.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { startBroker, type Broker, type BrokerOptions } from '@tidelog/broker'
import { ClientClosedError } from '@tidelog/client'
import { ProtocolError } from '@tidelog/protocol'
import {
  InvalidPartitionError,
  Producer,
  RecordTooLargeError,
  SendError,
  SerializationError,
  type ProducerOptions,
} from '@tidelog/producer'
import { readTopic } from '../../packages/producer/test/helpers.js'

const cleanup: (() => Promise<void> | void)[] = []
afterEach(async () => {
  for (const f of cleanup.splice(0).reverse()) await f()
})

async function broker(opts: BrokerOptions = {}): Promise<Broker> {
  const dataDir = mkdtempSync(join(tmpdir(), 'tidelog-producer-'))
  const b = await startBroker({ port: 0, dataDir, ...opts })
  cleanup.push(() => rmSync(dataDir, { recursive: true, force: true }))
  cleanup.push(() => b.close())
  return b
}

function producer(b: Broker, opts: Partial<ProducerOptions> = {}): Producer {
  const p = new Producer({ brokers: [`127.0.0.1:${b.port}`], clientId: 'producer-e2e', ...opts })
  cleanup.push(() => p.close())
  return p
}

describe('Producer against the tidelog broker', () => {
  it('sends one record and many, resolving each with its partition, offset and timestamp', async () => {
    const b = await broker()
    const p = producer(b)
    const before = Date.now()
    const one = await p.send({ topic: 'events', key: 'user-1', value: 'first', headers: { source: 'web' } })
    expect(one).toEqual({ topic: 'events', partition: 0, offset: 0n, timestamp: expect.any(Number) })
    expect(one.timestamp).toBeGreaterThanOrEqual(before)
    expect(one.timestamp).toBeLessThanOrEqual(Date.now())

    const many = await p.send(Array.from({ length: 500 }, (_, i) => ({ topic: 'events', value: `v${i}` })))
    expect(many).toHaveLength(500)
    expect(many.map((m) => m.offset)).toEqual(Array.from({ length: 500 }, (_, i) => BigInt(i + 1)))
    await p.flush()

    const [records] = await readTopic('127.0.0.1', b.port, 'events', 1, 501)
    expect(records).toHaveLength(501)
    expect(records![0]).toMatchObject({ offset: 0n, key: 'user-1', value: 'first', headers: [{ key: 'source', value: 'web' }] })
    expect(records![0]!.timestamp).toBe(BigInt(one.timestamp))
    expect(records!.slice(1).map((r) => r.value)).toEqual(Array.from({ length: 500 }, (_, i) => `v${i}`))
  })

  it('writes keys, values and headers given as strings, bytes and null, and explicit timestamps', async () => {
    const b = await broker()
    const p = producer(b)
    const bytes = new Uint8Array([0, 1, 2, 255])
    const results = await p.send([
      { topic: 't', key: null, value: null },
      { topic: 't', key: bytes, value: Buffer.from('buffer value'), timestamp: 1_700_000_000_000 },
      { topic: 't', key: 'ключ', value: '値', headers: [{ key: 'a', value: null }, { key: 'a', value: bytes }], timestamp: new Date(1_600_000_000_000) },
      { topic: 't', value: 'v', headers: { multi: ['x', 'y'], skipped: undefined }, timestamp: 1_500_000_000_000n },
    ])
    expect(results.map((r) => r.timestamp).slice(1)).toEqual([1_700_000_000_000, 1_600_000_000_000, 1_500_000_000_000])
    const [records] = await readTopic('127.0.0.1', b.port, 't', 1, 4)
    expect(records!.map((r) => [r.key, r.value])).toEqual([
      [null, null],
      [Buffer.from(bytes).toString('utf8'), 'buffer value'],
      ['ключ', '値'],
      [null, 'v'],
    ])
    expect(records!.map((r) => r.timestamp)).toEqual([BigInt(results[0]!.timestamp), 1_700_000_000_000n, 1_600_000_000_000n, 1_500_000_000_000n])
    expect(records![2]!.headers).toEqual([{ key: 'a', value: null }, { key: 'a', value: Buffer.from(bytes).toString('utf8') }])
    expect(records![3]!.headers).toEqual([{ key: 'multi', value: 'x' }, { key: 'multi', value: 'y' }])
  })

  it('acks 0, 1 and all', async () => {
    const b = await broker()
    const zero = producer(b, { acks: 0 })
    const r0 = await zero.send({ topic: 'acks', value: 'zero' })
    expect(r0.offset).toBe(-1n)
    const one = producer(b, { acks: 1 })
    expect((await one.send({ topic: 'acks', value: 'one' })).offset).toBe(1n)
    const all = producer(b, { acks: 'all' })
    expect((await all.send({ topic: 'acks', value: 'all' })).offset).toBe(2n)
    const [records] = await readTopic('127.0.0.1', b.port, 'acks', 1, 3)
    expect(records!.map((r) => r.value)).toEqual(['zero', 'one', 'all'])
  })

  it('close() sends what is queued, then refuses new records', async () => {
    const b = await broker()
    const p = producer(b, { lingerMs: 10_000 })
    const pending = p.send(Array.from({ length: 100 }, (_, i) => ({ topic: 'closing', value: String(i) })))
    await p.close()
    expect(await pending).toHaveLength(100)
    await expect(p.send({ topic: 'closing', value: 'late' })).rejects.toBeInstanceOf(ClientClosedError)
  })

  it('holds a batch for lingerMs, unless flush() is called', async () => {
    const b = await broker()
    const p = producer(b, { lingerMs: 400 })
    let settled = false
    const lingering = p.send({ topic: 'linger', value: 'a' }).then((r) => {
      settled = true
      return r
    })
    await new Promise((r) => setTimeout(r, 200))
    expect(settled).toBe(false)
    expect((await lingering).offset).toBe(0n)

    const slow = producer(b, { lingerMs: 60_000 })
    const started = Date.now()
    const sent = slow.send({ topic: 'linger', value: 'b' })
    await slow.flush()
    expect((await sent).offset).toBe(1n)
    expect(Date.now() - started).toBeLessThan(5_000)
  })

  it('fails a record larger than maxRequestBytes alone, before queueing it', async () => {
    const b = await broker()
    const p = producer(b, { maxRequestBytes: 10_000 })
    const err = await p.send({ topic: 'big', value: 'x'.repeat(20_000) }).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(RecordTooLargeError)
    expect((err as Error).message).toMatch(/maxRequestBytes/)
    const mixed = await p.send([{ topic: 'big', value: 'ok' }, { topic: 'big', value: 'x'.repeat(20_000) }, { topic: 'big', value: 'ok too' }]).catch((e: unknown) => e)
    expect(mixed).toBeInstanceOf(SendError)
    const e = mixed as SendError
    expect(e.failed).toBe(1)
    expect(e.errors[0]).toBeUndefined()
    expect(e.errors[1]).toBeInstanceOf(RecordTooLargeError)
    expect(e.results[0]!.offset).toBe(0n)
    expect(e.results[2]!.offset).toBe(1n)
  })

  it("maps the broker's MESSAGE_TOO_LARGE to RecordTooLargeError", async () => {
    const b = await broker({ maxMessageBytes: 5_000 })
    const p = producer(b)
    const err = await p.send({ topic: 'limited', value: 'x'.repeat(8_000) }).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(RecordTooLargeError)
    expect((err as Error).cause).toBeInstanceOf(ProtocolError)
    expect(((err as Error).cause as ProtocolError).type).toBe('MESSAGE_TOO_LARGE')
    expect((await p.send({ topic: 'limited', value: 'small' })).offset).toBe(0n)
  })

  it('splits a batch the broker refuses as too large, keeping order and sequence numbers', async () => {
    const b = await broker({ maxMessageBytes: 5_000 })
    const p = producer(b, { lingerMs: 50 })
    const results = await p.send(Array.from({ length: 100 }, (_, i) => ({ topic: 'split', value: `${i} ${'x'.repeat(200)}` })))
    expect(results.map((r) => r.offset)).toEqual(Array.from({ length: 100 }, (_, i) => BigInt(i)))
    const [records] = await readTopic('127.0.0.1', b.port, 'split', 1, 100)
    expect(records!.map((r) => Number(r.value!.split(' ')[0]))).toEqual(Array.from({ length: 100 }, (_, i) => i))
    // Idempotent batches: one producer id, sequences following on across the split parts.
    const seqs = [...new Set(records!.map((r) => r.baseSequence))]
    expect(seqs[0]).toBe(0)
    expect(seqs.length).toBeGreaterThanOrEqual(5)
    expect(new Set(records!.map((r) => r.producerId)).size).toBe(1)
  })

  it('fails records with unwritable keys, values or headers alone', async () => {
    const b = await broker()
    const p = producer(b)
    const out = await p
      .send([
        { topic: 's', value: 'fine' },
        { topic: 's', value: 42 as unknown as string },
        { topic: 's', value: 'v', key: {} as unknown as string },
        { topic: 's', value: 'v', headers: { h: 7 as unknown as string } },
        { topic: 's', value: 'v', timestamp: -5 },
      ])
      .catch((e: unknown) => e as SendError)
    expect(out).toBeInstanceOf(SendError)
    const e = out as SendError
    expect(e.errors.map((x) => x?.constructor.name)).toEqual([undefined, 'SerializationError', 'SerializationError', 'SerializationError', 'SerializationError'])
    expect(e.errors[1]).toBeInstanceOf(SerializationError)
    expect(e.results[0]!.offset).toBe(0n)
  })

  it('fails records for a topic that does not exist after maxBlockMs', async () => {
    const b = await broker({ autoCreateTopics: false })
    const p = producer(b, { maxBlockMs: 300 })
    const err = await p.send({ topic: 'missing', value: 'v' }).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(ProtocolError)
    expect((err as ProtocolError).type).toBe('UNKNOWN_TOPIC_OR_PARTITION')
    expect((err as Error).message).toMatch(/not present in metadata after maxBlockMs/)
  })

  it('checks explicit and partitioner-chosen partitions', async () => {
    const b = await broker({ numPartitions: 3 })
    const p = producer(b, { maxBlockMs: 300 })
    expect((await p.send({ topic: 'parts', value: 'v', partition: 2 })).partition).toBe(2)
    await expect(p.send({ topic: 'parts', value: 'v', partition: 3 })).rejects.toBeInstanceOf(InvalidPartitionError)
    await expect(p.send({ topic: 'parts', value: 'v', partition: -1 })).rejects.toBeInstanceOf(InvalidPartitionError)
    const bad = producer(b, { partitioner: () => 7 })
    await expect(bad.send({ topic: 'parts', value: 'v' })).rejects.toBeInstanceOf(InvalidPartitionError)
  })

  it('keeps the order of records sent one by one without awaiting', async () => {
    const b = await broker()
    const p = producer(b, { lingerMs: 1 })
    const sends = Array.from({ length: 2_000 }, (_, i) => p.send({ topic: 'order', value: String(i) }))
    const results = await Promise.all(sends)
    expect(results.map((r) => r.offset)).toEqual(Array.from({ length: 2_000 }, (_, i) => BigInt(i)))
  })
})
