import type { Admin } from '@tidelog/client'
import type { Producer } from '@tidelog/producer'
import { describe, expect, it } from 'vitest'
import { Consumed, KafkaStreams, Materialized, Produced, Serdes, StreamsBuilder, TimeWindows, type Topology } from '@tidelog/streams'
import { useBroker } from './helpers/broker.js'
import { readAll } from './cache-read.js'

const S = Serdes.String()
const L = Serdes.Long()

let brokers: string[]
let admin: Admin
let producer: Producer
useBroker('tidelog-streams-cache-broker-', (b) => ({ brokers, admin, producer } = b))

/** Runs `topology` on the broker with caching off, then on with 10 MiB, reading `out` until `want[i]` (an app per run). */
async function cachedAndNot(prefix: string, topology: (i: number) => Topology, records: { key: string; value: Buffer | null; timestamp?: number }[], want: { [k: string]: number | null }[]) {
  const results: { n: number; latest: { [k: string]: number | null } }[] = []
  for (const [i, bytes] of [0, 10 * 1024 * 1024].entries()) {
    await admin.createTopics([{ name: `${prefix}${i}-in`, partitions: 1 }, { name: `${prefix}${i}-out`, partitions: 1 }])
    const app = new KafkaStreams(topology(i), { 'application.id': `${prefix}${i}-app`, 'bootstrap.servers': brokers, 'commit.interval.ms': 2000, 'statestore.cache.max.bytes': bytes })
    await app.start()
    await producer.send(records.map((r) => ({ topic: `${prefix}${i}-in`, ...r })))
    results.push(await readAll(brokers, `${prefix}${i}-out`, want[i]!))
    await app.close()
  }
  return results
}

describe('record caches on the broker: table sources and windows', () => {
  it('a cached table source forwards no tombstone for a key it never held (CachingKeyValueStore); uncached, every update goes on', async () => {
    const long = (n: number) => {
      const b = Buffer.alloc(8)
      b.writeBigInt64BE(BigInt(n))
      return b
    }
    const results = await cachedAndNot('cs', (i) => {
      const b = new StreamsBuilder()
      b.table(`cs${i}-in`, Consumed.with(S, L), Materialized.as('t')).toStream().to(`cs${i}-out`, Produced.with(S, L))
      return b.build()
    }, [{ key: 'a', value: long(1) }, { key: 'x', value: null }, { key: 'y', value: null }, { key: 'b', value: long(2) }], [{ a: 1, x: null, y: null, b: 2 }, { a: 1, b: 2 }])
    expect(results[0]!.n).toBe(4)
    // b comes last: a forwarded tombstone for x or y would have been read before it.
    expect(results[1]).toEqual({ n: 2, latest: { a: 1, b: 2 } })
  })

  it('a cached windowed count forwards fewer updates per window, with the same final counts', async () => {
    // Recent timestamps: the broker's time-based retention would delete records stamped in 1970.
    const start = Math.floor(Date.now() / 10_000) * 10_000
    const want = { [`a@${start}`]: 30, [`b@${start}`]: 30 }
    const results = await cachedAndNot('cw', (i) => {
      const b = new StreamsBuilder()
      b.stream(`cw${i}-in`, Consumed.with(S, S)).groupByKey().windowedBy(TimeWindows.ofSizeWithNoGrace(10_000)).count()
        .toStream().map((w, v) => ({ key: `${w.key}@${w.window.start}`, value: v })).to(`cw${i}-out`, Produced.with(S, L))
      return b.build()
    }, Array.from({ length: 60 }, (_, i) => ({ key: i % 2 === 0 ? 'a' : 'b', value: Buffer.from('w'), timestamp: start + i })), [want, want])
    expect(results[0]).toEqual({ n: 60, latest: want })
    expect(results[1]!.latest).toEqual(want)
    expect(results[1]!.n).toBeLessThan(60)
  })
})
