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
}

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
  consumer(bootstrap: string, topic: string, groupId: string, onValue: (value: Buffer) => void, style?: ConsumeStyle): Promise<ConsumerAdapter>
}

/**
 * How the records are handed over: 'message' (default) through the per-message API; 'batch6'
 * through run() with eachBatch and partitionsConsumedConcurrently 6 (tidelog and kafkajs).
 */
export type ConsumeStyle = 'message' | 'batch6'

export const FETCH = {
  minBytes: 1,
  maxWaitMs: 500,
  maxBytes: 50 * 1024 * 1024,
  maxPartitionBytes: 1024 * 1024,
} as const

export function compressionOf<T>(c: Compression, table: { none: T; gzip: T; snappy: T }): T {
  return table[c]
}
