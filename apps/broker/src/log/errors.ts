import { TidelogError } from '@tidelog/protocol'

/** A fetch or seek outside [logStartOffset, logEndOffset]: Kafka's OFFSET_OUT_OF_RANGE (1). */
export class OffsetOutOfRangeError extends TidelogError {
  readonly code = 1
  readonly errorName = 'OFFSET_OUT_OF_RANGE'
  constructor(
    readonly offset: number,
    readonly logStartOffset: number,
    readonly logEndOffset: number,
  ) {
    super(`offset ${offset} is outside the log range [${logStartOffset}, ${logEndOffset}]`)
  }
}

/** Another process holds the data directory. */
export class LogDirLockedError extends TidelogError {
  constructor(
    readonly dataDir: string,
    readonly holder: string,
  ) {
    super(`data directory ${dataDir} is in use by ${holder}; stop that broker or choose another --data-dir`)
  }
}

/** The log was closed (shutdown, topic deleted) while an operation wanted it. */
export class LogClosedError extends TidelogError {
  constructor(what: string) {
    super(`${what} is closed`, { retriable: true })
  }
}

/**
 * A write, fsync or other file call of the log directory failed: Kafka's
 * KAFKA_STORAGE_ERROR (56). The directory is taken offline for good (until a
 * restart), as Kafka's LogDirFailureChannel does: after a failed fsync the page
 * cache may have dropped the data, so retrying could report success for lost
 * writes. Clients retry it (the Java client's KafkaStorageException is retriable).
 */
export class KafkaStorageError extends TidelogError {
  readonly code = 56
  readonly errorName = 'KAFKA_STORAGE_ERROR'
  constructor(message: string, cause?: unknown) {
    super(message, { cause, retriable: true })
  }
}

/** A file in the data directory was written by a newer release, in a format this one cannot read. */
export class UnsupportedFormatError extends TidelogError {
  constructor(
    readonly path: string,
    readonly version: number,
    readonly supported: number,
  ) {
    super(`${path} has format version ${version}, newer than the ${supported} this broker understands; start the newer release, or restore a backup`)
  }
}
