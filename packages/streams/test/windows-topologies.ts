/**
 * The window / suppress / stream-join golden topologies in TypeScript: the same operators, names
 * and inputs as test/streams-java/WindowTopologies.java, whose output (Kafka Streams' own
 * TopologyTestDriver) is checked in as golden/windows-java-outputs.json. Change both together,
 * then regenerate with `node --import tsx test/streams-java/regenerate-windows.ts`.
 */
import {
  BufferConfig,
  Consumed,
  Grouped,
  JoinWindows,
  Materialized,
  Produced,
  Serdes,
  SessionWindows,
  SlidingWindows,
  StreamJoined,
  StreamsBuilder,
  Suppressed,
  TimeWindows,
  WindowedSerdes,
  type Topology,
  type Windowed,
} from '@tidelog/streams'

const S = Serdes.String()
const L = Serdes.Long()
const at = (w: Windowed<string>) => `${w.key}@${w.window.start}/${w.window.end}`

export function buildWindowTopology(name: string): Topology {
  const b = new StreamsBuilder()
  switch (name) {
    case 'tumbling-count': {
      const t = b.stream('clicks', Consumed.with(S, S)).groupByKey().windowedBy(TimeWindows.ofSizeAndGrace(10, 5)).count()
      t.toStream().to('tumbling-windowed', Produced.with(WindowedSerdes.timeWindowedSerdeFrom(S, 10), L))
      t.toStream().map((w, v) => ({ key: at(w), value: String(v) })).to('tumbling-out')
      return b.build()
    }
    case 'hopping-aggregate':
      b.stream('letters', Consumed.with(S, S))
        .groupByKey()
        .windowedBy(TimeWindows.ofSizeWithNoGrace(10).advanceBy(5))
        .aggregate(() => '', (_k, v, a) => a + v, Materialized.as<string, string>('hop-store').withValueSerde(S))
        .toStream()
        .map((w, v) => ({ key: at(w), value: v }))
        .to('hopping-out')
      return b.build()
    case 'sliding': {
      const g = b.stream('points', Consumed.with(S, S)).groupByKey()
      g.windowedBy(SlidingWindows.ofTimeDifferenceAndGrace(10, 30)).count().toStream().map((w, v) => ({ key: at(w), value: String(v) })).to('sliding-out')
      g.windowedBy(SlidingWindows.ofTimeDifferenceWithNoGrace(5))
        .reduce((a, v) => `${a},${v}`)
        .toStream()
        .to('sliding-reduce-out', Produced.with(WindowedSerdes.timeWindowedSerdeFrom(S, 5), S))
      return b.build()
    }
    case 'session': {
      const g = b.stream('activity', Consumed.with(S, S)).groupByKey()
      const s = g.windowedBy(SessionWindows.ofInactivityGapAndGrace(5, 10)).aggregate(() => '', (_k, v, a) => a + v, (_k, a1, a2) => `${a1}|${a2}`, Materialized.with(S, S))
      s.toStream().to('session-windowed', Produced.with(WindowedSerdes.sessionWindowedSerdeFrom(S), S))
      s.toStream().map((w, v) => ({ key: at(w), value: v })).to('session-out')
      g.windowedBy(SessionWindows.ofInactivityGapWithNoGrace(3))
        .count()
        .suppress(Suppressed.untilWindowCloses<string>(BufferConfig.unbounded()).withName('sess-final'))
        .toStream()
        .map((w, v) => ({ key: at(w), value: String(v) }))
        .to('session-final-out')
      return b.build()
    }
    case 'suppress-final':
      b.stream('events', Consumed.with(S, S))
        .groupByKey()
        .windowedBy(TimeWindows.ofSizeAndGrace(10, 2))
        .count(Materialized.as('final-counts'))
        .suppress(Suppressed.untilWindowCloses<string>(BufferConfig.unbounded()))
        .toStream()
        .map((w, v) => ({ key: at(w), value: String(v) }))
        .to('final-out')
      return b.build()
    case 'suppress-time-limit':
      b.stream('views', Consumed.with(S, S))
        .groupByKey()
        .count()
        .suppress(Suppressed.untilTimeLimit<string>(10, BufferConfig.maxRecords(2).emitEarlyWhenFull()))
        .toStream()
        .to('limit-out', Produced.with(S, L))
      return b.build()
    case 'join-inner': {
      const left = b.stream('left', Consumed.with(S, S))
      const right = b.stream('right', Consumed.with(S, S))
      left.join(right, (l, r) => `${l}+${r}`, JoinWindows.ofTimeDifferenceAndGrace(10, 5), StreamJoined.with(S, S, S)).to('join-out')
      return b.build()
    }
    case 'join-left': {
      const left = b.stream('left', Consumed.with(S, S))
      const right = b.stream('right', Consumed.with(S, S))
      left.leftJoin(right, (l, r) => `${l}+${r}`, JoinWindows.ofTimeDifferenceWithNoGrace(10).after(20), StreamJoined.with(S, S, S).withName('lj').withStoreName('lj-store')).to('join-out')
      return b.build()
    }
    case 'join-outer': {
      const left = b.stream('left', Consumed.with(S, S))
      const right = b.stream('right', Consumed.with(S, S)).selectKey((_k, v) => v.substring(0, 1))
      left.outerJoin(right, (l, r) => `${l}+${r}`, JoinWindows.ofTimeDifferenceAndGrace(5, 2), StreamJoined.with(S, S, S)).to('join-out')
      return b.build()
    }
    case 'rekeyed-window':
      b.stream('pageviews', Consumed.with(S, S))
        .selectKey((_k, v) => v)
        .groupByKey(Grouped.as<string, string>('by-page').withKeySerde(S).withValueSerde(S))
        .windowedBy(TimeWindows.ofSizeAndGrace(10, 0))
        .reduce((a, v) => `${a},${v}`, Materialized.as('page-store'))
        .toStream()
        .map((w, v) => ({ key: at(w), value: v }))
        .to('rekeyed-out')
      return b.build()
    default:
      throw new Error(`unknown window topology ${name}`)
  }
}
