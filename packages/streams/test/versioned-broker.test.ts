import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Admin } from '@tidelog/client'
import type { Producer } from '@tidelog/producer'
import { describe, expect, it } from 'vitest'
import { Consumed, Joined, KafkaStreams, Materialized, Produced, Serdes, Stores, StreamsBuilder, type StreamsConfig } from '@tidelog/streams'
import { readTopic, useBroker } from './helpers/broker.js'
import { waitForState } from './helpers/wordcount.js'

let brokers: string[]
let admin: Admin
let producer: Producer
useBroker('tidelog-streams-versioned-', (b) => ({ brokers, admin, producer } = b))

const S = Serdes.String()
const HISTORY = 60_000
const GRACE = 1_000
/** Record times an hour back: times near 1970 would be deleted by the topics' time retention (7 days) while the test runs. */
const T0 = Math.floor((Date.now() - 3_600_000) / 1000) * 1000

/** Orders enriched with the customer as of each order's time, held for a second of stream time (KIP-923). */
function enrich(p: string): ReturnType<StreamsBuilder['build']> {
  const b = new StreamsBuilder()
  const customers = b.table(`${p}-customers`, Consumed.with(S, S), Materialized.as<string, string>(Stores.persistentVersionedKeyValueStore('customers-v', HISTORY)))
  b.stream(`${p}-orders`, Consumed.with(S, S))
    .leftJoin(customers, (o: string, c: string | null) => `${o}@${c}`, Joined.as<string, string, string>('enrich').withGracePeriod(GRACE))
    .to(`${p}-out`, Produced.with(S, S))
  return b.build()
}

const text = (rs: { value: Buffer | null }[]) => rs.map((r) => r.value?.toString() ?? null)

describe('versioned table and grace join on the broker', () => {
  for (const guarantee of ['at_least_once', 'exactly_once_v2'] as const) {
  it(`${guarantee}: a restart with its state wiped restores the table history and the grace buffer from their changelogs`, async () => {
    const p = guarantee === 'at_least_once' ? 'vb1' : 'vb2'
    const stateDir = mkdtempSync(join(tmpdir(), 'tidelog-versioned-'))
    try {
      await admin.createTopics([`${p}-customers`, `${p}-orders`, `${p}-out`].map((name) => ({ name, partitions: 1 })))
      const config: StreamsConfig = { 'application.id': `${p}-app`, 'bootstrap.servers': brokers, 'state.dir': stateDir, 'commit.interval.ms': 100, 'processing.guarantee': guarantee }
      const first = new KafkaStreams(enrich(p), config)
      await first.start()
      await producer.send([{ topic: `${p}-customers`, key: 'c1', value: 'Alice', timestamp: T0 + 1_000 }, { topic: `${p}-customers`, key: 'c1', value: 'Alicia', timestamp: T0 + 5_000 }])
      // Both versions are in the store (and its changelog) before any order arrives.
      expect((await readTopic(brokers, `${p}-app-customers-v-changelog`, 2)).map((r) => [r.value?.toString(), r.timestamp])).toEqual([['Alice', T0 + 1_000], ['Alicia', T0 + 5_000]])
      await producer.send([{ topic: `${p}-orders`, key: 'c1', value: 'o1', timestamp: T0 + 2_000 }, { topic: `${p}-orders`, key: 'c1', value: 'o2', timestamp: T0 + 6_000 }])
      // o2 moved stream time to T0 + 6000: o1 (T0 + 2000) left the buffer and met the customer as of its time; o2 waits for T0 + 7000.
      expect(text(await readTopic(brokers, `${p}-out`, 1))).toEqual(['o1@Alice'])
      await first.close()

      const [table, buffer] = await admin.describeConfigs([`${p}-app-customers-v-changelog`, `${p}-app-enrich-Buffer-changelog`].map((name) => ({ type: 'topic' as const, name })))
      const config1 = (c: typeof table, name: string) => c!.configs.find((e) => e.name === name)?.value
      expect([config1(table, 'cleanup.policy'), config1(table, 'min.compaction.lag.ms')]).toEqual(['compact', String(HISTORY + 86_400_000)])
      expect(config1(buffer, 'cleanup.policy')).toBe('compact')

      rmSync(stateDir, { recursive: true, force: true })
      const second = new KafkaStreams(enrich(p), config)
      await second.start()
      await waitForState(second, 'RUNNING')
      // o3 is too late for the restored buffer (its stream time T0 + 6000, minus the grace, is past o3): joined at once, with the restored history's Alice.
      // o4 moves stream time to T0 + 8000 and lets the restored o2 out, joined with Alicia as of T0 + 6000.
      await producer.send([{ topic: `${p}-orders`, key: 'c1', value: 'o3', timestamp: T0 + 3_000 }, { topic: `${p}-orders`, key: 'c1', value: 'o4', timestamp: T0 + 8_000 }])
      const out = await readTopic(brokers, `${p}-out`, 3)
      await second.close()
      expect(out.map((r) => [r.value?.toString(), r.timestamp])).toEqual([['o1@Alice', T0 + 2_000], ['o3@Alice', T0 + 3_000], ['o2@Alicia', T0 + 6_000]])
    } finally {
      rmSync(stateDir, { recursive: true, force: true })
    }
  }, 120_000)
  }
})
