import { expect, it } from 'vitest'
import { Consumed, Joined, Materialized, Produced, Serdes, Stores, StreamsBuilder, TopologyTestDriver } from '@tidelog/streams'

// The README's stream-table join example, as written there, with the output its comment promises.
it('the README stream-table join enriches each order, with null for an unknown customer', () => {
  const S = Serdes.String()
  const builder = new StreamsBuilder()
  const customers = builder.table('customers', Consumed.with(S, S))
  builder.stream('orders', Consumed.with(S, S))
    .leftJoin(customers, (order: string, customer: string | null) => `${order} for ${customer ?? 'unknown'}`)
    .to('orders-enriched', Produced.with(S, S))

  const driver = new TopologyTestDriver(builder.build(), { 'application.id': 'enrich' })
  driver.createInputTopic('customers', S, S).pipeInput('c1', 'Alice', 1000)
  const orders = driver.createInputTopic('orders', S, S)
  orders.pipeInput('c1', 'order-1', 2000)
  orders.pipeInput('c2', 'order-2', 3000)
  expect(driver.createOutputTopic('orders-enriched', S, S).readKeyValuesToList()).toEqual([
    { key: 'c1', value: 'order-1 for Alice' },
    { key: 'c2', value: 'order-2 for unknown' },
  ])
  driver.close()
})

// The README's versioned-table example with a grace period (KIP-914, KIP-923).
it('the README grace join meets the customer as of the order, including a late update inside the grace period', () => {
  const S = Serdes.String()
  const builder = new StreamsBuilder()
  const customers = builder.table('customers', Consumed.with(S, S),
    Materialized.as<string, string>(Stores.persistentVersionedKeyValueStore('customers-v', 3_600_000)))
  builder.stream('orders', Consumed.with(S, S))
    .join(customers, (order: string, customer: string) => `${order} for ${customer}`, Joined.with<string, string, string>(S, S, S).withGracePeriod(60_000))
    .to('orders-enriched', Produced.with(S, S))

  const driver = new TopologyTestDriver(builder.build(), { 'application.id': 'enrich-v' })
  const table = driver.createInputTopic('customers', S, S)
  const orders = driver.createInputTopic('orders', S, S)
  table.pipeInput('c1', 'Alice', 0)
  orders.pipeInput('c1', 'order-1', 100_000)
  table.pipeInput('c1', 'Alice Smith', 90_000)
  table.pipeInput('c1', 'Alice Jones', 150_000)
  orders.pipeInput('c1', 'order-2', 170_000)
  const out = driver.createOutputTopic('orders-enriched', S, S)
  expect(out.readKeyValuesToList()).toEqual([{ key: 'c1', value: 'order-1 for Alice Smith' }])
  orders.pipeInput('c1', 'order-3', 230_000)
  expect(out.readKeyValuesToList()).toEqual([{ key: 'c1', value: 'order-2 for Alice Jones' }])
  driver.close()
})
