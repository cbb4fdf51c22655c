import { expect, it } from 'vitest'
import {
  BufferConfig, Consumed, JoinWindows, Materialized, Produced, Serdes, StreamJoined, StreamsBuilder, Suppressed, TimeWindows, TopologyTestDriver, WindowedSerdes,
} from '@tidelog/streams'

// The README's windowed count and stream-stream join examples, as written there, with the outputs their comments promise.
it('the README windowed count gives one final count per key and minute', () => {
  const S = Serdes.String()
  const builder = new StreamsBuilder()
  builder.stream('clicks', Consumed.with(S, S))
    .groupByKey()
    .windowedBy(TimeWindows.ofSizeAndGrace(60_000, 10_000))            // 1-minute tumbling windows, 10 s grace
    .count(Materialized.as('clicks-store'))
    .suppress(Suppressed.untilWindowCloses(BufferConfig.unbounded()))  // one final result per window
    .toStream()
    .to('clicks-per-minute', Produced.with(WindowedSerdes.timeWindowedSerdeFrom(S, 60_000), Serdes.Long()))

  const driver = new TopologyTestDriver(builder.build(), { 'application.id': 'clicks' })
  const clicks = driver.createInputTopic('clicks', S, S)
  const out = driver.createOutputTopic('clicks-per-minute', WindowedSerdes.timeWindowedSerdeFrom(S, 60_000), Serdes.Long())
  clicks.pipeInput('alice', 'home', 0)
  clicks.pipeInput('alice', 'cart', 30_000)
  clicks.pipeInput('bob', 'home', 45_000)
  clicks.pipeInput('alice', 'pay', 61_000)
  clicks.pipeInput('alice', 'home', 75_000)     // stream time passes 60 s + grace: the first minute closes
  clicks.pipeInput('bob', 'late', 20_000)       // after the grace period: dropped, and counted
  expect(out.readKeyValuesToList().map((kv) => `${kv.key} = ${kv.value}`)).toEqual(['[alice@0/60000] = 2', '[bob@0/60000] = 1'])
  expect(driver.getWindowStore<string, number>('clicks-store')!.fetch('alice', 60_000)).toBe(2)
  expect(driver.metrics().find((m) => m.name === 'dropped-records-total')!.value).toBe(1)
  driver.close()
})

it('the README stream-stream left join pairs orders with payments within five minutes', () => {
  const S = Serdes.String()
  const builder = new StreamsBuilder()
  const orders = builder.stream('orders', Consumed.with(S, S))
  const payments = builder.stream('payments', Consumed.with(S, S))
  orders.leftJoin(payments, (order, payment) => `${order}: ${payment ?? 'unpaid'}`, JoinWindows.ofTimeDifferenceWithNoGrace(300_000), StreamJoined.with(S, S, S))
    .to('order-status', Produced.with(S, S))

  const driver = new TopologyTestDriver(builder.build(), { 'application.id': 'orders' })
  const o = driver.createInputTopic('orders', S, S)
  const p = driver.createInputTopic('payments', S, S)
  const out = driver.createOutputTopic('order-status', S, S)
  o.pipeInput('o1', 'shirt', 0)
  p.pipeInput('o1', 'card', 60_000)             // within 5 minutes of the order: joined
  o.pipeInput('o2', 'shoes', 10_000)            // never paid: emitted once its window has closed
  o.pipeInput('o3', 'hat', 400_000)
  expect(out.readKeyValuesToList()).toEqual([{ key: 'o1', value: 'shirt: card' }, { key: 'o2', value: 'shoes: unpaid' }])
  driver.close()
})
