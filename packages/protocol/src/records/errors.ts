import { TidelogError } from '../errors/base.js'

/**
 * A record batch whose bytes are damaged: bad CRC, impossible length, unknown
 * magic. Kafka answers these with CORRUPT_MESSAGE (code 2), which it marks
 * retriable because a corrupted network transfer may succeed when resent.
 */
export class CorruptRecordError extends TidelogError {
  readonly code = 2
  readonly errorName = 'CORRUPT_MESSAGE'
  /** Offset of the batch in the buffer it was read from. */
  readonly offset: number
  constructor(message: string, offset: number) {
    super(`${message} (batch at byte ${offset})`, { retriable: true })
    this.offset = offset
  }
}

/**
 * A record batch that is intact but breaks the rules: its record count does not
 * agree with its offset range, it is empty, and so on. Kafka answers these with
 * INVALID_RECORD (code 87, KIP-467), not retriable.
 */
export class InvalidRecordError extends TidelogError {
  readonly code = 87
  readonly errorName = 'INVALID_RECORD'
  readonly offset: number
  constructor(message: string, offset: number) {
    super(`${message} (batch at byte ${offset})`)
    this.offset = offset
  }
}

/**
 * A batch larger than the broker accepts (max.message.bytes): MESSAGE_TOO_LARGE,
 * code 10, not retriable.
 */
export class RecordTooLargeError extends TidelogError {
  readonly code = 10
  readonly errorName = 'MESSAGE_TOO_LARGE'
  readonly offset: number
  readonly size: number
  readonly max: number
  constructor(size: number, max: number, offset: number) {
    super(`record batch of ${size} bytes exceeds the maximum of ${max} bytes (batch at byte ${offset})`)
    this.offset = offset
    this.size = size
    this.max = max
  }
}
