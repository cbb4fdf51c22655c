import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startBroker, type Broker } from '@tidelog/broker'
import { Admin } from '@tidelog/client'
import { Consumer } from '@tidelog/consumer'
import { Producer } from '@tidelog/producer'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Grouped, KafkaStreams, Materialized, Produced, Serdes, StreamsBuilder, type KafkaStreamsState } from '@tidelog/streams'

const S = Serdes.String()
let broker: Broker
let dataDir: string
let brokers: string[]
let admin: Admin
let producer: Producer

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'tidelog-streams-'))
  broker = await startBroker({ port: 0, dataDir })
  brokers = [`127.0.0.1:${broker.port}`]
  admin = new Admin({ brokers })
  producer = new Producer({ brokers, lingerMs: 0 })
})

afterAll(async () => {
  await producer?.close()
  await admin?.close()
  await broker?.close()
  rmSync(dataDir, { recursive: true, force: true })
})

function wordCount(): StreamsBuilder {
  const b = new StreamsBuilder()
  b.stream<string, string>('lines')
    .flatMapValues((v) => v.toLowerCase().split(/\W+/).filter(Boolean))
    .groupBy((_k, w) => w, Grouped.with(S, S))
    .count(Materialized.as('counts'))
    .toStream()
    .to('word-counts', Produced.with(S, Serdes.Long()))
  return b
}

/** Reads the output topic from the start until the latest count per word equals `expected` (or the deadline passes). */
async function countsReach(expected: { [word: string]: number }, deadlineMs = 60_000): Promise<{ [word: string]: number }> {
  const c = new Consumer({ brokers, autoOffsetReset: 'earliest' })
  const latest: { [word: string]: number } = {}
  try {
    c.assign([{ topic: 'word-counts', partition: 0 }, { topic: 'word-counts', partition: 1 }])
    const ac = new AbortController()
    const timer = setTimeout(() => ac.abort(), deadlineMs)
    try {
      for await (const batch of c.batches({ signal: ac.signal })) {
        for (const m of batch.messages) latest[m.key!.toString()] = Number(m.value!.readBigInt64BE())
        if (JSON.stringify(Object.entries(latest).sort()) === JSON.stringify(Object.entries(expected).sort())) break
      }
    } catch (e) {
      if (!ac.signal.aborted) throw e
    } finally {
      clearTimeout(timer)
    }
    return latest
  } finally {
    await c.close()
  }
}

async function waitForState(app: KafkaStreams, state: KafkaStreamsState, deadlineMs = 60_000): Promise<void> {
  const until = Date.now() + deadlineMs
  while (app.state !== state && Date.now() < until) await new Promise((r) => setTimeout(r, 20))
  expect(app.state).toBe(state)
}

describe('KafkaStreams on the tidelog broker (at_least_once)', () => {
  it('word count: creates the repartition and compacted changelog topics, counts, and restores the store from the changelog after a restart', async () => {
    await admin.createTopics([{ name: 'lines', partitions: 2 }, { name: 'word-counts', partitions: 2 }])
    const config = {
      'application.id': 'wc-app',
      'bootstrap.servers': brokers,
      'default.key.serde': S,
      'default.value.serde': S,
      'commit.interval.ms': 100,
    }
    const states: string[] = []
    const first = new KafkaStreams(wordCount().build(), config)
    first.setStateListener((s, old) => states.push(`${old}->${s}`))
    await first.start()
    await producer.send([
      { topic: 'lines', key: 'a', value: 'hello kafka streams' },
      { topic: 'lines', key: 'b', value: 'kafka streams in typescript' },
      { topic: 'lines', key: 'c', value: 'Hello again, Kafka' },
    ])
    const want1 = { hello: 2, kafka: 3, streams: 2, in: 1, typescript: 1, again: 1 }
    expect(await countsReach(want1)).toEqual(want1)
    await waitForState(first, 'RUNNING')

    const described = await admin.describeTopics(['wc-app-counts-repartition', 'wc-app-counts-changelog'])
    expect(described.map((d) => [d.name, d.partitions.length])).toEqual([['wc-app-counts-repartition', 2], ['wc-app-counts-changelog', 2]])
    const configs = await admin.describeConfigs([{ type: 'topic', name: 'wc-app-counts-changelog' }, { type: 'topic', name: 'wc-app-counts-repartition' }])
    const policy = (i: number) => configs[i]!.configs.find((c) => c.name === 'cleanup.policy')?.value
    expect([policy(0), policy(1)]).toEqual(['compact', 'delete'])

    await first.close()
    expect(first.state).toBe('NOT_RUNNING')
    expect(states).toEqual(['CREATED->REBALANCING', 'REBALANCING->RUNNING', 'RUNNING->PENDING_SHUTDOWN', 'PENDING_SHUTDOWN->NOT_RUNNING'])

    // A new instance of the same application: offsets committed, the counts come back from the changelog.
    const second = new KafkaStreams(wordCount().build(), config)
    await second.start()
    await producer.send([{ topic: 'lines', key: 'd', value: 'kafka hello' }])
    const want2 = { ...want1, kafka: 4, hello: 3 }
    expect(await countsReach(want2)).toEqual(want2)
    await second.close()
    expect(second.state).toBe('NOT_RUNNING')
  })

  it('refuses a missing application.id and an unimplemented guarantee with StreamsException', () => {
    const t = wordCount().build()
    expect(() => new KafkaStreams(t, { 'bootstrap.servers': brokers })).toThrow(/application.id/)
    expect(() => new KafkaStreams(t, { 'application.id': 'x', 'bootstrap.servers': brokers, 'processing.guarantee': 'exactly_once_v2' as never })).toThrow(/not implemented/)
  })
})
