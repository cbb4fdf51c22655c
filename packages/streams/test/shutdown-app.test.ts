import { describe, expect, it } from 'vitest'
import { KafkaStreams, Serdes, StreamsBuilder, type KafkaStreamsState } from '@tidelog/streams'
import { until, useBroker, type TestBroker } from './helpers/broker.js'

const S = Serdes.String()
let t: TestBroker
useBroker('tidelog-streams-shutdown-app-', (b) => (t = b))

function app(topic: string, out: string): KafkaStreams {
  const b = new StreamsBuilder()
  b.stream<string, string>(topic).mapValues((v) => {
    if (v === 'boom') throw new Error('poison record')
    return v.toUpperCase()
  }).to(out)
  return new KafkaStreams(b.build(), { 'application.id': 'shutdown-app', 'bootstrap.servers': t.brokers, 'default.key.serde': S, 'default.value.serde': S, 'commit.interval.ms': 100 })
}

describe('SHUTDOWN_APPLICATION (KIP-671) on the tidelog broker', () => {
  it('one instance\'s handler answering SHUTDOWN_APPLICATION stops every instance: both go PENDING_ERROR then ERROR', async () => {
    await t.admin.createTopics([{ name: 'sa-in', partitions: 2 }, { name: 'sa-out', partitions: 1 }])
    const a = app('sa-in', 'sa-out')
    const b = app('sa-in', 'sa-out')
    const states = new Map<KafkaStreams, KafkaStreamsState[]>([[a, []], [b, []]])
    const handled: unknown[] = []
    for (const s of [a, b]) {
      s.setStateListener((next) => states.get(s)!.push(next))
      s.setUncaughtExceptionHandler((e) => {
        handled.push(e)
        return 'SHUTDOWN_APPLICATION'
      })
    }
    try {
      await a.start()
      await b.start()
      await until('both run with a task each', () => a.state === 'RUNNING' && b.state === 'RUNNING' && [a, b].every((s) => s.metadataForLocalThreads().some((m) => m.activeTasks.length === 1)))
      await t.producer.send([{ topic: 'sa-in', key: 'k1', value: 'fine', partition: 0 }, { topic: 'sa-in', key: 'k2', value: 'fine', partition: 1 }])
      await t.producer.send([{ topic: 'sa-in', key: 'k3', value: 'boom', partition: 0 }])
      await until('both instances are in ERROR', () => a.state === 'ERROR' && b.state === 'ERROR')
      // Only the instance that met the record ran its handler; the other stopped because the group told it to.
      expect(handled).toHaveLength(1)
      expect(String((handled[0] as Error).message)).toMatch(/poison record/)
      const failed = [a, b].find((s) => s.error === handled[0])
      const other = [a, b].find((s) => s !== failed)!
      expect(failed).toBeDefined()
      expect(String((other.error as Error).message)).toMatch(/SHUTDOWN_APPLICATION/)
      for (const s of [a, b]) {
        const seen = states.get(s)!
        expect(seen.slice(-2)).toEqual(['PENDING_ERROR', 'ERROR'])
        expect(seen).not.toContain('NOT_RUNNING')
      }
      // Nothing is left in the group: every member left.
      await until('the group is empty', async () => (await t.admin.describeGroups(['shutdown-app']))[0]?.members.length === 0)
    } finally {
      await a.close()
      await b.close()
    }
  }, 60_000)
})
