// What a client child process is asked to do, and what it answers. Every Node
// client runs in a process of its own (see run-child.ts), so no client's heap, JIT
// state or event-loop backlog can slow down the next one.

/**
 * platformatic: @platformatic/kafka 1.x on Node 20 (the workspace's); platformatic-2: 2.x on
 * Node 22; tidelog-node22: tidelog on that Node 22; confluent: @confluentinc/kafka-javascript
 * (runtimes.ts says where each comes from and which Node runs it).
 */
export type NodeClient = 'tidelog' | 'kafkajs' | 'platformatic' | 'tidelog-kafkajs' | 'platformatic-2' | 'tidelog-node22' | 'confluent'
export type Compression = 'none' | 'gzip' | 'snappy'

/** Set explicitly and equal for every client (the Java producer gets the same as properties). */
export interface ProducerSettings {
  /** 1 = the leader's write; -1 = all in-sync replicas (one here). */
  acks: 1 | -1
  idempotent: boolean
  compression: Compression
  lingerMs: number
  /** Java's batch.size. */
  batchBytes: number
  /** Produce requests in flight per connection (Java's max.in.flight.requests.per.connection); 0: the client's default. */
  maxInFlight: number
}

interface JobBase {
  client: NodeClient
  bootstrap: string
  topic: string
}

/**
 * Produce `records` records (plus `warmupRecords` first, not timed) as fast as acknowledgements
 * allow: the records are handed over in chunks of `chunk` with at most `window` chunks awaiting
 * their acknowledgement, the shape kafkajs and @platformatic/kafka need for throughput (they
 * have no accumulator: a send() call is a batch).
 */
export interface ProduceJob extends JobBase {
  kind: 'produce'
  records: number
  warmupRecords: number
  chunk: number
  window: number
  settings: ProducerSettings
  /** Value size (default VALUE_BYTES); the scale suite's large records. */
  valueBytes?: number
  /**
   * Produce in transactions: begin, send for `durationMs`, wait for what is in flight, commit
   * (ProducerPerformance's --transaction-duration-ms, which Java's run gets).
   */
  transaction?: { transactionalId: string; durationMs: number }
}

/**
 * Exactly-once copy (consume-transform-produce): read `input` (one partition, pre-filled with
 * `records`) from the start and write each record to `output`, at most `txnSize` per
 * transaction with the consumed offsets committed in it (TransactionalMessageCopier's loop,
 * whose settings the producer copies: batch.size 512, 5 in flight). Timed from the first poll
 * to the last commit.
 */
export interface CopyJob extends JobBase {
  kind: 'copy'
  output: string
  records: number
  txnSize: number
  groupId: string
  transactionalId: string
  /** The client's own producer defaults instead of the Java tool's settings (T2.defaults). */
  producerDefaults?: boolean
}

/** Consume `records` records from the beginning of a pre-filled topic, in a new group. */
export interface ConsumeJob extends JobBase {
  kind: 'consume'
  records: number
  groupId: string
  /** Read first in a group of its own and not counted (the warm-up the produce runs get too). */
  warmupRecords?: number
  /** The values' size (default VALUE_BYTES): a shorter value is an error. */
  valueBytes?: number
  /** See ConsumeStyle (adapter.ts); default 'message'. With 'each6' and 'slow6', `records` counts the partitions besides SLOW_PARTITION only. */
  style?: 'message' | 'batch6' | 'each6' | 'slow6'
}

/**
 * End-to-end latency: one process produces at a fixed `rate` and consumes the same topic; each
 * record's latency runs from the moment it was due to be sent (so a stalled sender counts
 * against itself, no coordinated omission) to its delivery to the consumer callback.
 */
export interface LatencyJob extends JobBase {
  kind: 'latency'
  rate: number
  seconds: number
  warmupSeconds: number
  groupId: string
  settings: ProducerSettings
}

/** One record at a time: send, wait until the consumer has it, repeat (Java's EndToEndLatency). */
export interface RoundTripJob extends JobBase {
  kind: 'roundtrip'
  records: number
  warmupRecords: number
  groupId: string
  settings: ProducerSettings
}

export type Job = ProduceJob | ConsumeJob | LatencyJob | RoundTripJob | CopyJob

export interface ProduceResult {
  records: number
  bytes: number
  ms: number
  /** The timed part's start and end, epoch ms (several producer processes share one window). */
  startedAt: number
  endedAt: number
}

export interface ConsumeResult {
  records: number
  /** First record to the last; joining the group and the first fetch are not in it. */
  ms: number
  /** From the consumer's creation to the last record. */
  totalMs: number
}

export interface LatencyResult {
  samples: number
  lost: number
  p50: number
  p99: number
  p999: number
  max: number
}

export interface CopyResult {
  records: number
  transactions: number
  ms: number
}

export type JobResult = ProduceResult | ConsumeResult | LatencyResult | CopyResult

/** 10-byte keys, 100-byte values, as the issue fixes them. */
export const KEY_BYTES = 10
export const VALUE_BYTES = 100
