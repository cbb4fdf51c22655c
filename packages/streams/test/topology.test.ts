import { describe, expect, it } from 'vitest'
import {
  Consumed,
  Materialized,
  NoSuchElementError,
  PunctuationType,
  Record,
  Serdes,
  Stores,
  StreamsBuilder,
  StreamsException,
  Topology,
  TopologyException,
  TopologyTestDriver,
  type KeyValueStore,
  type ProcessorContext,
  type Serde,
} from '@tidelog/streams'

const S = Serdes.String()
const config = { 'application.id': 'unit', 'default.key.serde': S, 'default.value.serde': S }

describe('Topology (Processor API)', () => {
  it('refuses a duplicate name, an unknown parent, a sink as parent and an unknown store, with TopologyException', () => {
    const t = new Topology().addSource('src', 'in').addProcessor('p', () => ({ process() {} }), 'src')
    expect(() => t.addSource('src', 'other')).toThrow(TopologyException)
    expect(() => t.addSource('src2', 'in')).toThrow(/already been registered/)
    expect(() => t.addProcessor('q', () => ({ process() {} }), 'nope')).toThrow(/Parent processor nope is not added yet/)
    t.addSink('out', 'out-topic', 'p')
    expect(() => t.addProcessor('r', () => ({ process() {} }), 'out')).toThrow(/Sink out cannot be used a parent/)
    expect(() => t.connectProcessorAndStateStores('p', 'missing')).toThrow(/StateStore missing is not added yet/)
  })

  it('gives processors the task id, the record metadata, headers, and forwards to a named child only', () => {
    const seen: string[] = []
    const t = new Topology()
      .addSource('src', 'in')
      .addProcessor('router', () => {
        let ctx!: ProcessorContext<string, string>
        return {
          init: (c: ProcessorContext<string, string>) => { ctx = c },
          process: (r: Record<string, string>) => {
            const m = ctx.recordMetadata()!
            seen.push(`${ctx.taskId}:${m.topic}-${m.partition}@${m.offset}`)
            ctx.forward(r.withValue(`${r.value}/${r.timestamp}`), r.key === 'left' ? 'to-left' : 'to-right')
          },
        }
      }, 'src')
      .addSink('to-left', 'left', 'router')
      .addSink('to-right', (k: string) => `right-${k}`, 'router')
    const driver = new TopologyTestDriver(t, config, 0)
    const input = driver.createInputTopic('in', S, S)
    input.pipeRecord({ key: 'left', value: 'a', timestamp: 5, headers: [{ key: 'h', value: Buffer.from('1') }] })
    input.pipeInput('b', 'c', 6)
    expect(seen).toEqual(['0_0:in-0@0', '0_0:in-0@1'])
    const left = driver.createOutputTopic('left', S, S).readRecord()
    expect(left).toEqual({ key: 'left', value: 'a/5', timestamp: 5, headers: [{ key: 'h', value: Buffer.from('1') }] })
    expect(driver.createOutputTopic('right-b', S, S).readKeyValuesToList()).toEqual([{ key: 'b', value: 'c/6' }])
    expect(() => driver.createOutputTopic('left', S, S).readRecord()).toThrow(NoSuchElementError)
    expect(() => driver.createOutputTopic('never', S, S).readRecord()).toThrow(/Uninitialized topic: never/)
    expect(() => input.pipeInput('x', 'y', -1)).toThrow(/negative/)
    expect(() => driver.createInputTopic('unknown', S, S).pipeInput('k', 'v', 1)).toThrow(/Unknown topic: unknown/)
    driver.close()
  })

  it('refuses access to a store the processor is not connected to, and a forward to a child it does not have', () => {
    const t = new Topology()
      .addSource('src', 'in')
      .addProcessor('p', () => {
        let ctx!: ProcessorContext
        return {
          init: (c: ProcessorContext) => { ctx = c },
          process: (r: Record<string, string>) => {
            if (r.value === 'store') ctx.getStateStore('s')
            else ctx.forward(r, 'nobody')
          },
        }
      }, 'src')
      .addProcessor('other', () => ({ process() {} }), 'src')
      .addStateStore(Stores.keyValueStoreBuilder(Stores.inMemoryKeyValueStore('s'), S, S), 'other')
    const driver = new TopologyTestDriver(t, config, 0)
    const input = driver.createInputTopic('in', S, S)
    expect(() => input.pipeInput('k', 'store', 1)).toThrow(/Processor p has no access to StateStore s/)
    expect(() => input.pipeInput('k', 'child', 2)).toThrow(/Unknown downstream node: nobody/)
    driver.close()
  })

  it('rejects an asynchronous serde with a clear StreamsException', () => {
    const asyncSerde: Serde<string> = { serialize: async (v) => Buffer.from(v), deserialize: (b) => b.toString() }
    const t = new Topology().addSource('src', 'in').addSink('out', 'out', { valueSerde: asyncSerde }, 'src')
    const driver = new TopologyTestDriver(t, config, 0)
    expect(() => driver.createInputTopic('in', S, S).pipeInput('k', 'v', 1)).toThrow(StreamsException)
    driver.close()
  })

  it('cancels a punctuator, and fires a late one once per missed run of intervals (Java PunctuationSchedule)', () => {
    const fired: number[] = []
    const t = new Topology()
      .addSource('src', 'in')
      .addProcessor('p', () => ({
        init: (c: ProcessorContext) => {
          const cancellable = c.schedule(10, PunctuationType.STREAM_TIME, (ts) => {
            fired.push(ts)
            if (fired.length === 3) cancellable.cancel()
          })
        },
        process() {},
      }), 'src')
    const driver = new TopologyTestDriver(t, config, 0)
    const input = driver.createInputTopic('in', S, S)
    for (const ts of [1, 5, 35, 36, 40, 100]) input.pipeInput('k', 'v', ts)
    expect(fired).toEqual([1, 35, 40])
    driver.close()
  })
})

describe('in-memory key-value store', () => {
  it('orders keys by their serialized bytes (as Java stores), with inclusive ranges and open ends', () => {
    const t = new Topology().addSource('src', 'in')
    let store!: KeyValueStore<string, string>
    t.addProcessor('p', () => ({ init: (c: ProcessorContext) => { store = c.getStateStore('kv') }, process() {} }), 'src')
    t.addStateStore(Stores.keyValueStoreBuilder(Stores.inMemoryKeyValueStore('kv'), S, S).withLoggingDisabled(), 'p')
    const driver = new TopologyTestDriver(t, config, 0)
    for (const k of ['b', 'a', 'é', 'c', 'B']) store.put(k, k.toUpperCase())
    expect(store.all().map((e) => e.key)).toEqual(['B', 'a', 'b', 'c', 'é'])
    expect(store.range('a', 'c').map((e) => e.key)).toEqual(['a', 'b', 'c'])
    expect(store.range(undefined, 'a').map((e) => e.key)).toEqual(['B', 'a'])
    expect(store.reverseRange('b', undefined).map((e) => e.key)).toEqual(['é', 'c', 'b'])
    expect(store.range('c', 'a')).toEqual([])
    expect(store.putIfAbsent('a', 'x')).toBe('A')
    expect(store.delete('a')).toBe('A')
    expect(store.get('a')).toBeUndefined()
    store.put('b', null)
    expect(store.approximateNumEntries()).toBe(3)
    expect(driver.getKeyValueStore('kv')).toBe(store)
    driver.close()
    expect(() => store.get('c')).toThrow(/closed/)
  })

  it('a DSL count store reads back through getKeyValueStore, and its changes go to <applicationId>-<store>-changelog', () => {
    const b = new StreamsBuilder()
    b.stream('in', Consumed.with(S, S)).groupByKey().count(Materialized.as('counts'))
    const driver = new TopologyTestDriver(b.build(), config, 0)
    const input = driver.createInputTopic('in', S, S)
    input.pipeInput('a', 'x', 10)
    input.pipeInput('a', 'y', 7)
    input.pipeInput('b', 'z', 8)
    const counts = driver.getKeyValueStore<string, number>('counts')!
    expect(counts.all()).toEqual([{ key: 'a', value: 2 }, { key: 'b', value: 1 }])
    expect(driver.getTimestampedKeyValueStore<string, number>('counts')!.get('a')).toEqual({ value: 2, timestamp: 10 })
    const changelog = driver.createOutputTopic('unit-counts-changelog', S, { deserialize: (buf: Buffer) => buf })
    const records = changelog.readRecordsToList()
    expect(records.map((r) => [r.key, r.timestamp])).toEqual([['a', 10], ['a', 7], ['b', 8]])
    // Java's timestamped format: 8-byte timestamp, then the value's bytes (Long here).
    expect(records[1]!.value!.readBigInt64BE(0)).toBe(10n)
    expect(records[1]!.value!.readBigInt64BE(8)).toBe(2n)
    driver.close()
  })
})

describe('Change records on a KTable repartition topic', () => {
  it("are written in Java's ChangedSerializer layout and read back", async () => {
    const { changeSerde } = await import('../src/dsl/change-serde.js')
    const serde = changeSerde(S)
    const ctx = { topic: 't', headers: [], isKey: false }
    // {new}{1}, {old}{0}, {varint zigzag(newLength)}{new}{old}{2}
    expect(serde.serialize({ newValue: 'ab', oldValue: null }, ctx)).toEqual(Buffer.from([0x61, 0x62, 1]))
    expect(serde.serialize({ newValue: null, oldValue: 'c' }, ctx)).toEqual(Buffer.from([0x63, 0]))
    expect(serde.serialize({ newValue: 'ab', oldValue: 'c' }, ctx)).toEqual(Buffer.from([0x04, 0x61, 0x62, 0x63, 2]))
    expect(serde.deserialize(Buffer.from([0x04, 0x61, 0x62, 0x63, 2]), ctx)).toEqual({ newValue: 'ab', oldValue: 'c' })
    expect(serde.deserialize(Buffer.from([0x63, 0]), ctx)).toEqual({ newValue: null, oldValue: 'c' })
    expect(() => serde.serialize({ newValue: null, oldValue: null }, ctx)).toThrow(StreamsException)
    expect(() => serde.deserialize(Buffer.from([0x63, 7]), ctx)).toThrow(/Unknown encoding flag 7/)
  })
})

describe('exception handlers (Java names and defaults)', () => {
  const topology = () => new Topology()
    .addSource('src', 'in', { valueSerde: Serdes.Long() })
    .addSink('out', 'out', { valueSerde: Serdes.Long() }, 'src')
  const eightBytes = (n: number) => { const b = Buffer.alloc(8); b.writeBigInt64BE(BigInt(n)); return b }
  const raw: Serde<Buffer> = { serialize: (b) => b, deserialize: (b) => b }

  it('default logAndFail: an undeserializable record stops processing with StreamsException', () => {
    const driver = new TopologyTestDriver(topology(), config, 0)
    const input = driver.createInputTopic('in', S, raw)
    expect(() => input.pipeInput('k', Buffer.from([1, 2, 3]), 1)).toThrow(/Deserialization exception handler is set to fail/)
    driver.close()
  })

  it('logAndContinue skips it and processes the next; a handler function decides per record', () => {
    const seen: number[] = []
    for (const handler of ['logAndContinue', (r: { offset: number }) => { seen.push(r.offset); return 'CONTINUE' as const }] as const) {
      const driver = new TopologyTestDriver(topology(), { ...config, 'default.deserialization.exception.handler': handler }, 0)
      const input = driver.createInputTopic('in', S, raw)
      input.pipeInput('k', Buffer.from([1, 2, 3]), 1)
      input.pipeInput('k', eightBytes(42), 2)
      expect(driver.createOutputTopic('out', S, Serdes.Long()).readKeyValuesToList()).toEqual([{ key: 'k', value: 42 }])
      driver.close()
    }
    expect(seen).toEqual([0])
  })

  it("a record the sink cannot serialize fails by default, and is dropped with 'continue'", () => {
    const build = () => new Topology()
      .addSource('src', 'in')
      .addSink('out', 'out', { valueSerde: Serdes.Integer() }, 'src')
    const failing = new TopologyTestDriver(build(), config, 0)
    expect(() => failing.createInputTopic('in', S, S).pipeInput('k', 'not a number', 1)).toThrow(/production exception handler is set to fail/)
    failing.close()
    const lenient = new TopologyTestDriver(build(), { ...config, 'default.production.exception.handler': 'continue' }, 0)
    lenient.createInputTopic('in', S, S).pipeInput('k', 'not a number', 1)
    expect(lenient.createOutputTopic('out', S, Serdes.Integer()).isEmpty()).toBe(true)
    lenient.close()
  })
})

describe('KStream.process / processValues (Processor API inside the DSL)', () => {
  it('processValues keeps the key (a changed key is refused), process may change it; both see their connected store', () => {
    const b = new StreamsBuilder()
    b.addStateStore(Stores.keyValueStoreBuilder(Stores.inMemoryKeyValueStore('seen'), S, Serdes.Long()).withLoggingDisabled())
    const counted = b.stream<string, string>('in', Consumed.with(S, S)).processValues<string>(() => {
      let ctx!: ProcessorContext<string, string>
      let store!: KeyValueStore<string, number>
      return {
        init(c: ProcessorContext<string, string>) { ctx = c; store = c.getStateStore('seen') },
        process(r: Record<string, string>) {
          const n = (store.get(r.key) ?? 0) + 1
          store.put(r.key, n)
          ctx.forward(r.value === 'rekey' ? r.withKey('other') : r.withValue(`${r.value}#${n}`))
        },
      }
    }, undefined, 'seen')
    counted.process<string, string>(() => {
      let ctx!: ProcessorContext<string, string>
      return { init(c: ProcessorContext<string, string>) { ctx = c }, process(r: Record<string, string>) { ctx.forward(r.withKey(r.value)) } }
    }).to('out')
    const topology = b.build()
    expect(topology.describe().toString()).toContain('Processor: KSTREAM-PROCESSVALUES-0000000001 (stores: [seen])')
    const driver = new TopologyTestDriver(topology, config, 0)
    const input = driver.createInputTopic('in', S, S)
    input.pipeInput('a', 'x', 1)
    input.pipeInput('a', 'y', 2)
    expect(driver.createOutputTopic('out', S, S).readKeyValuesToList()).toEqual([{ key: 'x#1', value: 'x#1' }, { key: 'y#2', value: 'y#2' }])
    expect(() => input.pipeInput('a', 'rekey', 3)).toThrow(/processValues: other is not the input key a/)
    driver.close()
  })
})
