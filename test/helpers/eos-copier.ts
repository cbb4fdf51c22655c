/**
 * An exactly-once copier: consume-transform-produce in transactions (KIP-98), committing the
 * consumed offsets with the output (KIP-447). Killed or aborted at any point and restarted
 * with the same transactionalId, the output holds every input record once, for
 * read_committed readers. The README's runnable example, and what the interop tests run.
 */
import { Consumer } from '@tidelog/consumer'
import type { Logger } from '@tidelog/client'
import { Producer } from '@tidelog/producer'

export interface CopierOptions {
  brokers: string[]
  input: string
  output: string
  groupId: string
  transactionalId: string
  /** Stop after this many committed transactions (for tests), else run until `signal` aborts. */
  maxTransactions?: number
  /** Abort, instead of commit, the transactions whose number this returns true for. */
  abortWhen?: (n: number) => boolean
  /** Leave the n-th transaction open and stop as if killed: no commit, no abort. */
  dieAt?: number
  /** At most this many records per transaction (the rest of a fetched batch is read again). Default 100. */
  recordsPerTransaction?: number
  signal?: AbortSignal
  logger?: Logger
}

export async function runCopier(o: CopierOptions): Promise<{ committed: number; aborted: number }> {
  const consumer = new Consumer({ brokers: o.brokers, groupId: o.groupId, isolationLevel: 'read_committed', autoOffsetReset: 'earliest', autoCommit: false, logger: o.logger })
  const producer = new Producer({ brokers: o.brokers, transactionalId: o.transactionalId, logger: o.logger })
  let committed = 0
  let aborted = 0
  let killed = false
  try {
    await producer.initTransactions()
    await consumer.subscribe([o.input])
    let n = 0
    let busy = false
    // Asked to stop while waiting for records: closing the consumer ends the loop.
    o.signal?.addEventListener('abort', () => void (busy ? undefined : consumer.close()), { once: true })
    for await (const batch of consumer.batches()) {
      busy = true
      n++
      o.logger?.debug({ n, partition: batch.partition, from: String(batch.messages[0]?.offset), count: batch.messages.length }, 'copier: transaction')
      producer.beginTransaction()
      const records = batch.messages.slice(0, o.recordsPerTransaction ?? 100)
      const next = records.length < batch.messages.length ? batch.messages[records.length]!.offset : batch.nextOffset
      // Same partition in, same partition out: per-partition order carries over.
      for (const m of records) void producer.send({ topic: o.output, partition: batch.partition, key: m.key, value: m.value }).catch(() => undefined)
      await producer.sendOffsetsToTransaction([{ topic: batch.topic, partition: batch.partition, offset: next }], consumer.groupMetadata())
      if (n === o.dieAt) {
        killed = true
        break
      }
      if (o.abortWhen?.(n) === true) {
        await producer.abortTransaction()
        aborted++
        // The aborted records are read again from the last committed offset.
        consumer.seek({ topic: batch.topic, partition: batch.partition, offset: batch.messages[0]!.offset })
      } else {
        await producer.commitTransaction()
        committed++
        if (next !== batch.nextOffset) consumer.seek({ topic: batch.topic, partition: batch.partition, offset: next })
      }
      busy = false
      o.logger?.debug({ n, committed, aborted }, 'copier: transaction done')
      if (committed === o.maxTransactions || o.signal?.aborted === true) break
    }
  } finally {
    // A kill: connections dropped with the transaction open; the next initTransactions() ends it.
    await producer.close(killed ? { timeoutMs: 0 } : {})
    await consumer.close()
  }
  return { committed, aborted }
}
