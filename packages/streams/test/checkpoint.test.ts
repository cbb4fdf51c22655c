import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Broker } from '@tidelog/broker'
import { Admin } from '@tidelog/client'
import { Consumer } from '@tidelog/consumer'
import { Producer } from '@tidelog/producer'
import { describe, expect, it } from 'vitest'
import {
  KafkaStreams, readCheckpoint, Serdes, StreamsException, Topology, writeCheckpoint,
  type KeyValue, type KeyValueStore, type StateStoreContext, type StoreBuilder, type StreamsConfig,
} from '@tidelog/streams'
import { waitForState } from './helpers/wordcount.js'
import { useBroker } from './helpers/broker.js'

/**
 * A persistent store for the test: its contents are a JSON file in the task directory, written
 * on flush (the runtime flushes before it checkpoints). Java checkpoints only persistent stores,
 * so this is what lets a clean restart restore just the changelog tail.
 */
class FileStore implements KeyValueStore<string, number> {
  readonly persistent = true
  private map = new Map<string, number>()
  private ctx: StateStoreContext | undefined
  private file = ''
  private opened = false
  constructor(readonly name: string, private readonly stateDir: string) {}
  init(ctx: StateStoreContext): void {
    this.ctx = ctx
    const dir = join(this.stateDir, ctx.applicationId, ctx.taskId.toString())
    mkdirSync(dir, { recursive: true })
    this.file = join(dir, `${this.name}.json`)
    this.map = existsSync(this.file) ? new Map(JSON.parse(readFileSync(this.file, 'utf8')) as [string, number][]) : new Map()
    this.opened = true
  }
  flush(): void {
    writeFileSync(this.file, JSON.stringify([...this.map]))
  }
  close(): void {
    this.opened = false
  }
  isOpen(): boolean {
    return this.opened
  }
  restore(key: Buffer, value: Buffer | null): void {
    if (value === null) this.map.delete(key.toString())
    else this.map.set(key.toString(), Number(value.readBigInt64BE()))
  }
  get(key: string): number | undefined {
    return this.map.get(key)
  }
  put(key: string, value: number | null): void {
    if (value === null) this.map.delete(key)
    else this.map.set(key, value)
    const v = value === null ? null : Buffer.alloc(8)
    v?.writeBigInt64BE(BigInt(value!))
    this.ctx!.logChange(this.name, Buffer.from(key), v, this.ctx!.currentTimestamp())
  }
  putIfAbsent(key: string, value: number): number | undefined {
    const old = this.get(key)
    if (old === undefined) this.put(key, value)
    return old
  }
  putAll(entries: readonly KeyValue<string, number | null>[]): void {
    for (const e of entries) this.put(e.key, e.value)
  }
  delete(key: string): number | undefined {
    const old = this.get(key)
    this.put(key, null)
    return old
  }
  range(): KeyValue<string, number>[] {
    return this.all()
  }
  reverseRange(): KeyValue<string, number>[] {
    return this.all().reverse()
  }
  all(): KeyValue<string, number>[] {
    return [...this.map].sort(([a], [b]) => (a < b ? -1 : 1)).map(([key, value]) => ({ key, value }))
  }
  reverseAll(): KeyValue<string, number>[] {
    return this.all().reverse()
  }
  approximateNumEntries(): number {
    return this.map.size
  }
}

function fileStore(name: string, stateDir: string): StoreBuilder<FileStore> {
  return {
    name,
    loggingEnabled: true,
    logConfig: {},
    withLoggingEnabled() { return this },
    withLoggingDisabled() { throw new Error('the test store is always logged') },
    build: () => new FileStore(name, stateDir),
  }
}

/** in -> count per key in a FileStore -> out (String -> Long); a record with the value 'boom' throws. */
function counting(prefix: string, stateDir: string): Topology {
  const S = Serdes.String()
  return new Topology()
    .addSource('src', `${prefix}-in`, { keySerde: S, valueSerde: S })
    .addProcessor('count', () => {
      let store: FileStore
      let ctx: { forward(r: unknown): void }
      return {
        init(c) {
          ctx = c
          store = c.getStateStore<FileStore>('counts')
        },
        process(r) {
          if (r.value === 'boom') throw new Error('boom on purpose')
          const n = (store.get(r.key as string) ?? 0) + 1
          store.put(r.key as string, n)
          ctx.forward(r.withValue(n))
        },
      }
    }, 'src')
    .addStateStore(fileStore('counts', stateDir), 'count')
    .addSink('sink', `${prefix}-out`, { keySerde: S, valueSerde: Serdes.Long() }, 'count')
}

let brokers: string[]
let admin: Admin
let producer: Producer
let broker: Broker
useBroker('tidelog-streams-ckpt-', (b) => ({ brokers, admin, producer, broker } = b))

async function latest(topic: string, want: { [k: string]: number }): Promise<{ [k: string]: number }> {
  const c = new Consumer({ brokers, autoOffsetReset: 'earliest', isolationLevel: 'read_committed' })
  const out: { [k: string]: number } = {}
  const ac = new AbortController()
  const timer = setTimeout(() => ac.abort(), 60_000)
  try {
    c.assign([{ topic, partition: 0 }])
    for await (const b of c.batches({ signal: ac.signal })) {
      for (const m of b.messages) out[m.key!.toString()] = Number(m.value!.readBigInt64BE())
      if (JSON.stringify(out) === JSON.stringify(want)) break
    }
  } catch (e) {
    if (!ac.signal.aborted) throw e
  } finally {
    clearTimeout(timer)
    await c.close()
  }
  return out
}

const lines = (topic: string, keys: string[]) => producer.send(keys.map((key) => ({ topic, key, value: 'x' })))

describe('local checkpoints (state.dir/<application.id>/<taskId>/.checkpoint)', () => {
  it('reads and writes Java\'s OffsetCheckpoint format, and refuses a malformed file with StreamsException', () => {
    const dir = mkdtempSync(join(tmpdir(), 'tidelog-ckpt-file-'))
    try {
      const file = join(dir, '0_1', '.checkpoint')
      writeCheckpoint(file, [{ topic: 'app-counts-changelog', partition: 1, offset: 41n }, { topic: 'app-sums-changelog', partition: 1, offset: 7n }])
      expect(readFileSync(file, 'utf8')).toBe('0\n2\napp-counts-changelog 1 41\napp-sums-changelog 1 7\n')
      expect(readCheckpoint(file)).toEqual([{ topic: 'app-counts-changelog', partition: 1, offset: 41n }, { topic: 'app-sums-changelog', partition: 1, offset: 7n }])
      expect(readCheckpoint(join(dir, 'none'))).toEqual([])
      writeFileSync(file, '1\n0\n')
      expect(() => readCheckpoint(file)).toThrow(StreamsException)
      writeFileSync(file, '0\n2\napp-counts-changelog 1 41\n')
      expect(() => readCheckpoint(file)).toThrow(/Expected 2 entries/)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it('at_least_once: a clean restart restores only the changelog tail past the checkpoint', async () => {
    const stateDir = mkdtempSync(join(tmpdir(), 'tidelog-ckpt-state-'))
    try {
      await admin.createTopics([{ name: 'c1-in', partitions: 1 }, { name: 'c1-out', partitions: 1 }])
      const config: StreamsConfig = { 'application.id': 'c1-app', 'bootstrap.servers': brokers, 'state.dir': stateDir, 'commit.interval.ms': 100 }
      const first = new KafkaStreams(counting('c1', stateDir), config)
      await first.start()
      await lines('c1-in', ['a', 'b', 'a', 'c', 'a', 'b'])
      expect(await latest('c1-out', { a: 3, b: 2, c: 1 })).toEqual({ a: 3, b: 2, c: 1 })
      await first.close()
      // Six changelog records, offsets 0..5: the store holds up to offset 5.
      expect(readFileSync(join(stateDir, 'c1-app', '0_0', '.checkpoint'), 'utf8')).toBe('0\n1\nc1-app-counts-changelog 0 5\n')

      const second = new KafkaStreams(counting('c1', stateDir), config)
      await second.start()
      await lines('c1-in', ['a', 'd'])
      expect(await latest('c1-out', { a: 4, b: 2, c: 1, d: 1 })).toEqual({ a: 4, b: 2, c: 1, d: 1 })
      expect(second.restoredRecords).toBe(0)
      await second.close()

      // A lost local store with its checkpoint gone restores the whole changelog (8 records).
      rmSync(join(stateDir, 'c1-app'), { recursive: true, force: true })
      const third = new KafkaStreams(counting('c1', stateDir), config)
      await third.start()
      await lines('c1-in', ['d'])
      expect(await latest('c1-out', { a: 4, b: 2, c: 1, d: 2 })).toEqual({ a: 4, b: 2, c: 1, d: 2 })
      expect(third.restoredRecords).toBe(8)
      await third.close()
    } finally {
      rmSync(stateDir, { recursive: true, force: true })
    }
  })

  it('exactly_once_v2: the checkpoint is written on a clean close only, removed when read, and a dirty close wipes the task directory', async () => {
    const stateDir = mkdtempSync(join(tmpdir(), 'tidelog-ckpt-eos-'))
    const ckpt = join(stateDir, 'c2-app', '0_0', '.checkpoint')
    try {
      await admin.createTopics([{ name: 'c2-in', partitions: 1 }, { name: 'c2-out', partitions: 1 }])
      const config: StreamsConfig = { 'application.id': 'c2-app', 'bootstrap.servers': brokers, 'state.dir': stateDir, 'processing.guarantee': 'exactly_once_v2' }
      const first = new KafkaStreams(counting('c2', stateDir), config)
      await first.start()
      await lines('c2-in', ['a', 'b', 'a'])
      expect(await latest('c2-out', { a: 2, b: 1 })).toEqual({ a: 2, b: 1 })
      // Running under EOS: no checkpoint on disk (only a clean close writes one).
      expect(existsSync(ckpt)).toBe(false)
      await first.close()
      expect(readCheckpoint(ckpt)).toEqual([{ topic: 'c2-app-counts-changelog', partition: 0, offset: 2n }])

      const second = new KafkaStreams(counting('c2', stateDir), config)
      second.setUncaughtExceptionHandler(() => 'SHUTDOWN_CLIENT')
      await second.start()
      await lines('c2-in', ['b'])
      expect(await latest('c2-out', { a: 2, b: 2 })).toEqual({ a: 2, b: 2 })
      expect(second.restoredRecords).toBe(0)
      expect(existsSync(ckpt)).toBe(false)
      await producer.send([{ topic: 'c2-in', key: 'a', value: 'boom' }])
      await waitForState(second, 'ERROR')
      expect(existsSync(join(stateDir, 'c2-app', '0_0'))).toBe(false)

      // After the dirty close everything comes back from the committed changelog: offsets 0..2 and 4 (3 is a commit marker).
      const third = new KafkaStreams(counting('c2', stateDir), config)
      await third.start()
      await waitForState(third, 'RUNNING')
      expect(third.restoredRecords).toBe(4)
      await third.close()
    } finally {
      rmSync(stateDir, { recursive: true, force: true })
    }
  })
})
