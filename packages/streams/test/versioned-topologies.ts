/**
 * Versioned stores (KIP-889 / KIP-914) and stream-table joins with a grace period (KIP-923) in
 * TypeScript: the same operators, names and inputs as test/streams-java/VersionedTopologies.java,
 * whose output from Kafka Streams' own TopologyTestDriver is checked in as
 * golden/versioned-java-outputs.json. Change both together, then regenerate with
 * `node --import tsx test/streams-java/versioned.ts`.
 */
import { Consumed, Grouped, Joined, Materialized, Produced, Serdes, Stores, StreamsBuilder, type ProcessorContext, type ProcessorSupplier, type Topology, type VersionedKeyValueStore, type VersionedRecord } from '@tidelog/streams'

const S = Serdes.String()

const show = (r: VersionedRecord<string> | null) => (r === null ? 'null' : `${r.value}@${r.timestamp}/${r.validTo ?? '-'}`)

/** put:value:ts, tomb:ts, del:ts, get, get:ts against one versioned store (Java's StoreOps). */
function storeOps(storeName: string): ProcessorSupplier<string, string, string, string> {
  return () => {
    let ctx!: ProcessorContext<string, string>
    let store!: VersionedKeyValueStore<string, string>
    return {
      init: (c) => {
        ctx = c
        store = c.getStateStore(storeName)
      },
      process: (r) => {
        const op = r.value.split(':')
        let out: string
        if (op[0] === 'put') out = String(BigInt(store.put(r.key, op[1]!, Number(op[2]))))
        else if (op[0] === 'tomb') out = String(BigInt(store.put(r.key, null, Number(op[1]))))
        else if (op[0] === 'del') out = show(store.delete(r.key, Number(op[1])))
        else out = op.length === 1 ? show(store.get(r.key)) : show(store.get(r.key, Number(op[1])))
        ctx.forward(r.withValue(`${r.value}=${out}`))
      },
    }
  }
}

export function buildVersionedTopology(name: string): Topology {
  const b = new StreamsBuilder()
  switch (name) {
    case 'store-api': {
      b.addStateStore(Stores.versionedKeyValueStoreBuilder(Stores.persistentVersionedKeyValueStore('ver', 10), S, S))
      b.stream('ops', Consumed.with(S, S)).process(storeOps('ver'), undefined, 'ver').to('ops-out', Produced.with(S, S))
      return b.build()
    }
    case 'table': {
      const prices = b.table('prices', Consumed.with(S, S), Materialized.as<string, string>(Stores.persistentVersionedKeyValueStore('prices-store', 20)))
      prices.toStream().to('prices-out', Produced.with(S, S))
      prices.groupBy((k, v) => ({ key: v, value: k }), Grouped.with(S, S)).count().toStream()
        .mapValues((v) => String(v)).to('by-value-out', Produced.with(S, S))
      const rates = b.table('rates', Consumed.with(S, S), Materialized.as<string, string>(Stores.persistentVersionedKeyValueStore('rates-store', 20)))
      prices.join(rates, (p, q) => `${p}*${q}`).toStream().to('tt-out', Produced.with(S, S))
      prices.filter((_k, v) => !v.startsWith('x'), Materialized.as<string, string>(Stores.persistentVersionedKeyValueStore('cheap-store', 5)))
        .toStream().to('filtered-out', Produced.with(S, S))
      b.stream('q', Consumed.with(S, S)).process(storeOps('prices-store'), undefined, 'prices-store').to('q-out', Produced.with(S, S))
      return b.build()
    }
    case 'stream-table': {
      const customers = b.table('customers', Consumed.with(S, S), Materialized.as<string, string>(Stores.persistentVersionedKeyValueStore('customers-store', 30)))
      const orders = b.stream('orders', Consumed.with(S, S))
      orders.join(customers, (o: string, c: string) => `${o}@${c}`).to('inner-out', Produced.with(S, S))
      orders.leftJoin(customers, (o: string, c: string | null) => `${o}@${c}`).to('left-out', Produced.with(S, S))
      return b.build()
    }
    case 'grace': {
      const customers = b.table('customers', Consumed.with(S, S), Materialized.as<string, string>(Stores.persistentVersionedKeyValueStore('cust-v', 30)))
      const orders = b.stream('orders', Consumed.with(S, S))
      orders.join(customers, (o: string, c: string) => `${o}@${c}`, Joined.with<string, string, string>(S, S, S).withGracePeriod(5)).to('grace-inner-out', Produced.with(S, S))
      orders.leftJoin(customers, (o: string, c: string | null) => `${o}@${c}`, Joined.as<string, string, string>('late-join').withGracePeriod(0))
        .to('grace-left-out', Produced.with(S, S))
      orders.selectKey((_k, v) => v.substring(0, 1)).leftJoin(customers, (o: string, c: string | null) => `${o}@${c}`,
        Joined.as<string, string, string>('rekeyed').withKeySerde(S).withValueSerde(S).withGracePeriod(10)).to('rekeyed-out', Produced.with(S, S))
      return b.build()
    }
    case 'aggregates': {
      const events = b.stream('events', Consumed.with(S, S))
      events.groupByKey().aggregate(() => '', (_k, v, agg: string) => agg + v,
        Materialized.as<string, string>(Stores.persistentVersionedKeyValueStore('agg-v', 10)).withValueSerde(S))
        .toStream().to('agg-out', Produced.with(S, S))
      b.stream('aq', Consumed.with(S, S)).process(storeOps('agg-v'), undefined, 'agg-v').to('aq-out', Produced.with(S, S))
      b.table('owners', Consumed.with(S, S)).groupBy((k, v) => ({ key: v, value: k }), Grouped.with(S, S))
        .aggregate(() => '', (_k, v, agg: string) => `${agg}+${v}`, (_k, v, agg: string) => `${agg}-${v}`,
          Materialized.as<string, string>(Stores.persistentVersionedKeyValueStore('owned-v', 10)).withValueSerde(S))
        .toStream().to('owned-out', Produced.with(S, S))
      return b.build()
    }
    case 'fk': {
      const orders = b.table('fk-orders', Consumed.with(S, S), Materialized.as<string, string>(Stores.persistentVersionedKeyValueStore('fk-orders-v', 20)))
      const products = b.table('fk-products', Consumed.with(S, S), Materialized.as<string, string>(Stores.persistentVersionedKeyValueStore('fk-products-v', 20)))
      orders.join(products, (v: string) => v.split('|')[0]!, (o: string, p: string) => `${o}/${p}`).toStream().to('fk-out', Produced.with(S, S))
      orders.leftJoin(products, (v: string) => v.split('|')[0]!, (o: string, p: string | null) => `${o}/${p}`).toStream().to('fk-left-out', Produced.with(S, S))
      return b.build()
    }
    case 'through-mapvalues': {
      const upper = b.table('names', Consumed.with(S, S), Materialized.as<string, string>(Stores.persistentVersionedKeyValueStore('names-v', 30))).mapValues((v) => v.toUpperCase())
      const visits = b.stream('visits', Consumed.with(S, S))
      visits.join(upper, (v: string, n: string) => `${v}:${n}`).to('as-of-out', Produced.with(S, S))
      visits.leftJoin(upper, (v: string, n: string | null) => `${v}:${n}`, Joined.with<string, string, string>(S, S, S).withGracePeriod(4)).to('mapped-grace-out', Produced.with(S, S))
      return b.build()
    }
    default:
      throw new Error(`unknown topology ${name}`)
  }
}
