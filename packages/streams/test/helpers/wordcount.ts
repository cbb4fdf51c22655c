/** The word-count application the runtime tests run on the tidelog broker and on Apache Kafka. */
import { Admin } from '@tidelog/client'
import { Consumer } from '@tidelog/consumer'
import { Producer } from '@tidelog/producer'
import { expect } from 'vitest'
import { Grouped, KafkaStreams, Materialized, Produced, Serdes, StreamsBuilder, type KafkaStreamsState } from '@tidelog/streams'

const S = Serdes.String()

export function wordCount(): StreamsBuilder {
  const b = new StreamsBuilder()
  b.stream<string, string>('lines')
    .flatMapValues((v) => v.toLowerCase().split(/\W+/).filter(Boolean))
    .groupBy((_k, w) => w, Grouped.with(S, S))
    .count(Materialized.as('counts'))
    .toStream()
    .to('word-counts', Produced.with(S, Serdes.Long()))
  return b
}

/** Reads word-counts from the start until the latest count per word equals `expected` (or the deadline passes). */
export async function countsReach(brokers: string[], expected: { [word: string]: number }, deadlineMs = 60_000): Promise<{ [word: string]: number }> {
  const c = new Consumer({ brokers, autoOffsetReset: 'earliest' })
  const latest: { [word: string]: number } = {}
  const ac = new AbortController()
  const timer = setTimeout(() => ac.abort(), deadlineMs)
  const same = () => JSON.stringify(Object.entries(latest).sort()) === JSON.stringify(Object.entries(expected).sort())
  try {
    c.assign([{ topic: 'word-counts', partition: 0 }, { topic: 'word-counts', partition: 1 }])
    for await (const batch of c.batches({ signal: ac.signal })) {
      for (const m of batch.messages) latest[m.key!.toString()] = Number(m.value!.readBigInt64BE())
      if (same()) break
    }
  } catch (e) {
    if (!ac.signal.aborted) throw e
  } finally {
    clearTimeout(timer)
    await c.close()
  }
  return latest
}

export async function waitForState(app: KafkaStreams, state: KafkaStreamsState, deadlineMs = 60_000): Promise<void> {
  const until = Date.now() + deadlineMs
  while (app.state !== state && Date.now() < until) await new Promise((r) => setTimeout(r, 20))
  expect(app.state).toBe(state)
}

/**
 * The whole scenario: counts three lines, checks the internal topics Kafka Streams would have
 * created, closes, starts a second instance and checks its counts continue from the changelog.
 */
export async function wordCountScenario(brokers: string[], applicationId: string): Promise<void> {
  const admin = new Admin({ brokers })
  const producer = new Producer({ brokers, lingerMs: 0 })
  try {
    await admin.createTopics([{ name: 'lines', partitions: 2 }, { name: 'word-counts', partitions: 2 }])
    const config = {
      'application.id': applicationId,
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
    expect(await countsReach(brokers, want1)).toEqual(want1)
    await waitForState(first, 'RUNNING')

    const repartition = `${applicationId}-counts-repartition`
    const changelog = `${applicationId}-counts-changelog`
    const described = await admin.describeTopics([repartition, changelog])
    expect(described.map((d) => [d.name, d.partitions.length])).toEqual([[repartition, 2], [changelog, 2]])
    const configs = await admin.describeConfigs([{ type: 'topic', name: changelog }, { type: 'topic', name: repartition }])
    const value = (i: number, name: string) => configs[i]!.configs.find((c) => c.name === name)?.value
    expect([value(0, 'cleanup.policy'), value(1, 'cleanup.policy'), value(1, 'retention.ms'), value(1, 'segment.bytes')]).toEqual(['compact', 'delete', '-1', '52428800'])

    await first.close()
    expect(first.state).toBe('NOT_RUNNING')
    expect(states).toEqual(['CREATED->REBALANCING', 'REBALANCING->RUNNING', 'RUNNING->PENDING_SHUTDOWN', 'PENDING_SHUTDOWN->NOT_RUNNING'])

    // A new instance of the same application: offsets committed, the counts come back from the changelog.
    const second = new KafkaStreams(wordCount().build(), config)
    await second.start()
    await producer.send([{ topic: 'lines', key: 'd', value: 'kafka hello' }])
    const want2 = { ...want1, kafka: 4, hello: 3 }
    expect(await countsReach(brokers, want2)).toEqual(want2)
    await second.close()
    expect(second.state).toBe('NOT_RUNNING')
  } finally {
    await producer.close()
    await admin.close()
  }
}
