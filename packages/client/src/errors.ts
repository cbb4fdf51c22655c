import { ProtocolError, TidelogError, UnsupportedVersionError } from '@tidelog/protocol'

// The codec's class is the one to catch: a version the codec cannot write and a version no
// broker/client pair shares are the same failure to a caller.
export { UnsupportedVersionError, ProtocolError }

/**
 * A socket could not be opened, or closed while requests were in flight. Retriable: Java
 * classes the same situations as NetworkException / DisconnectException, both
 * RetriableExceptions, because a new connection (after reconnect backoff) may succeed.
 */
export class KafkaConnectionError extends TidelogError {
  /** "host:port" of the peer. */
  readonly broker: string
  readonly nodeId: number | undefined
  constructor(message: string, broker: string, options?: { cause?: unknown; nodeId?: number; retriable?: boolean }) {
    super(message, { cause: options?.cause, retriable: options?.retriable ?? true })
    this.broker = broker
    this.nodeId = options?.nodeId
  }
}

/** The TCP (and TLS) connection was not established within connectTimeoutMs. */
export class ConnectionTimeoutError extends KafkaConnectionError {}

/**
 * The peer broke the protocol: a response whose correlation id is not the oldest in-flight
 * request's (Kafka answers strictly in order on a connection), a response nobody asked for, or
 * a frame that cannot be read. The connection is closed; retrying the same broker is pointless.
 */
export class ProtocolViolationError extends KafkaConnectionError {
  constructor(message: string, broker: string, options?: { cause?: unknown; nodeId?: number }) {
    super(message, broker, { ...options, retriable: false })
  }
}

/**
 * No response within the request's timeout (request.timeout.ms, 30 s by default). Java fails
 * the request and closes the connection, since whatever is stuck on it would stall every later
 * request; the request itself may be retried (Java's TimeoutException is a RetriableException),
 * though a non-idempotent one may already have taken effect.
 */
export class RequestTimeoutError extends TidelogError {
  readonly broker: string
  readonly nodeId: number | undefined
  readonly apiKey: number
  readonly apiName: string
  readonly apiVersion: number
  readonly correlationId: number
  readonly timeoutMs: number
  constructor(
    broker: string,
    nodeId: number | undefined,
    request: { apiKey: number; apiName: string; apiVersion: number; correlationId: number },
    timeoutMs: number,
  ) {
    super(
      `${request.apiName} v${request.apiVersion} (correlation id ${request.correlationId}) to ${broker} got no response within ${timeoutMs} ms`,
      { retriable: true },
    )
    this.broker = broker
    this.nodeId = nodeId
    this.apiKey = request.apiKey
    this.apiName = request.apiName
    this.apiVersion = request.apiVersion
    this.correlationId = request.correlationId
    this.timeoutMs = timeoutMs
  }
}

/** SASL failed: bad credentials, a mechanism the broker does not enable, or a broken exchange. */
export class SaslAuthenticationError extends TidelogError {
  readonly mechanism: string
  readonly broker: string
  /** Kafka's error code when the broker sent one (e.g. 58 SASL_AUTHENTICATION_FAILED). */
  readonly code: number | undefined
  constructor(message: string, mechanism: string, broker: string, options?: { code?: number; cause?: unknown }) {
    super(`SASL ${mechanism} authentication with ${broker} failed: ${message}`, { cause: options?.cause })
    this.mechanism = mechanism
    this.broker = broker
    this.code = options?.code
  }
}

/** The broker and this client share no version of an API (or none in the range asked for). */
export class NoCommonVersionError extends UnsupportedVersionError {
  readonly apiName: string
  readonly broker: string
  /** The broker's range, or undefined when it does not offer the API at all. */
  readonly brokerVersions: { minVersion: number; maxVersion: number } | undefined
  readonly clientVersions: { minVersion: number; maxVersion: number }
  constructor(
    apiName: string,
    apiKey: number,
    broker: string,
    brokerVersions: { minVersion: number; maxVersion: number } | undefined,
    clientVersions: { minVersion: number; maxVersion: number },
  ) {
    super(apiName, apiKey, clientVersions.maxVersion)
    this.message =
      brokerVersions === undefined
        ? `${broker} does not support ${apiName} (key ${apiKey}); this client needs versions ${clientVersions.minVersion}-${clientVersions.maxVersion}`
        : `${broker} supports ${apiName} (key ${apiKey}) versions ${brokerVersions.minVersion}-${brokerVersions.maxVersion}, ` +
          `this client needs ${clientVersions.minVersion}-${clientVersions.maxVersion}: no common version`
    this.apiName = apiName
    this.broker = broker
    this.brokerVersions = brokerVersions
    this.clientVersions = clientVersions
  }
}

/** The client (or the Admin) was closed while the operation waited. */
export class ClientClosedError extends TidelogError {
  constructor(what = 'client') {
    super(`the ${what} is closed`)
  }
}

/**
 * Some items of an Admin operation failed (each one a ProtocolError naming its topic,
 * partition or group, or another typed error); `results` holds the items that succeeded.
 * Retriable only if every failure is.
 */
export class AdminError<T = unknown> extends TidelogError {
  readonly operation: string
  readonly errors: Error[]
  readonly results: T[]
  constructor(operation: string, errors: Error[], results: T[]) {
    super(
      `${operation}: ${errors.length} item(s) failed: ${errors.map((e) => e.message).join('; ')}`,
      { cause: errors[0], retriable: errors.length > 0 && errors.every((e) => e instanceof TidelogError && e.retriable) },
    )
    this.operation = operation
    this.errors = errors
    this.results = results
  }
}

export function isRetriable(err: unknown): boolean {
  return err instanceof TidelogError && err.retriable
}
