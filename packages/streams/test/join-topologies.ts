/**
 * The join golden topologies in TypeScript: the same operators, names and inputs as
 * test/streams-java/JoinTopologies.java, whose output (Kafka Streams 4.4's own
 * TopologyTestDriver) is checked in as golden/joins-java-outputs.json. Change both together,
 * then regenerate with `node --import tsx test/streams-java/regenerate.ts`.
 */
import { Consumed, Grouped, Joined, Materialized, Named, Produced, Serdes, StreamsBuilder, TableJoined, type Topology } from '@tidelog/streams'

const S = Serdes.String()
const j = (l: string | null, r: string | null) => `${l}+${r}`

export function buildJoinGolden(name: string): Topology {
  const b = new StreamsBuilder()
  switch (name) {
    case 'stream-table': {
      const customers = b.table('customers', Consumed.with(S, S))
      const orders = b.stream('orders', Consumed.with(S, S))
      orders.join(customers, j).to('st-inner')
      orders.leftJoin(customers, j).to('st-left')
      return b.build()
    }
    case 'stream-table-rekey': {
      const customers = b.table('customers', Consumed.with(S, S), Materialized.as('customer-store'))
      const clicks = b.stream('clicks', Consumed.with(S, S)).selectKey((_k, v) => v.split(':')[0]!)
      clicks.join(customers, (k: string, v: string, c: string) => `${k}=${v}/${c}`, Joined.with(S, S, S).withName('clicks-customers')).to('rekey-inner')
      clicks.mapValues((v) => v.toUpperCase()).leftJoin(customers, j).to('rekey-left')
      // Two unnamed joins of one re-keyed stream share its repartition topic (Java reuses the node).
      clicks.leftJoin(customers, j).to('rekey-left2')
      clicks.join(customers, j).to('rekey-inner2')
      return b.build()
    }
    case 'table-table': {
      const left = b.table('left-t', Consumed.with(S, S))
      const right = b.table('right-t', Consumed.with(S, S))
      left.join(right, j).toStream().to('tt-inner')
      left.leftJoin(right, j).toStream().to('tt-left')
      left.outerJoin(right, j).toStream().to('tt-outer')
      return b.build()
    }
    case 'table-table-old-values': {
      const left = b.table('left-t', Consumed.with(S, S))
      const right = b.table('right-t', Consumed.with(S, S), Materialized.as('right-store'))
      left.leftJoin(right, j)
        .groupBy((k, v) => ({ key: v.substring(v.indexOf('+') + 1), value: k }), Grouped.with(S, S))
        .count()
        .toStream()
        .to('tt-by-right', Produced.with(S, Serdes.Long()))
      left.outerJoin(right, j, Materialized.as('outer-store'))
        .filter((_k, v) => !v.startsWith('null'))
        .toStream()
        .to('tt-outer-filtered')
      return b.build()
    }
    case 'global': {
      const products = b.globalTable('products', Consumed.with(S, S))
      const sales = b.stream('sales', Consumed.with(S, S))
      sales.join(products, (_k, v) => (v === null ? null : v.split(':')[0]), j).to('gl-inner')
      sales.leftJoin(products, (_k, v) => (v === null ? null : v.split(':')[0]), (k: string | null, v: string, p: string | null) => `${k}:${v}@${p}`).to('gl-left')
      return b.build()
    }
    case 'fk-inner': {
      const orders = b.table('fk-orders', Consumed.with(S, S))
      const products = b.table('fk-products', Consumed.with(S, S))
      orders.join(products, (v: string) => v.split(':')[0]!, j).toStream().to('fk-inner')
      return b.build()
    }
    case 'fk-left': {
      const orders = b.table('fk-orders', Consumed.with(S, S))
      const products = b.table('fk-products', Consumed.with(S, S))
      orders.leftJoin(products, (v: string) => v.split(':')[0]!, j, Materialized.as('fk-left-store')).toStream().to('fk-left')
      return b.build()
    }
    case 'named': {
      const orders = b.table('fk-orders', Consumed.with(S, S))
      const products = b.table('fk-products', Consumed.with(S, S))
      orders.leftJoin(products, (v: string) => v.split(':')[0]!, j, TableJoined.as('order-product')).toStream().to('named-fk')
      orders.outerJoin(products, j, Named.as('tt')).toStream().to('named-tt')
      const global = b.globalTable('global-products', Consumed.with(S, S), Materialized.as('global-store'))
      b.stream<string, string>('named-sales', Consumed.with(S, S)).join(global, (_k, v) => v, j, Named.as('sale-product')).to('named-gl')
      return b.build()
    }
    default:
      throw new Error(`unknown topology ${name}`)
  }
}
