import { describe, expect, it } from 'vitest'
import {
  Consumed, EmitStrategy, InvalidStateStoreException, KafkaStreams, Materialized, Produced, QueryableStoreTypes, Serdes, SessionWindows, StoreQueryParameters, StreamsBuilder,
  TimeWindows, TopologyTestDriver, WindowedSerdes, type ReadOnlySessionStore, type ReadOnlyWindowStore, type ValueAndTimestamp,
} from '@tidelog/streams'
import { readTopic, useBroker, type TestBroker } from './helpers/broker.js'
import { waitForState } from './helpers/wordcount.js'

const S = Serdes.String()
const MINUTE = 60_000
const text = (kvs: { key: unknown; value: unknown }[]) => kvs.map((kv) => `${String(kv.key)}=${typeof kv.value === 'object' ? JSON.stringify(kv.value) : String(kv.value)}`)

/** Clicks per minute (kept a day, final results only) and sessions per user, both queryable. */
function topology(): StreamsBuilder {
  const b = new StreamsBuilder()
  const clicks = b.stream('wq-clicks', Consumed.with(S, S)).groupByKey()
  clicks.windowedBy(TimeWindows.ofSizeAndGrace(MINUTE, 5_000)).emitStrategy(EmitStrategy.onWindowClose())
    .count(Materialized.as<string, number>('wq-per-minute').withRetention(24 * 60 * MINUTE))
    .toStream()
    .to('wq-final', Produced.with(WindowedSerdes.timeWindowedSerdeFrom(S, MINUTE), Serdes.Long()))
  clicks.windowedBy(SessionWindows.ofInactivityGapWithNoGrace(10 * MINUTE)).count(Materialized.as('wq-sessions'))
  // Clicks and views of each user in one aggregate (KIP-150).
  const views = b.stream('wq-views', Consumed.with(S, S)).groupByKey()
  clicks.cogroup<string>((_k, _v, a) => `${a}c`).cogroup(views, (_k, _v, a) => `${a}v`).aggregate(() => '', Materialized.as<string, string>('wq-activity').withValueSerde(S))
  return b
}

describe('window and session store queries on the TopologyTestDriver', () => {
  it('fetch by key and time, time range, all keys, backwards, and sessions by key', () => {
    const driver = new TopologyTestDriver(topology().build(), { 'application.id': 'wq', 'default.key.serde': S, 'default.value.serde': S })
    const input = driver.createInputTopic('wq-clicks', S, S)
    for (const [user, t] of [['ann', 0], ['bob', 1_000], ['ann', 30_000], ['ann', MINUTE + 1]] as const) input.pipeInput(user, 'click', t)
    const w = driver.getWindowStore<string, number>('wq-per-minute')!
    expect(w.fetch('ann', 0)).toBe(2)
    expect(w.fetch('ann', 0, MINUTE)).toEqual([{ key: 0, value: 2 }, { key: MINUTE, value: 1 }])
    expect(w.backwardFetch('ann', 0, MINUTE)).toEqual([{ key: MINUTE, value: 1 }, { key: 0, value: 2 }])
    expect(text(w.fetchAll(0, MINUTE))).toEqual(['[ann@0/60000]=2', '[bob@0/60000]=1', '[ann@60000/120000]=1'])
    expect(w.all()).toHaveLength(3)
    const sessions = driver.getSessionStore<string, number>('wq-sessions')!
    expect(text(sessions.fetch('ann'))).toEqual(['[ann@0/60001]=3'])
    expect(text(sessions.fetch('bob'))).toEqual(['[bob@1000/1000]=1'])
    expect(text(sessions.findSessions('ann', 60_001, 60_001))).toEqual(['[ann@0/60001]=3'])
    expect(sessions.fetchSession('bob', 1_000, 1_000)).toBe(1)
    driver.close()
  })
})

let t!: TestBroker
useBroker('tidelog-streams-window-query-', (b) => {
  t = b
})

describe('window and session store queries on KafkaStreams over the broker', () => {
  it('windowStore(), timestampedWindowStore() and sessionStore() answer from the running instance; a cogroup aggregates two topics; withRetention sets the changelog retention.ms; onWindowClose emits finals', async () => {
    const app = 'wq-app'
    const base = Math.floor(Date.now() / MINUTE) * MINUTE - 10 * MINUTE
    const streams = new KafkaStreams(topology().build(), { 'application.id': app, 'bootstrap.servers': t.brokers, 'default.key.serde': S, 'default.value.serde': S, 'commit.interval.ms': 100 })
    try {
      expect(() => streams.store(StoreQueryParameters.fromNameAndType('wq-per-minute', QueryableStoreTypes.windowStore()))).toThrow('KafkaStreams has not been started')
      await t.admin.createTopics(['wq-clicks', 'wq-views', 'wq-final'].map((name) => ({ name, partitions: 1 })))
      await streams.start()
      await t.producer.send([
        { topic: 'wq-clicks', key: 'ann', value: 'c', timestamp: base },
        { topic: 'wq-clicks', key: 'ann', value: 'c', timestamp: base + 20_000 },
        { topic: 'wq-clicks', key: 'bob', value: 'c', timestamp: base + 40_000 },
        { topic: 'wq-clicks', key: 'ann', value: 'c', timestamp: base + MINUTE + 10_000 },
        { topic: 'wq-views', key: 'ann', value: '/home', timestamp: base + 30_000 },
      ])
      await waitForState(streams, 'RUNNING')
      const windows = (): ReadOnlyWindowStore<string, number> => streams.store(StoreQueryParameters.fromNameAndType('wq-per-minute', QueryableStoreTypes.windowStore<string, number>()))
      const deadline = Date.now() + 60_000
      while (windows().fetch('ann', base + MINUTE) === undefined) {
        if (Date.now() > deadline) throw new Error('the window of ann at base + 1 minute never became queryable')
        await new Promise((r) => setTimeout(r, 50))
      }
      const activity = () => streams.store(StoreQueryParameters.fromNameAndType('wq-activity', QueryableStoreTypes.keyValueStore<string, string>())).get('ann') ?? ''
      while (activity().length < 4) {
        if (Date.now() > deadline) throw new Error(`the cogrouped activity of ann stayed at ${activity()}`)
        await new Promise((r) => setTimeout(r, 50))
      }
      // Three clicks and a view; the order of the two topics' records is the runtime's choice.
      expect([...activity()].sort().join('')).toBe('cccv')
      expect(windows().fetch('ann', base)).toBe(2)
      expect(windows().fetch('ann', base, base + MINUTE)).toEqual([{ key: base, value: 2 }, { key: base + MINUTE, value: 1 }])
      expect(text(windows().fetchAll(base, base))).toEqual([`[ann@${base}/${base + MINUTE}]=2`, `[bob@${base}/${base + MINUTE}]=1`])
      const stamped: ReadOnlyWindowStore<string, ValueAndTimestamp<number>> = streams.store(StoreQueryParameters.fromNameAndType('wq-per-minute', QueryableStoreTypes.timestampedWindowStore<string, number>()))
      expect(stamped.fetch('ann', base)).toEqual({ value: 2, timestamp: base + 20_000 })
      const sessions: ReadOnlySessionStore<string, number> = streams.store(StoreQueryParameters.fromNameAndType('wq-sessions', QueryableStoreTypes.sessionStore<string, number>()))
      expect(text(sessions.fetch('ann'))).toEqual([`[ann@${base}/${base + MINUTE + 10_000}]=3`])
      expect(sessions.findSessions('bob', base, base + MINUTE).map((kv) => kv.value)).toEqual([1])
      // As Java's composite stores, the type is checked when the view is read.
      const wrong = streams.store(StoreQueryParameters.fromNameAndType('wq-sessions', QueryableStoreTypes.windowStore<string, number>()))
      expect(() => wrong.fetch('ann', base)).toThrow(InvalidStateStoreException)
      expect(() => wrong.all()).toThrow('Cannot get state store wq-sessions because the queryable store type [windowStore] does not accept the actual store type [sessionStore].')

      // The first minute closed (its end plus grace) with ann's click at +70 s.
      // As Java, closed windows are looked for only when a record arrives, and at most once a second
      // of wall-clock time (the emit interval): keep clicks coming (in the still open minute) until they are out.
      let probing = true
      const probes = (async () => {
        while (probing) {
          await t.producer.send([{ topic: 'wq-clicks', key: 'bob', value: 'c', timestamp: base + MINUTE + 6_000 }])
          await new Promise((r) => setTimeout(r, 250))
        }
      })()
      const windowed = WindowedSerdes.timeWindowedSerdeFrom(S, MINUTE)
      const read = await readTopic(t.brokers, 'wq-final', 2).finally(() => (probing = false))
      await probes
      const finals = read.map((r) => `${windowed.deserialize(r.key!, { topic: '', headers: [], isKey: true })}=${r.value!.readBigInt64BE()}`)
      expect(finals).toEqual([`[ann@${base}/${base + MINUTE}]=2`, `[bob@${base}/${base + MINUTE}]=1`])
    } finally {
      await streams.close()
    }
    const [perMinute, sessions] = await t.admin.describeConfigs([`${app}-wq-per-minute-changelog`, `${app}-wq-sessions-changelog`].map((name) => ({ type: 'topic' as const, name })))
    const config = (c: typeof perMinute, name: string) => c!.configs.find((e) => e.name === name)?.value
    expect([config(perMinute, 'cleanup.policy'), config(perMinute, 'retention.ms')]).toEqual(['compact,delete', String(24 * 60 * MINUTE + 86_400_000)])
    expect(config(sessions, 'retention.ms')).toBe(String(10 * MINUTE + 86_400_000))
  }, 120_000)
})
