import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { murmur2Partition } from '@tidelog/protocol'
import { describe, expect, it } from 'vitest'
import { KafkaStreams, Materialized, QueryableStoreTypes, Serdes, StoreQueryParameters, StreamsBuilder, type ReadOnlyKeyValueStore } from '@tidelog/streams'
import { until, useBroker, type TestBroker } from './helpers/broker.js'

const S = Serdes.String()
let t: TestBroker
useBroker('tidelog-streams-standby-', (b) => (t = b))

const KEYS = Array.from({ length: 20 }, (_, i) => `k${i}`)
const ROUNDS = 10
const counts = StoreQueryParameters.fromNameAndType('sb-counts', QueryableStoreTypes.keyValueStore<string, number>())

function app(server: string, stateDir: string, guarantee: 'at_least_once' | 'exactly_once_v2'): KafkaStreams {
  const b = new StreamsBuilder()
  b.stream<string, string>(`sb-words-${guarantee}`).groupByKey().count(Materialized.as('sb-counts'))
  return new KafkaStreams(b.build(), {
    'application.id': `sb-app-${guarantee}`,
    'bootstrap.servers': t.brokers,
    'default.key.serde': S,
    'default.value.serde': S,
    'processing.guarantee': guarantee,
    'commit.interval.ms': 100,
    'num.standby.replicas': 1,
    'application.server': server,
    'state.dir': stateDir,
  })
}

/** Sums the counts one instance can see; stale includes its standby copies. */
function seen(s: KafkaStreams, stale: boolean, partition: number): number {
  try {
    const store: ReadOnlyKeyValueStore<string, number> = s.store(stale ? counts.enableStaleStores().withPartition(partition) : counts.withPartition(partition))
    return store.all().reduce((n, kv) => n + kv.value, 0)
  } catch {
    return -1
  }
}

describe('num.standby.replicas on the tidelog broker', () => {
  it('refuses a negative or fractional num.standby.replicas with Java\'s message', () => {
    const b = new StreamsBuilder()
    b.stream('x').to('y')
    for (const n of [-1, 0.5]) {
      expect(() => new KafkaStreams(b.build(), { 'application.id': 'sb-bad', 'bootstrap.servers': t.brokers, 'num.standby.replicas': n })).toThrow(`Invalid value ${n} for configuration num.standby.replicas: Value must be at least 0`)
    }
  })

  for (const guarantee of ['at_least_once', 'exactly_once_v2'] as const) {
    it(`${guarantee}: the standby stays caught up, is reported as standbyHosts, answers stale queries, and takes over without restoring`, async () => {
      const topic = `sb-words-${guarantee}`
      await t.admin.createTopics([{ name: topic, partitions: 2 }])
      const dir = mkdtempSync(join(tmpdir(), 'tidelog-standby-state-'))
      const a = app('a.example:1', join(dir, 'a'), guarantee)
      const b = app('b.example:2', join(dir, 'b'), guarantee)
      try {
        await a.start()
        await b.start()
        const tasksOf = (s: KafkaStreams, kind: 'activeTasks' | 'standbyTasks') => s.metadataForLocalThreads().flatMap((m) => m[kind])
        await until('each instance runs one task and keeps the other as a standby', () =>
          a.state === 'RUNNING' && b.state === 'RUNNING' && tasksOf(a, 'activeTasks').length === 1 && tasksOf(b, 'activeTasks').length === 1 && tasksOf(a, 'standbyTasks').length === 1 && tasksOf(b, 'standbyTasks').length === 1)
        // An active and its standby are never on the same instance.
        expect(tasksOf(a, 'standbyTasks')).toEqual(tasksOf(b, 'activeTasks'))
        expect(tasksOf(b, 'standbyTasks')).toEqual(tasksOf(a, 'activeTasks'))
        for (let r = 0; r < ROUNDS; r++) await t.producer.send(KEYS.map((k) => ({ topic, key: k, value: 'x' })))
        const perPartition = [0, 1].map((p) => KEYS.filter((k) => murmur2Partition(Buffer.from(k), 2) === p).length * ROUNDS)
        const aPart = Number(tasksOf(a, 'activeTasks')[0]!.split('_')[1])
        const bPart = 1 - aPart
        // The active's counts, and the same counts in the other instance's standby copy (a stale query).
        await until('the actives counted everything', () => seen(a, false, aPart) === perPartition[aPart] && seen(b, false, bPart) === perPartition[bPart])
        await until('the standbys caught up', () => seen(b, true, aPart) === perPartition[aPart] && seen(a, true, bPart) === perPartition[bPart])
        expect(() => b.store(counts.withPartition(aPart)).all()).toThrow(/may have migrated/)
        expect(b.standbyRecords).toBeGreaterThanOrEqual(perPartition[aPart]!)
        const key = KEYS.find((k) => murmur2Partition(Buffer.from(k), 2) === aPart)!
        await until('metadata is known', () => a.queryMetadataForKey('sb-counts', key, S)?.partition === aPart)
        expect(a.queryMetadataForKey('sb-counts', key, S)).toEqual({ activeHost: { host: 'a.example', port: 1 }, standbyHosts: [{ host: 'b.example', port: 2 }], partition: aPart })
        const all = a.metadataForAllStreamsClients().find((m) => m.hostInfo.host === 'b.example')!
        expect([...all.standbyStateStoreNames]).toEqual(['sb-counts'])
        expect(all.standbyTopicPartitions).toEqual([{ topic, partition: aPart }])

        const restoredBefore = b.restoredRecords
        await a.close()
        await until('b runs both tasks', () => b.state === 'RUNNING' && tasksOf(b, 'activeTasks').length === 2)
        // The promoted standby was already at the changelog's end: nothing is restored.
        expect(b.restoredRecords - restoredBefore).toBe(0)
        expect(seen(b, false, aPart)).toBe(perPartition[aPart])
        // And it keeps counting from there.
        await t.producer.send([{ topic, key, value: 'x' }])
        await until('the promoted task counts on', () => seen(b, false, aPart) === perPartition[aPart]! + 1)
      } finally {
        await a.close()
        await b.close()
        rmSync(dir, { recursive: true, force: true })
      }
    }, 60_000)
  }

  it('rack.aware.assignment.tags: with three instances in two zones, every standby is in another zone than its active', async () => {
    const topic = 'sb-rack-words'
    await t.admin.createTopics([{ name: topic, partitions: 4 }])
    const dir = mkdtempSync(join(tmpdir(), 'tidelog-standby-rack-'))
    const zones = ['eu-1a', 'eu-1a', 'eu-1b']
    const apps = zones.map((zone, i) => {
      const b = new StreamsBuilder()
      b.stream<string, string>(topic).groupByKey().count(Materialized.as('sb-rack-counts'))
      return new KafkaStreams(b.build(), {
        'application.id': 'sb-rack-app',
        'bootstrap.servers': t.brokers,
        'default.key.serde': S,
        'default.value.serde': S,
        'num.standby.replicas': 1,
        'state.dir': join(dir, `i${i}`),
        'heartbeat.interval.ms': 300,
        'client.tag.zone': zone,
        'rack.aware.assignment.tags': 'zone',
      })
    })
    const tasksOf = (s: KafkaStreams, kind: 'activeTasks' | 'standbyTasks') => s.metadataForLocalThreads().flatMap((m) => m[kind])
    try {
      for (const a of apps) await a.start()
      await until('four actives and four standbys over the three instances', () =>
        apps.every((a) => a.state === 'RUNNING') && apps.flatMap((a) => tasksOf(a, 'activeTasks')).length === 4 && apps.flatMap((a) => tasksOf(a, 'standbyTasks')).length === 4)
      const zoneOf = (task: string, kind: 'activeTasks' | 'standbyTasks') => zones[apps.findIndex((a) => tasksOf(a, kind).includes(task))]
      for (const task of ['0_0', '0_1', '0_2', '0_3']) expect(zoneOf(task, 'standbyTasks')).not.toBe(zoneOf(task, 'activeTasks'))
      // The single eu-1b instance keeps the standby of every task active in eu-1a.
      const inA = apps.slice(0, 2).flatMap((a) => tasksOf(a, 'activeTasks')).sort()
      expect(tasksOf(apps[2]!, 'standbyTasks').sort()).toEqual(inA)
    } finally {
      await Promise.all(apps.map((a) => a.close()))
      rmSync(dir, { recursive: true, force: true })
    }
  }, 60_000)
})
