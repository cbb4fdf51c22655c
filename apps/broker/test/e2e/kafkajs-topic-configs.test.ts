/**
 * kafkajs' admin with topic configs: describeConfigs of a topic (with synonyms) and
 * of the broker, and createTopics refused with Kafka's INVALID_CONFIG message.
 */
import { Kafka, logLevel } from 'kafkajs'
import { afterEach, describe, expect, it } from 'vitest'
import { kafkajsVersion, recordsPeers } from '../../../../test/helpers/peers.js'
import { startBroker } from '../../src/index.js'
import { tempDir } from '../helpers/tmp.js'

const cleanup: (() => Promise<void>)[] = []
afterEach(async () => {
  for (const f of cleanup.splice(0).reverse()) await f().catch(() => {})
})

async function setup() {
  const b = await startBroker({ port: 0, dataDir: tempDir(), logLevel: 'error', segmentBytes: 8 * 1024 * 1024 })
  cleanup.push(() => b.close())
  const kafka = new Kafka({ clientId: 'configs-test', brokers: [`127.0.0.1:${b.port}`], logLevel: logLevel.NOTHING, retry: { retries: 0 } })
  const admin = kafka.admin()
  await admin.connect()
  cleanup.push(() => admin.disconnect())
  return { b, admin }
}

describe('kafkajs admin and topic configs', () => {
  recordsPeers(() => [{ peer: 'kafkajs', version: kafkajsVersion() }])

  it('describeConfigs reports values, defaults and synonyms of a topic and of the broker', async () => {
    const { b, admin } = await setup()
    await admin.createTopics({ topics: [{ topic: 't', configEntries: [{ name: 'max.message.bytes', value: '2000000' }] }] })
    const { resources } = await admin.describeConfigs({ resources: [{ type: 2, name: 't' }, { type: 4, name: String(b.nodeId) }], includeSynonyms: true })
    const topic = new Map(resources.find((r) => r.resourceType === 2)!.configEntries.map((e) => [e.configName, e]))
    expect(topic.size).toBe(37)
    expect(topic.get('max.message.bytes')).toMatchObject({
      configValue: '2000000',
      isDefault: false,
      configSynonyms: [
        { configName: 'max.message.bytes', configValue: '2000000', configSource: 1 },
        { configName: 'message.max.bytes', configValue: '1048588', configSource: 5 },
      ],
    })
    expect(topic.get('segment.bytes')).toMatchObject({
      configValue: String(8 * 1024 * 1024),
      configSynonyms: [
        { configName: 'log.segment.bytes', configValue: String(8 * 1024 * 1024), configSource: 4 },
        { configName: 'log.segment.bytes', configValue: '1073741824', configSource: 5 },
      ],
    })
    const brokerEntries = new Map(resources.find((r) => r.resourceType === 4)!.configEntries.map((e) => [e.configName, e]))
    // Dynamic in Kafka (KIP-226), so not read-only, as Kafka 4.4 reports it.
    expect(brokerEntries.get('log.segment.bytes')).toMatchObject({ configValue: String(8 * 1024 * 1024), readOnly: false, isDefault: false })
    expect(brokerEntries.get('message.max.bytes')).toMatchObject({ configValue: '1048588', isDefault: true })
  })

  it('createTopics with a bad value fails with INVALID_CONFIG; validateOnly creates nothing', async () => {
    const { admin } = await setup()
    const err = await admin.createTopics({ topics: [{ topic: 'x', configEntries: [{ name: 'compression.type', value: 'brotli' }] }] }).catch((e) => e)
    // kafkajs keeps the error code, not the broker's message (the raw-socket tests check that).
    expect(err.errors?.[0]?.type ?? err.type).toBe('INVALID_CONFIG')
    expect(await admin.createTopics({ validateOnly: true, waitForLeaders: false, topics: [{ topic: 'y', configEntries: [{ name: 'retention.ms', value: '1000' }] }] })).toBe(true)
    expect(await admin.listTopics()).toEqual([])
  })
})
