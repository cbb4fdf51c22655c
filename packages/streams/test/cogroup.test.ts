import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { Consumed, Materialized, Produced, Serdes, SessionWindows, StreamsBuilder, TimeWindows, TopologyTestDriver } from '@tidelog/streams'

const S = Serdes.String()

describe('cogroup (KIP-150)', () => {
  it('the README example: one profile per customer from three streams, as written there', () => {
    const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8')
    // The example below is the README's, line for line.
    const example = `const builder = new StreamsBuilder()
const views = builder.stream('page-views', Consumed.with(S, S)).groupByKey()
const carts = builder.stream('cart-adds', Consumed.with(S, S)).groupByKey()
const buys = builder.stream('purchases', Consumed.with(S, S)).groupByKey()
views.cogroup((_customer, page: string, p: Profile) => ({ ...p, views: p.views + 1, last: page }))
  .cogroup(carts, (_customer, _item, p) => ({ ...p, carts: p.carts + 1 }))
  .cogroup(buys, (_customer, _item, p) => ({ ...p, buys: p.buys + 1 }))
  .aggregate(() => ({ views: 0, carts: 0, buys: 0, last: '' }), Materialized.as<string, Profile>('profiles').withValueSerde(Json))
  .toStream()
  .to('customer-profiles', Produced.with(S, Json))`
    expect(readme).toContain(example)
    interface Profile { views: number; carts: number; buys: number; last: string }
    const Json = { serialize: (v: Profile) => Buffer.from(JSON.stringify(v)), deserialize: (b: Buffer) => JSON.parse(b.toString()) as Profile }
    const builder = new StreamsBuilder()
    const views = builder.stream('page-views', Consumed.with(S, S)).groupByKey()
    const carts = builder.stream('cart-adds', Consumed.with(S, S)).groupByKey()
    const buys = builder.stream('purchases', Consumed.with(S, S)).groupByKey()
    views.cogroup((_customer, page: string, p: Profile) => ({ ...p, views: p.views + 1, last: page }))
      .cogroup(carts, (_customer, _item, p) => ({ ...p, carts: p.carts + 1 }))
      .cogroup(buys, (_customer, _item, p) => ({ ...p, buys: p.buys + 1 }))
      .aggregate(() => ({ views: 0, carts: 0, buys: 0, last: '' }), Materialized.as<string, Profile>('profiles').withValueSerde(Json))
      .toStream()
      .to('customer-profiles', Produced.with(S, Json))
    const topology = builder.build()
    expect(topology.describe().toString()).toContain('Processor: COGROUPKSTREAM-MERGE-0000000006 (stores: [])')
    const driver = new TopologyTestDriver(topology, { 'application.id': 'profiles' })
    driver.createInputTopic('page-views', S, S).pipeInput('c1', '/shoes', 1)
    driver.createInputTopic('cart-adds', S, S).pipeInput('c1', 'boots', 2)
    driver.createInputTopic('purchases', S, S).pipeInput('c1', 'boots', 3)
    const out = driver.createOutputTopic('customer-profiles', S, Json).readValuesToList()
    expect(out.at(-1)).toEqual({ views: 1, carts: 1, buys: 1, last: '/shoes' })
    expect(driver.getKeyValueStore<string, Profile>('profiles')!.get('c1')).toEqual({ views: 1, carts: 1, buys: 1, last: '/shoes' })
    driver.close()
  })

  it('refuses null arguments and a too-short retention as Java, adding nothing', () => {
    const b = new StreamsBuilder()
    const g = b.stream('a', Consumed.with(S, S)).groupByKey()
    expect(() => g.cogroup(null as never)).toThrow("aggregator can't be null")
    const c = g.cogroup<string>((_k, v, a) => a + v)
    expect(() => c.aggregate(null as never)).toThrow("initializer can't be null")
    expect(() => c.windowedBy(TimeWindows.ofSizeAndGrace(10, 5)).aggregate(() => '', Materialized.as<string, string>('w').withRetention(10))).toThrow(
      'The retention period of the window store w must be no smaller than its window size plus the grace period. Got size=[10], grace=[5], retention=[10]')
    expect(() => c.windowedBy(SessionWindows.ofInactivityGapWithNoGrace(5)).aggregate(() => '', null as never)).toThrow("sessionMerger can't be null")
    expect(b.build().describe().toString()).not.toContain('COGROUP')
  })
})
