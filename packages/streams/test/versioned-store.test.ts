import { describe, expect, it } from 'vitest'
import { Consumed, Joined, Materialized, Produced, PUT_RETURN_CODE_NOT_PUT, Serdes, Stores, StreamsBuilder, TopologyTestDriver, type StateStoreContext, type VersionedKeyValueStore } from '@tidelog/streams'

const S = Serdes.String()

/** A task context that records the changelog writes. */
function context(log: [string, string | null, number][] = []): StateStoreContext {
  return {
    applicationId: 'app',
    taskId: { toString: () => '0_0' },
    logChange: (_s, k, v, ts) => log.push([k.toString(), v === null ? null : v.toString(), ts]),
    currentTimestamp: () => 0,
  }
}

describe('versioned key-value stores (KIP-889)', () => {
  it("checks its arguments with Java's messages and picks Java's default segment interval", () => {
    expect(() => Stores.persistentVersionedKeyValueStore('s', -1)).toThrow('historyRetention cannot be negative')
    expect(() => Stores.persistentVersionedKeyValueStore('s', 10, 0)).toThrow('segmentInterval cannot be zero or negative')
    expect(Stores.persistentVersionedKeyValueStore('s', 30_000).segmentIntervalMs).toBe(10_000)
    expect(Stores.persistentVersionedKeyValueStore('s', 3_600_000).segmentIntervalMs).toBe(300_000)
    expect(Stores.persistentVersionedKeyValueStore('s', 86_400_000).segmentIntervalMs).toBe(3_600_000)
  })

  it('logs every put with the version time, and a store restored from that log answers the same reads', () => {
    const log: [string, string | null, number][] = []
    const supplier = Stores.persistentVersionedKeyValueStore('v', 100, 10)
    const store = Stores.versionedKeyValueStoreBuilder(supplier, S, S).build() as VersionedKeyValueStore<string, string> & { restore(k: Buffer, v: Buffer | null, ts: number): void }
    store.init(context(log))
    store.put('k', 'a', 10)
    store.put('k', 'b', 50)
    store.put('k', 'a2', 30)
    store.put('k', null, 60)
    expect(log).toEqual([['k', 'a', 10], ['k', 'b', 50], ['k', 'a2', 30], ['k', null, 60]])
    const reads = (s: VersionedKeyValueStore<string, string>) => [s.get('k'), s.get('k', 59), s.get('k', 35), s.get('k', 20), s.get('k', 5)]
    const before = reads(store)
    expect(before).toEqual([null, { value: 'b', timestamp: 50 }, { value: 'a2', timestamp: 30 }, { value: 'a', timestamp: 10 }, null])
    store.close()

    const restored = Stores.versionedKeyValueStoreBuilder(supplier, S, S).build() as typeof store
    restored.init(context())
    for (const [k, v, ts] of log) restored.restore(Buffer.from(k), v === null ? null : Buffer.from(v), ts)
    expect(reads(restored)).toEqual(before)
    // Restored stream time (60) bounds writes as it did before: history retention 100 keeps -40 and later.
    restored.put('k', 'late', 200)
    expect(restored.put('k', 'too-old', 99)).toBe(PUT_RETURN_CODE_NOT_PUT)
    expect(restored.get('k', 150)).toBeNull()
    restored.close()
  })

  it('a flush after a segment interval of stream time prunes what history retention can no longer answer', () => {
    const store = Stores.versionedKeyValueStoreBuilder(Stores.persistentVersionedKeyValueStore('p', 10, 5), S, S).withLoggingDisabled().build()
    store.init(context())
    for (let t = 0; t <= 100; t += 2) store.put(`k${t % 3}`, `v${t}`, t)
    store.flush()
    // Only versions valid at 90 (stream time 100 - retention 10) or later remain; the latest of each key always does.
    expect(store.get('k0', 90)).toEqual({ value: 'v90', timestamp: 90 })
    expect(store.get('k0', 89)).toBeNull()
    expect(store.get('k1', 5)).toBeNull()
    expect(store.get('k1')).toEqual({ value: 'v100', timestamp: 100 })
    store.close()
  })
})

describe('stream-table join grace (KIP-923): checks', () => {
  it("a grace period needs a versioned table whose history covers it (Java's messages), and adds nothing on failure", () => {
    const b = new StreamsBuilder()
    const plain = b.table('t1', Consumed.with(S, S), Materialized.as<string, string>('plain'))
    const orders = b.stream('o', Consumed.with(S, S))
    expect(() => orders.join(plain, (o: string, c: string) => o + c, Joined.with<string, string, string>(S, S, S).withGracePeriod(5)))
      .toThrow('KTable must be versioned to use a grace period in a stream table join.')
    const short = b.table('t2', Consumed.with(S, S), Materialized.as<string, string>(Stores.persistentVersionedKeyValueStore('short', 4)))
    expect(() => orders.leftJoin(short, (o: string, c: string | null) => o + c, Joined.as<string, string, string>('j').withGracePeriod(5)))
      .toThrow('History retention must be at least grace period.')
    expect(() => b.globalTable('g', Consumed.with(S, S), Materialized.as<string, string>(Stores.persistentVersionedKeyValueStore('gv', 10))))
      .toThrow('Invalid topology: GlobalTables cannot be versioned.')
    const topology = b.build()
    expect(topology.describe().toString()).not.toContain('Buffer')
    const driver = new TopologyTestDriver(topology, { 'application.id': 'checks' })
    driver.close()
  })

  it('a grace-buffered record keeps its headers', () => {
    const b = new StreamsBuilder()
    const t = b.table('t', Consumed.with(S, S), Materialized.as<string, string>(Stores.persistentVersionedKeyValueStore('tv', 100)))
    b.stream('o', Consumed.with(S, S)).join(t, (o: string, c: string) => `${o}@${c}`, Joined.with<string, string, string>(S, S, S).withGracePeriod(10)).to('out', Produced.with(S, S))
    const driver = new TopologyTestDriver(b.build(), { 'application.id': 'hdr' })
    try {
      driver.createInputTopic('t', S, S).pipeInput('k', 'T', 1)
      const o = driver.createInputTopic('o', S, S)
      o.pipeRecord({ key: 'k', value: 'first', timestamp: 5, headers: [{ key: 'trace', value: Buffer.from('x1') }] })
      const out = driver.createOutputTopic('out', S, S)
      expect(out.isEmpty()).toBe(true)
      o.pipeInput('k', 'second', 20)
      const r = out.readRecord()
      expect([r.value, r.timestamp, r.headers.map((h) => [h.key, h.value?.toString()])]).toEqual(['first@T', 5, [['trace', 'x1']]])
      expect(driver.getVersionedKeyValueStore<string, string>('tv')!.get('k', 3)).toEqual({ value: 'T', timestamp: 1 })
      expect(driver.getKeyValueStore('tv')).toBeUndefined()
    } finally {
      driver.close()
    }
  })
})
