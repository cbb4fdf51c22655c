import { Consumer } from '@tidelog/consumer'
import { describe, expect, it } from 'vitest'
import { KafkaStreams, Materialized, QueryableStoreTypes, Serdes, StoreQueryParameters, StreamsBuilder } from '@tidelog/streams'
import { until, useBroker, type TestBroker } from './helpers/broker.js'

const S = Serdes.String()
let t: TestBroker
useBroker('tidelog-streams-sticky-', (b) => (t = b))

function app(): KafkaStreams {
  const b = new StreamsBuilder()
  b.stream<string, string>('st-in').groupByKey().count(Materialized.as('st-counts'))
  return new KafkaStreams(b.build(), { 'application.id': 'st-app', 'bootstrap.servers': t.brokers, 'default.key.serde': S, 'default.value.serde': S, 'commit.interval.ms': 100 })
}

const active = (s: KafkaStreams) => s.metadataForLocalThreads().flatMap((m) => m.activeTasks).sort()
const counted = (s: KafkaStreams) => {
  try {
    return s.store(StoreQueryParameters.fromNameAndType('st-counts', QueryableStoreTypes.keyValueStore<string, number>())).all().reduce((n, kv) => n + kv.value, 0)
  } catch {
    return -1
  }
}
const settled = (sizes: Map<KafkaStreams, number>) => [...sizes].every(([s, n]) => s.state === 'RUNNING' && active(s).length === n)

describe('sticky task placement across rebalances (tidelog broker)', () => {
  it('a joining instance takes only its share from the others, and a leaving one\'s tasks go to the survivors, which keep theirs and restore nothing they had', async () => {
    await t.admin.createTopics([{ name: 'st-in', partitions: 6 }])
    const a = app()
    const b = app()
    const c = app()
    try {
      await a.start()
      await b.start()
      await until('a and b hold 3 tasks each', () => settled(new Map([[a, 3], [b, 3]])))
      // A member with another assignor (a Java instance, whose is "stream", or a plain consumer) is refused, not misread.
      const intruder = new Consumer({ brokers: t.brokers, groupId: 'st-app', assignors: ['range'] })
      try {
        await intruder.subscribe(['st-in'])
        const ac = new AbortController()
        const timer = setTimeout(() => ac.abort(), 30_000)
        await expect((async () => {
          for await (const _ of intruder.batches({ signal: ac.signal })) void _
        })()).rejects.toThrow(/INCONSISTENT_GROUP_PROTOCOL/)
        clearTimeout(timer)
      } finally {
        await intruder.close()
      }
      await t.producer.send(Array.from({ length: 60 }, (_, i) => ({ topic: 'st-in', key: `k${i}`, value: 'v', partition: i % 6 })))
      const before = { a: active(a), b: active(b) }
      await until('everything is counted', () => counted(a) + counted(b) === 60)
      await c.start()
      await until('a, b and c hold 2 tasks each', () => settled(new Map([[a, 2], [b, 2], [c, 2]])))
      const mid = { a: active(a), b: active(b), c: active(c) }
      for (const x of mid.a) expect(before.a).toContain(x)
      for (const x of mid.b) expect(before.b).toContain(x)
      expect([...mid.a, ...mid.b, ...mid.c].sort()).toEqual(['0_0', '0_1', '0_2', '0_3', '0_4', '0_5'])
      // Tasks that stayed were never closed, so nothing was restored for them.
      expect(a.restoredRecords + b.restoredRecords).toBe(0)
      await until('c counted its two tasks', () => counted(c) === 20)
      await c.close()
      await until('a and b hold 3 tasks each again', () => settled(new Map([[a, 3], [b, 3]])))
      for (const x of mid.a) expect(active(a)).toContain(x)
      for (const x of mid.b) expect(active(b)).toContain(x)
      // The two tasks c had were restored by their new owners from the changelog (10 counts each).
      expect(a.restoredRecords + b.restoredRecords).toBe(20)
    } finally {
      await Promise.all([a.close(), b.close(), c.close()])
    }
  }, 90_000)
})
