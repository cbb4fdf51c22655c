// @confluentinc/kafka-javascript (librdkafka underneath) through its kafkajs-compatible API
// (`KafkaJS`), the one its migration guide points kafkajs users to. Differences from kafkajs it
// documents: acks and compression are per producer, not per send(); the producer batches itself
// (librdkafka's linger.ms and batch.size, set from the settings like Java's); eachBatch batches
// are the library's own (at most js.consumer.max.batch.size records), not the broker's.
import { createRequire } from 'node:module'
import { join } from 'node:path'
import { FETCH, compressionOf, type ClientAdapter, type Rec } from './adapter.js'

interface Msg {
  key: Buffer
  value: Buffer
}
interface Producer {
  connect(): Promise<void>
  send(r: { topic: string; messages: Msg[] }): Promise<unknown>
  disconnect(): Promise<void>
}
interface Consumer {
  connect(): Promise<void>
  subscribe(s: { topics: string[] }): Promise<void>
  run(r: {
    partitionsConsumedConcurrently?: number
    eachMessage?: (p: { message: { value: Buffer | null } }) => Promise<void>
    eachBatch?: (p: { batch: { messages: Array<{ value: Buffer | null }> } }) => Promise<void>
  }): Promise<void>
  disconnect(): Promise<void>
}
interface KafkaJsApi {
  Kafka: new (c: { kafkaJS: Record<string, unknown> }) => {
    producer(c: Record<string, unknown>): Producer
    consumer(c: Record<string, unknown>): Consumer
  }
  logLevel: { NOTHING: number }
  // The runtime object's keys (lib/kafkajs/_producer.js); its .d.ts says Snappy, the code SNAPPY.
  CompressionTypes: { None: string; GZIP: string; SNAPPY: string }
}

export function confluentAdapter(api: KafkaJsApi): ClientAdapter {
  const { Kafka, logLevel, CompressionTypes } = api
  const kafka = (bootstrap: string) => new Kafka({ kafkaJS: { clientId: 'confluent-bench', brokers: [bootstrap], logLevel: logLevel.NOTHING } })
  return {
    async producer(bootstrap, topic, s) {
      const p = kafka(bootstrap).producer({
        kafkaJS: {
          acks: s.acks,
          idempotent: s.idempotent,
          compression: compressionOf(s.compression, { none: CompressionTypes.None, gzip: CompressionTypes.GZIP, snappy: CompressionTypes.SNAPPY }),
          // 0: librdkafka's own default (best.ts).
          ...(s.maxInFlight === 0 ? {} : { maxInFlightRequests: s.maxInFlight }),
          allowAutoTopicCreation: false,
        },
        'linger.ms': s.lingerMs,
        'batch.size': s.batchBytes,
      })
      await p.connect()
      return {
        prepare: (records: Rec[]): Msg[] => records.map((r) => ({ key: r.key, value: r.value })),
        send: (prepared) => p.send({ topic, messages: prepared as Msg[] }),
        close: () => p.disconnect(),
      }
    },

    async consumer(bootstrap, topic, groupId, onValue, style) {
      const c = kafka(bootstrap).consumer({
        kafkaJS: {
          groupId,
          fromBeginning: true,
          minBytes: FETCH.minBytes,
          maxWaitTimeInMs: FETCH.maxWaitMs,
          maxBytes: FETCH.maxBytes,
          maxBytesPerPartition: FETCH.maxPartitionBytes,
        },
      })
      await c.connect()
      await c.subscribe({ topics: [topic] })
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
}

/** The adapter on the package built in `dir` (runtimes.ts, env/peers.ts). */
export function confluentFrom(dir: string): ClientAdapter {
  const lib = createRequire(join(dir, 'package.json'))(dir) as { KafkaJS: KafkaJsApi }
  return confluentAdapter(lib.KafkaJS)
}
