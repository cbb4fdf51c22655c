import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startBroker, type Broker } from '@tidelog/broker'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { Admin } from '@tidelog/client'
import { Producer } from '@tidelog/producer'
import {
  BufferConfig, Consumed, JoinWindows, KafkaStreams, Materialized, Produced, Serdes, StreamJoined, StreamsBuilder, Suppressed, TimeWindows, WindowedSerdes,
} from '@tidelog/streams'
import { readTopic } from './helpers/broker.js'
import { waitForState } from './helpers/wordcount.js'

const S = Serdes.String()
const MINUTE = 60_000

let broker: Broker
let dataDir: string
let brokers: string[]

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'tidelog-streams-windows-'))
  broker = await startBroker({ port: 0, dataDir })
  brokers = [`127.0.0.1:${broker.port}`]
})

afterAll(async () => {
  await broker?.close()
  rmSync(dataDir, { recursive: true, force: true })
})

const read = (topic: string, count: number) => readTopic(brokers, topic, count)

it('on the broker: a suppressed windowed count and a stream-stream left join give the final results, with changelogs configured as Kafka Streams configures them', async () => {
  const admin = new Admin({ brokers })
  const producer = new Producer({ brokers, lingerMs: 0 })
  const app = 'windows-app'
  const base = Math.floor(Date.now() / MINUTE) * MINUTE - 10 * MINUTE
  try {
    await admin.createTopics(['clicks', 'clicks-per-minute', 'orders', 'payments', 'order-status'].map((name) => ({ name, partitions: 1 })))
    const b = new StreamsBuilder()
    b.stream('clicks', Consumed.with(S, S))
      .groupByKey()
      .windowedBy(TimeWindows.ofSizeAndGrace(MINUTE, 10_000))
      .count(Materialized.as('clicks-store'))
      .suppress(Suppressed.untilWindowCloses(BufferConfig.unbounded()))
      .toStream()
      .to('clicks-per-minute', Produced.with(WindowedSerdes.timeWindowedSerdeFrom(S, MINUTE), Serdes.Long()))
    const orders = b.stream('orders', Consumed.with(S, S))
    const payments = b.stream('payments', Consumed.with(S, S))
    orders.leftJoin(payments, (o, p) => `${o}: ${p ?? 'unpaid'}`, JoinWindows.ofTimeDifferenceWithNoGrace(5 * MINUTE), StreamJoined.with(S, S, S).withStoreName('pay'))
      .to('order-status', Produced.with(S, S))
    const streams = new KafkaStreams(b.build(), { 'application.id': app, 'bootstrap.servers': brokers, 'default.key.serde': S, 'default.value.serde': S, 'commit.interval.ms': 100 })
    await streams.start()
    await producer.send([
      { topic: 'clicks', key: 'alice', value: 'home', timestamp: base },
      { topic: 'clicks', key: 'alice', value: 'cart', timestamp: base + 30_000 },
      { topic: 'clicks', key: 'bob', value: 'home', timestamp: base + 45_000 },
      { topic: 'clicks', key: 'bob', value: 'late', timestamp: base + 1_000 },
      { topic: 'clicks', key: 'alice', value: 'pay', timestamp: base + MINUTE + 15_000 },
      { topic: 'clicks', key: 'bob', value: 'too late', timestamp: base + 2_000 },
      { topic: 'orders', key: 'o1', value: 'shirt', timestamp: base },
      { topic: 'payments', key: 'o1', value: 'card', timestamp: base + MINUTE },
    ])
    // The runtime processes whatever each partition has fetched, so the payment must be in before later orders move stream time on.
    expect((await read('order-status', 1)).map((r) => String(r.value))).toEqual(['shirt: card'])
    await producer.send([
      { topic: 'orders', key: 'o2', value: 'shoes', timestamp: base + 10_000 },
      { topic: 'orders', key: 'o3', value: 'hat', timestamp: base + 7 * MINUTE },
    ])
    const windowed = WindowedSerdes.timeWindowedSerdeFrom(S, MINUTE)
    const counts = (await read('clicks-per-minute', 2)).map((r) => `${windowed.deserialize(r.key!, { topic: '', headers: [], isKey: true })}=${r.value!.readBigInt64BE()}`)
    expect(counts).toEqual([`[alice@${base}/${base + MINUTE}]=2`, `[bob@${base}/${base + MINUTE}]=2`])
    const status = (await read('order-status', 2)).map((r) => `${r.key}=${r.value} @${r.timestamp - base}`)
    expect(status).toEqual([`o1=shirt: card @${MINUTE}`, 'o2=shoes: unpaid @10000'])
    await waitForState(streams, 'RUNNING')
    await streams.close()

    const names = [`${app}-clicks-store-changelog`, `${app}-pay-this-join-store-changelog`, `${app}-pay-outer-other-join-store-changelog`, `${app}-pay-left-shared-join-store-changelog`, `${app}-KTABLE-SUPPRESS-STATE-STORE-0000000003-changelog`]
    const configs = await admin.describeConfigs(names.map((name) => ({ type: 'topic' as const, name })))
    const value = (i: number, name: string) => configs[i]!.configs.find((c) => c.name === name)?.value
    expect(names.map((_n, i) => [value(i, 'cleanup.policy'), value(i, 'retention.ms')])).toEqual([
      ['compact,delete', String(MINUTE + 10_000 + 86_400_000)],
      ['delete', String(10 * MINUTE + 86_400_000)],
      ['delete', String(10 * MINUTE + 86_400_000)],
      ['compact', expect.any(String)],
      ['compact', expect.any(String)],
    ])
  } finally {
    await producer.close()
    await admin.close()
  }
})
