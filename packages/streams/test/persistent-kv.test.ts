import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import {
  Consumed, Grouped, InMemoryKeyValueStore, Materialized, PersistentKeyValueStore, Produced, Serdes, Stores, StreamsBuilder, StreamsException,
  TaskId, TopologyTestDriver, writeCheckpoint, type StateStoreContext,
} from '@tidelog/streams'

const B = Serdes.ByteArray()
const dirs: string[] = []
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true })
})

function context(stateDir: string | undefined, log: { key: Buffer; value: Buffer | null }[] = []): StateStoreContext {
  return {
    applicationId: 'papp',
    taskId: new TaskId(0, 3),
    logChange: (_s, key, value) => log.push({ key, value }),
    currentTimestamp: () => 0,
    ...(stateDir === undefined ? {} : { stateDir }),
  }
}

/** A seeded generator (mulberry32): the model test is the same on every run. */
function rng(seed: number): () => number {
  let a = seed
  return () => {
    a = (a + 0x6d2b79f5) | 0
    let t = Math.imul(a ^ (a >>> 15), 1 | a)
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

const hexOf = (b: Uint8Array | undefined) => (b === undefined ? undefined : Buffer.from(b).toString('hex'))
const hex = (kvs: { key: Uint8Array; value: Uint8Array }[]) => kvs.map((e) => `${Buffer.from(e.key).toString('hex')}=${Buffer.from(e.value).toString('hex')}`)

describe('persistent key-value store (LMDB)', () => {
  it('answers every get, range, reverse range, prefix scan and count as the in-memory store does, in unsigned byte order, across flushes', () => {
    const p = new PersistentKeyValueStore<Uint8Array, Uint8Array>('s', B, B, true)
    const m = new InMemoryKeyValueStore<Uint8Array, Uint8Array>('s', B, B, true)
    const plog: { key: Buffer; value: Buffer | null }[] = []
    const mlog: { key: Buffer; value: Buffer | null }[] = []
    // No task directory: a temporary, unsynced environment (the on-disk layout is the next test's).
    p.init(context(undefined, plog))
    m.init(context(undefined, mlog))
    const r = rng(7)
    // Short keys over a few byte values (0x00, 0x7f, 0x80, 0xff among them) collide and nest as prefixes often, the empty key included.
    const alphabet = [0x00, 0x01, 0x7f, 0x80, 0xfe, 0xff]
    const key = () => Buffer.from(Array.from({ length: Math.floor(r() * 4) }, () => alphabet[Math.floor(r() * alphabet.length)]!))
    for (let i = 0; i < 3000; i++) {
      const op = r()
      const k = key()
      if (op < 0.55) {
        const v = Buffer.from([i & 0xff, i >> 8])
        p.put(k, v)
        m.put(k, v)
      } else if (op < 0.7) {
        expect(hexOf(p.delete(k))).toEqual(hexOf(m.delete(k)))
      } else if (op < 0.8) {
        expect(hexOf(p.get(k))).toEqual(hexOf(m.get(k)))
      } else if (op < 0.9) {
        const a = key()
        const b = key()
        expect(hex(p.range(a, b))).toEqual(hex(m.range(a, b)))
        expect(hex(p.reverseRange(a, undefined))).toEqual(hex(m.reverseRange(a, undefined)))
        expect(hex(p.range(undefined, b))).toEqual(hex(m.range(undefined, b)))
      } else if (op < 0.95) {
        expect(hex(p.prefixScan(k, B))).toEqual(hex(m.prefixScan(k, B)))
      } else {
        p.flush()
      }
    }
    expect(hex(p.all())).toEqual(hex(m.all()))
    expect(hex(p.reverseAll())).toEqual(hex(m.reverseAll()))
    p.flush()
    expect(p.approximateNumEntries()).toBe(m.approximateNumEntries())
    // The same changelog, record for record: the engine changes nothing a consumer of it sees.
    expect(plog.map((e) => [e.key.toString('hex'), e.value?.toString('hex') ?? null])).toEqual(mlog.map((e) => [e.key.toString('hex'), e.value?.toString('hex') ?? null]))
    p.close()
    m.close()
  })

  it('lives in <state.dir>/<application.id>/<taskId>/<store>: kept when the checkpoint covers its changelog, wiped when it does not', () => {
    const root = mkdtempSync(join(tmpdir(), 'tidelog-pkv-dir-'))
    dirs.push(root)
    const taskDir = join(root, 'papp', '0_3')
    const S = Serdes.String()
    const open = () => {
      const s = new PersistentKeyValueStore<string, string>('kv', S, S, true)
      s.init(context(taskDir))
      return s
    }
    const s = open()
    s.put('a', '1')
    s.put('b', '2')
    s.close()
    expect(existsSync(join(taskDir, 'kv', 'data.mdb'))).toBe(true)
    writeCheckpoint(join(taskDir, '.checkpoint'), [{ topic: 'papp-kv-changelog', partition: 3, offset: 1n }])
    const again = open()
    expect(again.all()).toEqual([{ key: 'a', value: '1' }, { key: 'b', value: '2' }])
    again.close()
    // Another partition's entry does not cover this task's changelog: wiped, so the restore starts from an empty store.
    writeCheckpoint(join(taskDir, '.checkpoint'), [{ topic: 'papp-kv-changelog', partition: 0, offset: 1n }])
    const wiped = open()
    expect(wiped.all()).toEqual([])
    wiped.close()
  })

  it('refuses a key LMDB cannot hold with StreamsException and keeps everything else', () => {
    const S = Serdes.String()
    const s = new PersistentKeyValueStore<string, string>('big', S, S, false)
    s.init(context(undefined))
    s.put('a', '1')
    expect(() => s.put('k'.repeat(5000), 'x')).toThrow(StreamsException)
    expect(s.all()).toEqual([{ key: 'a', value: '1' }])
    s.close()
  })

  it('a DSL count on a persistent store (Materialized.as(supplier) or withStoreType) gives the in-memory store\'s output', () => {
    const S = Serdes.String()
    const run = (m: Materialized<string, number>) => {
      const b = new StreamsBuilder()
      b.stream('lines', Consumed.with(S, S))
        .flatMapValues((v) => v.split(' '))
        .groupBy((_k, w) => w, Grouped.with(S, S))
        .count(m)
        .toStream()
        .to('counts', Produced.with(S, Serdes.Long()))
      const d = new TopologyTestDriver(b.build(), { 'application.id': 'pcount' }, 0)
      const input = d.createInputTopic('lines', S, S)
      for (const [i, line] of ['a b a', 'c a', 'b b'].entries()) input.pipeInput(null, line, i * 10)
      const out = d.createOutputTopic('counts', S, Serdes.Long()).readRecordsToList()
      const store = d.getKeyValueStore<string, number>('counts')!
      const result = { out, all: store.all(), persistent: store.persistent }
      d.close()
      return result
    }
    const memory = run(Materialized.as('counts'))
    expect(memory.persistent).toBe(false)
    for (const m of [Materialized.as<string, number>(Stores.persistentTimestampedKeyValueStore('counts')), Materialized.as<string, number>('counts').withStoreType('persistent')]) {
      const p = run(m)
      expect(p.persistent).toBe(true)
      expect(p.out).toEqual(memory.out)
      expect(p.all).toEqual([{ key: 'a', value: 3 }, { key: 'b', value: 3 }, { key: 'c', value: 1 }])
    }
  })
})

