import type { Logger } from '../logger.js'
import type { LogDirState } from './dir-failure.js'
import { DEFAULT_INDEX_INTERVAL_BYTES } from './format.js'
import type { LogFileSystem } from './file-system.js'
import type { OpenFileLimiter } from './open-files.js'
import type { AbortedTxn } from './txn-index.js'

// The shapes PartitionLog takes and returns, apart so the log itself stays readable.

/** Per-partition settings (Kafka's topic-level configs of the same names). */
export interface LogConfig {
  segmentBytes: number
  segmentMs: number
  retentionMs: number
  retentionBytes: number
  /** fsync once this many messages are unflushed; Infinity leaves it to the page cache. */
  flushMessages: number
  /** fsync data older than this (checked by the owner's timer); Infinity: never. */
  flushMs: number
  indexIntervalBytes: number
  /** cleanup.policy: delete applies retention, compact runs the log cleaner; both may be on. */
  cleanupDelete: boolean
  cleanupCompact: boolean
  /** delete.retention.ms: how long a tombstone (and an empty transaction's marker) outlives its first cleaning (KIP-534). */
  deleteRetentionMs: number
  /** min.compaction.lag.ms / max.compaction.lag.ms (KIP-58, KIP-354). */
  minCompactionLagMs: number
  maxCompactionLagMs: number
  /** min.cleanable.dirty.ratio */
  minCleanableDirtyRatio: number
}

export const DEFAULT_LOG_CONFIG: Readonly<LogConfig> = Object.freeze({
  segmentBytes: 1024 * 1024 * 1024,
  segmentMs: 7 * 24 * 60 * 60 * 1000,
  retentionMs: 7 * 24 * 60 * 60 * 1000,
  retentionBytes: -1,
  flushMessages: Infinity,
  flushMs: Infinity,
  indexIntervalBytes: DEFAULT_INDEX_INTERVAL_BYTES,
  cleanupDelete: true,
  cleanupCompact: false,
  deleteRetentionMs: 86_400_000,
  minCompactionLagMs: 0,
  maxCompactionLagMs: Infinity,
  minCleanableDirtyRatio: 0.5,
})

export interface AppendOptions {
  /** Written into each batch's partitionLeaderEpoch. */
  leaderEpoch?: number
  /**
   * Stamp the batches with LogAppendTime (message.timestamp.type=LogAppendTime):
   * the timestamp-type attribute and maxTimestamp are rewritten and the CRC,
   * which covers them, recomputed, as Kafka does.
   */
  logAppendTime?: boolean
  now?: number
}

export interface AppendResult {
  baseOffset: number
  lastOffset: number
  /** The broker time stamped on the batches, or -1 for CreateTime. */
  logAppendTime: number
  logStartOffset: number
  /** Records (offsets) appended. */
  count: number
  /**
   * The batch repeats one of its idempotent producer's last five: nothing was
   * written and the offsets are the original ones.
   */
  duplicate: boolean
}

export interface ReadResult {
  /** Whole batches, starting with the one holding the requested offset; empty at the end of the log. */
  records: Buffer
  highWatermark: number
  /** First offset of the earliest open transaction, else the high watermark (KIP-98). */
  lastStableOffset: number
  logStartOffset: number
  logEndOffset: number
}

/** A read_committed read: only offsets below the last stable offset, with the aborted transactions they overlap. */
export interface CommittedReadResult extends ReadResult {
  abortedTransactions: AbortedTxn[]
}

export interface BatchRead {
  /** The batch's bytes, exactly as stored. */
  batch: Buffer
  baseOffset: number
  lastOffset: number
  maxTimestamp: number
}

export interface RecoveryReport {
  /** Segments re-read batch by batch. */
  recoveredSegments: number
  truncatedBytes: number
  /** Segments dropped because the log no longer reached them contiguously. */
  droppedSegments: number
}

export interface PartitionLogOptions {
  dir: string
  topic: string
  partition: number
  config?: Partial<LogConfig>
  /** From the log-start-offset checkpoint. */
  logStartOffset?: number
  /** From the recovery-point checkpoint: everything below it was fsynced. */
  recoveryPoint?: number
  /** The data dir was shut down cleanly: trust the files, re-read nothing. */
  clean?: boolean
  now?: number
  logger?: Logger
  /** The file calls of the write side (tests inject faults here). */
  fs?: LogFileSystem
  /** Shared by every log of the data directory: the first write or fsync failure takes them all offline. */
  dirState?: LogDirState
  /** Kafka's producer.id.expiration.ms: producers idle this long are forgotten (default one day). */
  producerIdExpirationMs?: number
  /** Shared cap on open segment files (the data directory's --max-open-files); none when absent. */
  files?: OpenFileLimiter
}
