/**
 * kafkajs (a client no one here wrote) changes configs on the broker: its admin.alterConfigs
 * sends AlterConfigs (33), which replaces the resource's set, for a topic and for this
 * broker; describeConfigs reads the result back with its sources, and a bad value comes
 * back as kafkajs' typed INVALID_CONFIG error.
 */
import { ConfigResourceTypes, Kafka, logLevel } from 'kafkajs'
import { afterEach, describe, expect, it } from 'vitest'
import { kafkajsVersion, recordsPeers } from '../../../test/helpers/peers.js'
import { startBroker } from '../src/index.js'
import { tempDir } from './helpers/tmp.js'

const cleanup: (() => Promise<void>)[] = []
afterEach(async () => {
  for (const f of cleanup.splice(0).reverse()) await f().catch(() => {})
})

describe('kafkajs admin.alterConfigs against the broker', () => {
  recordsPeers(() => [{ peer: 'kafkajs', version: kafkajsVersion() }])
  it('alters a topic and the broker, reads them back with their sources, and gets INVALID_CONFIG for a bad value', async () => {
    const b = await startBroker({ port: 0, dataDir: tempDir(), logLevel: 'error' })
    cleanup.push(() => b.close())
    const kafka = new Kafka({ clientId: 'configs', brokers: [`127.0.0.1:${b.port}`], logLevel: logLevel.NOTHING, retry: { retries: 1, initialRetryTime: 100 } })
    const admin = kafka.admin()
    await admin.connect()
    cleanup.push(() => admin.disconnect())
    await admin.createTopics({ topics: [{ topic: 'kj', numPartitions: 1, configEntries: [{ name: 'segment.ms', value: '60000' }] }] })

    await admin.alterConfigs({ validateOnly: false, resources: [{ type: ConfigResourceTypes.TOPIC, name: 'kj', configEntries: [{ name: 'retention.ms', value: '900000' }] }] })
    await admin.alterConfigs({ validateOnly: false, resources: [{ type: ConfigResourceTypes.BROKER, name: '1', configEntries: [{ name: 'log.retention.bytes', value: '123456789' }] }] })

    const { resources } = await admin.describeConfigs({
      includeSynonyms: true,
      resources: [
        { type: ConfigResourceTypes.TOPIC, name: 'kj', configNames: ['retention.ms', 'segment.ms', 'retention.bytes'] },
        { type: ConfigResourceTypes.BROKER, name: '1', configNames: ['log.retention.bytes'] },
      ],
    })
    const topic = new Map(resources[0]!.configEntries.map((e) => [e.configName, e]))
    // AlterConfigs replaced the whole set: segment.ms is back to its default.
    expect(topic.get('retention.ms')).toMatchObject({ configValue: '900000', isDefault: false, configSource: 1 })
    expect(topic.get('segment.ms')).toMatchObject({ configValue: '604800000', configSource: 5 })
    expect(topic.get('retention.bytes')).toMatchObject({ configValue: '123456789', configSource: 2 })
    expect(resources[1]!.configEntries[0]).toMatchObject({ configName: 'log.retention.bytes', configValue: '123456789', readOnly: false, configSource: 2 })

    const err = await admin
      .alterConfigs({ validateOnly: false, resources: [{ type: ConfigResourceTypes.TOPIC, name: 'kj', configEntries: [{ name: 'retention.ms', value: 'later' }] }] })
      .then(() => undefined, (e: unknown) => e as { type?: string; message: string })
    expect(err?.type).toBe('INVALID_CONFIG')
  })
})
