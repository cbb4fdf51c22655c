import { describe, expect, it } from 'vitest'
import { KafkaStreams, Serdes, StreamsBuilder, type KafkaStreamsState } from '@tidelog/streams'
import { until, useBroker, type TestBroker } from './helpers/broker.js'

const S = Serdes.String()
let t: TestBroker
useBroker('tidelog-streams-shutdown-app-', (b) => (t = b))

/** Only an instance built with `poisoned` fails on the record, so the other can stop only because it was told to. */
function app(topic: string, out: string, poisoned: boolean): KafkaStreams {
  const b = new StreamsBuilder()
  b.stream<string, string>(topic).mapValues((v) => {
    if (poisoned && v === 'boom') throw new Error('poison record')
    return v.toUpperCase()
  }).to(out)
  return new KafkaStreams(b.build(), { 'application.id': 'shutdown-app', 'bootstrap.servers': t.brokers, 'default.key.serde': S, 'default.value.serde': S, 'commit.interval.ms': 100 })
}

describe('SHUTDOWN_APPLICATION (KIP-671) on the tidelog broker', () => {
  it('one instance\'s handler answering SHUTDOWN_APPLICATION stops every instance: both go PENDING_ERROR then ERROR', async () => {
    await t.admin.createTopics([{ name: 'sa-in', partitions: 2 }, { name: 'sa-out', partitions: 1 }])
    const a = app('sa-in', 'sa-out', true)
    const b = app('sa-in', 'sa-out', false)
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
      // On both partitions: whichever a holds, it meets the record.
      await t.producer.send([{ topic: 'sa-in', key: 'k3', value: 'boom', partition: 0 }, { topic: 'sa-in', key: 'k4', value: 'boom', partition: 1 }])
      await until('both instances are in ERROR', () => a.state === 'ERROR' && b.state === 'ERROR')
      // a ran its handler; b stopped only because the group told it to.
      expect(handled).toHaveLength(1)
      expect(String((handled[0] as Error).message)).toMatch(/poison record/)
      expect(a.error).toBe(handled[0])
      expect(String((b.error as Error).message)).toMatch(/SHUTDOWN_APPLICATION/)
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
