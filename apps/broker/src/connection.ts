import type { Socket } from 'node:net'
import {
  ApiKeys,
  ErrorCodes,
  FrameDecoder,
  Reader,
  decodeRequestHeader,
  type RequestHeader,
} from '@tidelog/protocol'
import type { ApiHandler, RequestContext } from './handlers/index.js'
import type { PoolMember, RequestMemoryPool } from './limits.js'
import { MuteTimer, type QuotaTicket } from './quotas/enforcer.js'
import { encodeResponseChunks } from './response-frame.js'
import type { AuthenticateResult, ConnectionSecurity } from './security/authenticator.js'
import type { BoundListener, ServerOptions } from './server.js'

/** What a connection tells the server that owns it. */
export interface ConnectionOwner {
  forget(c: Connection): void
}

// Kafka's sasl.server.max.receive.size: before authentication a frame may not exceed this,
// so an unauthenticated peer cannot make the broker buffer a 100 MB "token".
const SASL_MAX_RECEIVE_BYTES = 512 * 1024

interface Slot {
  apiKey: number
  isFetch: boolean
  version: number
  correlationId: number
  done: boolean
  /** The encoded response frame as chunks to write in order (see encodeResponseChunks), or null when none is sent. */
  out: Buffer[] | null
  /** For metrics: when it was decoded, the request, and its frame size (request stays undefined for refused ones). */
  started: number
  request: unknown
  requestBytes: number
  /** Set while client quotas are on. */
  quota?: QuotaTicket | undefined
}

const DEFAULT_MAX_IN_FLIGHT = 128
const EMPTY_FRAME = Buffer.alloc(0)
// Fetch responses can be tens of megabytes each: only this many are read per
// connection at a time (clients send one fetch per broker and wait anyway).
const MAX_FETCHES_IN_FLIGHT = 2
// Stop dispatching while this much response data waits in the socket for a peer that is not reading.
const MAX_BUFFERED_RESPONSE_BYTES = 8 * 1024 * 1024

/**
 * One client connection. Frames are decoded as they arrive and dispatched at
 * once, so many requests can be in flight; responses are queued per request
 * and written strictly in request order. Anything that breaks the protocol
 * (bad length, unknown api key, undecodable header or body) closes this
 * connection only.
 */
export class Connection implements PoolMember {
  private readonly decoder: FrameDecoder
  private readonly queue: Slot[] = []
  private readonly peer: string
  private paused = false
  private closed = false
  /** Close once the queue drains (shutdown, or a failed acks=0 produce). */
  private closing = false
  private readonly maxInFlight: number
  /** Frames received but not dispatched yet (backpressure), oldest first. */
  private backlog: Buffer[] = []
  private backlogHead = 0
  private fetchesInFlight = 0
  /** pump() is running: responses completed synchronously inside it must not re-enter it. */
  private pumping = false
  /** queued.max.request.bytes is used up: read nothing until the pool says so. */
  private memoryMuted = false
  /** Over a client quota: read and dispatch nothing until this timer fires (KIP-219). */
  private readonly quotaMute = new MuteTimer(() => this.pump())
  /** Requests that hold dispatch until they are answered (RequestContext.holdConnection). */
  private holds = 0
  // What this connection holds in the pool: its partial frame, frames waiting in
  // the backlog, and frames dispatched whose handler has not finished.
  private backlogBytes = 0
  private inFlightBytes = 0
  private pooled = 0

  /** For /metrics: the listener it came in on. */
  get listenerName(): string {
    return this.listener.spec.name
  }

  /** For /metrics: requests read and not answered yet (waiting to be dispatched, or in a handler). */
  get pendingRequests(): number {
    let n = this.backlog.length - this.backlogHead
    for (const slot of this.queue) if (!slot.done) n++
    return n
  }

  constructor(
    private readonly server: ConnectionOwner,
    private readonly socket: Socket,
    private readonly opts: ServerOptions,
    /** The client address its quota is counted under. */
    readonly address: string,
    private readonly pool: RequestMemoryPool,
    private readonly listener: BoundListener,
    private readonly security: ConnectionSecurity,
  ) {
    this.peer = `${socket.remoteAddress ?? '?'}:${socket.remotePort ?? '?'}`
    this.decoder = new FrameDecoder({ maxFrameBytes: opts.maxRequestBytes })
    this.maxInFlight = opts.maxInFlight ?? DEFAULT_MAX_IN_FLIGHT
    socket.setNoDelay(true)
    socket.on('data', (chunk: Buffer) => this.onData(chunk))
    socket.on('drain', () => this.pump())
    socket.on('error', (err) => this.opts.logger.debug(`${this.peer}: ${err.message}`))
    socket.on('close', () => {
      this.closed = true
      this.quotaMute.cancel()
      // What it read but never dispatched is garbage now; dispatched requests free theirs as they finish.
      this.backlog = []
      this.backlogHead = 0
      this.backlogBytes = 0
      this.decoder.reset()
      this.account(false)
      this.pool.leave(this)
      this.server.forget(this)
    })
    const idleMs = opts.broker.config.connectionsMaxIdleMs
    if (idleMs > 0) {
      // Node's socket timeout restarts on every read and write, as Kafka's idle
      // expiry does on channel activity. A connection still owing answers is not idle.
      socket.setTimeout(idleMs)
      socket.on('timeout', () => {
        if (this.queue.length === 0 && this.backlogHead === this.backlog.length) {
          this.destroy(`idle for ${idleMs} ms (connections.max.idle.ms)`)
        } else {
          socket.setTimeout(idleMs)
        }
      })
    }
    pool.join(this)
  }

  get partialBytes(): number {
    return this.decoder.pending
  }

  mute(): void {
    this.memoryMuted = true
    if (!this.paused && !this.closed) {
      this.paused = true
      this.socket.pause()
    }
  }

  unmute(): void {
    if (!this.memoryMuted) return
    this.memoryMuted = false
    this.pump()
  }

  /** Mutes the connection for `ms` after a quota violation; a longer one extends it. */
  private throttle(ms: number): void {
    if (!this.closed && this.quotaMute.extend(ms) && !this.paused) {
      this.paused = true
      this.socket.pause()
    }
  }

  /** Tells the pool what this connection holds now. */
  private account(completedFrame: boolean): void {
    const held = this.decoder.pending + this.backlogBytes + this.inFlightBytes
    const delta = held - this.pooled
    this.pooled = held
    this.pool.adjust(this, delta, completedFrame)
  }

  get idle(): boolean {
    return this.queue.length === 0
  }

  /** Stops reading; closes once every accepted request is answered. */
  shutdown(): void {
    this.closing = true
    this.socket.pause()
    if (this.queue.length === 0) this.end()
  }

  private end(): void {
    // Destroy once our side is flushed: a client that never closes its side must not hold shutdown.
    this.socket.end(() => this.socket.destroy())
  }

  destroy(reason: string): void {
    if (this.closed) return
    this.opts.logger.debug(`${this.peer}: closing connection: ${reason}`)
    this.closed = true
    this.socket.destroy()
  }

  private onData(chunk: Buffer): void {
    if (this.closed || this.closing) return
    let frames: Buffer[]
    try {
      frames = this.decoder.push(chunk)
    } catch (err) {
      this.destroy((err as Error).message)
      return
    }
    if (this.security.current !== 'authenticated' && this.security.current !== 'reauthenticate') {
      if (this.decoder.pending > SASL_MAX_RECEIVE_BYTES || frames.some((f) => f.length > SASL_MAX_RECEIVE_BYTES)) {
        this.destroy(`a frame over ${SASL_MAX_RECEIVE_BYTES} bytes before authentication (sasl.server.max.receive.size)`)
        return
      }
    }
    for (const f of frames) this.backlogBytes += f.length
    this.account(frames.length > 0)
    if (frames.length === 0) return
    if (this.backlogHead === this.backlog.length) {
      this.backlog = frames
      this.backlogHead = 0
    } else {
      for (const f of frames) this.backlog.push(f)
    }
    this.pump()
  }

  /**
   * Dispatches waiting frames in order while the connection has room: fewer
   * than maxInFlight unanswered requests, at most MAX_FETCHES_IN_FLIGHT
   * fetches, and a peer that reads its responses. Otherwise reading pauses
   * until answers go out, so neither requests nor responses pile up in memory.
   */
  private pump(): void {
    if (this.pumping) return
    this.pumping = true
    try {
      while (this.backlogHead < this.backlog.length && !this.closed && !this.closing) {
        const frame = this.backlog[this.backlogHead]!
        const isFetch = frame.length >= 2 && frame.readInt16BE(0) === ApiKeys.Fetch
        if (
          this.holds > 0 ||
          this.quotaMute.active ||
          this.queue.length >= this.maxInFlight ||
          this.socket.writableLength > MAX_BUFFERED_RESPONSE_BYTES ||
          (isFetch && this.fetchesInFlight >= MAX_FETCHES_IN_FLIGHT)
        ) {
          break
        }
        // Drop our reference at once: the frame may be a view of a large socket chunk.
        this.backlog[this.backlogHead++] = EMPTY_FRAME
        this.backlogBytes -= frame.length
        this.inFlightBytes += frame.length
        const pending = this.handleFrame(frame)
        if (pending === undefined) {
          this.inFlightBytes -= frame.length
        } else {
          const release = (): void => {
            this.inFlightBytes -= frame.length
            this.account(false)
          }
          pending.then(release, release)
        }
      }
    } finally {
      this.pumping = false
    }
    this.account(false)
    if (this.backlogHead === this.backlog.length && this.backlog.length > 0) {
      this.backlog = []
      this.backlogHead = 0
    }
    const blocked =
      this.memoryMuted ||
      this.holds > 0 ||
      this.quotaMute.active ||
      this.backlogHead < this.backlog.length ||
      this.queue.length >= this.maxInFlight ||
      this.socket.writableLength > MAX_BUFFERED_RESPONSE_BYTES
    if (blocked && !this.paused && !this.closed) {
      this.paused = true
      this.socket.pause()
    } else if (!blocked && this.paused && !this.closing && !this.closed) {
      this.paused = false
      this.socket.resume()
    }
  }

  /** Dispatches one request; returns the handler's promise while it runs asynchronously. */
  private handleFrame(frame: Buffer): Promise<unknown> | undefined {
    if (this.security.rawTokens) {
      this.handleRawToken(frame)
      return
    }
    const reader = new Reader(frame)
    let header: RequestHeader
    try {
      header = decodeRequestHeader(reader)
    } catch (err) {
      this.destroy(`malformed request header: ${(err as Error).message}`)
      return
    }
    const refused = this.security.admit(header.apiKey)
    if (refused !== undefined) {
      this.destroy(refused)
      return
    }
    const handler = this.opts.registry.get(header.apiKey)
    if (handler === undefined) {
      this.destroy(`unknown api key ${header.apiKey}`)
      return
    }
    const v = header.apiVersion
    const lowest = handler.advertisedMinVersion ?? handler.minVersion
    if (v < lowest || v > handler.maxVersion) {
      if (header.apiKey === ApiKeys.ApiVersions) {
        // KIP-511: answer with v0 so the client learns what we speak and retries.
        const slot = this.enqueue(header.apiKey, 0, header.correlationId)
        this.complete(slot, handler, handler.errorResponse({}, ErrorCodes.UNSUPPORTED_VERSION, 0))
        return
      }
      this.destroy(`${handler.api.name} version ${v} is not supported`)
      return
    }
    let request: unknown
    try {
      request = handler.api.decodeRequest(reader, v)
    } catch (err) {
      this.destroy(`malformed ${handler.api.name} v${v} request: ${(err as Error).message}`)
      return
    }
    const slot = this.enqueue(header.apiKey, v, header.correlationId)
    if (this.opts.metrics !== undefined) {
      slot.started = performance.now()
      slot.request = request
      slot.requestBytes = frame.length
    }
    if (v < handler.minVersion) {
      this.complete(slot, handler, handler.errorResponse(request, ErrorCodes.UNSUPPORTED_VERSION, v))
      return
    }
    slot.quota = this.opts.quotas?.begin(header, request, frame.length, this.security.principal)
    const ctx: RequestContext = {
      broker: this.listener.broker,
      security: this.security,
      header,
      version: v,
      peer: this.peer,
      closeConnection: (reason) => {
        this.opts.logger.debug(`${this.peer}: ${reason}`)
        this.closing = true
      },
      holdConnection: (until) => {
        this.holds++
        const release = (): void => {
          this.holds--
          this.pump()
        }
        until.then(release, release)
      },
      mutations: slot.quota?.mutations,
    }
    // Muted from now: nothing more is read or dispatched on this connection until it has waited.
    if (slot.quota !== undefined && slot.quota.owedMs > 0) this.throttle(slot.quota.owedMs)
    const t0 = slot.quota === undefined ? 0 : performance.now()
    let result: unknown
    try {
      result = handler.handle(ctx, request)
      // The handler's own (synchronous) time stands for Kafka's request-thread time; waits do not count.
      if (slot.quota !== undefined) slot.quota.handlerMs = performance.now() - t0
    } catch (err) {
      this.handlerFailed(slot, handler, request, err)
      return
    }
    if (result instanceof Promise) {
      result.then(
        (res) => this.complete(slot, handler, res),
        (err: unknown) => this.handlerFailed(slot, handler, request, err),
      )
      return result
    }
    this.complete(slot, handler, result)
    return undefined
  }

  /** After SaslHandshake v0 the client sends bare tokens and gets bare, length-prefixed answers. */
  private handleRawToken(frame: Buffer): void {
    const slot = this.enqueue(-1, 0, 0)
    const answer = (r: AuthenticateResult): void => {
      if (r.close) {
        // No frame can carry an error here: Kafka closes the connection.
        this.destroy('SASL authentication failed')
        return
      }
      const size = Buffer.alloc(4)
      size.writeInt32BE(r.authBytes.length)
      slot.out = [size, r.authBytes]
      slot.done = true
      this.flushQueue()
    }
    // A callback handler (sasl.server.callback.handler.class) may decide asynchronously.
    const r = this.security.authenticate(frame, -1)
    if (r instanceof Promise) void r.then(answer)
    else answer(r)
  }

  private enqueue(apiKey: number, version: number, correlationId: number): Slot {
    const isFetch = apiKey === ApiKeys.Fetch
    if (isFetch) this.fetchesInFlight++
    const slot: Slot = { apiKey, isFetch, version, correlationId, done: false, out: null, started: 0, request: undefined, requestBytes: 0 }
    this.queue.push(slot)
    return slot
  }

  private handlerFailed(slot: Slot, handler: ApiHandler, request: unknown, err: unknown): void {
    // A bug or an I/O failure, not the client's doing: answer UNKNOWN_SERVER_ERROR when we can.
    this.opts.logger.error(`${this.peer}: ${handler.api.name} v${slot.version} failed: ${(err as Error)?.stack ?? String(err)}`)
    let response: unknown
    try {
      response = handler.errorResponse(request, ErrorCodes.UNKNOWN_SERVER_ERROR, slot.version)
    } catch {
      this.destroy('could not build an error response')
      return
    }
    this.complete(slot, handler, response)
  }

  private complete(slot: Slot, handler: ApiHandler, response: unknown): void {
    const settled = slot.quota === undefined ? undefined : this.opts.quotas!.finish(slot.quota, slot.apiKey, response)
    if (settled !== undefined) response = settled.response
    if (response !== undefined) {
      try {
        slot.out = encodeResponseChunks(slot.apiKey, slot.version, slot.correlationId, response)
      } catch (err) {
        this.opts.logger.error(`${this.peer}: cannot encode ${handler.api.name} v${slot.version} response: ${(err as Error).message}`)
        this.destroy('response encoding failed')
        return
      }
    }
    slot.done = true
    if (slot.isFetch) this.fetchesInFlight--
    if (slot.request !== undefined) this.opts.metrics?.observe(slot, handler.api.name, response)
    if (settled !== undefined && settled.throttleMs > 0) this.throttle(settled.throttleMs)
    this.flushQueue()
  }

  private flushQueue(): void {
    if (this.closed) return
    let n = 0
    // Corked, a response's chunks (and consecutive responses) leave in one writev.
    this.socket.cork()
    while (n < this.queue.length && this.queue[n]!.done) {
      const out = this.queue[n]!.out
      if (out !== null) for (const chunk of out) this.socket.write(chunk)
      n++
    }
    this.socket.uncork()
    if (n > 0) this.queue.splice(0, n)
    if (this.closing && this.queue.length === 0) {
      this.end()
      return
    }
    this.pump()
  }
}
