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

/** Orders enriched with the customer as of each order's time, held for a second of stream time (KIP-923). */
function enrich(): ReturnType<StreamsBuilder['build']> {
  const b = new StreamsBuilder()
  const customers = b.table('vb-customers', Consumed.with(S, S), Materialized.as<string, string>(Stores.persistentVersionedKeyValueStore('customers-v', HISTORY)))
  b.stream('vb-orders', Consumed.with(S, S))
    .leftJoin(customers, (o: string, c: string | null) => `${o}@${c}`, Joined.as<string, string, string>('enrich').withGracePeriod(GRACE))
    .to('vb-out', Produced.with(S, S))
  return b.build()
}

const text = (rs: { value: Buffer | null }[]) => rs.map((r) => r.value?.toString() ?? null)

describe('versioned table and grace join on the broker', () => {
  it('a restart with its state wiped restores the table history and the grace buffer from their changelogs', async () => {
    const stateDir = mkdtempSync(join(tmpdir(), 'tidelog-versioned-'))
    try {
      await admin.createTopics(['vb-customers', 'vb-orders', 'vb-out'].map((name) => ({ name, partitions: 1 })))
      const config: StreamsConfig = { 'application.id': 'vb-app', 'bootstrap.servers': brokers, 'state.dir': stateDir, 'commit.interval.ms': 100 }
      const first = new KafkaStreams(enrich(), config)
      await first.start()
      await producer.send([{ topic: 'vb-customers', key: 'c1', value: 'Alice', timestamp: 1_000 }, { topic: 'vb-customers', key: 'c1', value: 'Alicia', timestamp: 5_000 }])
      // Both versions are in the store (and its changelog) before any order arrives.
      expect((await readTopic(brokers, 'vb-app-customers-v-changelog', 2)).map((r) => [r.value?.toString(), r.timestamp])).toEqual([['Alice', 1_000], ['Alicia', 5_000]])
      await producer.send([{ topic: 'vb-orders', key: 'c1', value: 'o1', timestamp: 2_000 }, { topic: 'vb-orders', key: 'c1', value: 'o2', timestamp: 6_000 }])
      // o2 moved stream time to 6000: o1 (2000) left the buffer and met the customer as of 2000; o2 waits for 7000.
      expect(text(await readTopic(brokers, 'vb-out', 1))).toEqual(['o1@Alice'])
      await first.close()

      const [table, buffer] = await admin.describeConfigs(['vb-app-customers-v-changelog', 'vb-app-enrich-Buffer-changelog'].map((name) => ({ type: 'topic' as const, name })))
      const config1 = (c: typeof table, name: string) => c!.configs.find((e) => e.name === name)?.value
      expect([config1(table, 'cleanup.policy'), config1(table, 'min.compaction.lag.ms')]).toEqual(['compact', String(HISTORY + 86_400_000)])
      expect(config1(buffer, 'cleanup.policy')).toBe('compact')

      rmSync(stateDir, { recursive: true, force: true })
      const second = new KafkaStreams(enrich(), config)
      await second.start()
      await waitForState(second, 'RUNNING')
      // o3 is too late for the restored buffer (stream time 6000 - grace > 3000): joined at once, with the restored history's Alice.
      // o4 moves stream time to 8000 and lets the restored o2 out, joined with Alicia as of 6000.
      await producer.send([{ topic: 'vb-orders', key: 'c1', value: 'o3', timestamp: 3_000 }, { topic: 'vb-orders', key: 'c1', value: 'o4', timestamp: 8_000 }])
      const out = await readTopic(brokers, 'vb-out', 3)
      await second.close()
      expect(out.map((r) => [r.value?.toString(), r.timestamp])).toEqual([['o1@Alice', 2_000], ['o3@Alice', 3_000], ['o2@Alicia', 6_000]])
    } finally {
      rmSync(stateDir, { recursive: true, force: true })
    }
  }, 120_000)
})
