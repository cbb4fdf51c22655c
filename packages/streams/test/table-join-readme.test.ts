import { expect, it } from 'vitest'
import { Consumed, Produced, Serdes, StreamsBuilder, TopologyTestDriver } from '@tidelog/streams'

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
