import { retrying, type KafkaModule } from './types.js'

/** "Producing Messages": send, sendBatch, keys, headers, explicit partitions, both partitioners. */
export async function producerProgram(lib: KafkaModule, brokers: string[], prefix: string) {
  const { Kafka, Partitioners, logLevel, CompressionTypes } = lib
  const kafka = new Kafka({ clientId: 'my-app', brokers, logLevel: logLevel.NOTHING })
  const admin = kafka.admin()
  await admin.connect()
  const topic = `${prefix}-test-topic`
  const other = `${prefix}-other-topic`
  await retrying(() => admin.createTopics({ topics: [{ topic, numPartitions: 3 }, { topic: other, numPartitions: 5 }] }))

  // Idempotent (kafkajs allows it with one request in flight): a retried request is not written
  // twice, so the offsets are deterministic on a fresh cluster too.
  const producer = kafka.producer({ createPartitioner: Partitioners.DefaultPartitioner, idempotent: true, maxInFlightRequests: 1 })
  const events: string[] = []
  producer.on(producer.events.CONNECT, () => events.push('connect'))
  producer.on(producer.events.DISCONNECT, () => events.push('disconnect'))
  let notConnected = ''
  try {
    await producer.send({ topic, messages: [{ value: 'too early' }] })
  } catch (e) {
    notConnected = (e as Error).name
  }
  await producer.connect()
  const sent = await producer.send({
    topic,
    messages: [
      { key: 'key1', value: 'hello world' },
      { key: 'key2', value: 'hey hey!' },
      { key: 'key3', value: 'with headers', headers: { 'correlation-id': '2bfb68bb-893a-423b-a7fa-7b568cad5b67', system: ['a', 'b'] } },
      { value: 'to partition 2', partition: 2 },
      { key: Buffer.from([1, 2, 3]), value: Buffer.from('bytes') },
    ],
  })
  const batch = await producer.sendBatch({
    compression: CompressionTypes.GZIP,
    topicMessages: [
      { topic, messages: Array.from({ length: 20 }, (_, i) => ({ key: `user-${i}`, value: `batch ${i}` })) },
      { topic: other, messages: Array.from({ length: 30 }, (_, i) => ({ key: `order-${i}`, value: `order ${i}`, timestamp: String(1_700_000_000_000 + i) })) },
    ],
  })
  let invalid = ''
  try {
    await producer.send({ topic, messages: [{ key: 'no value' } as never] })
  } catch (e) {
    invalid = `${(e as Error).name}: ${(e as Error).message}`
  }
  await producer.disconnect()

  // kafkajs 1.x's partitioner: the same keys land where kafkajs 1.x put them.
  const legacy = kafka.producer({ createPartitioner: Partitioners.LegacyPartitioner, idempotent: true, maxInFlightRequests: 1 })
  await legacy.connect()
  const legacySent = await legacy.send({ topic: other, messages: Array.from({ length: 30 }, (_, i) => ({ key: `legacy-${i}`, value: String(i) })) })
  await legacy.disconnect()

  const offsets = { [topic]: await admin.fetchTopicOffsets(topic), [other]: await admin.fetchTopicOffsets(other) }
  await admin.deleteTopics({ topics: [topic, other] })
  await admin.disconnect()
  const strip = (r: { topicName: string; partition: number; errorCode: number; baseOffset?: string }[]) =>
    // Sorted: the order of a response's topics and partitions is the broker's, not an API promise.
    r.map(({ topicName, partition, errorCode, baseOffset }) => ({ topicName: topicName.slice(prefix.length), partition, errorCode, baseOffset })).sort((a, b) => a.topicName.localeCompare(b.topicName) || a.partition - b.partition)
  return {
    notConnected,
    sent: strip(sent),
    batch: strip(batch),
    legacy: strip(legacySent),
    invalid: invalid.replaceAll(prefix, ''),
    offsets: Object.values(offsets).map((list) => list.sort((a, b) => a.partition - b.partition)),
    events,
    idempotent: producer.isIdempotent(),
  }
}
