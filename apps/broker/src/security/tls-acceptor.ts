import type { Socket } from 'node:net'
import { type Server as TlsServer, type TLSSocket, createServer as createTlsServer } from 'node:tls'
import type { Logger } from '../logger.js'
import type { ListenerSpec } from './listeners.js'
import { type TlsContextProvider, tlsPrincipal } from './tls.js'

/**
 * TLS for one listener. The handshake is node's tls.Server's (it verifies client certificates
 * and enforces the handshake timeout), but that server never listens: the broker's accept
 * loop hands it sockets, so connection quotas count them from the first byte.
 */
export class TlsAcceptor {
  private readonly server: TlsServer
  private generation: number
  private readonly clientAuth

  constructor(
    private readonly provider: TlsContextProvider,
    private readonly spec: ListenerSpec,
    handshakeTimeoutMs: number,
    private readonly logger: Logger,
    /** A finished handshake with its principal; the caller may still refuse it. */
    onSecure: (secure: TLSSocket, principal: string) => void,
  ) {
    // As Kafka: ssl.client.auth applies to SSL listeners; SASL_SSL authenticates with SASL instead.
    this.clientAuth = spec.protocol === 'SSL' ? provider.clientAuth : 'none'
    this.generation = provider.generation
    this.server = createTlsServer({
      ...provider.current(),
      requestCert: this.clientAuth !== 'none',
      rejectUnauthorized: this.clientAuth === 'required',
      handshakeTimeout: handshakeTimeoutMs,
    })
    this.server.on('tlsClientError', (err, socket) => {
      this.logger.debug(`TLS on listener ${spec.name}: ${err.message}`)
      socket.destroy()
    })
    this.server.on('secureConnection', (secure: TLSSocket) => {
      // "requested": a certificate is optional, but one that does not verify is refused (as the JDK's wantClientAuth).
      if (this.clientAuth === 'requested' && !secure.authorized && secure.getPeerX509Certificate() !== undefined) {
        this.logger.debug(`TLS on listener ${spec.name}: client certificate refused: ${String(secure.authorizationError)}`)
        secure.destroy()
        return
      }
      secure.on('error', (err) => this.logger.debug(`TLS on listener ${spec.name}: ${err.message}`))
      let principal: string
      try {
        principal = tlsPrincipal(secure, provider.principalRules)
      } catch (err) {
        // Kafka fails the connection when no ssl.principal.mapping.rules entry applies.
        this.logger.info(`TLS on listener ${spec.name}: ${(err as Error).message}`)
        secure.destroy()
        return
      }
      onSecure(secure, principal)
    })
  }

  accept(socket: Socket): void {
    const options = this.provider.current()
    if (this.generation !== this.provider.generation) {
      // Renewed files: new handshakes use them, open connections keep theirs.
      this.server.setSecureContext(options)
      this.generation = this.provider.generation
    }
    this.server.emit('connection', socket)
  }
}
