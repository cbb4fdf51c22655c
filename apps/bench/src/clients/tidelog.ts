import { Consumer } from '@tidelog/consumer'
import { Producer, type ProducerRecord } from '@tidelog/producer'
import { FETCH, type ClientAdapter, type Rec } from './adapter.js'

export const tidelog: ClientAdapter = {
  async producer(bootstrap, topic, s) {
    const p = new Producer({
      brokers: [bootstrap],
      clientId: 'tidelog-bench',
      acks: s.acks === -1 ? 'all' : 1,
      idempotent: s.idempotent,
      compression: s.compression,
      lingerMs: s.lingerMs,
      batchBytes: s.batchBytes,
      maxInFlight: s.maxInFlight,
    })
    await p.connect()
    return {
      prepare: (records: Rec[]): ProducerRecord[] => records.map((r) => ({ topic, key: r.key, value: r.value })),
      send: (prepared) => p.send(prepared as ProducerRecord[]),
      close: () => p.close(),
    }
  },

  async consumer(bootstrap, topic, groupId, onValue, style) {
    const c = new Consumer({
      brokers: [bootstrap],
      clientId: 'tidelog-bench',
      groupId,
      autoOffsetReset: 'earliest',
      fetchMinBytes: FETCH.minBytes,
      fetchMaxWaitMs: FETCH.maxWaitMs,
      fetchMaxBytes: FETCH.maxBytes,
      maxPartitionFetchBytes: FETCH.maxPartitionBytes,
    })
    await c.subscribe([topic])
    let failure: unknown
    const loop = (
      style === 'batch6'
        ? c.run({
            partitionsConsumedConcurrently: 6,
            eachBatch: ({ batch }) => {
              for (const m of batch.messages) onValue(m.value!)
            },
          })
        : (async () => {
            for await (const m of c) onValue(m.value!)
          })()
    ).catch((e: unknown) => {
      failure = e
    })
    return {
      async close() {
        await c.close()
        await loop
        if (failure !== undefined) throw failure
      },
    }
  },
}
