/**
 * The transactional clients the checker writes with, behind one small interface: kafkajs (a
 * client no one here wrote) and our own @tidelog/producer. A session is a producer whose
 * transactional id is registered (initTransactions done, so it has fenced its predecessors).
 */
import { Kafka, logLevel, type Producer as KafkajsProducer, type Transaction } from 'kafkajs'
import { Producer, TransactionAbortableError } from '@tidelog/producer'

export type WriterClient = 'kafkajs' | 'tidelog'

/** The client id our producer's writers send, so a fault proxy can pick their connections. */
export const TIDELOG_WRITER_CLIENT_ID = 'txn-checker-tidelog'

export interface TxnSession {
  begin(): Promise<void>
  /** Sends one record per entry and resolves once all are acknowledged. */
  send(topic: string, records: readonly { partition: number; value: string }[]): Promise<void>
  commit(): Promise<void>
  abort(): Promise<void>
  /** Whether an error from commit() means the transaction did not commit and can be aborted (Java's TransactionAbortableException). */
  isAbortable(error: unknown): boolean
  /** Lets go of the producer without ending its transaction (a crash, as far as the broker can tell); never throws. */
  drop(): Promise<void>
  close(): Promise<void>
}

export type SessionFactory = (transactionalId: string, transactionTimeoutMs: number) => Promise<TxnSession>

export function sessionFactory(client: WriterClient, bootstrap: string): SessionFactory {
  return client === 'kafkajs' ? kafkajsSessions(bootstrap) : tidelogSessions(bootstrap)
}

function kafkajsSessions(bootstrap: string): SessionFactory {
  const kafka = new Kafka({ brokers: [bootstrap], clientId: 'txn-checker', logLevel: logLevel.NOTHING, retry: { retries: 8, initialRetryTime: 200, maxRetryTime: 3_000 } })
  return async (id, timeoutMs) => {
    const p: KafkajsProducer = kafka.producer({ transactionalId: id, idempotent: true, maxInFlightRequests: 1, transactionTimeout: timeoutMs })
    await p.connect()
    let txn: Transaction | undefined
    // kafkajs asks for its producer id on the first transaction(), not on connect(): a session is
    // registered only once that first InitProducerId is done, so it is done here.
    const first = await p.transaction()
    let pending: Transaction | undefined = first
    const current = () => {
      if (txn === undefined) throw new Error('no transaction begun')
      return txn
    }
    return {
      async begin() {
        txn = pending ?? (await p.transaction())
        pending = undefined
      },
      async send(topic, records) {
        await current().sendBatch({ topicMessages: records.map((r) => ({ topic, messages: [{ partition: r.partition, value: r.value }] })) })
      },
      commit: () => current().commit(),
      abort: () => current().abort(),
      isAbortable: () => false,
      drop: async () => {},
      close: () => p.disconnect().catch(() => {}),
    } satisfies TxnSession
  }
}

function tidelogSessions(bootstrap: string): SessionFactory {
  return async (id, timeoutMs) => {
    // Short request timeouts: a stalled or half-closed connection must be given up in seconds, not 30.
    const p = new Producer({ brokers: bootstrap, clientId: TIDELOG_WRITER_CLIENT_ID, transactionalId: id, transactionTimeoutMs: timeoutMs, requestTimeoutMs: 5_000, maxBlockMs: 60_000, deliveryTimeoutMs: 60_000 })
    try {
      await p.initTransactions()
    } catch (e) {
      await p.close({ timeoutMs: 0 }).catch(() => {})
      throw e
    }
    return {
      async begin() {
        p.beginTransaction()
      },
      async send(topic, records) {
        await p.send(records.map((r) => ({ topic, partition: r.partition, value: r.value })))
      },
      commit: () => p.commitTransaction(),
      abort: () => p.abortTransaction(),
      isAbortable: (e) => e instanceof TransactionAbortableError,
      // Closing would abort the open transaction (Java's graceful close); a crash leaves it to the broker.
      drop: () => p.close({ timeoutMs: 0 }).catch(() => {}),
      close: () => p.close({ timeoutMs: 10_000 }).catch(() => {}),
    } satisfies TxnSession
  }
}
