import { EventEmitter } from 'node:events'
import { connect as netConnect, isIP, type Socket } from 'node:net'
import { performance } from 'node:perf_hooks'
import { connect as tlsConnect, type ConnectionOptions as TlsConnectionOptions } from 'node:tls'
import {
  ApiVersions,
  DEFAULT_MAX_FRAME_BYTES,
  ErrorCodes,
  FrameDecoder,
  ProtocolError,
  Reader,
  TidelogError,
  decodeResponseHeader,
  encodeRequestFrame,
  type ApiDefinition,
  type ApiVersionsResponse,
} from '@tidelog/protocol'
import { channels, type ConnectionEvent, type QueueSizeEvent, type RequestEvent } from './diagnostics.js'
import {
  ClientClosedError,
  ConnectionTimeoutError,
  KafkaConnectionError,
  ProtocolViolationError,
  RequestTimeoutError,
} from './errors.js'
import { Fifo } from './fifo.js'
import { silentLogger, type Logger } from './logger.js'
import { saslAuthenticate } from './sasl/authenticate.js'
import type { SaslMechanism } from './sasl/types.js'
import { ThrottleGate, clientThrottleMs } from './throttle.js'
import { ApiVersionTable } from './versions.js'

/** Sent in ApiVersions v3+ (KIP-511); both must match [a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?. */
export const CLIENT_SOFTWARE_NAME = 'tidelog'
export const CLIENT_SOFTWARE_VERSION = '0.1.0'

/** Java's request.timeout.ms default. */
export const DEFAULT_REQUEST_TIMEOUT_MS = 30_000
/** Java's socket.connection.setup.timeout.ms default. */
export const DEFAULT_CONNECT_TIMEOUT_MS = 10_000

export interface ConnectionOptions {
  host: string
  port: number
  /** The broker's node id when known (negative for bootstrap addresses), for errors and events. */
  nodeId?: number
  /** Sent in every request header. Default 'tidelog'. */
  clientId?: string | null
  /** TLS: true for node's defaults, or options for tls.connect (ca, cert, key, servername, ...). */
  ssl?: boolean | TlsConnectionOptions
  /** A SASL mechanism (see createSaslMechanism) run after ApiVersions. */
  sasl?: SaslMechanism
  connectTimeoutMs?: number
  requestTimeoutMs?: number
  /** Largest response frame accepted. Default 100 MiB. */
  maxFrameBytes?: number
  logger?: Logger
  /** Copied into this connection's request events (ClientOptions.diagnosticsTag). */
  diagnosticsTag?: unknown
}

export interface RequestOptions {
  /** Use exactly this version (the caller negotiated it). */
  version?: number
  /** Otherwise: the highest common version, at least minVersion and at most maxVersion. */
  minVersion?: number
  maxVersion?: number
  /** Overrides requestTimeoutMs, e.g. a long-polling Fetch adds its max wait. */
  timeoutMs?: number
  /**
   * false for requests the broker does not answer (Produce with acks=0): the promise resolves
   * once the bytes are handed to the socket, with undefined.
   */
  expectResponse?: boolean
}

type State = 'new' | 'connecting' | 'ready' | 'closing' | 'closed'

// One object per request in flight; a class keeps their shape monomorphic.
class InFlight {
  constructor(
    readonly correlationId: number,
    readonly api: ApiDefinition<unknown, unknown>,
    readonly version: number,
    readonly startedAt: number,
    readonly deadline: number,
    readonly timeoutMs: number,
    readonly resolve: (value: unknown) => void,
    readonly reject: (error: Error) => void,
  ) {}
}

/**
 * One socket to one broker. Requests are pipelined: each gets a correlation id and is written
 * at once, and since Kafka answers the requests of a connection strictly in order, every
 * response must belong to the oldest request in flight; anything else is a protocol violation
 * that closes the connection.
 *
 * connect() opens the socket (TLS if asked), runs ApiVersions (and SASL), after which request()
 * picks for each API the highest version both sides support. A request that gets no answer
 * within its timeout fails with RequestTimeoutError and closes the connection, failing the
 * others in flight with a retriable KafkaConnectionError, as Java's NetworkClient does.
 *
 * Events: 'close' (error | undefined) once the socket is gone; 'expiring' when a SASL session
 * nears its end (KIP-368) and the connection starts draining so the pool can replace it.
 */
export class Connection extends EventEmitter {
  readonly host: string
  readonly port: number
  readonly nodeId: number | undefined
  /** "host:port" */
  readonly broker: string
  readonly clientId: string | null
  private readonly diagnosticsTag: unknown
  readonly requestTimeoutMs: number

  private readonly options: ConnectionOptions
  private readonly logger: Logger
  private readonly decoder: FrameDecoder
  private readonly inflight = new Fifo<InFlight>()
  private state: State = 'new'
  private socket: Socket | undefined
  private table: ApiVersionTable | undefined
  private correlationId = -1
  private timer: NodeJS.Timeout | undefined
  private timerAt = Infinity
  private sessionTimer: NodeJS.Timeout | undefined
  private lingerTimer: NodeJS.Timeout | undefined
  private connecting: Promise<void> | undefined
  private closing: Promise<void> | undefined
  private resolveClosed: (() => void) | undefined
  private socketError: Error | undefined
  private openedAt = 0
  private corked = false
  private readonly throttle = new ThrottleGate((queueSize) => {
    if (channels.queueSize.hasSubscribers) {
      channels.queueSize.publish({ broker: this.broker, nodeId: this.nodeId, clientId: this.clientId, tag: this.diagnosticsTag, queueSize } satisfies QueueSizeEvent)
    }
  })

  constructor(options: ConnectionOptions) {
    super()
    this.options = options
    this.host = options.host
    this.port = options.port
    this.nodeId = options.nodeId
    this.broker = `${options.host}:${options.port}`
    this.clientId = options.clientId === undefined ? 'tidelog' : options.clientId
    this.diagnosticsTag = options.diagnosticsTag
    this.requestTimeoutMs = options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS
    this.logger = options.logger ?? silentLogger
    this.decoder = new FrameDecoder({ maxFrameBytes: options.maxFrameBytes ?? DEFAULT_MAX_FRAME_BYTES })
  }

  /** True once ApiVersions (and SASL) succeeded and until close starts. */
  get isReady(): boolean {
    return this.state === 'ready'
  }

  get isClosed(): boolean {
    return this.state === 'closed'
  }

  /** Requests written and not yet answered, plus those held by a broker's throttle. */
  get inFlightCount(): number {
    return this.inflight.length + this.throttle.heldCount
  }

  /** How long the broker still throttles this connection (KIP-219), in ms; 0 when not. */
  get throttledMs(): number {
    return this.throttle.remainingMs
  }

  /** The broker's API versions; available once connect() resolved. */
  get versions(): ApiVersionTable {
    if (this.table === undefined) throw new KafkaConnectionError(`connection to ${this.broker} is not established`, this.broker, { nodeId: this.nodeId })
    return this.table
  }

  /** Opens the socket, negotiates versions and authenticates. Safe to call more than once. */
  connect(): Promise<void> {
    if (this.connecting === undefined) this.connecting = this.establish()
    return this.connecting
  }

  /**
   * Sends one request and resolves with the decoded response. `body` may be a function of the
   * negotiated version, for messages whose shape changes between versions.
   */
  request<Req, Res>(api: ApiDefinition<Req, Res>, body: Req | ((version: number) => Req), options?: RequestOptions): Promise<Res> {
    if (this.state !== 'ready') return Promise.reject(this.notReady())
    let version: number
    let message: Req
    try {
      version = options?.version ?? this.table!.highest(api, options?.minVersion, options?.maxVersion)
      message = typeof body === 'function' ? (body as (version: number) => Req)(version) : body
    } catch (e) {
      return Promise.reject(e)
    }
    return this.send(api, version, message, options?.timeoutMs ?? this.requestTimeoutMs, options?.expectResponse !== false) as Promise<Res>
  }

  /**
   * Waits for the requests in flight, then closes the socket. New requests are refused from
   * the moment this is called.
   */
  close(): Promise<void> {
    if (this.state === 'closed') return Promise.resolve()
    if (this.closing !== undefined) return this.closing
    if (this.state !== 'ready') {
      this.finish(new ClientClosedError('connection'), true)
      return Promise.resolve()
    }
    this.state = 'closing'
    if (this.throttle.active) this.throttle.abort(this.notReady())
    this.closing = new Promise((resolve) => {
      this.resolveClosed = resolve
    })
    if (this.inflight.length === 0) this.endSocket()
    return this.closing
  }

  /** Closes at once; requests in flight fail with a KafkaConnectionError caused by `error`. */
  destroy(error?: Error): void {
    this.finish(error ?? new ClientClosedError('connection'), error === undefined)
  }

  // --- setup -------------------------------------------------------------------------------

  /**
   * connectTimeoutMs bounds the whole setup (TCP, TLS, ApiVersions, SASL), as Java's
   * socket.connection.setup.timeout.ms bounds a connection until it is ready: a broker that
   * accepts but never answers must not hold a caller for a full request timeout.
   */
  private async establish(): Promise<void> {
    this.state = 'connecting'
    const started = performance.now()
    const timeoutMs = this.options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS
    let timedOut: ConnectionTimeoutError | undefined
    const timer = setTimeout(() => {
      timedOut = new ConnectionTimeoutError(`connecting to ${this.broker} did not finish within ${timeoutMs} ms`, this.broker, { nodeId: this.nodeId })
      this.finish(timedOut, false)
    }, timeoutMs)
    try {
      await this.openSocket()
      await this.negotiateVersions()
      if (this.options.sasl !== undefined) await this.authenticate(this.options.sasl)
    } catch (e) {
      const err = timedOut ?? (e instanceof Error ? e : new Error(String(e)))
      this.finish(err, false)
      throw err
    } finally {
      clearTimeout(timer)
    }
    if (this.state !== 'connecting') throw this.notReady()
    this.state = 'ready'
    this.openedAt = performance.now()
    const durationMs = this.openedAt - started
    this.logger.debug({ broker: this.broker, nodeId: this.nodeId, durationMs }, 'connected')
    if (channels.connect.hasSubscribers) {
      channels.connect.publish({ broker: this.broker, nodeId: this.nodeId, durationMs } satisfies ConnectionEvent)
    }
  }

  private openSocket(): Promise<void> {
    const { host, port, ssl } = this.options
    return new Promise<void>((resolve, reject) => {
      let socket: Socket
      if (ssl !== undefined && ssl !== false) {
        const tlsOptions: TlsConnectionOptions = { ...(ssl === true ? {} : ssl), host, port }
        // SNI may not carry an IP address (RFC 6066 section 3).
        if (tlsOptions.servername === undefined && isIP(host) === 0) tlsOptions.servername = host
        socket = tlsConnect(tlsOptions)
      } else {
        socket = netConnect({ host, port })
      }
      // Held before it connects so that close() during setup can destroy it.
      this.socket = socket
      let tcpUp = false
      const cleanup = (): void => {
        socket.off('error', onError)
        socket.off('close', onClose)
        socket.off('connect', onTcp)
      }
      const onTcp = (): void => {
        tcpUp = true
      }
      const onError = (err: NodeJS.ErrnoException): void => {
        cleanup()
        socket.destroy()
        // A TLS handshake that fails on certificates or protocol will fail the same way
        // again (Java's SslAuthenticationException is not retriable); a reset during it may not.
        const tlsFailure = ssl !== undefined && ssl !== false && tcpUp && !/^E(CONN|PIPE|TIMEDOUT|HOSTUNREACH|NETUNREACH)/.test(err.code ?? '')
        reject(
          new KafkaConnectionError(
            `${tlsFailure ? 'TLS handshake with' : 'connecting to'} ${this.broker} failed: ${err.message}`,
            this.broker,
            { cause: err, nodeId: this.nodeId, retriable: !tlsFailure },
          ),
        )
      }
      const onClose = (): void => {
        cleanup()
        reject(new KafkaConnectionError(`${this.broker} closed the connection while it was being set up`, this.broker, { nodeId: this.nodeId }))
      }
      socket.once('error', onError)
      socket.once('close', onClose)
      socket.once('connect', onTcp)
      socket.once(ssl !== undefined && ssl !== false ? 'secureConnect' : 'connect', () => {
        cleanup()
        this.attach(socket)
        resolve()
      })
    })
  }

  private attach(socket: Socket): void {
    socket.setNoDelay(true)
    socket.setKeepAlive(true)
    socket.on('data', this.onData)
    socket.on('error', this.onSocketError)
    socket.on('close', this.onSocketClose)
  }

  /**
   * ApiVersions at the newest version we speak. A broker that does not know that version
   * answers UNSUPPORTED_VERSION in a v0 body listing its own ApiVersions range (KIP-511), and
   * Java retries with the highest version it lists (0 when it lists none); so do we.
   */
  private async negotiateVersions(): Promise<void> {
    let version = ApiVersions.maxVersion
    for (;;) {
      const res = (await this.send(
        ApiVersions,
        version,
        { clientSoftwareName: CLIENT_SOFTWARE_NAME, clientSoftwareVersion: CLIENT_SOFTWARE_VERSION },
        this.requestTimeoutMs,
        true,
      )) as ApiVersionsResponse
      if (res.errorCode === 0) {
        this.table = ApiVersionTable.fromResponse(res, this.broker)
        return
      }
      if (res.errorCode === ErrorCodes.UNSUPPORTED_VERSION && version > 0) {
        const own = res.apiKeys.find((k) => k.apiKey === ApiVersions.apiKey)
        const next = own === undefined ? 0 : Math.min(own.maxVersion, ApiVersions.maxVersion)
        version = next < version ? next : 0
        this.logger.debug({ broker: this.broker, version }, 'ApiVersions downgraded')
        continue
      }
      throw new ProtocolError(res.errorCode, { api: 'ApiVersions', apiKey: ApiVersions.apiKey })
    }
  }

  private async authenticate(mechanism: SaslMechanism): Promise<void> {
    const { sessionLifetimeMs } = await saslAuthenticate(
      {
        broker: this.broker,
        versions: this.table!,
        sendDuringSetup: (api, version, body) => this.send(api, version, body, this.requestTimeoutMs, true) as Promise<never>,
      },
      mechanism,
      { host: this.host, port: this.port, nodeId: this.nodeId, clientId: this.clientId },
    )
    if (sessionLifetimeMs > 0) {
      // KIP-368: the broker closes a connection that sends anything but re-authentication
      // after the session expires. Java re-authenticates at 85-95% of the lifetime; we drain
      // and replace the connection at the same point, which the pool does transparently.
      const at = sessionLifetimeMs * (0.85 + Math.random() * 0.1)
      this.sessionTimer = setTimeout(() => {
        this.sessionTimer = undefined
        if (this.state !== 'ready') return
        this.logger.debug({ broker: this.broker, sessionLifetimeMs }, 'SASL session expiring, replacing connection')
        this.emit('expiring')
        void this.close()
      }, at)
      this.sessionTimer.unref()
    }
  }

  // --- requests ----------------------------------------------------------------------------

  private send(api: ApiDefinition<unknown, unknown>, version: number, body: unknown, timeoutMs: number, expectResponse: boolean): Promise<unknown> {
    const socket = this.socket
    if (socket === undefined || this.state === 'closed' || this.state === 'closing') return Promise.reject(this.notReady())
    if (this.throttle.active) return this.throttle.defer(() => this.send(api, version, body, timeoutMs, expectResponse))
    const correlationId = (this.correlationId = (this.correlationId + 1) & 0x7fffffff)
    let frame: Buffer
    try {
      frame = encodeRequestFrame({ apiKey: api.apiKey, apiVersion: version, correlationId, clientId: this.clientId }, body)
    } catch (e) {
      return Promise.reject(e)
    }
    const startedAt = performance.now()
    if (channels.requestStart.hasSubscribers) channels.requestStart.publish(this.event(api, version, correlationId))
    if (!expectResponse) {
      return new Promise((resolve, reject) => {
        socket.write(frame, (err) => {
          if (err == null) {
            if (channels.requestEnd.hasSubscribers) {
              const e = this.event(api, version, correlationId)
              e.durationMs = performance.now() - startedAt
              channels.requestEnd.publish(e)
            }
            resolve(undefined)
          } else {
            const error = new KafkaConnectionError(`writing ${api.name} to ${this.broker} failed: ${err.message}`, this.broker, { cause: err, nodeId: this.nodeId })
            this.publishError(api, version, correlationId, startedAt, error)
            reject(error)
          }
        })
      })
    }
    return new Promise((resolve, reject) => {
      const req = new InFlight(correlationId, api, version, startedAt, startedAt + timeoutMs, timeoutMs, resolve, reject)
      this.inflight.push(req)
      this.write(socket, frame)
      if (req.deadline < this.timerAt) this.armTimer(req.deadline)
    })
  }

  // Requests issued in the same tick (a producer draining many partitions, an Admin fanning
  // out) leave in one corked write: one syscall instead of one per request.
  private write(socket: Socket, frame: Buffer): void {
    if (!this.corked) {
      this.corked = true
      socket.cork()
      process.nextTick(this.uncork, socket)
    }
    socket.write(frame)
  }

  private readonly uncork = (socket: Socket): void => {
    this.corked = false
    socket.uncork()
  }

  private readonly onData = (chunk: Buffer): void => {
    let frames: Buffer[]
    try {
      frames = this.decoder.push(chunk)
    } catch (e) {
      this.violation(`unreadable frame from ${this.broker}: ${e instanceof Error ? e.message : String(e)}`, e)
      return
    }
    for (let i = 0; i < frames.length; i++) {
      this.onFrame(frames[i]!)
      if (this.state === 'closed') return
    }
  }

  private onFrame(frame: Buffer): void {
    const req = this.inflight.peek()
    if (req === undefined) {
      this.violation(`${this.broker} sent a response while no request was in flight`)
      return
    }
    if (frame.length < 4) {
      this.violation(`${this.broker} sent a ${frame.length}-byte response, too short for a correlation id`)
      return
    }
    const correlationId = frame.readInt32BE(0)
    if (correlationId !== req.correlationId) {
      this.violation(
        `${this.broker} answered correlation id ${correlationId}, but the oldest request in flight is ` +
          `${req.api.name} with correlation id ${req.correlationId}; Kafka answers in order, so the stream is out of sync`,
      )
      return
    }
    this.inflight.shift()
    let body: unknown
    try {
      const r = new Reader(frame)
      decodeResponseHeader(r, req.api.apiKey, req.version)
      // A broker that does not know our ApiVersions version answers in a v0 body (KIP-511);
      // the error code leads every version, so it tells which layout to read.
      const version =
        req.api === ApiVersions && req.version > 0 && frame.length >= 6 && frame.readInt16BE(4) === ErrorCodes.UNSUPPORTED_VERSION
          ? 0
          : req.version
      body = req.api.decodeResponse(r, version)
    } catch (e) {
      // The frame boundary is intact, so later responses still line up: only this request fails.
      const err = e instanceof Error ? e : new Error(String(e))
      this.publishError(req.api, req.version, req.correlationId, req.startedAt, err)
      req.reject(err)
      this.afterResponse()
      return
    }
    if (channels.requestEnd.hasSubscribers) {
      const e = this.event(req.api, req.version, req.correlationId)
      e.durationMs = performance.now() - req.startedAt
      e.size = frame.length
      e.response = body
      channels.requestEnd.publish(e)
    }
    const throttleMs = clientThrottleMs(req.api.apiKey, req.version, body)
    if (throttleMs > 0 && this.throttle.throttle(throttleMs)) {
      this.logger.info({ broker: this.broker, nodeId: this.nodeId, api: req.api.name, throttleTimeMs: throttleMs }, 'broker throttled this client (quota, KIP-219): holding requests on the connection')
    }
    req.resolve(body)
    this.afterResponse()
  }

  private afterResponse(): void {
    if (this.state === 'closing' && this.inflight.length === 0) this.endSocket()
  }

  // One timer per connection, armed for the earliest deadline in flight: no timer is created
  // or cleared per request. When it fires, it looks for expired requests and re-arms.
  private armTimer(deadline: number): void {
    if (this.timer !== undefined) clearTimeout(this.timer)
    this.timerAt = deadline
    this.timer = setTimeout(this.onTimer, Math.max(0, deadline - performance.now()) + 1)
    this.timer.unref()
  }

  private readonly onTimer = (): void => {
    this.timer = undefined
    this.timerAt = Infinity
    if (this.inflight.length === 0) return
    const now = performance.now()
    let expired: InFlight | undefined
    let next = Infinity
    this.inflight.forEach((req) => {
      if (req.deadline <= now) expired ??= req
      else if (req.deadline < next) next = req.deadline
    })
    if (expired === undefined) {
      if (next !== Infinity) this.armTimer(next)
      return
    }
    const timedOut = expired
    const error = new RequestTimeoutError(
      this.broker,
      this.nodeId,
      { apiKey: timedOut.api.apiKey, apiName: timedOut.api.name, apiVersion: timedOut.version, correlationId: timedOut.correlationId },
      timedOut.timeoutMs,
    )
    this.logger.warn({ broker: this.broker, api: timedOut.api.name, correlationId: timedOut.correlationId, timeoutMs: timedOut.timeoutMs }, 'request timed out, closing connection')
    this.finish(error, false, timedOut)
  }

  // --- teardown ----------------------------------------------------------------------------

  private violation(message: string, cause?: unknown): void {
    const error = new ProtocolViolationError(message, this.broker, { cause, nodeId: this.nodeId })
    this.logger.error({ broker: this.broker, err: error }, 'protocol violation, closing connection')
    this.finish(error, false)
  }

  private readonly onSocketError = (err: Error): void => {
    this.socketError ??= err
  }

  private readonly onSocketClose = (): void => {
    const requested = this.state === 'closing' && this.inflight.length === 0
    const cause = this.socketError ?? (requested ? undefined : new Error('the broker closed the connection'))
    this.finish(cause, requested)
  }

  private endSocket(): void {
    if (this.socket === undefined) {
      this.finish(undefined, true)
      return
    }
    this.socket.end()
    // A peer that never closes its side must not hold the close() promise forever.
    this.lingerTimer = setTimeout(() => this.finish(undefined, true), 5_000)
    this.lingerTimer.unref()
  }

  /**
   * The single place a connection ends. `timedOut` (if any) fails with `cause` itself; every
   * other request in flight fails with a KafkaConnectionError carrying `cause`.
   */
  private finish(cause: Error | undefined, requested: boolean, timedOut?: InFlight): void {
    if (this.state === 'closed') return
    this.state = 'closed'
    if (this.timer !== undefined) clearTimeout(this.timer)
    if (this.sessionTimer !== undefined) clearTimeout(this.sessionTimer)
    if (this.lingerTimer !== undefined) clearTimeout(this.lingerTimer)
    this.timer = this.sessionTimer = this.lingerTimer = undefined
    this.timerAt = Infinity
    if (this.throttle.active) this.throttle.abort(new KafkaConnectionError(`connection to ${this.broker} closed before a throttled request was sent${cause ? `: ${cause.message}` : ''}`, this.broker, { cause, nodeId: this.nodeId }))
    const pending = this.inflight.drain()
    if (pending.length > 0) {
      const shared =
        cause instanceof KafkaConnectionError && timedOut === undefined
          ? cause
          : new KafkaConnectionError(
              `connection to ${this.broker} closed with ${pending.length} request(s) in flight${cause ? `: ${cause.message}` : ''}`,
              this.broker,
              { cause, nodeId: this.nodeId, retriable: cause instanceof TidelogError && !(cause instanceof RequestTimeoutError) ? cause.retriable : true },
            )
      for (const req of pending) {
        const err = req === timedOut && cause !== undefined ? cause : shared
        this.publishError(req.api, req.version, req.correlationId, req.startedAt, err)
        req.reject(err)
      }
    }
    const socket = this.socket
    if (socket !== undefined) {
      socket.off('data', this.onData)
      socket.destroy()
    }
    const error = requested ? undefined : cause
    if (error !== undefined && this.openedAt > 0) this.logger.info({ broker: this.broker, nodeId: this.nodeId, err: error }, 'connection closed')
    if (channels.close.hasSubscribers) {
      const e: ConnectionEvent = { broker: this.broker, nodeId: this.nodeId, durationMs: this.openedAt > 0 ? performance.now() - this.openedAt : 0 }
      if (error !== undefined) e.error = error
      channels.close.publish(e)
    }
    this.resolveClosed?.()
    this.emit('close', error)
  }

  private notReady(): KafkaConnectionError {
    const what = this.state === 'closing' ? 'closing' : this.state === 'closed' ? 'closed' : 'not ready'
    return new KafkaConnectionError(`connection to ${this.broker} is ${what}`, this.broker, { nodeId: this.nodeId })
  }

  private event(api: ApiDefinition<unknown, unknown>, version: number, correlationId: number): RequestEvent {
    return { broker: this.broker, nodeId: this.nodeId, clientId: this.clientId, tag: this.diagnosticsTag, apiKey: api.apiKey, apiName: api.name, apiVersion: version, correlationId }
  }

  private publishError(api: ApiDefinition<unknown, unknown>, version: number, correlationId: number, startedAt: number, error: Error): void {
    if (!channels.requestError.hasSubscribers) return
    const e = this.event(api, version, correlationId)
    e.durationMs = performance.now() - startedAt
    e.error = error
    channels.requestError.publish(e)
  }
}
