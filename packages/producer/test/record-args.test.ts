/**
 * send() refuses what is not a record — kafkajs's { topic, messages }, a missing value, fields
 * records do not have, fields of the wrong type — with a TypeError naming the field, and writes
 * nothing for it. Against the tidelog broker: what lands in the log is read back.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { InvalidPartitionError, InvalidRecordError, Producer, SendError, SerializationError, type ProducerRecord } from '@tidelog/producer'
import { startTestBroker, type TestBroker } from './broker.js'
import { readTopic } from './helpers.js'

const cleanup: (() => Promise<void>)[] = []
afterEach(async () => {
  for (const f of cleanup.splice(0).reverse()) await f()
})

async function setup(): Promise<{ b: TestBroker; p: Producer }> {
  const b = await startTestBroker({ numPartitions: 1 })
  cleanup.push(() => b.close())
  const p = new Producer({ brokers: [b.bootstrap], clientId: 'record-args', lingerMs: 1 })
  cleanup.push(() => p.close())
  return { b, p }
}

/** What a JavaScript caller (no type checker) may pass. */
const any = (r: unknown): ProducerRecord => r as ProducerRecord

async function refusal(p: Producer, r: unknown): Promise<InvalidRecordError> {
  const err = await p.send(any(r)).then(
    () => undefined,
    (e: unknown) => e,
  )
  expect(err, `send(${JSON.stringify(r)}) should have been refused`).toBeInstanceOf(InvalidRecordError)
  expect(err).toBeInstanceOf(TypeError)
  return err as InvalidRecordError
}

describe('send() argument checks', () => {
  it("refuses kafkajs's { topic, messages } with a TypeError saying what to do, and writes nothing", async () => {
    const { b, p } = await setup()
    const err = await refusal(p, { topic: 'kjs', messages: [{ key: 'k', value: 'v' }] })
    expect(err.field).toBe('messages')
    expect(err.message).toMatch(/kafkajs/)
    expect(err.message).toMatch(/messages\.map/)
    expect(err.retriable).toBe(false)
    // Before the fix this wrote a record with a null key and value at offset 0.
    const ok = await p.send({ topic: 'kjs', value: 'real' })
    expect(ok.offset).toBe(0n)
    const [records] = await readTopic('127.0.0.1', b.broker.port, 'kjs', 1, 1)
    expect(records!.map((r) => r.value)).toEqual(['real'])
  })

  it('refuses a record without a value (null is the tombstone) and names every bad field', async () => {
    const { b, p } = await setup()
    const cases: [unknown, string | undefined, RegExp][] = [
      [{ topic: 't' }, 'value', /no value.*null writes a tombstone/],
      [{ topic: 't', key: 'k', value: undefined }, 'value', /no value/],
      [{ topic: 't', value: 'v', header: { a: 'b' } }, 'header', /"header".*record fields: topic, value, key, headers/],
      [{ topic: 't', value: 'v', acks: 1 }, 'acks', /producer option/],
      [{ topic: 't', value: 'v', compression: 'gzip' }, 'compression', /producer option/],
      [{ topicMessages: [{ topic: 't', messages: [] }] }, 'topicMessages', /sendBatch/],
      [{ topic: 42, value: 'v' }, 'topic', /topic must be a non-empty string, got number/],
      [{ topic: '', value: 'v' }, 'topic', /empty string/],
      [{ value: 'v' }, 'topic', /topic must be a non-empty string, got undefined/],
      [{ topic: 't', value: 'v', partition: '0' }, 'partition', /partition must be a number, got a string/],
      [{ topic: 't', value: 42 }, 'value', /value must be a string, Uint8Array or null, got number/],
      [{ topic: 't', value: { a: 1 } }, 'value', /got an object/],
      [{ topic: 't', value: 'v', key: 7 }, 'key', /key must be/],
      [{ topic: 't', value: 'v', headers: 'x' }, 'headers', /headers must be an object or an array, got a string/],
      [{ topic: 't', value: 'v', headers: { h: 1 } }, 'headers', /header "h" must be/],
      [{ topic: 't', value: 'v', headers: [{ value: 'x' }] }, 'headers', /header keys must be strings/],
      [{ topic: 't', value: 'v', timestamp: '2024-01-01' }, 'timestamp', /timestamp must be a number, bigint or Date, got a string/],
      [{ topic: 't', value: 'v', timestamp: -1 }, 'timestamp', /non-negative/],
      [1, undefined, /got number/],
      [null, undefined, /got null/],
      ['t', undefined, /got a string/],
    ]
    for (const [record, field, message] of cases) {
      const err = await refusal(p, record)
      expect(err.field, JSON.stringify(record)).toBe(field)
      expect(err.message).toMatch(message)
    }
    // Type errors of written fields are SerializationErrors, a kind of InvalidRecordError.
    expect(await refusal(p, { topic: 't', value: 1 })).toBeInstanceOf(SerializationError)
    // A negative partition is a partition the topic does not have, as before.
    await expect(p.send({ topic: 't', value: 'v', partition: -1 })).rejects.toBeInstanceOf(InvalidPartitionError)
    // An unknown field left undefined carries nothing and is no error.
    const meta = await p.send(any({ topic: 't', value: 'ok', extra: undefined, key: undefined }))
    expect(meta.offset).toBe(0n)
    const [records] = await readTopic('127.0.0.1', b.broker.port, 't', 1, 1)
    expect(records!.map((r) => [r.key, r.value])).toEqual([[null, 'ok']])
  })

  it('in an array, fails the malformed records alone (SendError.errors[i]) and writes the others as given', async () => {
    const { b, p } = await setup()
    const err = await p
      .send([
        { topic: 'mix', value: 'a' },
        any({ topic: 'mix', messages: [{ value: 'x' }] }),
        any({ topic: 'mix' }),
        { topic: 'mix', key: 'k', value: null },
        any('not a record'),
        { topic: 'mix', value: 'b' },
      ])
      .then(
        () => undefined,
        (e: unknown) => e,
      )
    expect(err).toBeInstanceOf(SendError)
    const e = err as SendError
    expect(e.failed).toBe(3)
    expect(e.errors.map((x) => (x as InvalidRecordError | undefined)?.field ?? (x === undefined ? '-' : 'record'))).toEqual(['-', 'messages', 'value', '-', 'record', '-'])
    expect(e.errors[1]!.message).toMatch(/^record 1: /)
    expect(e.errors[4]!.message).toMatch(/^record 4 must be an object/)
    expect(e.results.map((r) => r?.offset)).toEqual([0n, undefined, undefined, 1n, undefined, 2n])
    const [records] = await readTopic('127.0.0.1', b.broker.port, 'mix', 1, 3)
    // The explicit tombstone (value null) is written; the malformed records are not.
    expect(records!.map((r) => [r.key, r.value])).toEqual([
      [null, 'a'],
      ['k', null],
      [null, 'b'],
    ])
  })
})
