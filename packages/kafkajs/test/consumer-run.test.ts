import { describe, expect, it } from 'vitest'
import { ConfigResourceTypes, Kafka, KafkaJSAggregateError, KafkaJSCreateTopicError, KafkaJSError, logLevel } from '@tidelog/kafkajs'
import { cleanup, startTestBroker } from '../../consumer/test/helpers/broker.js'
import { until } from '../../../test/kafkajs-compat/types.js'

async function setup(partitions: number, perPartition: number) {
  const { brokers } = await startTestBroker(1)
  const kafka = new Kafka({ clientId: 'run-test', brokers, logLevel: logLevel.NOTHING, retry: { initialRetryTime: 50, retries: 2 } })
  const admin = kafka.admin()
  await admin.connect()
  cleanup(() => admin.disconnect())
  await admin.createTopics({ topics: [{ topic: 't', numPartitions: partitions }] })
  const producer = kafka.producer()
  await producer.connect()
  const messages = []
  for (let p = 0; p < partitions; p++) for (let i = 0; i < perPartition; i++) messages.push({ partition: p, value: `${p}-${i}` })
  await producer.send({ topic: 't', messages })
  await producer.disconnect()
  return { kafka, admin }
}

describe('@tidelog/kafkajs consumer.run', () => {
  it('a throwing eachMessage gets the same message again: nothing is skipped, commits stop short of it', async () => {
    const { kafka, admin } = await setup(1, 10)
    const consumer = kafka.consumer({ groupId: 'retry', maxWaitTimeInMs: 100 })
    cleanup(() => consumer.disconnect())
    await consumer.connect()
    await consumer.subscribe({ topic: 't', fromBeginning: true })
    const attempts: string[] = []
    let failures = 0
    await consumer.run({
      eachMessage: async ({ message }) => {
        attempts.push(message.offset)
        if (message.offset === '4' && failures < 2) {
          failures++
          throw new Error('handler failed')
        }
      },
    })
    await until(() => attempts.includes('9'), 'the last message')
    // 0-3 once, 4 three times (two failures, then success), 5-9 once: in order, none lost.
    expect(attempts).toEqual(['0', '1', '2', '3', '4', '4', '4', '5', '6', '7', '8', '9'])
    await consumer.stop()
    const [committed] = await admin.fetchOffsets({ groupId: 'retry', topics: ['t'] })
    expect(committed!.partitions).toEqual([{ partition: 0, offset: '10', metadata: null }])
  })

  it('past retry.retries failures, CRASH fires; restartOnFailure false stops the consumer with the failed message uncommitted', async () => {
    const { brokers } = await startTestBroker(1)
    const kafka = new Kafka({ brokers, logLevel: logLevel.NOTHING })
    const admin = kafka.admin()
    cleanup(() => admin.disconnect())
    await admin.createTopics({ topics: [{ topic: 'c', numPartitions: 1 }] })
    const producer = kafka.producer()
    await producer.connect()
    await producer.send({ topic: 'c', messages: [{ value: 'a' }, { value: 'poison' }, { value: 'c' }] })
    await producer.disconnect()
    const consumer = kafka.consumer({ groupId: 'crash', maxWaitTimeInMs: 100, retry: { initialRetryTime: 20, retries: 1, restartOnFailure: async () => false } })
    cleanup(() => consumer.disconnect())
    const crashes: { restart: boolean; name: string }[] = []
    let stopped = false
    consumer.on(consumer.events.CRASH, (e) => crashes.push({ restart: e.payload.restart, name: e.payload.error.name }))
    consumer.on(consumer.events.STOP, () => (stopped = true))
    await consumer.connect()
    await consumer.subscribe({ topic: 'c', fromBeginning: true })
    await consumer.run({
      eachMessage: async ({ message }) => {
        if (message.value!.toString() === 'poison') throw new Error('cannot handle')
      },
    })
    await until(() => stopped, 'the consumer to stop')
    expect(crashes).toEqual([{ restart: false, name: 'Error' }])
    const [committed] = await admin.fetchOffsets({ groupId: 'crash', topics: ['c'] })
    expect(committed!.partitions[0]!.offset).toBe('1')
  })

  it('partitionsConsumedConcurrently: a partition whose handler is stuck does not stall the others', async () => {
    const { kafka } = await setup(3, 200)
    const consumer = kafka.consumer({ groupId: 'concurrent', maxWaitTimeInMs: 100 })
    cleanup(() => consumer.disconnect())
    await consumer.connect()
    await consumer.subscribe({ topics: ['t'], fromBeginning: true })
    let release!: () => void
    const stuck = new Promise<void>((r) => (release = r))
    const counts = [0, 0, 0]
    await consumer.run({
      partitionsConsumedConcurrently: 3,
      eachMessage: async ({ partition }) => {
        if (partition === 0) await stuck
        counts[partition]!++
      },
    })
    await until(() => counts[1] === 200 && counts[2] === 200, 'partitions 1 and 2 while 0 is stuck')
    expect(counts[0]).toBe(0)
    release()
    await until(() => counts[0] === 200, 'partition 0 once released')
  })

  it('admin errors carry kafkajs classes, Kafka types and retriable flags', async () => {
    const { admin } = await setup(1, 1)
    const err = await admin.createTopics({ topics: [{ topic: 'bad', numPartitions: 0 }] }).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(KafkaJSAggregateError)
    const inner = (err as KafkaJSAggregateError).errors[0] as KafkaJSCreateTopicError
    expect(inner).toBeInstanceOf(KafkaJSCreateTopicError)
    expect(inner).toBeInstanceOf(KafkaJSError)
    expect({ name: inner.name, type: inner.type, topic: inner.topic, retriable: inner.retriable }).toEqual({ name: 'KafkaJSCreateTopicError', type: 'INVALID_PARTITIONS', topic: 'bad', retriable: false })

    // alterConfigs answers as kafkajs 2.2.4 does: one entry per resource, error code 0.
    await admin.createTopics({ topics: [{ topic: 'cfg', numPartitions: 1 }] })
    const alter = await admin.alterConfigs({ validateOnly: false, resources: [{ type: ConfigResourceTypes.TOPIC, name: 'cfg', configEntries: [{ name: 'retention.ms', value: '3600000' }] }] })
    expect(alter.resources).toEqual([{ errorCode: 0, errorMessage: null, resourceName: 'cfg', resourceType: ConfigResourceTypes.TOPIC }])
    const described = await admin.describeConfigs({ includeSynonyms: false, resources: [{ type: ConfigResourceTypes.TOPIC, name: 'cfg', configNames: ['retention.ms'] }] })
    expect(described.resources[0]!.configEntries.map((e) => [e.configName, e.configValue])).toEqual([['retention.ms', '3600000']])
    // kafkajs' own argument check comes first: a filter without an operation.
    await expect(admin.describeAcls({} as never)).rejects.toMatchObject({ name: 'KafkaJSNonRetriableError', message: 'Invalid operation type undefined', retriable: false })
    await expect(admin.listPartitionReassignments({ topics: [{ topic: 'cfg', partitions: [-1] }] })).rejects.toMatchObject({ name: 'KafkaJSNonRetriableError', retriable: false })
  })
})
