import { describe, expect, it } from 'vitest'
import { Consumed, Serdes, StreamsBuilder, TopologyTestDriver } from '@tidelog/streams'
import { murmur3Hash128 } from '../src/dsl/fk-join/murmur3.js'
import { Instruction, responseSerde, subscriptionSerde } from '../src/dsl/fk-join/wrappers.js'

const S = Serdes.String()

describe('foreign-key join internals (KIP-213)', () => {
  it('Murmur3 hash128 gives what Kafka Streams 4.4 computes (vectors printed by org.apache.kafka.streams.state.internals.Murmur3)', () => {
    const vectors: [string, string, string][] = [
      ['', '11324130426821486914', '10105219602051204376'],
      ['a', '3702349557448790408', '16845676620377109099'],
      ['p1:2', '12922276362907043191', '4164099051462879659'],
      ['hello world 1234', '6460267102424918547', '17229803747192677413'],
      ['a fairly long value of thirty-one b', '12677965352836752532', '1104009114624533128'],
      ['0123456789abcdef0123456789abcdef', '15538936428633418374', '8557230246141609833'],
    ]
    for (const [s, h1, h2] of vectors) expect(murmur3Hash128(Buffer.from(s)).map(String), s).toEqual([h1, h2])
  })

  it('subscription and response wrappers use Java\'s byte layout (version, null-hash bit, instruction, hash, key, partition)', () => {
    const sub = subscriptionSerde(S)
    const hash = murmur3Hash128(Buffer.from('v'))
    const bytes = sub.serialize({ hash, instruction: Instruction.PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE, primaryKey: 'pk', primaryPartition: 3 }, { topic: '', headers: [], isKey: false }) as Buffer
    expect(bytes.length).toBe(2 + 16 + 2 + 4)
    expect([bytes[0], bytes[1], bytes.readInt32BE(bytes.length - 4), bytes.subarray(18, 20).toString()]).toEqual([1, 2, 3, 'pk'])
    expect(sub.deserialize(bytes, { topic: '', headers: [], isKey: false })).toEqual({ hash, instruction: 2, primaryKey: 'pk', primaryPartition: 3 })
    const noHash = sub.serialize({ hash: null, instruction: Instruction.DELETE_KEY_AND_PROPAGATE, primaryKey: 'pk', primaryPartition: 0 }, { topic: '', headers: [], isKey: false }) as Buffer
    expect([noHash[0], noHash.length]).toEqual([0x81, 2 + 2 + 4])
    const resp = responseSerde(S)
    const r = resp.serialize({ hash: null, foreignValue: null }, { topic: '', headers: [], isKey: false }) as Buffer
    expect([...r]).toEqual([0x80])
    expect(resp.deserialize(resp.serialize({ hash, foreignValue: 'x' }, { topic: '', headers: [], isKey: false }) as Buffer, { topic: '', headers: [], isKey: false })).toEqual({ hash, foreignValue: 'x' })
  })

  it('drops a response whose hash is not the left row\'s current value (a stale answer), and joins one that is', () => {
    const b = new StreamsBuilder()
    const orders = b.table<string, string>('orders', Consumed.with(S, S))
    const products = b.table<string, string>('products', Consumed.with(S, S))
    orders.join(products, (v: string) => v.split(':')[0], (o: string, p: string) => `${o}/${p}`).toStream().to('out')
    const driver = new TopologyTestDriver(b.build(), { 'application.id': 'fk', 'default.key.serde': S, 'default.value.serde': S }, 0)
    try {
      const out = driver.createOutputTopic('out', S, S)
      driver.createInputTopic('products', S, S).pipeInput('p1', 'Widget', 10)
      driver.createInputTopic('orders', S, S).pipeInput('o1', 'p1:2', 20)
      expect(out.readKeyValuesToList()).toEqual([{ key: 'o1', value: 'p1:2/Widget' }])
      // A response still in flight for an older version of o1 (its hash is of "p1:1") must not overwrite the newer result.
      const responses = driver.createInputTopic('fk-KTABLE-FK-JOIN-SUBSCRIPTION-RESPONSE-0000000014-topic', S, responseSerde(S))
      responses.pipeInput('o1', { hash: murmur3Hash128(Buffer.from('p1:1')), foreignValue: 'Old' }, 30)
      expect(out.isEmpty()).toBe(true)
      responses.pipeInput('o1', { hash: murmur3Hash128(Buffer.from('p1:2')), foreignValue: 'Current' }, 40)
      expect(out.readKeyValuesToList()).toEqual([{ key: 'o1', value: 'p1:2/Current' }])
    } finally {
      driver.close()
    }
  })
})
