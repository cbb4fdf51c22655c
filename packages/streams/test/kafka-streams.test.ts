import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startBroker, type Broker } from '@tidelog/broker'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Admin } from '@tidelog/client'
import { Producer } from '@tidelog/producer'
import { KafkaStreams, Serdes, StreamsBuilder } from '@tidelog/streams'
import { waitForState, wordCount, wordCountScenario } from './helpers/wordcount.js'

let broker: Broker
let dataDir: string
let brokers: string[]

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'tidelog-streams-'))
  broker = await startBroker({ port: 0, dataDir })
  brokers = [`127.0.0.1:${broker.port}`]
})

afterAll(async () => {
  await broker?.close()
  rmSync(dataDir, { recursive: true, force: true })
})

describe('KafkaStreams on the tidelog broker (at_least_once)', () => {
  it('word count: creates the repartition and compacted changelog topics, counts, and restores the store from the changelog after a restart', async () => {
    await wordCountScenario(brokers, 'wc-app')
  })

  it('a processor that throws moves the instance to PENDING_ERROR then ERROR with the cause, and the broker and close() are unaffected', async () => {
    const admin = new Admin({ brokers })
    const producer = new Producer({ brokers, lingerMs: 0 })
    try {
      await admin.createTopics([{ name: 'boom-in', partitions: 1 }, { name: 'boom-out', partitions: 1 }])
      const b = new StreamsBuilder()
      b.stream<string, string>('boom-in').mapValues((v) => {
        if (v === 'boom') throw new Error('the processor failed on purpose')
        return v
      }).to('boom-out')
      const app = new KafkaStreams(b.build(), { 'application.id': 'boom-app', 'bootstrap.servers': brokers, 'default.key.serde': Serdes.String(), 'default.value.serde': Serdes.String(), 'commit.interval.ms': 100 })
      const states: string[] = []
      app.setStateListener((s) => states.push(s))
      await app.start()
      await producer.send([{ topic: 'boom-in', key: 'k', value: 'ok' }, { topic: 'boom-in', key: 'k', value: 'boom' }])
      await waitForState(app, 'ERROR')
      expect(states.slice(-2)).toEqual(['PENDING_ERROR', 'ERROR'])
      expect(String((app.error as Error).message)).toBe('the processor failed on purpose')
      await app.close()
      expect(app.state).toBe('ERROR')
      expect((await admin.listTopics()).includes('boom-out')).toBe(true)
    } finally {
      await producer.close()
      await admin.close()
    }
  })

  it('refuses a missing application.id, an unknown guarantee and a thread count below 1 with StreamsException', () => {
    const t = wordCount().build()
    expect(() => new KafkaStreams(t, { 'bootstrap.servers': brokers })).toThrow(/application.id/)
    expect(() => new KafkaStreams(t, { 'application.id': 'x', 'bootstrap.servers': brokers, 'processing.guarantee': 'exactly_once' as never })).toThrow('Invalid value exactly_once for configuration processing.guarantee: String must be one of: at_least_once, exactly_once_v2')
    expect(() => new KafkaStreams(t, { 'application.id': 'x', 'bootstrap.servers': brokers, 'num.stream.threads': 0 })).toThrow(/num.stream.threads: Value must be at least 1/)
  })
})
