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
