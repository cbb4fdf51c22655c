import { describe, expect, it } from 'vitest'
import { Consumed, EmitStrategy, Materialized, Serdes, SessionWindows, SlidingWindows, StreamsBuilder, TimeWindows, TopologyTestDriver, type Windowed } from '@tidelog/streams'

const S = Serdes.String()
const at = (w: Windowed<string>) => `${w.key}@${w.window.start}/${w.window.end}`

function drive(build: (b: StreamsBuilder) => void, steps: [string, number][], config: { [k: string]: unknown } = {}) {
  const b = new StreamsBuilder()
  build(b)
  const driver = new TopologyTestDriver(b.build(), { 'application.id': 'emit', 'default.key.serde': S, 'default.value.serde': S, ...config })
  const input = driver.createInputTopic('in', S, S)
  const output = driver.createOutputTopic('out', S, S)
  const seen: string[][] = []
  for (const [key, ts] of steps) {
    input.pipeInput(key, 'v', ts)
    seen.push(output.readKeyValuesToList().map((kv) => `${kv.key}=${kv.value}`))
  }
  return { driver, seen }
}

describe('Materialized.withRetention for windowed and session aggregations', () => {
  it("refuses a retention below the windows' size (or gap) plus grace, with Java's messages, and adds nothing to the topology", () => {
    expect(() => Materialized.as('x').withRetention(-1)).toThrow('Retention must not be negative.')
    const b = new StreamsBuilder()
    const g = b.stream('in', Consumed.with(S, S)).groupByKey()
    expect(() => g.windowedBy(TimeWindows.ofSizeAndGrace(10, 5)).count(Materialized.as<string, number>('t').withRetention(14))).toThrow(
      'The retention period of the window store t must be no smaller than its window size plus the grace period. Got size=[10], grace=[5], retention=[14]')
    expect(() => g.windowedBy(SlidingWindows.ofTimeDifferenceAndGrace(10, 5)).count(Materialized.as<string, number>('s').withRetention(24))).toThrow(
      'The retention period of the window store s must be no smaller than 2 * time difference plus the grace period. Got time difference=[10], grace=[5], retention=[24]')
    expect(() => g.windowedBy(SessionWindows.ofInactivityGapAndGrace(10, 5)).count(Materialized.as<string, number>('g').withRetention(14))).toThrow(
      'The retention period of the session store g must be no smaller than the session inactivity gap plus the grace period. Got gap=[10], grace=[5], retention=[14]')
    expect(b.build().describe().toString()).toBe('Topologies:\n   Sub-topology: 0\n    Source: KSTREAM-SOURCE-0000000000 (topics: [in])\n      --> none\n\n')
  })

  it('keeps old windows fetchable for the retention it is given, and no longer', () => {
    const build = (retention?: number) => (b: StreamsBuilder) => {
      const m = Materialized.as<string, number>('counts')
      b.stream('in', Consumed.with(S, S)).groupByKey().windowedBy(TimeWindows.ofSizeWithNoGrace(10)).count(retention === undefined ? m : m.withRetention(retention))
    }
    const steps: [string, number][] = [['a', 1], ['a', 15], ['a', 35]]
    const short = drive(build(), steps).driver
    const long = drive(build(100), steps).driver
    expect(short.getTimestampedWindowStore('counts')!.retentionPeriodMs).toBe(10)
    expect(long.getTimestampedWindowStore('counts')!.retentionPeriodMs).toBe(100)
    expect(short.getWindowStore<string, number>('counts')!.fetch('a', 0, 40)).toEqual([{ key: 30, value: 1 }])
    expect(long.getWindowStore<string, number>('counts')!.fetch('a', 0, 40)).toEqual([{ key: 0, value: 1 }, { key: 10, value: 1 }, { key: 30, value: 1 }])
    short.close()
    long.close()
  })
})

describe('emitStrategy (KIP-825)', () => {
  const timeCount = (emit?: EmitStrategy) => (b: StreamsBuilder) => {
    const w = b.stream('in', Consumed.with(S, S)).groupByKey().windowedBy(TimeWindows.ofSizeAndGrace(10, 2))
    ;(emit === undefined ? w : w.emitStrategy(emit)).count(Materialized.as('c')).toStream().map((k, v) => ({ key: at(k), value: String(v) })).to('out')
  }
  const steps: [string, number][] = [['a', 1], ['b', 5], ['a', 9], ['a', 11], ['a', 12], ['b', 3], ['a', 25], ['a', 22]]

  it('onWindowClose: one final result per window once stream time passes its end plus grace; no extra node or store (unlike suppress)', () => {
    const { driver, seen } = drive(timeCount(EmitStrategy.onWindowClose()), steps)
    expect(seen).toEqual([[], [], [], [], ['a@0/10=2', 'b@0/10=1'], [], ['a@10/20=2'], []])
    const update = drive(timeCount(EmitStrategy.onWindowUpdate()), steps)
    expect(update.seen.flat()).toEqual(['a@0/10=1', 'b@0/10=1', 'a@0/10=2', 'a@10/20=1', 'a@10/20=2', 'a@20/30=1', 'a@20/30=2'])
    expect(driver.getWindowStore<string, number>('c')!.fetch('a', 20)).toBe(2)
    expect(new StreamsBuilder().build().describe().toString()).not.toContain('SUPPRESS')
    const described = (() => { const b = new StreamsBuilder(); timeCount(EmitStrategy.onWindowClose())(b); return b.build().describe().toString() })()
    const plain = (() => { const b = new StreamsBuilder(); timeCount()(b); return b.build().describe().toString() })()
    expect(described).toBe(plain)
    expect(described).not.toContain('SUPPRESS')
    // The late b@3 (window closed at stream time 12) is dropped and counted.
    expect(driver.metrics().find((m) => m.name === 'dropped-records-total')!.value).toBe(1)
    driver.close()
    update.driver.close()
  })

  it('onWindowClose looks for closed windows at most once per emit interval of wall-clock time', () => {
    const { driver, seen } = drive(timeCount(EmitStrategy.onWindowClose()), [['a', 1], ['a', 12], ['a', 25]], { '__emit.interval.ms.kstreams.windowed.aggregation__': 1000 })
    // As Java: the first record's check (nothing closed yet) uses up the interval, and the driver's wall clock stands still.
    expect(seen).toEqual([[], [], []])
    driver.advanceWallClockTime(1000)
    driver.createInputTopic('in', S, S).pipeInput('a', 'v', 26)
    // [0,10) is past the store's retention (12) by then: Java's time-ordered store no longer returns it either.
    expect(driver.createOutputTopic('out', S, S).readKeyValuesToList().map((kv) => `${kv.key}=${kv.value}`)).toEqual(['a@10/20=1'])
    driver.close()
  })

  it('onWindowClose for sliding and session windows', () => {
    const sliding = drive((b) => {
      b.stream('in', Consumed.with(S, S)).groupByKey().windowedBy(SlidingWindows.ofTimeDifferenceWithNoGrace(5)).emitStrategy(EmitStrategy.onWindowClose())
        .count().toStream().map((k, v) => ({ key: at(k), value: String(v) })).to('out')
    }, [['a', 10], ['a', 12], ['a', 20]])
    expect(sliding.seen).toEqual([[], ['a@5/10=1'], ['a@7/12=2', 'a@11/16=1']])
    sliding.driver.close()
    const session = drive((b) => {
      b.stream('in', Consumed.with(S, S)).groupByKey().windowedBy(SessionWindows.ofInactivityGapAndGrace(5, 1)).emitStrategy(EmitStrategy.onWindowClose())
        .count().toStream().map((k, v) => ({ key: at(k), value: v === null ? 'null' : String(v) })).to('out')
    }, [['a', 1], ['a', 4], ['b', 6], ['a', 12], ['b', 20]])
    // The merge of a@1 and a@4 sends no tombstone; each session comes out once, ordered by its end.
    expect(session.seen).toEqual([[], [], [], ['a@1/4=2'], ['b@6/6=1', 'a@12/12=1']])
    session.driver.close()
  })
})
