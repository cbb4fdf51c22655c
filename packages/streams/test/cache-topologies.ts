/**
 * The record-cache golden topologies in TypeScript: the same operators, names and inputs as
 * test/streams-java/CacheTopologies.java, whose output (Kafka Streams' own TopologyTestDriver with
 * caching on) is checked in as golden/cache-java-outputs.json. A spec name is
 * `<topology>@<statestore.cache.max.bytes>`. Change both together, then regenerate with
 * `node --import tsx test/streams-java/cache.ts`.
 */
import { EmitStrategy, Grouped, Materialized, Produced, Serdes, SessionWindows, SlidingWindows, StreamsBuilder, TimeWindows, type KTable, type Topology, type Windowed } from '@tidelog/streams'

const S = Serdes.String()
const L = Serdes.Long()
const at = (w: Windowed<string>) => `${w.key}@${w.window.start}/${w.window.end}`
const words = (b: StreamsBuilder) => b.stream<string, string>('words').flatMapValues((v) => v.split(' ')).groupByKey()

export function buildCacheTopology(spec: string): Topology {
  const name = spec.slice(0, spec.indexOf('@'))
  const b = new StreamsBuilder()
  switch (name) {
    case 'table-source':
      b.table<string, string>('in', undefined, Materialized.as('t')).toStream().to('out')
      break
    case 'table-source-groupby':
      b.table<string, string>('in', undefined, Materialized.as('t'))
        .groupBy((k, v) => ({ key: v, value: k }), Grouped.with(S, S))
        .count(Materialized.as('c'))
        .toStream()
        .to('out', Produced.with(S, L))
      break
    case 'table-table-join': {
      const left: KTable<string, string> = b.table('left', undefined, Materialized.as('l'))
      const right: KTable<string, string> = b.table('right', undefined, Materialized.as('r'))
      left.join(right, (x, y) => `${x}+${y}`).toStream().to('join-out')
      left.leftJoin(right, (x: string, y: string | null) => `${x}+${y}`).toStream().to('left-out')
      break
    }
    case 'stream-table-join': {
      const t: KTable<string, string> = b.table('t', undefined, Materialized.as('t'))
      b.stream<string, string>('s').flatMapValues((v) => v.split(' ')).join(t, (x: string, y: string) => `${x}+${y}`).to('out')
      break
    }
    case 'read-through': {
      // Tables that are cached aggregations, read by joins within the same input record, before any flush.
      const s = b.stream<string, string>('s').flatMapValues((v) => v.split(' '))
      const t = s.filter((_k, v) => v.startsWith('set=')).mapValues((v) => v.slice(4)).groupByKey().reduce((_x, y) => y, Materialized.as('t'))
      const u = s.filter((_k, v) => v.startsWith('put=')).mapValues((v) => v.slice(4)).groupByKey().reduce((_x, y) => y, Materialized.as('u'))
      s.filter((_k, v) => v === 'get').join(t, (x: string, y: string) => `${x}+${y}`).to('st-out')
      t.join(u, (x, y) => `${x}+${y}`).toStream().to('tt-out')
      break
    }
    case 'materialized-filter-mapvalues': {
      const t = b.table<string, string>('in', undefined, Materialized.as('t'))
      t.filter((_k, v) => !v.startsWith('x'), Materialized.as('f')).toStream().to('filter-out')
      t.mapValues((v) => v.toUpperCase(), Materialized.as('m')).toStream().to('map-out')
      break
    }
    case 'time-windows':
      words(b).windowedBy(TimeWindows.ofSizeAndGrace(10, 5).advanceBy(5)).count(Materialized.as('tw'))
        .toStream().map((w, v) => ({ key: at(w), value: v })).to('out', Produced.with(S, L))
      break
    case 'time-windows-close':
      words(b).windowedBy(TimeWindows.ofSizeAndGrace(10, 2)).emitStrategy(EmitStrategy.onWindowClose()).count(Materialized.as('twc'))
        .toStream().map((w, v) => ({ key: at(w), value: v })).to('out', Produced.with(S, L))
      break
    case 'sliding-windows':
      words(b).windowedBy(SlidingWindows.ofTimeDifferenceAndGrace(10, 30)).count(Materialized.as('sw'))
        .toStream().map((w, v) => ({ key: at(w), value: v })).to('out', Produced.with(S, L))
      break
    case 'session-windows':
      words(b).windowedBy(SessionWindows.ofInactivityGapAndGrace(5, 10)).reduce((x, y) => `${x}|${y}`, Materialized.as('ss'))
        .toStream().map((w, v) => ({ key: at(w), value: v })).to('out')
      break
    default:
      throw new Error(`unknown topology ${name}`)
  }
  return b.build()
}
