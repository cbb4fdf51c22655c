import { Consumer, type Batch } from '@tidelog/consumer'
import { Producer, type ProducerRecord } from '@tidelog/producer'
import { COPIER_PRODUCER, FETCH, eachOf, type ClientAdapter, type ProducerAdapter, type Rec } from './adapter.js'
import type { ProducerSettings } from './jobs.js'

function producerOf(bootstrap: string, topic: string, s: ProducerSettings, transactionalId?: string) {
  const p = new Producer({
    brokers: [bootstrap],
    clientId: 'tidelog-bench',
    acks: s.acks === -1 ? 'all' : 1,
    idempotent: s.idempotent,
    compression: s.compression,
    lingerMs: s.lingerMs,
    batchBytes: s.batchBytes,
    ...(s.maxInFlight === 0 ? {} : { maxInFlight: s.maxInFlight }),
    transactionalId,
  })
  const adapter: ProducerAdapter = {
    prepare: (records: Rec[]): ProducerRecord[] => records.map((r) => ({ topic, key: r.key, value: r.value })),
    send: (prepared) => p.send(prepared as ProducerRecord[]),
    close: () => p.close(),
  }
  return { p, adapter }
}

export const tidelog: ClientAdapter = {
  async producer(bootstrap, topic, s) {
    const { p, adapter } = producerOf(bootstrap, topic, s)
    await p.connect()
    return adapter
  },

  async transactionalProducer(bootstrap, topic, s, transactionalId) {
    const { p, adapter } = producerOf(bootstrap, topic, s, transactionalId)
    await p.initTransactions()
    return { ...adapter, begin: async () => p.beginTransaction(), commit: () => p.commitTransaction() }
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
    const each = style === 'each6' || style === 'slow6' ? eachOf(style, onValue) : undefined
    const loop = (
      style === 'batch6'
        ? c.run({
            partitionsConsumedConcurrently: 6,
            eachBatch: ({ batch }) => {
              for (const m of batch.messages) onValue(m.value!, batch.partition)
            },
          })
        : each !== undefined
          ? c.run({ partitionsConsumedConcurrently: 6, eachMessage: ({ partition, message }) => each(partition, message.value!) })
          : (async () => {
              for await (const m of c) onValue(m.value!, m.partition)
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

  // TransactionalMessageCopier's loop on tidelog's SDK: the partition assigned by hand, a
  // transaction per "poll" of at most txnSize records, offsets sent by group id.
  async copier(o, progress) {
    const c = new Consumer({
      brokers: [o.bootstrap],
      clientId: 'tidelog-bench',
      groupId: o.groupId,
      isolationLevel: 'read_committed',
      autoOffsetReset: 'earliest',
      autoCommit: false,
      fetchMinBytes: FETCH.minBytes,
      fetchMaxWaitMs: FETCH.maxWaitMs,
      fetchMaxBytes: FETCH.maxBytes,
      maxPartitionFetchBytes: FETCH.maxPartitionBytes,
    })
    const p = new Producer({ brokers: [o.bootstrap], clientId: 'tidelog-bench', transactionalId: o.transactionalId, ...(o.producerDefaults === true ? {} : COPIER_PRODUCER) })
    await p.initTransactions()
    c.assign([{ topic: o.input, partition: 0 }])
    const group = c.groupMetadata()
    let stopping = false
    progress.started()
    const batches = c.batches()
    let carry: Batch['messages'] = []
    const loop = (async () => {
      let copied = 0
      while (!stopping && copied < o.records) {
        // A poll: up to txnSize records (fewer only at the end of the input), from what the
        // last one left and the next fetched batches.
        const want = Math.min(o.txnSize, o.records - copied)
        const take = carry.splice(0, want)
        while (take.length < want) {
          const next = await batches.next()
          if (next.done === true) break
          const room = want - take.length
          take.push(...next.value.messages.slice(0, room))
          carry = next.value.messages.slice(room)
        }
        if (take.length === 0) break
        p.beginTransaction()
        for (const m of take) void p.send({ topic: o.output, partition: 0, key: m.key, value: m.value }).catch(() => undefined)
        await p.sendOffsetsToTransaction([{ topic: o.input, partition: 0, offset: take[take.length - 1]!.offset + 1n }], group)
        await p.commitTransaction()
        copied += take.length
        progress.committed(take.length)
      }
    })()
    let failure: unknown
    loop.catch((e: unknown) => (failure = e))
    return {
      async close() {
        stopping = true
        await c.close()
        await loop.catch(() => undefined)
        await p.close()
        if (failure !== undefined) throw failure
      },
    }
  },
}
