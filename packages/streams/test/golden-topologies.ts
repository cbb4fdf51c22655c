/**
 * The golden topologies in TypeScript: the same operators, names and inputs as
 * test/streams-java/GoldenTopologies.java, whose output (Kafka Streams' own TopologyTestDriver)
 * is checked in as golden/java-outputs.json. Change both together, then regenerate with
 * `bash test/streams-java/regenerate.sh`.
 */
import {
  Branched,
  Consumed,
  Grouped,
  Materialized,
  Named,
  Produced,
  PunctuationType,
  Record,
  Serdes,
  Stores,
  StreamsBuilder,
  Topology,
  type KeyValueStore,
  type ProcessorContext,
} from '@tidelog/streams'

const S = Serdes.String()
const L = Serdes.Long()

/** Java's String.split(regex): like JS split, minus the trailing empty strings Java removes. */
function javaSplit(s: string, re: RegExp): string[] {
  const parts = s.split(re)
  while (parts.length > 1 && parts[parts.length - 1] === '') parts.pop()
  return parts
}

export function buildGolden(name: string): Topology {
  const b = new StreamsBuilder()
  switch (name) {
    case 'wordcount':
      b.stream('text-input', Consumed.with(S, S))
        .flatMapValues((v) => (v === null ? [] : javaSplit(v.toLowerCase(), /\W+/)))
        .groupBy((_k, w) => w, Grouped.with(S, S))
        .count(Materialized.as('counts-store'))
        .toStream()
        .to('wordcount-output', Produced.with(S, L))
      return b.build()
    case 'chains': {
      const branches = b.stream('events', Consumed.with(S, S))
        .filter((_k, v) => v.length > 3)
        .mapValues((v) => v.toUpperCase())
        .filterNot((_k, v) => v.startsWith('X'))
        .map((k, v) => ({ key: v.substring(0, 1), value: k === null ? `none:${v}` : `${k}:${v}` }))
        .peek(() => {})
        .split(Named.as('fruit-'))
        .branch((k) => k === 'A', Branched.as('a'))
        .branch((k) => k === 'B', Branched.withConsumer((s) => s.mapValues((v: string) => `${v}!`).to('chain-b')))
        .defaultBranch()
      branches['fruit-a']!.to('chain-a')
      branches['fruit-0']!.to('chain-default')
      return b.build()
    }
    case 'aggregate': {
      const agg = b.stream('purchases', Consumed.with(S, S))
        .groupByKey()
        .aggregate(() => 'init', (_k, v, a) => `${a}+${v}`, Materialized.as<string, string>('agg-store').withValueSerde(S))
      agg.toStream().to('agg-output')
      agg.filter((_k, v) => v.length < 12)
        .mapValues((v) => String(v.length))
        .toStream()
        .to('agg-lengths')
      return b.build()
    }
    case 'selectkey-count':
      b.stream('clicks', Consumed.with(S, S))
        .selectKey((_k, v) => v)
        .groupByKey()
        .count()
        .toStream()
        .mapValues((c) => `count=${c}`)
        .to('clicks-per-page')
      return b.build()
    case 'merge': {
      const left = b.stream<string, string>('left')
      const right = b.stream<string, string>('right')
      left.merge(right).mapValues((v) => v.toUpperCase()).repartition().to('merged')
      return b.build()
    }
    case 'table-groupby': {
      const users = b.table('users', Consumed.with(S, S))
      const counts = users
        .groupBy((user, region) => ({ key: region, value: user }), Grouped.with(S, S))
        .count()
      counts.toStream().to('region-counts', Produced.with(S, L))
      counts.filter((_region, n) => n >= 2).mapValues((n) => `big:${n}`).toStream().to('big-regions')
      users.groupBy((user, region) => ({ key: region, value: user }), Grouped.as<string, string>('by-region').withKeySerde(S).withValueSerde(S))
        .aggregate(() => '', (_region, user, agg) => `${agg}+${user}`, (_region, user, agg) => `${agg}-${user}`, Materialized.with(S, S))
        .toStream()
        .to('region-members')
      return b.build()
    }
    case 'processor-api': {
      const t = new Topology()
      t.addSource('pa-source', 'pa-input')
      t.addProcessor('pa-counter', () => {
        let ctx!: ProcessorContext<string, number>
        let store!: KeyValueStore<string, number>
        return {
          init(context: ProcessorContext<string, number>) {
            ctx = context
            store = context.getStateStore<KeyValueStore<string, number>>('pa-store')
            context.schedule(10, PunctuationType.STREAM_TIME, (ts) => {
              for (const kv of store.all()) ctx.forward(new Record(kv.key, kv.value, ts))
            })
            context.schedule(100, PunctuationType.WALL_CLOCK_TIME, (ts) => ctx.forward(new Record('wall', store.approximateNumEntries(), ts)))
          },
          process(r: Record<string, string>) {
            const old = store.get(r.key)
            store.put(r.key, old === undefined ? 1 : old + 1)
            if (r.value === 'emit') ctx.forward(r.withValue(-1))
          },
        }
      }, 'pa-source')
      t.addStateStore(Stores.keyValueStoreBuilder(Stores.inMemoryKeyValueStore('pa-store'), S, L), 'pa-counter')
      t.addSink('pa-sink', 'pa-output', { keySerde: S, valueSerde: L }, 'pa-counter')
      return t
    }
    default:
      throw new Error(`unknown golden topology ${name}`)
  }
}
