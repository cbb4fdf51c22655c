import { Kafka, logLevel } from 'kafkajs'
import { afterEach, describe, expect, it } from 'vitest'
import { kafkajsVersion, recordsPeers } from '../../../../test/helpers/peers.js'
import { type Broker, createLogger, startBroker } from '../../src/index.js'
import { tempDir } from '../helpers/tmp.js'

const brokers: Broker[] = []
afterEach(async () => {
  for (const b of brokers.splice(0)) await b.close()
})

async function start(opts: Parameters<typeof startBroker>[0] = {}) {
  const b = await startBroker({ port: 0, dataDir: tempDir(), ...(process.env.BROKER_DEBUG ? { logger: createLogger('debug') } : {}), ...opts })
  brokers.push(b)
  return b
}

function client(b: Broker) {
  return new Kafka({ clientId: 'tidelog-test', brokers: [`127.0.0.1:${b.port}`], logLevel: logLevel.NOTHING, retry: { retries: 3 } })
}

describe('kafkajs 2.2.4 against the broker', () => {
  recordsPeers(() => [{ peer: 'kafkajs', version: kafkajsVersion() }])
  it('produces with acks=all, then reads the offsets back through ListOffsets', async () => {
    const b = await start()
    const kafka = client(b)
    const producer = kafka.producer({ allowAutoTopicCreation: true })
    await producer.connect()
    const first = await producer.send({ topic: 'events', acks: -1, messages: [{ key: 'k1', value: 'v1' }, { key: 'k2', value: 'v2' }] })
    expect(first[0]).toMatchObject({ topicName: 'events', partition: 0, errorCode: 0, baseOffset: '0' })
    const second = await producer.send({ topic: 'events', messages: [{ value: 'v3' }] })
    expect(second[0]!.baseOffset).toBe('2')
    await producer.disconnect()

    const admin = kafka.admin()
    await admin.connect()
    expect(await admin.fetchTopicOffsets('events')).toEqual([{ partition: 0, offset: '3', high: '3', low: '0' }])
    const meta = await admin.fetchTopicMetadata({ topics: ['events'] })
    expect(meta.topics[0]).toMatchObject({ name: 'events', partitions: [{ partitionId: 0, leader: b.nodeId }] })
    await admin.disconnect()
  })
})
