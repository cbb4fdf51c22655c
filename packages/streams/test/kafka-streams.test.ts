import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startBroker, type Broker } from '@tidelog/broker'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { KafkaStreams } from '@tidelog/streams'
import { wordCount, wordCountScenario } from './helpers/wordcount.js'

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

  it('refuses a missing application.id and an unimplemented guarantee with StreamsException', () => {
    const t = wordCount().build()
    expect(() => new KafkaStreams(t, { 'bootstrap.servers': brokers })).toThrow(/application.id/)
    expect(() => new KafkaStreams(t, { 'application.id': 'x', 'bootstrap.servers': brokers, 'processing.guarantee': 'exactly_once_v2' as never })).toThrow(/not implemented/)
  })
})
