import type { Broker } from '@tidelog/broker'
import { Admin } from '@tidelog/client'
import { Consumer } from '@tidelog/consumer'
import { Producer } from '@tidelog/producer'
import { describe, it } from 'vitest'
import { Consumed, KafkaStreams, Materialized, QueryableStoreTypes, Serdes, StoreQueryParameters, StreamsBuilder, TopologyException, type Topology } from '@tidelog/streams'
import { useBroker } from './helpers/broker.js'

const S = Serdes.String()
let brokers: string[]
let admin: Admin
let producer: Producer
let broker: Broker
useBroker('tidelog-streams-joins-', (b) => ({ brokers, admin, producer, broker } = b))

/** Reads every partition of `topic` from the start until `done(latest value per key)` holds, or the deadline passes. */
async function readUntil(topic: string, done: (latest: Map<string, string | null>, all: { key: string; value: string | null }[]) => boolean, deadlineMs = 60_000) {
  const [d] = await admin.describeTopics([topic])
  const c = new Consumer({ brokers, autoOffsetReset: 'earliest' })
  const latest = new Map<string, string | null>()
  const all: { key: string; value: string | null }[] = []
  const ac = new AbortController()
  const timer = setTimeout(() => ac.abort(), deadlineMs)
  try {
    c.assign(d!.partitions.map((p) => ({ topic, partition: p.partition })))
    for await (const batch of c.batches({ signal: ac.signal })) {
      for (const m of batch.messages) {
        const key = m.key!.toString()
        const value = m.value === null ? null : m.value.toString()
        latest.set(key, value)
        all.push({ key, value })
      }
      if (done(latest, all)) break
    }
  } catch (e) {
    if (!ac.signal.aborted) throw e
  } finally {
    clearTimeout(timer)
    await c.close()
  }
  return { latest, all }
}

async function endOffsetSum(topic: string): Promise<number> {
  const [d] = await admin.describeTopics([topic])
  const c = new Consumer({ brokers })
  try {
    const ends = await c.endOffsets(d!.partitions.map((p) => ({ topic, partition: p.partition })))
    return ends.reduce((n, e) => n + Number(e.offset), 0)
  } finally {
    await c.close()
  }
}

async function until(cond: () => Promise<boolean> | boolean, deadlineMs = 60_000): Promise<void> {
  const end = Date.now() + deadlineMs
  while (!(await cond())) {
    if (Date.now() > end) throw new Error('condition not met before the deadline')
    await new Promise((r) => setTimeout(r, 50))
  }
}

function app(topology: Topology, id: string): KafkaStreams {
  return new KafkaStreams(topology, { 'application.id': id, 'bootstrap.servers': brokers, 'default.key.serde': S, 'default.value.serde': S, 'commit.interval.ms': 100 })
}

// Concurrent: each test has its own topics and application id; most of the time is waiting for the group.
describe.concurrent('joins on KafkaStreams over the tidelog broker', () => {
  it('stream-table join and leftJoin after a key change: the repartition topic gets the table\'s partition count, and each order is enriched from the table', async ({ expect }) => {
    await admin.createTopics([
      { name: 'j-customers', partitions: 2 },
      { name: 'j-orders', partitions: 3 },
      { name: 'j-enriched', partitions: 1 },
      { name: 'j-enriched-left', partitions: 1 },
    ])
    const b = new StreamsBuilder()
    const customers = b.table('j-customers', Consumed.with(S, S), Materialized.as('j-customer-store'))
    const orders = b.stream<string, string>('j-orders', Consumed.with(S, S)).selectKey((_k, v) => v.split(':')[0]!)
    orders.join(customers, (order: string, customer: string) => `${order}|${customer}`).to('j-enriched')
    orders.leftJoin(customers, (k: string, order: string, customer: string | null) => `${k}:${order}|${customer}`).to('j-enriched-left')
    const streams = app(b.build(), 'j-st')
    await streams.start()
    try {
      await producer.send(['alice', 'bob', 'carol'].map((c) => ({ topic: 'j-customers', key: c, value: c.toUpperCase() })))
      // The table side is in the store (its changelog) before any order is sent: the join is then deterministic.
      await until(async () => (await endOffsetSum('j-st-j-customer-store-changelog')) === 3)
      const [repartition] = await admin.describeTopics(['j-st-KSTREAM-KEY-SELECT-0000000003-repartition'])
      expect(repartition!.partitions.length).toBe(2)
      const sent = ['alice:o1', 'bob:o2', 'dave:o3', 'carol:o4', 'alice:o5']
      await producer.send(sent.map((v, i) => ({ topic: 'j-orders', key: `order-${i}`, value: v })))
      const inner = await readUntil('j-enriched', (_l, all) => all.length >= 4)
      expect(inner.all.map((r) => `${r.key}=${r.value}`).sort()).toEqual(['alice=alice:o1|ALICE', 'alice=alice:o5|ALICE', 'bob=bob:o2|BOB', 'carol=carol:o4|CAROL'])
      const left = await readUntil('j-enriched-left', (_l, all) => all.length >= 5)
      expect(left.all.map((r) => r.value).sort()).toEqual(['alice:alice:o1|ALICE', 'alice:alice:o5|ALICE', 'bob:bob:o2|BOB', 'carol:carol:o4|CAROL', 'dave:dave:o3|null'])
    } finally {
      await streams.close()
    }
    expect(streams.state).toBe('NOT_RUNNING')
  })

  it('refuses to start when the two sides of a join have different partition counts (TopologyException, as Java)', async ({ expect }) => {
    await admin.createTopics([{ name: 'cp-table', partitions: 2 }, { name: 'cp-stream', partitions: 3 }])
    const b = new StreamsBuilder()
    b.stream<string, string>('cp-stream').join(b.table<string, string>('cp-table'), (a: string, c: string) => a + c).to('cp-out')
    const streams = app(b.build(), 'cp-app')
    const err = await streams.start().then(() => undefined, (e: unknown) => e)
    expect(err).toBeInstanceOf(TopologyException)
    expect((err as Error).message).toBe('Invalid topology: Topics not co-partitioned: [{cp-stream=3, cp-table=2}]')
    await streams.close()
    expect(streams.state).toBe('ERROR')
  })

  it('GlobalKTable: restored from every partition before any stream record is processed; the stream needs no co-partitioning', async ({ expect }) => {
    await admin.createTopics([{ name: 'g-products', partitions: 3 }, { name: 'g-sales', partitions: 1 }, { name: 'g-out', partitions: 1 }])
    const products = Array.from({ length: 30 }, (_, i) => ({ topic: 'g-products', key: `p${i}`, value: `product-${i}` }))
    await producer.send(products)
    const b = new StreamsBuilder()
    const table = b.globalTable('g-products', Consumed.with(S, S), Materialized.as('g-product-store'))
    b.stream<string, string>('g-sales', Consumed.with(S, S))
      .join(table, (_k, v) => v.split('x')[0], (sale: string, product: string) => `${sale}=${product}`)
      .to('g-out')
    // Sales are there before the instance starts: without the restore first, early ones would find no product.
    await producer.send(Array.from({ length: 30 }, (_, i) => ({ topic: 'g-sales', key: `s${i}`, value: `p${i}x${i}` })))
    const streams = app(b.build(), 'g-app')
    await streams.start()
    try {
      const out = await readUntil('g-out', (_l, all) => all.length >= 30)
      expect(out.all.length).toBe(30)
      for (let i = 0; i < 30; i++) expect(out.latest.get(`s${i}`)).toBe(`p${i}x${i}=product-${i}`)
      // The global store is queryable, and keeps following its topic after the restore.
      const store = streams.store(StoreQueryParameters.fromNameAndType('g-product-store', QueryableStoreTypes.keyValueStore<string, string>()))
      expect([store.get('p3'), store.approximateNumEntries()]).toEqual(['product-3', 30])
      expect(streams.queryMetadataForKey('g-product-store', 'p3', S)).toEqual({ activeHost: { host: 'unavailable', port: -1 }, standbyHosts: [], partition: -1 })
      expect(streams.metadataForAllStreamsClients().map((m) => [...m.stateStoreNames])).toEqual([['g-product-store']])
      await producer.send([{ topic: 'g-products', key: 'p3', value: 'product-3-new' }])
      await until(() => store.get('p3') === 'product-3-new')
      await producer.send([{ topic: 'g-sales', key: 'late', value: 'p3x' }])
      expect((await readUntil('g-out', (l) => l.has('late'))).latest.get('late')).toBe('p3x=product-3-new')
    } finally {
      await streams.close()
    }
  })

  it('foreign-key join (inner and left) across tables with different partition counts: the subscription topic follows the foreign table, the response topic the left one', async ({ expect }) => {
    await admin.createTopics([{ name: 'fk-o', partitions: 2 }, { name: 'fk-p', partitions: 3 }, { name: 'fk-out', partitions: 1 }, { name: 'fk-out-left', partitions: 1 }])
    const b = new StreamsBuilder()
    const orders = b.table<string, string>('fk-o', Consumed.with(S, S))
    const productsT = b.table<string, string>('fk-p', Consumed.with(S, S))
    orders.join(productsT, (v: string) => v.split(':')[0], (o: string, p: string) => `${o}/${p}`).toStream().to('fk-out')
    orders.leftJoin(productsT, (v: string) => v.split(':')[0], (o: string, p: string | null) => `${o}/${p}`).toStream().to('fk-out-left')
    const streams = app(b.build(), 'fk-app')
    await streams.start()
    try {
      const [sub] = await admin.describeTopics(['fk-app-KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION-0000000006-topic'])
      const [resp] = await admin.describeTopics(['fk-app-KTABLE-FK-JOIN-SUBSCRIPTION-RESPONSE-0000000014-topic'])
      expect([sub!.partitions.length, resp!.partitions.length]).toEqual([3, 2])
      await producer.send(Array.from({ length: 10 }, (_, i) => ({ topic: 'fk-p', key: `p${i}`, value: `P${i}` })))
      await producer.send(Array.from({ length: 20 }, (_, i) => ({ topic: 'fk-o', key: `o${i}`, value: `p${i % 12}:${i}` })))
      const want = new Map<string, string | null>()
      for (let i = 0; i < 20; i++) if (i % 12 < 10) want.set(`o${i}`, `p${i % 12}:${i}/P${i % 12}`)
      const same = (m: Map<string, string | null>, w: Map<string, string | null>) => m.size === w.size && [...w].every(([k, v]) => m.get(k) === v)
      const inner = await readUntil('fk-out', (l) => same(l, want))
      expect(Object.fromEntries(inner.latest)).toEqual(Object.fromEntries(want))
      // An update on the foreign side reaches every subscriber; a deleted foreign row makes the inner result a tombstone.
      await producer.send([{ topic: 'fk-p', key: 'p1', value: 'P1-new' }, { topic: 'fk-p', key: 'p2', value: null }])
      want.set('o1', 'p1:1/P1-new').set('o13', 'p1:13/P1-new').set('o2', null).set('o14', null)
      const updated = await readUntil('fk-out', (l) => same(l, want))
      expect(Object.fromEntries(updated.latest)).toEqual(Object.fromEntries(want))
      const wantLeft = new Map<string, string | null>()
      for (let i = 0; i < 20; i++) wantLeft.set(`o${i}`, `p${i % 12}:${i}/${i % 12 === 1 ? 'P1-new' : i % 12 === 2 || i % 12 >= 10 ? 'null' : `P${i % 12}`}`)
      const left = await readUntil('fk-out-left', (l) => same(l, wantLeft))
      expect(Object.fromEntries(left.latest)).toEqual(Object.fromEntries(wantLeft))
    } finally {
      await streams.close()
    }
  })

  it('foreign-key join: each response goes back to the partition its subscription came from, even when the left table is not partitioned by key hash', async ({ expect }) => {
    await admin.createTopics([{ name: 'fkp-o', partitions: 2 }, { name: 'fkp-p', partitions: 2 }, { name: 'fkp-out', partitions: 1 }])
    const b = new StreamsBuilder()
    b.table<string, string>('fkp-o', Consumed.with(S, S))
      .join(b.table<string, string>('fkp-p', Consumed.with(S, S)), (v: string) => v, (o: string, p: string) => `${o}/${p}`)
      .toStream()
      .to('fkp-out')
    const streams = app(b.build(), 'fkp-app')
    await streams.start()
    try {
      await producer.send([{ topic: 'fkp-p', key: 'p', value: 'P' }])
      // Explicit partitions: about half of these rows are not where murmur2 of their key would put them.
      await producer.send(Array.from({ length: 20 }, (_, i) => ({ topic: 'fkp-o', key: `o${i}`, value: 'p', partition: i % 2 })))
      const out = await readUntil('fkp-out', (l) => l.size === 20, 40_000)
      expect(out.latest.size).toBe(20)
      for (let i = 0; i < 20; i++) expect(out.latest.get(`o${i}`)).toBe('p/P')
    } finally {
      await streams.close()
    }
  })
})
