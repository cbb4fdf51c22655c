import type { Compression, ProducerSettings } from './jobs.js'

export interface Rec {
  key: Buffer
  value: Buffer
}

export interface ProducerAdapter {
  /** Turns records into the client's own message shape, before anything is timed. */
  prepare(records: Rec[]): unknown
  /** Sends what prepare() made and resolves once the broker acknowledged all of it. */
  send(prepared: unknown): Promise<unknown>
  close(): Promise<void>
  /** Concurrent send() calls the client can take with these settings (default: any). */
  maxConcurrentSends?: number
  /** With a transactionalId: send() goes into the transaction begun last. */
  begin?(): Promise<void>
  commit?(): Promise<void>
}

/** Where a copier is: what it reports to the job as it goes. */
export interface CopyProgress {
  /** Called once, just before the first poll (the clock starts). */
  started(): void
  /** Called after each commit with the records it covered. */
  committed(records: number): void
}

export interface CopierOptions {
  bootstrap: string
  input: string
  output: string
  groupId: string
  transactionalId: string
  txnSize: number
  /** Records in the input: the last transaction takes what is left (the Java tool's "remaining"). */
  records: number
  /** The client's own producer defaults instead of COPIER_PRODUCER. */
  producerDefaults?: boolean
}

/** The producer settings TransactionalMessageCopier sets (batch.size 512 "to have multiple inflight requests per transaction"). */
export const COPIER_PRODUCER = { batchBytes: 512, maxInFlight: 5 } as const

export interface ConsumerAdapter {
  close(): Promise<void>
}

/** A Node client under test, through its public API only. */
export interface ClientAdapter {
  producer(bootstrap: string, topic: string, settings: ProducerSettings): Promise<ProducerAdapter>
  /**
   * Joins `groupId` on `topic`, starting at the earliest offset, and calls `onValue` with each
   * record's value through the client's per-message API. Fetch settings are Java's defaults,
   * set explicitly: fetch.min.bytes 1, fetch.max.wait.ms 500, fetch.max.bytes 50 MiB,
   * max.partition.fetch.bytes 1 MiB.
   */
  consumer(bootstrap: string, topic: string, groupId: string, onValue: (value: Buffer, partition?: number) => void, style?: ConsumeStyle): Promise<ConsumerAdapter>
  /** producer() with a transactionalId: the adapter's begin() and commit() are set. */
  transactionalProducer?(bootstrap: string, topic: string, settings: ProducerSettings, transactionalId: string): Promise<ProducerAdapter>
  /** Starts copying `input` to `output` in transactions; close() stops it (after the transaction in hand). */
  copier?(o: CopierOptions, progress: CopyProgress): Promise<ConsumerAdapter>
}

/**
 * How the records are handed over: 'message' (default) through the per-message API; 'batch6'
 * through run() with eachBatch and partitionsConsumedConcurrently 6 (tidelog and kafkajs);
 * 'each6' through run() with eachMessage and partitionsConsumedConcurrently 6, and 'slow6' the
 * same with a handler that takes SLOW_MS per message of partition SLOW_PARTITION (C1.slow).
 */
export type ConsumeStyle = 'message' | 'batch6' | 'each6' | 'slow6'

/** C1.slow (issue 13): the partition whose handler sleeps, and for how long per message. */
export const SLOW_PARTITION = 0
export const SLOW_MS = 100

/** The eachMessage handler of the 'each6' and 'slow6' styles. */
export function eachOf(style: 'each6' | 'slow6', onValue: (value: Buffer, partition?: number) => void): (partition: number, value: Buffer) => Promise<void> | void {
  if (style === 'each6') return (partition, value) => onValue(value, partition)
  return async (partition, value) => {
    if (partition === SLOW_PARTITION) await new Promise((r) => setTimeout(r, SLOW_MS))
    onValue(value, partition)
  }
}

export const FETCH = {
  minBytes: 1,
  maxWaitMs: 500,
  maxBytes: 50 * 1024 * 1024,
  maxPartitionBytes: 1024 * 1024,
} as const

export function compressionOf<T>(c: Compression, table: { none: T; gzip: T; snappy: T }): T {
  return table[c]
}
