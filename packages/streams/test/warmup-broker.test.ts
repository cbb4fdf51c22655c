import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { murmur2Partition } from '@tidelog/protocol'
import { describe, expect, it } from 'vitest'
import { KafkaStreams, Materialized, QueryableStoreTypes, Serdes, StoreQueryParameters, StreamsBuilder, type ReadOnlyKeyValueStore } from '@tidelog/streams'
import { until, useBroker, type TestBroker } from './helpers/broker.js'

const S = Serdes.String()
let t: TestBroker
useBroker('tidelog-streams-warmup-', (b) => (t = b))

const TOPIC = 'wu-words'
const KEYS = Array.from({ length: 2000 }, (_, i) => `key-${i}`)
/** Far below each task's ~1,000-record changelog: a client without the state is not caught up. */
const ACCEPTABLE_LAG = 50
const counts = StoreQueryParameters.fromNameAndType('wu-counts', QueryableStoreTypes.keyValueStore<string, number>())

function app(stateDir: string): KafkaStreams {
  const b = new StreamsBuilder()
  b.stream<string, string>(TOPIC).groupByKey().count(Materialized.as('wu-counts'))
  return new KafkaStreams(b.build(), {
    'application.id': 'wu-app',
    'bootstrap.servers': t.brokers,
    'default.key.serde': S,
    'default.value.serde': S,
    'commit.interval.ms': 100,
    'heartbeat.interval.ms': 300,
    'state.dir': stateDir,
    'acceptable.recovery.lag': ACCEPTABLE_LAG,
    'max.warmup.replicas': 1,
    // probing.rebalance.interval.ms is at least a minute (as Java's); the internal name lets the test probe every 1.5 s.
    '__probing.rebalance.interval.ms__': 1500,
  })
}

interface Snapshot {
  active: string[]
  standby: string[]
  restored: number
  standbyRecords: number
}

/** The instance's tasks each time it reaches RUNNING (taken synchronously, so no assignment is missed). */
function watch(s: KafkaStreams): Snapshot[] {
  const out: Snapshot[] = []
  s.setStateListener((next) => {
    if (next !== 'RUNNING') return
    const m = s.metadataForLocalThreads()
    out.push({ active: m.flatMap((x) => x.activeTasks).sort(), standby: m.flatMap((x) => x.standbyTasks).sort(), restored: s.restoredRecords, standbyRecords: s.standbyRecords })
  })
  return out
}

function total(s: KafkaStreams, partition: number): number {
  try {
    const store: ReadOnlyKeyValueStore<string, number> = s.store(counts.withPartition(partition))
    return store.all().reduce((n, kv) => n + kv.value, 0)
  } catch {
    return -1
  }
}

describe('KIP-441 warm-up replicas on the tidelog broker', () => {
  it('a second instance joins: the stateful task stays put while its warm-up replica catches up, then a probing rebalance moves it, restoring only the tail', async () => {
    await t.admin.createTopics([{ name: TOPIC, partitions: 2 }])
    const dir = mkdtempSync(join(tmpdir(), 'tidelog-warmup-state-'))
    const a = app(join(dir, 'a'))
    const b = app(join(dir, 'b'))
    const bSeen = watch(b)
    try {
      await a.start()
      for (let i = 0; i < KEYS.length; i += 500) await t.producer.send(KEYS.slice(i, i + 500).map((k) => ({ topic: TOPIC, key: k, value: 'x' })))
      const perPartition = [0, 1].map((p) => KEYS.filter((k) => murmur2Partition(Buffer.from(k), 2) === p).length)
      await until('the first instance counted everything', () => a.state === 'RUNNING' && total(a, 0) === perPartition[0] && total(a, 1) === perPartition[1])

      await b.start()
      await until('the second instance to run', () => bSeen.length > 0)
      // Its first assignment: no active task (it holds no state), one warm-up replica; the first instance keeps both tasks.
      const first = bSeen[0]!
      expect(first.active).toEqual([])
      expect(first.standby.length).toBe(1)
      const moving = first.standby[0]!
      const partition = Number(moving.split('_')[1])

      await until('the task to move to the second instance', () => bSeen.some((x) => x.active.includes(moving)) && a.state === 'RUNNING' && b.state === 'RUNNING', 60_000)
      const moved = bSeen.find((x) => x.active.includes(moving))!
      // It moved only once its warm-up was within acceptable.recovery.lag: the promotion restored at most that much.
      expect(moved.restored).toBeLessThanOrEqual(ACCEPTABLE_LAG)
      expect(moved.standbyRecords).toBeGreaterThanOrEqual(perPartition[partition]! - ACCEPTABLE_LAG)
      expect(a.probingRebalances + b.probingRebalances).toBeGreaterThanOrEqual(1)
      expect(a.metadataForLocalThreads().flatMap((x) => x.activeTasks)).toEqual([`0_${1 - partition}`])
      await until('the moved task answers with every count', () => total(b, partition) === perPartition[partition])
      // And it counts on from there.
      const key = KEYS.find((k) => murmur2Partition(Buffer.from(k), 2) === partition)!
      await t.producer.send([{ topic: TOPIC, key, value: 'x' }])
      await until('the moved task counts on', () => total(b, partition) === perPartition[partition]! + 1)
    } finally {
      await b.close()
      await a.close()
      rmSync(dir, { recursive: true, force: true })
    }
  }, 90_000)
})
