import { describe, expect, it } from 'vitest'
import {
  BufferConfig, Consumed, InMemorySessionStore, Produced, InMemoryWindowStore, JoinWindows, Serdes, SessionStores, SessionWindows, SlidingWindows, StreamsBuilder,
  StreamsException, Suppressed, TimeWindows, TopologyTestDriver, Window, Windowed, WindowedSerdes, WindowStores,
} from '@tidelog/streams'

const S = Serdes.String()
const L = Serdes.Long()

/** A store context that records changelog writes, as a task's does. */
function context() {
  const logged: { store: string; key: string; value: string | null }[] = []
  return {
    logged,
    ctx: { applicationId: 'app', taskId: { toString: () => '0_0' }, currentTimestamp: () => 0, logChange: (store: string, key: Buffer, value: Buffer | null) => { logged.push({ store, key: key.toString('hex'), value: value === null ? null : value.toString('hex') }) } },
  }
}

describe('window specs', () => {
  it('compute Java\'s windows and refuse what Java refuses, with its messages', () => {
    expect(TimeWindows.ofSizeWithNoGrace(10).advanceBy(5).windowsFor(12).map((w) => [w.start, w.end])).toEqual([[5, 15], [10, 20]])
    expect(TimeWindows.ofSizeAndGrace(10, 3).windowsFor(3).map((w) => [w.start, w.end])).toEqual([[0, 10]])
    expect(() => TimeWindows.ofSizeWithNoGrace(0)).toThrow('Window size (sizeMs) must be larger than zero.')
    expect(() => TimeWindows.ofSizeWithNoGrace(10).advanceBy(11)).toThrow('Window advancement interval should be more than zero and less than window duration which is 10 ms, but given advancement interval is: 11 ms')
    expect(() => TimeWindows.ofSizeAndGrace(10, -1)).toThrow('Grace period must not be negative.')
    expect(() => SlidingWindows.ofTimeDifferenceWithNoGrace(-1)).toThrow('Window time difference must not be negative.')
    expect(() => SessionWindows.ofInactivityGapWithNoGrace(0)).toThrow('Gap time cannot be zero or negative.')
    expect(() => JoinWindows.ofTimeDifferenceWithNoGrace(5).before(-6)).toThrow('Window interval (ie, beforeMs+afterMs) must not be negative.')
    expect(JoinWindows.ofTimeDifferenceAndGrace(5, 2).after(7).size()).toBe(12)
    expect(String(new Windowed('k', new Window(0, 10)))).toBe('[k@0/10]')
  })
})

describe('in-memory window store', () => {
  it('fetches by key and time range, forwards and backwards, drops what retention expired, and logs Java\'s changelog keys', () => {
    const { ctx, logged } = context()
    const store = WindowStores.windowStoreBuilder(WindowStores.inMemoryWindowStore('w', 20, 10, false), S, L).build()
    store.init(ctx)
    store.put('b', 1, 0)
    store.put('a', 2, 0)
    store.put('a', 3, 10)
    expect(store.fetch('a', 0)).toBe(2)
    expect(store.fetch('a', 0, 10)).toEqual([{ key: 0, value: 2 }, { key: 10, value: 3 }])
    expect(store.backwardFetch('a', 0, 10)).toEqual([{ key: 10, value: 3 }, { key: 0, value: 2 }])
    expect(store.fetchAll(0, 10).map((e) => `${e.key}=${e.value}`)).toEqual(['[a@0/10]=2', '[b@0/10]=1', '[a@10/20]=3'])
    expect(store.fetch('a', 'b', 0, 0).map((e) => String(e.key))).toEqual(['[a@0/10]', '[b@0/10]'])
    // Key 'a', start 10, seqnum 0, value 3 as an 8-byte long.
    expect(logged[2]).toEqual({ store: 'w', key: '61' + '000000000000000a' + '00000000', value: '0000000000000003' })
    store.put('a', 4, 20)                // stream time 20: start 0 is at or before 20 - 20, so expired
    expect(store.fetch('a', 0)).toBeUndefined()
    store.put('a', 9, 0)
    expect(store.expiredRecords).toBe(1)
    expect(store.all().map((e) => String(e.key))).toEqual(['[a@10/20]', '[a@20/30]'])
    store.put('a', null, 10)
    expect(store.fetch('a', 0, 30)).toEqual([{ key: 20, value: 4 }])
  })

  it('keeps duplicates under their own sequence numbers, and restores from its changelog', () => {
    const { ctx, logged } = context()
    const store = WindowStores.windowStoreBuilder(WindowStores.inMemoryWindowStore('dups', 100, 10, true), S, S).build()
    store.init(ctx)
    store.put('k', 'x', 5)
    store.put('k', 'y', 5)
    expect(store.fetch('k', 0, 10)).toEqual([{ key: 5, value: 'x' }, { key: 5, value: 'y' }])
    const copy = new InMemoryWindowStore('dups', 100, 10, true, S, S, false)
    copy.init(ctx)
    for (const l of logged) copy.restore(Buffer.from(l.key, 'hex'), l.value === null ? null : Buffer.from(l.value, 'hex'))
    expect(copy.fetch('k', 0, 10)).toEqual([{ key: 5, value: 'x' }, { key: 5, value: 'y' }])
  })

  it('has Java\'s changelog topic configs: compact,delete and retention plus one day', () => {
    const b = WindowStores.timestampedWindowStoreBuilder(WindowStores.inMemoryWindowStore('w', 70_000, 60_000, false), S, L)
    expect(b.logConfig).toEqual({ 'cleanup.policy': 'compact,delete', 'retention.ms': String(70_000 + 86_400_000) })
    expect(b.withLoggingEnabled({ 'retention.ms': '5' }).logConfig['retention.ms']).toBe('5')
    expect(() => WindowStores.inMemoryWindowStore('w', 5, 10, false)).toThrow('The retention period of the window store w must be no smaller than its window size. Got size=[10], retention=[5]')
  })
})

describe('in-memory session store', () => {
  it('finds sessions by end and start bounds, in end order, and logs [key][end][start]', () => {
    const { ctx, logged } = context()
    const store = SessionStores.sessionStoreBuilder(SessionStores.inMemorySessionStore('s', 100), S, L).build()
    store.init(ctx)
    store.put(new Windowed('u', new Window(0, 3)), 2)
    store.put(new Windowed('u', new Window(9, 14)), 2)
    store.put(new Windowed('v', new Window(5, 5)), 1)
    expect(store.findSessions('u', 4, 20).map((e) => `${e.key}=${e.value}`)).toEqual(['[u@9/14]=2'])
    expect(store.fetch('u').map((e) => String(e.key))).toEqual(['[u@0/3]', '[u@9/14]'])
    expect(store.backwardFetch('u').map((e) => String(e.key))).toEqual(['[u@9/14]', '[u@0/3]'])
    expect(store.findSessions(undefined, undefined, 0, 100).map((e) => String(e.key))).toEqual(['[u@0/3]', '[v@5/5]', '[u@9/14]'])
    expect(store.fetchSession('u', 9, 14)).toBe(2)
    store.remove(new Windowed('u', new Window(0, 3)))
    expect(store.fetch('u').length).toBe(1)
    expect(logged[0]!.key).toBe('75' + '0000000000000003' + '0000000000000000')
    expect(logged[3]).toEqual({ store: 's', key: logged[0]!.key, value: null })
    const copy = new InMemorySessionStore('s', 100, S, L, false)
    copy.init(ctx)
    for (const l of logged) copy.restore(Buffer.from(l.key, 'hex'), l.value === null ? null : Buffer.from(l.value, 'hex'))
    expect(copy.findSessions(undefined, undefined, 0, 100).map((e) => String(e.key))).toEqual(['[v@5/5]', '[u@9/14]'])
  })
})

describe('windowed serdes', () => {
  it('write and read Java\'s windowed key bytes', () => {
    const t = WindowedSerdes.timeWindowedSerdeFrom(S, 60_000)
    const bytes = t.serialize(new Windowed('k', new Window(120_000, 180_000)), { topic: 't', headers: [], isKey: true }) as Buffer
    expect(bytes.toString('hex')).toBe('6b' + '000000000001d4c0')
    expect(String(t.deserialize(bytes, { topic: 't', headers: [], isKey: true }))).toBe('[k@120000/180000]')
    const s = WindowedSerdes.sessionWindowedSerdeFrom(S)
    const sb = s.serialize(new Windowed('k', new Window(1, 2)), { topic: 't', headers: [], isKey: true }) as Buffer
    expect(sb.toString('hex')).toBe('6b' + '0000000000000002' + '0000000000000001')
    expect(String(s.deserialize(sb, { topic: 't', headers: [], isKey: true }))).toBe('[k@1/2]')
    expect(() => t.deserialize(Buffer.from([1, 2]), { topic: 't', headers: [], isKey: true })).toThrow(/at least 8 bytes/)
  })
})

describe('suppress', () => {
  it('untilWindowCloses only takes a strict buffer, and only on a windowed table', () => {
    expect(() => Suppressed.untilWindowCloses(BufferConfig.maxRecords(3))).toThrow(/strict buffer/)
    const b = new StreamsBuilder()
    const table = b.stream('in', Consumed.with(S, S)).groupByKey().count()
    expect(() => table.suppress(Suppressed.untilWindowCloses(BufferConfig.unbounded()) as never)).toThrow('Invalid topology: Window close time is only defined for windowed computations. Got [root->KSTREAM-SOURCE-0000000000->KSTREAM-AGGREGATE-0000000002].')
  })

  it('untilWindowCloses finds the windows\' grace through the tables between (a filter here)', () => {
    const b = new StreamsBuilder()
    b.stream('in', Consumed.with(S, S)).groupByKey().windowedBy(TimeWindows.ofSizeAndGrace(10, 5)).count()
      .filter((_k, n) => n > 1)
      .suppress(Suppressed.untilWindowCloses(BufferConfig.unbounded()))
      .toStream().map((w, n) => ({ key: String(w), value: n })).to('out', Produced.with(S, L))
    const driver = new TopologyTestDriver(b.build(), { 'application.id': 'x' })
    const input = driver.createInputTopic('in', S, S)
    const out = driver.createOutputTopic('out', S, L)
    for (const [k, t] of [['a', 1], ['a', 2], ['b', 3], ['a', 14]] as const) input.pipeInput(k, 'x', t)
    expect(out.isEmpty()).toBe(true)          // stream time 14 < end 10 + grace 5
    input.pipeInput('a', 'x', 16)             // a's [10,20) reaches 2: it passes the filter, and stream time 16 closes [0,10)
    // b's count 1 never passed the filter, so only a's [0,10) count is final.
    expect(out.readKeyValuesToList()).toEqual([{ key: '[a@0/10]', value: 2 }])
    driver.close()
  })

  it('a full buffer with shutDownWhenFull stops processing with Java\'s message', () => {
    const b = new StreamsBuilder()
    b.stream('in', Consumed.with(S, S)).groupByKey().count()
      .suppress(Suppressed.untilTimeLimit<string>(1000, BufferConfig.maxRecords(1).shutDownWhenFull()).withName('limit'))
      .toStream().to('out')
    const driver = new TopologyTestDriver(b.build(), { 'application.id': 'x', 'default.key.serde': S, 'default.value.serde': L })
    const input = driver.createInputTopic('in', S, S)
    input.pipeInput('a', 'x', 0)
    expect(() => input.pipeInput('b', 'x', 1)).toThrow(StreamsException)
    expect(() => input.pipeInput('c', 'x', 2)).toThrow('limit buffer exceeded its max capacity. Currently [3/1] records')
    driver.close()
  })

  it('maxBytes emits early by Java\'s size estimate', () => {
    const b = new StreamsBuilder()
    b.stream('in', Consumed.with(S, S)).groupByKey().count()
      // One entry: 8 (time) + 1 (key) + 8 (new value) + 8 + 8 + 2 ("in") + 4 = 39 bytes; a second one overflows 60.
      .suppress(Suppressed.untilTimeLimit<string>(1000, BufferConfig.maxBytes(60)))
      .toStream().to('out', Produced.with(S, L))
    const driver = new TopologyTestDriver(b.build(), { 'application.id': 'x', 'default.key.serde': S, 'default.value.serde': L })
    const input = driver.createInputTopic('in', S, S)
    const out = driver.createOutputTopic('out', S, L)
    input.pipeInput('a', 'x', 0)
    expect(out.isEmpty()).toBe(true)
    input.pipeInput('b', 'x', 1)
    expect(out.readKeyValuesToList()).toEqual([{ key: 'a', value: 1 }])
    driver.close()
  })
})
