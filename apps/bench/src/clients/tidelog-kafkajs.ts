import { CompressionTypes, Kafka, logLevel, type Message } from '@tidelog/kafkajs'
import { FETCH, compressionOf, type ClientAdapter, type Rec } from './adapter.js'

// @tidelog/kafkajs driven exactly as kafkajs is in ./kafkajs.ts (same options, same calls): the
// kafkajs API on tidelog's clients. Its codecs are built in, so nothing is registered.
const kafka = (bootstrap: string) => new Kafka({ clientId: 'tidelog-kafkajs-bench', brokers: [bootstrap], logLevel: logLevel.NOTHING })

export const tidelogKafkajs: ClientAdapter = {
  async producer(bootstrap, topic, s) {
    const p = kafka(bootstrap).producer({
      idempotent: s.idempotent,
      maxInFlightRequests: s.idempotent ? 1 : s.maxInFlight,
      allowAutoTopicCreation: false,
    })
    await p.connect()
    const compression = compressionOf(s.compression, { none: CompressionTypes.None, gzip: CompressionTypes.GZIP, snappy: CompressionTypes.Snappy })
    return {
      prepare: (records: Rec[]): Message[] => records.map((r) => ({ key: r.key, value: r.value })),
      send: (prepared) => p.send({ topic, messages: prepared as Message[], acks: s.acks, compression }),
      close: () => p.disconnect(),
    }
  },

  async consumer(bootstrap, topic, groupId, onValue, style) {
    const c = kafka(bootstrap).consumer({
      groupId,
      minBytes: FETCH.minBytes,
      maxWaitTimeInMs: FETCH.maxWaitMs,
      maxBytes: FETCH.maxBytes,
      maxBytesPerPartition: FETCH.maxPartitionBytes,
    })
    await c.connect()
    await c.subscribe({ topic, fromBeginning: true })
    if (style === 'batch6') {
      await c.run({
        partitionsConsumedConcurrently: 6,
        eachBatch: async ({ batch }) => {
          for (const m of batch.messages) onValue(m.value!)
        },
      })
    } else {
      await c.run({ eachMessage: async ({ message }) => onValue(message.value!) })
    }
    return { close: () => c.disconnect() }
  },
}
