import { mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { open } from 'lmdb'
import { afterAll, describe, expect, it } from 'vitest'
import {
  Consumed, InMemorySessionStore, InMemoryWindowStore, Materialized, PersistentSessionStore, PersistentWindowStore, Serdes, SessionWindows,
  Stores, StreamsBuilder, TaskId, type KStream, TimeWindows, TopologyTestDriver, Window, Windowed, writeCheckpoint, type KeyValue, type StateStoreContext,
} from '@tidelog/streams'

const S = Serdes.String()
const dirs: string[] = []
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true })
})

function tempDir(prefix: string): string {
  const d = mkdtempSync(join(tmpdir(), prefix))
  dirs.push(d)
  return d
}

function context(stateDir: string | undefined, log: string[] = []): StateStoreContext {
  return {
    applicationId: 'wapp',
    taskId: new TaskId(0, 0),
    logChange: (_s, key, value) => log.push(`${key.toString('hex')}=${value?.toString('hex') ?? null}`),
    currentTimestamp: () => 0,
    ...(stateDir === undefined ? {} : { stateDir }),
  }
}

function rng(seed: number): () => number {
  let a = seed
  return () => {
    a = (a + 0x6d2b79f5) | 0
    let t = Math.imul(a ^ (a >>> 15), 1 | a)
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

/** Windowed results as sorted strings: several keys' order differs by engine (as Java's in-memory and RocksDB stores). */
const set = (kvs: KeyValue<Windowed<string>, string>[]) => kvs.map((e) => `${e.key.toString()}=${e.value}`).sort()
const list = (kvs: KeyValue<Windowed<string>, string>[]) => kvs.map((e) => `${e.key.toString()}=${e.value}`)
const keys = ['', 'a', 'a\u0000', 'ab', 'b', '\u00ff']

describe('persistent window store (LMDB segments)', () => {
  for (const dups of [false, true]) {
    it(`answers as the in-memory store over out-of-order and expired puts (retainDuplicates ${dups})`, () => {
      const retention = 200_000
      const p = new PersistentWindowStore<string, string>('w', retention, 10_000, dups, S, S, true)
      const m = new InMemoryWindowStore<string, string>('w', retention, 10_000, dups, S, S, true)
      const plog: string[] = []
      const mlog: string[] = []
      p.init(context(undefined, plog))
      m.init(context(undefined, mlog))
      const r = rng(dups ? 11 : 5)
      let now = 0
      for (let i = 0; i < 1500; i++) {
        now += Math.floor(r() * 2_000)
        // Mostly recent windows, some far behind (expired: dropped and counted).
        const start = Math.max(0, now - Math.floor(r() < 0.1 ? r() * 400_000 : r() * 50_000))
        const k = keys[Math.floor(r() * keys.length)]!
        const v = r() < 0.15 ? null : `v${i}`
        p.put(k, v, start)
        m.put(k, v, start)
        if (i % 50 === 0) {
          const k2 = keys[Math.floor(r() * keys.length)]!
          expect(p.fetch(k2, start)).toEqual(m.fetch(k2, start))
          expect(p.fetch(k2, now - 100_000, now)).toEqual(m.fetch(k2, now - 100_000, now))
          expect(list(p.fetch(k2, k2, 0, now))).toEqual(list(m.fetch(k2, k2, 0, now)))
          expect(set(p.fetch('a', 'b', now - 60_000, now))).toEqual(set(m.fetch('a', 'b', now - 60_000, now)))
          expect(set(p.fetchAll(0, now))).toEqual(set(m.fetchAll(0, now)))
        }
        if (i % 200 === 0) p.flush()
      }
      expect(set(p.all())).toEqual(set(m.all()))
      expect(p.expiredRecords).toBe(m.expiredRecords)
      expect(p.expiredRecords).toBeGreaterThan(0)
      expect(plog).toEqual(mlog)
      p.close()
      m.close()
    })
  }

  it('drops whole segments past retention, and a reopened store keeps its windows and its stream time', () => {
    const taskDir = join(tempDir('tidelog-pw-seg-'), 'wapp', '0_0')
    // Retention 120 s: segments of 60 s (Java's max(retention / 2, 60 s)).
    const make = () => {
      const s = new PersistentWindowStore<string, string>('w', 120_000, 10_000, false, S, S, true)
      s.init(context(taskDir))
      return s
    }
    const s = make()
    for (let t = 0; t <= 300_000; t += 30_000) s.put('k', `at${t}`, t)
    s.close()
    const env = open({ path: join(taskDir, 'w', 'data.mdb'), readOnly: true })
    const segments = [...env.getKeys({})].map((k) => String(k).replace(/\u0000$/, '')).filter((k) => k.startsWith('w.')).sort()
    void env.close()
    // Stream time 300 s: segments below (300 - 120) / 60 = 3 are gone.
    expect(segments).toEqual(['w.180000', 'w.240000', 'w.300000'])
    writeCheckpoint(join(taskDir, '.checkpoint'), [{ topic: 'wapp-w-changelog', partition: 0, offset: 10n }])
    const again = make()
    expect(again.fetch('k', 0, 400_000).map((e) => e.value)).toEqual(['at210000', 'at240000', 'at270000', 'at300000'])
    // The stream time came back with it: a window at 150 s is already expired.
    again.put('k', 'late', 150_000)
    expect(again.expiredRecords).toBe(1)
    again.close()
    expect(readdirSync(taskDir)).toContain('w')
  })
})

describe('persistent session store (LMDB segments)', () => {
  it('answers as the in-memory store: findSessions, fetchSession, fetch, removal and expiry', () => {
    const p = new PersistentSessionStore<string, string>('s', 100_000, S, S, true)
    const m = new InMemorySessionStore<string, string>('s', 100_000, S, S, true)
    const plog: string[] = []
    const mlog: string[] = []
    p.init(context(undefined, plog))
    m.init(context(undefined, mlog))
    const r = rng(3)
    let now = 0
    for (let i = 0; i < 1500; i++) {
      now += Math.floor(r() * 1_500)
      const end = Math.max(0, now - Math.floor(r() < 0.1 ? r() * 300_000 : r() * 20_000))
      const start = Math.max(0, end - Math.floor(r() * 10_000))
      const k = keys[Math.floor(r() * keys.length)]!
      const w = new Windowed(k, new Window(start, end))
      if (r() < 0.15) {
        p.remove(w)
        m.remove(w)
      } else {
        p.put(w, `v${i}`)
        m.put(w, `v${i}`)
      }
      if (i % 50 === 0) {
        expect(list(p.findSessions(k, end - 30_000, end + 30_000))).toEqual(list(m.findSessions(k, end - 30_000, end + 30_000)))
        expect(p.fetchSession(k, start, end)).toEqual(m.fetchSession(k, start, end))
        expect(list(p.fetch(k))).toEqual(list(m.fetch(k)))
        expect(list(p.findSessions(k, k, 0, now))).toEqual(list(m.findSessions(k, k, 0, now)))
        expect(set(p.findSessions('a', 'b', now - 50_000, now))).toEqual(set(m.findSessions('a', 'b', now - 50_000, now)))
      }
      if (i % 200 === 0) p.flush()
    }
    expect(set(p.findSessions(undefined, undefined, 0, Number.MAX_SAFE_INTEGER))).toEqual(set(m.findSessions(undefined, undefined, 0, Number.MAX_SAFE_INTEGER)))
    expect(p.expiredRecords).toBe(m.expiredRecords)
    expect(plog).toEqual(mlog)
    p.close()
    m.close()
  })
})

describe('DSL windows on persistent stores', () => {
  it('Materialized.as(Stores.persistentWindowStore(...)), withStoreType and default.dsl.store give persistent stores the driver reads', () => {
    const build = (count: (s: KStream<string, string>) => void) => {
      const b = new StreamsBuilder()
      count(b.stream('clicks', Consumed.with(S, S)))
      return b.build()
    }
    const tumbling = (m: Materialized<string, number>) => build((s) => void s.groupByKey().windowedBy(TimeWindows.ofSizeWithNoGrace(60_000)).count(m))
    const sessions = (m: Materialized<string, number>) => build((s) => void s.groupByKey().windowedBy(SessionWindows.ofInactivityGapWithNoGrace(5_000)).count(m))
    const cases: [ReturnType<typeof build>, 'window' | 'session', object][] = [
      [tumbling(Materialized.as(Stores.persistentTimestampedWindowStore('c', 120_000, 60_000, false))), 'window', {}],
      [tumbling(Materialized.as<string, number>('c').withStoreType('persistent')), 'window', {}],
      [tumbling(Materialized.as('c')), 'window', { 'default.dsl.store': 'rocksDB' }],
      [sessions(Materialized.as(Stores.persistentSessionStore('c', 100_000))), 'session', {}],
      [sessions(Materialized.as('c')), 'session', { 'default.dsl.store': 'rocksDB' }],
    ]
    for (const [topology, kind, config] of cases) {
      const d = new TopologyTestDriver(topology, { 'application.id': 'wdsl', ...config }, 0)
      const input = d.createInputTopic('clicks', S, S)
      for (const t of [0, 1_000, 2_000]) input.pipeInput('u', 'x', t)
      if (kind === 'window') {
        expect(d.getStateStore('c')).toBeInstanceOf(PersistentWindowStore)
        expect(d.getWindowStore<string, number>('c')!.fetch('u', 0)).toBe(3)
      } else {
        expect(d.getStateStore('c')).toBeInstanceOf(PersistentSessionStore)
        expect(d.getSessionStore<string, { value: number }>('c')!.fetch('u').map((e) => `${e.key.window.start}-${e.key.window.end}`)).toEqual(['0-2000'])
      }
      d.close()
    }
    // A key-value supplier where a window store is needed is refused at build time.
    expect(() => tumbling(Materialized.as(Stores.persistentKeyValueStore('c')))).toThrow(TypeError)
  })
})
