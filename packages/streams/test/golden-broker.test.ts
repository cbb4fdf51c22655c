import { readFileSync } from 'node:fs'
import type { Broker } from '@tidelog/broker'
import { Admin } from '@tidelog/client'
import { Consumer } from '@tidelog/consumer'
import { Producer } from '@tidelog/producer'
import { describe, it } from 'vitest'
import { KafkaStreams, Serdes } from '@tidelog/streams'
import { buildGolden } from './golden-topologies.js'
import { useBroker } from './helpers/broker.js'

/**
 * The issue's rule that the driver behaves like the runtime: golden topologies run by
 * KafkaStreams on the in-process broker (single-partition topics, so each output topic has one
 * order) write exactly what Java's TopologyTestDriver wrote (table-groupby: through a repartition
 * topic of Change records in Java's format). Left out: merge (two input topics:
 * which is read first depends on fetch timing) and the Processor API one (wall-clock punctuators).
 */
interface Step { topic: string; key: string | null; value: string | null; timestamp: number }
interface Spec { outputs: { [topic: string]: 'string' | 'long' }; steps: Step[] }
const inputs = JSON.parse(readFileSync(new URL('./golden/inputs.json', import.meta.url), 'utf8')) as { [name: string]: Spec }
const golden = JSON.parse(readFileSync(new URL('./golden/java-outputs.json', import.meta.url), 'utf8')) as {
  topologies: { [name: string]: { outputs: { [topic: string]: { key: string | null; value: unknown; timestamp: number }[] } } }
}

let brokers: string[]
let admin: Admin
let producer: Producer
let broker: Broker
useBroker('tidelog-streams-golden-', (b) => ({ brokers, admin, producer, broker } = b))

async function readTopic(topic: string, type: 'string' | 'long', count: number, deadlineMs: number) {
  const c = new Consumer({ brokers, autoOffsetReset: 'earliest' })
  const out: { key: string | null; value: unknown; timestamp: number }[] = []
  const ac = new AbortController()
  const timer = setTimeout(() => ac.abort(), deadlineMs)
  try {
    c.assign([{ topic, partition: 0 }])
    if (count > 0) {
      for await (const batch of c.batches({ signal: ac.signal })) {
        for (const m of batch.messages) {
          const value = m.value === null ? null : type === 'long' ? Number(m.value.readBigInt64BE()) : m.value.toString()
          out.push({ key: m.key === null ? null : m.key.toString(), value, timestamp: Number(m.timestamp) })
        }
        if (out.length >= count) break
      }
    }
    // Nothing more than Java wrote: the topic ends where the expected records end.
    const [end] = await c.endOffsets([{ topic, partition: 0 }])
    return { records: out, end: Number(end!.offset) }
  } catch (e) {
    if (!ac.signal.aborted) throw e
    return { records: out, end: -1 }
  } finally {
    clearTimeout(timer)
    await c.close()
  }
}

// Concurrent: each topology has its own topics and application id, and most of the time is waiting for the group.
describe.concurrent('golden topologies on KafkaStreams over the tidelog broker', () => {
  for (const name of ['wordcount', 'chains', 'aggregate', 'selectkey-count', 'table-groupby']) {
    it(`${name}: the output topics hold exactly what Java's TopologyTestDriver wrote`, async ({ expect }) => {
      const spec = inputs[name]!
      const sources = [...new Set(spec.steps.map((s) => s.topic))]
      const prefix = `g-${name}`
      // The inputs carry 1970 timestamps: without retention.ms=-1 the broker's time-based
      // retention may delete them (as Kafka would) before they are read.
      await admin.createTopics([...sources, ...Object.keys(spec.outputs)].map((t) => ({ name: t, partitions: 1, configs: { 'retention.ms': '-1' } })))
      const app = new KafkaStreams(buildGolden(name), {
        'application.id': prefix,
        'bootstrap.servers': brokers,
        'default.key.serde': Serdes.String(),
        'default.value.serde': Serdes.String(),
        'commit.interval.ms': 100,
      })
      await app.start()
      try {
        await producer.send(spec.steps.map((s) => ({ topic: s.topic, key: s.key, value: s.value, timestamp: s.timestamp })))
        for (const [topic, type] of Object.entries(spec.outputs)) {
          const expected = golden.topologies[name]!.outputs[topic]!
          const got = await readTopic(topic, type, expected.length, 40_000)
          expect(got, `${topic} (application ${app.state}${app.error ? `: ${String(app.error)}` : ''})`).toEqual({ records: expected, end: expected.length })
        }
      } finally {
        await app.close()
      }
      expect(app.state).toBe('NOT_RUNNING')
    })
  }
})
