/**
 * send() takes the record as it is at the call: a Buffer the caller reuses right after, or a
 * record object it edits, must not change what is written, whether the record was queued at
 * once (topic known) or had to wait for the topic's metadata first.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { Producer, type ProducerRecord } from '@tidelog/producer'
import { startTestBroker, type TestBroker } from '../../packages/producer/test/broker.js'
import { readTopic } from '../../packages/producer/test/helpers.js'

const cleanup: (() => Promise<void>)[] = []
afterEach(async () => {
  for (const f of cleanup.splice(0).reverse()) await f()
})

async function setup(): Promise<{ b: TestBroker; p: Producer }> {
  const b = await startTestBroker({ numPartitions: 1 })
  cleanup.push(() => b.close())
  const p = new Producer({ brokers: [b.bootstrap], lingerMs: 20 })
  cleanup.push(() => p.close())
  return { b, p }
}

/** Sends through one reused key, value and header Buffer, scribbling over them after each send(). */
function sendReusing(p: Producer, topic: string, n: number): Promise<unknown>[] {
  const key = Buffer.alloc(4)
  const value = Buffer.alloc(8)
  const header = Buffer.alloc(2)
  const out: Promise<unknown>[] = []
  for (let i = 0; i < n; i++) {
    key.write(`k-${i}`.padEnd(4, '.'))
    value.write(`value-${i}`.padEnd(8, '.'))
    header.write(`h${i}`)
    const r: ProducerRecord = { topic, key, value, headers: { h: header } }
    out.push(p.send(r))
    key.fill(0x21)
    value.fill(0x21)
    header.fill(0x21)
    r.value = 'edited after send'
    r.key = null
  }
  return out
}

describe('send() copies what it is given', () => {
  it('writes the bytes as they were at send(), for a topic already known', async () => {
    const { b, p } = await setup()
    await p.send({ topic: 'known', value: 'warm-up' })
    const sends = sendReusing(p, 'known', 3)
    await p.flush()
    await Promise.all(sends)
    const [records] = await readTopic('127.0.0.1', b.broker.port, 'known', 1, 4)
    expect(records!.slice(1).map((r) => [r.key, r.value, r.headers[0]!.value])).toEqual([
      ['k-0.', 'value-0.', 'h0'],
      ['k-1.', 'value-1.', 'h1'],
      ['k-2.', 'value-2.', 'h2'],
    ])
  })

  it('writes the bytes as they were at send(), while the topic metadata was still on its way', async () => {
    const { b, p } = await setup()
    const sends = sendReusing(p, 'fresh', 3)
    // An array send queued behind them: editing the array and its records afterwards changes nothing.
    const batch: ProducerRecord[] = [{ topic: 'fresh', value: Buffer.from('array-0') }, { topic: 'fresh', value: 'array-1', headers: [{ key: 'x', value: Buffer.from('y') }] }]
    sends.push(p.send(batch))
    ;(batch[0]!.value as Buffer).fill(0x21)
    ;(batch[1]!.headers as { key: string; value: Buffer }[])[0]!.value.fill(0x21)
    batch[1]!.value = 'edited'
    batch.push({ topic: 'fresh', value: 'pushed after send' })
    await p.flush()
    await Promise.all(sends)
    const [records] = await readTopic('127.0.0.1', b.broker.port, 'fresh', 1, 5)
    expect(records!.map((r) => [r.key, r.value, r.headers[0]?.value ?? null])).toEqual([
      ['k-0.', 'value-0.', 'h0'],
      ['k-1.', 'value-1.', 'h1'],
      ['k-2.', 'value-2.', 'h2'],
      [null, 'array-0', null],
      [null, 'array-1', 'y'],
    ])
  })
})
