import { type AddressInfo, type Server, type Socket, createServer } from 'node:net'
import { Connection } from './connection.js'
import type { BrokerContext } from './context.js'
import type { ApiHandler } from './handlers/index.js'
import { ConnectionQuotas, RequestMemoryPool, normalizeAddress } from './limits.js'
import type { Logger } from './logger.js'
import type { BrokerMetrics, SocketStats } from './metrics/broker-metrics.js'
import type { ConnectionRateQuota } from './quotas/connection-rate.js'
import { type RequestThrottler, holdThenClose } from './quotas/enforcer.js'
import { ConnectionSecurity } from './security/authenticator.js'
import { type ListenerSpec, usesTls } from './security/listeners.js'
import type { SecurityManager } from './security/manager.js'
import type { TlsContextProvider } from './security/tls.js'
import { TlsAcceptor } from './security/tls-acceptor.js'
export interface ServerOptions {
  broker: BrokerContext
  registry: ReadonlyMap<number, ApiHandler>
  maxRequestBytes: number
  logger: Logger
  /** Requests decoded but not yet answered, per connection, before reading pauses. */
  maxInFlight?: number
  /** What to open; one PLAINTEXT listener on the broker's host:port when absent. */
  listeners?: readonly ListenerSpec[]
  /** SASL mechanisms, users and SCRAM credentials. */
  security: SecurityManager
  /** Certificates for SSL and SASL_SSL listeners. */
  tls?: TlsContextProvider
  /** Counts each answered request (rate, latency, bytes) for /metrics and the console. */
  metrics?: BrokerMetrics
  /** Client quotas: byte rates and request time (KIP-219), connection rate per IP (KIP-612). */
  quotas?: RequestThrottler
  connectionRate?: ConnectionRateQuota
}

/** One open listener: its spec, where it is bound, and what Metadata tells its clients. */
export interface BoundListener {
  readonly spec: ListenerSpec
  readonly host: string
  readonly port: number
  readonly advertised: { host: string; port: number }
  /** The broker as handlers on this listener see it: `advertised` is this listener's (Kafka answers per listener). */
  readonly broker: BrokerContext
}


function isWildcard(host: string): boolean {
  return host === '0.0.0.0' || host === '::' || host === '[::]' || host === ''
}

/**
 * The network side of the broker: one server socket per listener (PLAINTEXT, SSL,
 * SASL_PLAINTEXT, SASL_SSL), each connection fed to the handlers once its TLS handshake
 * (if any) is done; SASL listeners authenticate before anything else is served.
 */
export class KafkaServer {
  private readonly servers: Server[] = []
  private readonly connections = new Set<Connection>()
  /** Accepted sockets not serving yet (TLS handshakes, connections held over their IP rate): counted, cut at close. */
  private readonly handshaking = new Map<string, Socket>()
  private readonly quotas: ConnectionQuotas
  private readonly pool: RequestMemoryPool
  private closing = false

  constructor(private readonly opts: ServerOptions) {
    const config = opts.broker.config
    this.quotas = new ConnectionQuotas({
      maxConnections: config.maxConnections,
      maxConnectionsPerIp: config.maxConnectionsPerIp,
      logger: opts.logger,
    })
    this.pool = new RequestMemoryPool(config.queuedMaxRequestBytes, opts.logger)
    opts.metrics?.attachServer(this)
  }

  /** For /metrics: open connections per listener, requests read but not answered, failed authentications per listener. */
  socketStats(): SocketStats {
    const connections = new Map<string, number>()
    let pendingRequests = 0
    for (const c of this.connections) {
      connections.set(c.listenerName, (connections.get(c.listenerName) ?? 0) + 1)
      pendingRequests += c.pendingRequests
    }
    return { connections, pendingRequests, failedAuthentications: this.opts.security.failures }
  }

  private accept(socket: Socket, listener: BoundListener): void {
    const address = normalizeAddress(socket.remoteAddress)
    if (this.closing || this.quotas.tryAcquire(address) !== undefined) {
      // Refused as Kafka does: closed at once, before a byte is read.
      socket.on('error', () => {})
      socket.destroy()
      return
    }
    // The quota follows the TCP socket, so a TLS handshake that never ends still counts.
    socket.once('close', () => this.quotas.release(address))
    const holdMs = this.opts.connectionRate?.admit(address) ?? 0
    if (holdMs > 0) return holdThenClose(socket, holdMs, this.handshaking)
    if (!usesTls(listener.spec.protocol)) {
      this.open(socket, address, listener, undefined)
      return
    }
    const acceptor = this.tlsAcceptorFor(listener)
    const key = `${socket.remoteAddress}:${socket.remotePort}`
    this.handshaking.set(key, socket)
    socket.on('error', () => {})
    socket.once('close', () => this.handshaking.delete(key))
    acceptor.accept(socket)
  }

  private readonly acceptors = new Map<BoundListener, TlsAcceptor>()

  private tlsAcceptorFor(listener: BoundListener): TlsAcceptor {
    let acceptor = this.acceptors.get(listener)
    if (acceptor !== undefined) return acceptor
    const spec = listener.spec
    const idleMs = this.opts.broker.config.connectionsMaxIdleMs
    // A client that connects and never finishes the handshake is cut like an idle one.
    acceptor = new TlsAcceptor(this.opts.tls!, spec, idleMs > 0 ? idleMs : 60_000, this.opts.logger, (secure, principal) => {
      this.handshaking.delete(`${secure.remoteAddress}:${secure.remotePort}`)
      if (this.closing) {
        secure.destroy()
        return
      }
      if (spec.protocol === 'SSL') this.opts.security.authenticated(spec, 'TLS', principal)
      this.open(secure, normalizeAddress(secure.remoteAddress), listener, principal)
    })
    this.acceptors.set(listener, acceptor)
    return acceptor
  }

  private open(socket: Socket, address: string, listener: BoundListener, principal: string | undefined): void {
    const security = new ConnectionSecurity(this.opts.security, listener.spec, principal)
    this.connections.add(new Connection(this, socket, this.opts, address, this.pool, listener, security))
    this.opts.metrics?.connectionOpened(listener.spec.name)
  }

  /** Binds every listener in order; a failure closes those already bound. */
  async listenAll(): Promise<BoundListener[]> {
    const config = this.opts.broker.config
    const specs = this.opts.listeners ?? [{ name: 'PLAINTEXT', protocol: 'PLAINTEXT' as const, host: config.host, port: config.port }]
    const bound: BoundListener[] = []
    try {
      for (const spec of specs) {
        if (usesTls(spec.protocol) && this.opts.tls === undefined) throw new Error(`listener ${spec.name} (${spec.protocol}) needs a TLS keystore`)
        const advertised = { host: '', port: 0 }
        const listener: BoundListener = { spec, host: '', port: 0, advertised, broker: { ...this.opts.broker, advertised } }
        const server = createServer({ noDelay: true }, (socket) => this.accept(socket, listener))
        this.servers.push(server)
        const addr = await new Promise<AddressInfo>((resolve, reject) => {
          server.once('error', reject)
          server.listen(spec.port, spec.host === '' ? '0.0.0.0' : spec.host, () => {
            server.off('error', reject)
            server.on('error', (err) => this.opts.logger.error(`listener ${spec.name}: ${err.message}`))
            resolve(server.address() as AddressInfo)
          })
        })
        advertised.host = spec.advertised?.host || (isWildcard(spec.host) ? '127.0.0.1' : spec.host)
        advertised.port = spec.advertised?.port || addr.port
        Object.assign(listener, { host: addr.address, port: addr.port })
        bound.push(listener)
      }
    } catch (err) {
      await Promise.all(this.servers.map((srv) => new Promise((r) => srv.close(r))))
      throw err
    }
    return bound
  }

  /** @internal */
  forget(c: Connection): void {
    if (this.connections.has(c)) this.opts.metrics?.connectionClosed(c.listenerName)
    this.connections.delete(c)
  }

  /**
   * Stops accepting, lets every connection finish the requests it has already
   * read (their responses are written), then closes them; connections still
   * busy after `graceMs` are cut.
   */
  async close(graceMs = 10_000): Promise<void> {
    this.closing = true
    const closed = Promise.all(this.servers.map((srv) => new Promise<void>((resolve) => srv.close(() => resolve()))))
    for (const s of this.handshaking.values()) s.destroy()
    for (const c of this.connections) c.shutdown()
    const deadline = Date.now() + graceMs
    while (this.connections.size > 0 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 10))
    }
    for (const c of this.connections) c.destroy('shutdown grace period over')
    await closed
    this.quotas.close()
  }
}
