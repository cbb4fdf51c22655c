import { describe, expect, it } from 'vitest'
import { encodeRecordBatch, decodeRecordBatch } from '@tidelog/protocol'
import { Accumulator } from '../src/accumulator.js'
import { ProducerBatch } from '../src/batch-builder.js'
import { Delivery } from '../src/delivery.js'
import { Producer, SendError, SerializationError, type ProducerRecord } from '../src/index.js'
import { recordSize } from '../src/record.js'
import { startTestBroker } from './broker.js'
import { readTopic } from './helpers.js'

const queue = new Accumulator(1 << 22, 1 << 22, () => {}).topic('t').queue(0)

// xorshift32: the same records every run.
function random(seed: number): () => number {
  let x = seed
  return () => {
    x ^= x << 13
    x ^= x >>> 17
    x ^= x << 5
    return (x >>> 0) / 2 ** 32
  }
}

const ALPHABETS = ['abcdefghij-_/.', 'éüßñ', '日本語', '😀🎉']
function randomString(rnd: () => number): string {
  // Around the writer's thresholds: one length byte up to 21 units, measured from 64.
  const len = [0, 1, 5, 20, 21, 22, 40, 63, 64, 65, 300][Math.floor(rnd() * 11)]!
  const chars = ALPHABETS[rnd() < 0.6 ? 0 : 1 + Math.floor(rnd() * 3)]!
  let s = ''
  while (s.length < len) s += chars[Math.floor(rnd() * chars.length)]
  return s
}
function randomBytes(rnd: () => number): ProducerRecord['value'] {
  const r = rnd()
  if (r < 0.15) return null
  if (r < 0.5) return Buffer.from(Array.from({ length: Math.floor(rnd() * 120) }, () => Math.floor(rnd() * 256)))
  return randomString(rnd)
}
function randomHeaders(rnd: () => number): ProducerRecord['headers'] {
  const r = rnd()
  const n = rnd() < 0.1 ? 70 : Math.floor(rnd() * 4)
  if (r < 0.3) return undefined
  if (r < 0.6) return Array.from({ length: n }, () => ({ key: randomString(rnd), value: randomBytes(rnd) }))
  const o: Record<string, ProducerRecord['value'] | ProducerRecord['value'][]> = {}
  for (let i = 0; i < n; i++) o[`${randomString(rnd)}${i}`] = rnd() < 0.2 ? [randomBytes(rnd), randomBytes(rnd)] : randomBytes(rnd)
  return o as ProducerRecord['headers']
}

describe('record writer', () => {
  it('writes what the protocol encoder writes for every mix of ASCII, non-ASCII, short, long, bytes, null and header forms', () => {
    const rnd = random(7)
    for (let round = 0; round < 40; round++) {
      const records = Array.from({ length: 25 }, (): ProducerRecord => ({ topic: 't', key: rnd() < 0.3 ? null : randomBytes(rnd), value: randomBytes(rnd), headers: randomHeaders(rnd) }))
      const b = new ProducerBatch(queue, 0)
      const d = new Delivery([], false)
      records.forEach((r, i) => b.add(r, 1_000 + i, recordSize(r), d, i))
      const reference = encodeRecordBatch({ records: records.map((r, i) => ({ key: r.key, value: r.value, headers: r.headers, timestamp: 1_000 + i })) })
      expect(b.encode(0).equals(reference)).toBe(true)
    }
  })

  it('corrects a size recordSize() guessed short (non-ASCII under 64 units) and one with 64 or more headers', () => {
    const records: ProducerRecord[] = [
      { topic: 't', key: 'ключ', value: 'значение', headers: { 'имя': 'ценность' } },
      { topic: 't', value: 'v', headers: Object.fromEntries(Array.from({ length: 200 }, (_, i) => [`h${i}`, 'é'])) },
    ]
    const b = new ProducerBatch(queue, 0)
    const d = new Delivery([], false)
    records.forEach((r, i) => b.add(r, 5, recordSize(r), d, i))
    const got = [...decodeRecordBatch(b.encode(0))]
    expect(got[0]!.key!.toString()).toBe('ключ')
    expect(got[0]!.headers.map((h) => [h.key, h.value!.toString()])).toEqual([['имя', 'ценность']])
    expect(got[1]!.headers).toHaveLength(200)
    expect(b.encode(0).equals(encodeRecordBatch({ records: records.map((r) => ({ ...r, timestamp: 5 })) }))).toBe(true)
  })

  it('send() fails such a record alone and writes the others, headers and non-ASCII as given (real broker)', async () => {
    const b = await startTestBroker({ numPartitions: 1 })
    const p = new Producer({ brokers: [b.bootstrap], clientId: 'record-writer', lingerMs: 1 })
    try {
      // With the topic's metadata known, send() writes at once (a record that waits is copied first).
      await p.send({ topic: 'w', value: 'warm' })
      let n = 0
      const shifty = { topic: 'w', get value() { return 'x'.repeat(++n * 50) } }
      const err = await p.send([{ topic: 'w', value: 'a', headers: { 'content-type': 'text/plain' } }, shifty, { topic: 'w', key: 'ключ', value: 'b', headers: [{ key: 'ü', value: 'é' }] }]).catch((e: unknown) => e)
      expect(err).toBeInstanceOf(SendError)
      expect((err as SendError).errors[1]).toBeInstanceOf(SerializationError)
      const [records] = await readTopic('127.0.0.1', b.broker.port, 'w', 1, 3)
      expect(records!.map((r) => [r.key, r.value, r.headers])).toEqual([
        [null, 'warm', []],
        [null, 'a', [{ key: 'content-type', value: 'text/plain' }]],
        ['ключ', 'b', [{ key: 'ü', value: 'é' }]],
      ])
    } finally {
      await p.close()
      await b.close()
    }
  })

  it('refuses a record whose getters answer a longer value each time, and keeps the records before it', () => {
    const b = new ProducerBatch(queue, 0)
    const d = new Delivery([], false)
    b.add({ value: 'first' }, 1, recordSize({ value: 'first' }), d, 0)
    let n = 0
    const shifty = {
      get value() {
        return 'x'.repeat(++n * 50)
      },
    }
    expect(() => b.add(shifty, 2, recordSize(shifty), d, 1)).toThrow(SerializationError)
    expect([...decodeRecordBatch(b.encode(0))].map((r) => r.value!.toString())).toEqual(['first'])
  })
})
