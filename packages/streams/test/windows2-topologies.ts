/**
 * Part two of the window goldens in TypeScript: the same operators, names and inputs as
 * test/streams-java/MoreWindowTopologies.java (withRetention, KIP-825 emit strategies, KIP-150
 * cogroup), whose output from Kafka Streams' own TopologyTestDriver is checked in as
 * golden/windows2-java-outputs.json. Change both together, then regenerate with
 * `node --import tsx test/streams-java/regenerate-windows.ts`.
 */
import { Consumed, EmitStrategy, Grouped, Materialized, Named, Produced, Serdes, SessionWindows, SlidingWindows, StreamsBuilder, TimeWindows, WindowedSerdes, type KTable, type Topology, type Windowed } from '@tidelog/streams'

const S = Serdes.String()
const L = Serdes.Long()
const at = (w: Windowed<string>) => `${w.key}@${w.window.start}/${w.window.end}`

function out<V>(t: KTable<Windowed<string>, V>, topic: string): void {
  t.toStream().map((w, v) => ({ key: at(w), value: String(v) })).to(topic, Produced.with(S, S))
}

export function buildWindows2Topology(name: string): Topology {
  const b = new StreamsBuilder()
  switch (name) {
    case 'retention': {
      const g = b.stream('clicks', Consumed.with(S, S)).groupByKey()
      out(g.windowedBy(TimeWindows.ofSizeAndGrace(10, 2)).count(Materialized.as('short-store')), 'short-out')
      out(g.windowedBy(TimeWindows.ofSizeAndGrace(10, 2)).count(Materialized.as<string, number>('long-store').withRetention(60)), 'long-out')
      out(g.windowedBy(SlidingWindows.ofTimeDifferenceWithNoGrace(5)).count(Materialized.as<string, number>('sliding-store').withRetention(40)), 'sliding-out')
      out(g.windowedBy(SessionWindows.ofInactivityGapWithNoGrace(4)).count(Materialized.as<string, number>('session-store').withRetention(50)), 'session-out')
      return b.build()
    }
    case 'emit-time': {
      const g = b.stream('clicks', Consumed.with(S, S)).groupByKey()
      const hop = g.windowedBy(TimeWindows.ofSizeAndGrace(10, 3).advanceBy(5)).emitStrategy(EmitStrategy.onWindowClose()).count(Materialized.as('hop-final'))
      out(hop, 'hop-final-out')
      hop.toStream().to('hop-final-windowed', Produced.with(WindowedSerdes.timeWindowedSerdeFrom(S, 10), L))
      out(g.windowedBy(TimeWindows.ofSizeWithNoGrace(10)).emitStrategy(EmitStrategy.onWindowClose())
        .aggregate(() => '', (_k, v, a) => a + v, Materialized.as<string, string>('tumble-final').withValueSerde(S).withRetention(100)), 'tumble-final-out')
      out(g.windowedBy(TimeWindows.ofSizeWithNoGrace(10)).emitStrategy(EmitStrategy.onWindowUpdate()).reduce((a, v) => a + v), 'tumble-update-out')
      return b.build()
    }
    case 'emit-sliding': {
      const g = b.stream('points', Consumed.with(S, S)).groupByKey()
      out(g.windowedBy(SlidingWindows.ofTimeDifferenceAndGrace(5, 2)).emitStrategy(EmitStrategy.onWindowClose()).count(Materialized.as('slide-final')), 'slide-final-out')
      return b.build()
    }
    case 'emit-session': {
      const g = b.stream('activity', Consumed.with(S, S)).groupByKey()
      const s = g.windowedBy(SessionWindows.ofInactivityGapAndGrace(5, 2)).emitStrategy(EmitStrategy.onWindowClose())
        .aggregate(() => '', (_k, v, a) => a + v, (_k, a1, a2) => `${a1}|${a2}`, Materialized.as<string, string>('sess-final').withValueSerde(S))
      out(s, 'sess-final-out')
      s.toStream().to('sess-final-windowed', Produced.with(WindowedSerdes.sessionWindowedSerdeFrom(S), S))
      return b.build()
    }
    case 'cogroup': {
      const clicks = b.stream('clicks', Consumed.with(S, S)).groupByKey()
      const views = b.stream('views', Consumed.with(S, S)).groupByKey()
      const buys = b.stream('buys', Consumed.with(S, S)).groupBy((_k, v) => v, Grouped.with(S, S))
      clicks.cogroup<string>((_k, v, a) => `${a}c${v}`)
        .cogroup(views, (_k, v, a) => `${a}v${v}`)
        .cogroup(buys, (_k, v, a) => `${a}b${v}`)
        .aggregate(() => '', Materialized.as<string, string>('cog-store').withValueSerde(S))
        .toStream()
        .to('cog-out', Produced.with(S, S))
      clicks.cogroup<number>((_k, _v, a) => a + 1)
        .cogroup(views, (_k, _v, a) => a + 10)
        .aggregate(() => 0, Named.as('tally'), Materialized.with(S, L))
        .toStream()
        .mapValues((v) => String(v))
        .to('tally-out', Produced.with(S, S))
      return b.build()
    }
    case 'cogroup-windowed': {
      const lower = b.stream('lower', Consumed.with(S, S)).groupByKey()
      const upper = b.stream('upper', Consumed.with(S, S)).groupByKey()
      const both = () => lower.cogroup<string>((_k, v, a) => a + v).cogroup(upper, (_k, v, a) => a + v.toUpperCase())
      out(both().windowedBy(TimeWindows.ofSizeAndGrace(10, 2)).aggregate(() => '', Materialized.as<string, string>('cog-win').withValueSerde(S)), 'cog-win-out')
      out(both().windowedBy(SlidingWindows.ofTimeDifferenceWithNoGrace(5)).aggregate(() => '', Materialized.with(S, S)), 'cog-slide-out')
      out(both().windowedBy(SessionWindows.ofInactivityGapWithNoGrace(4)).aggregate(() => '', (_k, x, y) => `${x}|${y}`, Named.as('sess'), Materialized.with(S, S)), 'cog-sess-out')
      return b.build()
    }
    default:
      throw new Error(`unknown topology ${name}`)
  }
}
