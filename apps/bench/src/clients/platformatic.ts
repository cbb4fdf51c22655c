import { Consumer, Producer, type MessageToProduce } from '@platformatic/kafka'
import { FETCH, type ClientAdapter, type Rec } from './adapter.js'

export const platformatic: ClientAdapter = {
  async producer(bootstrap, topic, s) {
    const p = new Producer({
      clientId: 'platformatic-bench',
      bootstrapBrokers: [bootstrap],
      acks: s.acks,
      idempotent: s.idempotent,
      compression: s.compression,
      autocreateTopics: false,
    })
    return {
      prepare: (records: Rec[]): MessageToProduce<Buffer, Buffer, Buffer, Buffer>[] =>
        records.map((r) => ({ topic, key: r.key, value: r.value })),
      send: (prepared) => p.send({ messages: prepared as MessageToProduce<Buffer, Buffer, Buffer, Buffer>[] }),
      close: () => p.close(),
      // With idempotence, concurrent send() calls get their sequence numbers out of order
      // (OUT_OF_ORDER_SEQUENCE_NUMBER from Kafka and the tidelog broker alike): one at a time.
      maxConcurrentSends: s.idempotent ? 1 : undefined,
    }
  },

  async consumer(bootstrap, topic, groupId, onValue) {
    const c = new Consumer({
      clientId: 'platformatic-bench',
      bootstrapBrokers: [bootstrap],
      groupId,
      minBytes: FETCH.minBytes,
      maxWaitTime: FETCH.maxWaitMs,
      maxBytes: FETCH.maxBytes,
      maxBytesPerPartition: FETCH.maxPartitionBytes,
    })
    const stream = await c.consume({ topics: [topic], mode: 'committed', fallbackMode: 'earliest' })
    stream.on('data', (m: { value: Buffer }) => onValue(m.value))
    return {
      async close() {
        await stream.close()
        await c.close()
      },
    }
  },
}
