/**
 * Base class for every error tidelog throws on purpose. Callers can branch on
 * `instanceof TidelogError` (or the more specific classes) and on `retriable`;
 * nothing is retriable unless Kafka's own table says so.
 */
export class TidelogError extends Error {
  readonly retriable: boolean
  constructor(message: string, options?: { cause?: unknown; retriable?: boolean }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause })
    this.name = new.target.name
    this.retriable = options?.retriable ?? false
  }
}

/** Where and why bytes could not be decoded. Never retriable: the same bytes fail again. */
export class DecodeError extends TidelogError {
  /** Offset in the buffer being read where the problem was found. */
  readonly offset: number
  /** Bytes the decoder needed at that point (0 when the problem is a bad value, not a short read). */
  readonly needed: number
  /** Bytes that were left at that point. */
  readonly available: number
  constructor(message: string, offset: number, needed = 0, available = 0) {
    super(
      needed > 0
        ? `${message} at offset ${offset}: needed ${needed} byte(s), ${available} available`
        : `${message} at offset ${offset}`,
    )
    this.offset = offset
    this.needed = needed
    this.available = available
  }
}

/** A value that cannot be encoded (too long, out of range, wrong type for the version). */
export class EncodeError extends TidelogError {}

/** A frame larger than the configured maximum, or with a negative length. */
export class FrameTooLargeError extends TidelogError {
  readonly size: number
  readonly max: number
  constructor(size: number, max: number) {
    super(
      size < 0
        ? `invalid frame length ${size}`
        : `frame of ${size} bytes exceeds the maximum of ${max} bytes`,
    )
    this.size = size
    this.max = max
  }
}

/** Decompressed output would exceed the cap (a decompression bomb, or a cap set too low). */
export class DecompressionLimitError extends TidelogError {
  readonly limit: number
  constructor(codec: string, limit: number) {
    super(`${codec} output exceeds the limit of ${limit} bytes`)
    this.limit = limit
  }
}

/** A compressed payload that the codec cannot read. */
export class CompressionError extends TidelogError {}

/** The requested api version is not one this codec knows for that API. */
export class UnsupportedVersionError extends TidelogError {
  readonly apiKey: number
  readonly version: number
  constructor(apiName: string, apiKey: number, version: number) {
    super(`${apiName} (key ${apiKey}) version ${version} is not supported`)
    this.apiKey = apiKey
    this.version = version
  }
}
