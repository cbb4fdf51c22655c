import type kafkajsPackage from 'kafkajs'
import type { Message } from 'kafkajs'
import { FETCH, compressionOf, eachOf, type ClientAdapter, type ProducerAdapter, type Rec } from './adapter.js'

/** What the adapter uses of a kafkajs-API module: kafkajs itself or @tidelog/kafkajs. */
export type KafkajsApi = Pick<typeof kafkajsPackage, 'Kafka' | 'CompressionTypes' | 'logLevel'>

/**
 * The adapter for a client with kafkajs' API, so that kafkajs and @tidelog/kafkajs are driven
 * by the very same calls and options (issue 13: the facade against kafkajs).
 */
export function kafkajsApiAdapter(lib: KafkajsApi, clientId: string): ClientAdapter {
  const { CompressionTypes, Kafka, logLevel } = lib
  const kafka = (bootstrap: string) => new Kafka({ clientId, brokers: [bootstrap], logLevel: logLevel.NOTHING })
  const prepare = (records: Rec[]): Message[] => records.map((r) => ({ key: r.key, value: r.value }))
  return {
    async producer(bootstrap, topic, s) {
      // kafkajs allows idempotence only with one request in flight.
      const p = kafka(bootstrap).producer({
        idempotent: s.idempotent,
        // 0: kafkajs' own default (unbounded; best.ts).
        maxInFlightRequests: s.idempotent ? 1 : s.maxInFlight === 0 ? undefined : s.maxInFlight,
        allowAutoTopicCreation: false,
      })
      await p.connect()
      const compression = compressionOf(s.compression, { none: CompressionTypes.None, gzip: CompressionTypes.GZIP, snappy: CompressionTypes.Snappy })
      return {
        prepare,
        send: (prepared) => p.send({ topic, messages: prepared as Message[], acks: s.acks, compression }),
        close: () => p.disconnect(),
      }
    },

    async transactionalProducer(bootstrap, topic, s, transactionalId) {
      if (s.compression !== 'none') throw new Error('transactional runs are uncompressed (@tidelog/kafkajs applies no per-call compression in a transaction)')
      const p = kafka(bootstrap).producer({ transactionalId, idempotent: true, maxInFlightRequests: 1, allowAutoTopicCreation: false })
      await p.connect()
      let txn: Awaited<ReturnType<typeof p.transaction>> | undefined
      const adapter: ProducerAdapter = {
        prepare,
        send: (prepared) => txn!.send({ topic, messages: prepared as Message[], acks: -1 }),
        close: () => p.disconnect(),
        begin: async () => void (txn = await p.transaction()),
        commit: () => txn!.commit(),
      }
      return adapter
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
            for (const m of batch.messages) onValue(m.value!, batch.partition)
          },
        })
      } else if (style === 'each6' || style === 'slow6') {
        const each = eachOf(style, onValue)
        await c.run({ partitionsConsumedConcurrently: 6, eachMessage: async ({ partition, message }) => each(partition, message.value!) })
      } else {
        await c.run({ eachMessage: async ({ partition, message }) => onValue(message.value!, partition) })
      }
      return { close: () => c.disconnect() }
    },

    // kafkajs' documented eachBatch loop: a transaction per at most txnSize records of a batch,
    // the batch's offsets sent with it; the clock starts at the first batch (after the join).
    // kafkajs has no batch.size: a send() call is one batch per partition.
    async copier(o, progress) {
      const k = kafka(o.bootstrap)
      const p = k.producer({ transactionalId: o.transactionalId, idempotent: true, maxInFlightRequests: 1, allowAutoTopicCreation: false })
      await p.connect()
      const c = k.consumer({ groupId: o.groupId, readUncommitted: false, minBytes: FETCH.minBytes, maxWaitTimeInMs: FETCH.maxWaitMs, maxBytes: FETCH.maxBytes, maxBytesPerPartition: FETCH.maxPartitionBytes })
      await c.connect()
      await c.subscribe({ topic: o.input, fromBeginning: true })
      let started = false
      await c.run({
        autoCommit: false,
        eachBatchAutoResolve: false,
        eachBatch: async ({ batch, resolveOffset, heartbeat, isRunning }) => {
          if (!started) {
            started = true
            progress.started()
          }
          for (let i = 0; i < batch.messages.length && isRunning(); i += o.txnSize) {
            const slice = batch.messages.slice(i, i + o.txnSize)
            const last = slice[slice.length - 1]!.offset
            const txn = await p.transaction()
            await txn.send({ topic: o.output, acks: -1, messages: slice.map((m) => ({ key: m.key, value: m.value, partition: 0 })) })
            await txn.sendOffsets({ consumerGroupId: o.groupId, topics: [{ topic: batch.topic, partitions: [{ partition: batch.partition, offset: (BigInt(last) + 1n).toString() }] }] })
            await txn.commit()
            resolveOffset(last)
            progress.committed(slice.length)
            await heartbeat()
          }
        },
      })
      return {
        async close() {
          await c.disconnect()
          await p.disconnect()
        },
      }
    },
  }
}
