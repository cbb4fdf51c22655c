import { mkdtempSync, rmSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startBroker, type Broker } from '@tidelog/broker'
import { Admin } from '@tidelog/client'
import { Producer } from '@tidelog/producer'
import { murmur2Partition } from '@tidelog/protocol'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  InvalidStateStoreException,
  KafkaStreams,
  Materialized,
  QueryableStoreTypes,
  Serdes,
  StoreQueryParameters,
  StreamsBuilder,
  StreamsNotStartedException,
  UnknownStateStoreException,
  startKeyQueryServer,
  type KeyQueryServer,
  type ReadOnlyKeyValueStore,
} from '@tidelog/streams'

const S = Serdes.String()
let broker: Broker
let dataDir: string
let brokers: string[]

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'tidelog-streams-queries-'))
  broker = await startBroker({ port: 0, dataDir })
  brokers = [`127.0.0.1:${broker.port}`]
})

afterAll(async () => {
  await broker?.close()
  rmSync(dataDir, { recursive: true, force: true })
})

async function freePort(): Promise<number> {
  const s = createServer()
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()))
  const port = (s.address() as { port: number }).port
  await new Promise((r) => s.close(r))
  return port
}

async function until(what: string, cond: () => boolean | Promise<boolean>, deadlineMs = 60_000): Promise<void> {
  const end = Date.now() + deadlineMs
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out waiting until ${what}`)
    await new Promise((r) => setTimeout(r, 50))
  }
}

function counting(server: string): KafkaStreams {
  const b = new StreamsBuilder()
  b.stream<string, string>('q-words').groupByKey().count(Materialized.as('q-counts'))
  return new KafkaStreams(b.build(), { 'application.id': 'q-app', 'bootstrap.servers': brokers, 'default.key.serde': S, 'default.value.serde': S, 'commit.interval.ms': 100, 'application.server': server })
}

const params = StoreQueryParameters.fromNameAndType('q-counts', QueryableStoreTypes.keyValueStore<string, number>())

describe('interactive queries on two KafkaStreams instances over the tidelog broker', () => {
  it('store(), queryMetadataForKey and metadataForAllStreamsClients agree on both instances; the HTTP helper forwards to the owner; queries fail while rebalancing', async () => {
    const admin = new Admin({ brokers })
    const producer = new Producer({ brokers, lingerMs: 0 })
    const [pa, pb] = [await freePort(), await freePort()]
    const a = counting(`127.0.0.1:${pa}`)
    const b = counting(`127.0.0.1:${pb}`)
    const servers: KeyQueryServer[] = []
    try {
      await admin.createTopics([{ name: 'q-words', partitions: 4 }])
      expect(() => a.store(params)).toThrow(StreamsNotStartedException)
      servers.push(await startKeyQueryServer(a, { applicationServer: `127.0.0.1:${pa}`, keySerializer: S }))
      servers.push(await startKeyQueryServer(b, { applicationServer: `127.0.0.1:${pb}`, keySerializer: S }))
      // Before the first assignment nothing is known: the helper says "retry" (503), it does not guess.
      const early = await fetch(`http://127.0.0.1:${servers[0]!.port}/stores/q-counts/keys/k0`)
      expect([early.status, ((await early.json()) as { error: string }).error]).toEqual([503, 'InvalidStateStoreException'])
      await a.start()
      await until('A is RUNNING', () => a.state === 'RUNNING')
      await b.start()
      await until('both instances run and see each other', () => a.state === 'RUNNING' && b.state === 'RUNNING' && a.metadataForAllStreamsClients().length === 2 && b.metadataForAllStreamsClients().length === 2)
      expect(() => a.store(StoreQueryParameters.fromNameAndType('no-such-store', QueryableStoreTypes.keyValueStore()))).toThrow(UnknownStateStoreException)

      const expected = new Map<string, number>()
      const records: { topic: string; key: string; value: string }[] = []
      for (let i = 0; i < 20; i++) {
        expected.set(`k${i}`, (i % 3) + 1)
        for (let j = 0; j <= i % 3; j++) records.push({ topic: 'q-words', key: `k${i}`, value: 'x' })
      }
      await producer.send(records)
      const owner = (k: string) => (a.queryMetadataForKey('q-counts', k, S)!.activeHost.port === pa ? a : b)
      await until('every count is queryable on its owner', () => [...expected].every(([k, n]) => owner(k).store(params).get(k) === n))

      const owners = new Set<number>()
      for (const k of expected.keys()) {
        const ma = a.queryMetadataForKey('q-counts', k, S)!
        expect(b.queryMetadataForKey('q-counts', k, S)).toEqual(ma)
        expect(ma.partition).toBe(murmur2Partition(k, 4))
        owners.add(ma.activeHost.port)
        const other = ma.activeHost.port === pa ? b : a
        expect(other.store(params).get(k)).toBeUndefined()
      }
      expect([...owners].sort()).toEqual([pa, pb].sort())
      const all = a.metadataForAllStreamsClients()
      expect(all.map((m) => m.hostInfo.port).sort()).toEqual([pa, pb].sort())
      expect(all.flatMap((m) => m.topicPartitions.map((tp) => tp.partition)).sort()).toEqual([0, 1, 2, 3])
      for (const m of all) expect([...m.stateStoreNames]).toEqual(['q-counts'])
      const local = a.store(params) as ReadOnlyKeyValueStore<string, number>
      expect(local.approximateNumEntries()).toBe(local.all().length)

      // The HTTP helper: whichever instance is asked, the owner answers.
      for (const k of ['k0', 'k1', 'k2', 'k3', 'k4', 'k5']) {
        for (const port of [servers[0]!.port, servers[1]!.port]) {
          const r = await fetch(`http://127.0.0.1:${port}/stores/q-counts/keys/${k}`)
          expect(r.status).toBe(200)
          expect(await r.json()).toEqual({ key: k, value: expected.get(k), host: `127.0.0.1:${owner(k) === a ? pa : pb}` })
        }
      }
      expect((await fetch(`http://127.0.0.1:${servers[0]!.port}/stores/q-counts/keys/${encodeURIComponent('not-a-key')}`)).status).toBe(404)

      // B leaves: A rebalances (queries fail meanwhile), restores B's partitions from the changelog and then answers for every key.
      const seen: string[] = []
      const held = a.store(params)
      a.setStateListener((state) => {
        if (state !== 'REBALANCING') return
        try {
          held.get('k0')
          seen.push('answered')
        } catch (e) {
          seen.push(e instanceof InvalidStateStoreException ? e.name : String(e))
        }
      })
      await b.close()
      await until('A alone holds every partition', () => a.state === 'RUNNING' && a.metadataForAllStreamsClients().length === 1)
      expect(seen[0]).toBe('InvalidStateStoreException')
      for (const [k, n] of expected) {
        expect(a.queryMetadataForKey('q-counts', k, S)!.activeHost.port).toBe(pa)
        expect(held.get(k)).toBe(n)
      }
    } finally {
      for (const s of servers) await s.close()
      await b.close()
      await a.close()
      await producer.close()
      await admin.close()
    }
  })
})
