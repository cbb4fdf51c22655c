import snappyjs from 'snappyjs'
import kafkajsPackage, { type Message } from 'kafkajs'
import { FETCH, compressionOf, type ClientAdapter, type Rec } from './adapter.js'

// kafkajs is CommonJS; its codec table is only reachable through the default export.
const { CompressionCodecs, CompressionTypes, Kafka, logLevel } = kafkajsPackage

// kafkajs ships no snappy codec; its users register one. snappyjs is the pure-JS one
// (kafkajs-snappy would need a native build), the same library tidelog uses.
CompressionCodecs[CompressionTypes.Snappy] = () => ({
  compress: async (encoder: { buffer: Buffer }) => snappyjs.compress(encoder.buffer),
  decompress: async (buffer: Buffer) => snappyjs.uncompress(buffer),
})

const kafka = (bootstrap: string) => new Kafka({ clientId: 'kafkajs-bench', brokers: [bootstrap], logLevel: logLevel.NOTHING })

export const kafkajs: ClientAdapter = {
  async producer(bootstrap, topic, s) {
    // kafkajs allows idempotence only with one request in flight.
    const p = kafka(bootstrap).producer({
      idempotent: s.idempotent,
      maxInFlightRequests: s.idempotent ? 1 : s.maxInFlight,
      allowAutoTopicCreation: false,
    })
    await p.connect()
    const compression = compressionOf(s.compression, {
      none: CompressionTypes.None,
      gzip: CompressionTypes.GZIP,
      snappy: CompressionTypes.Snappy,
    })
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
      await c.run({
        eachMessage: async ({ message }) => {
          onValue(message.value!)
        },
      })
    }
    return { close: () => c.disconnect() }
  },
}
