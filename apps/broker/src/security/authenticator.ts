import { ApiKeys, ErrorCodes, getApi } from '@tidelog/protocol'
import type { ListenerSpec } from './listeners.js'
import { usesSasl } from './listeners.js'
import { SaslFailure, type SaslServer, genericFailure } from './mechanisms.js'
import type { SecurityManager } from './manager.js'

/**
 * Where one connection is in authenticating, as Kafka's SaslServerAuthenticator:
 * - initial: a SASL listener's new connection; ApiVersions and SaslHandshake only.
 * - authenticate: SaslHandshake v1+ chose a mechanism; SaslAuthenticate only (KIP-152).
 * - authenticate-raw: SaslHandshake v0 chose one; the next frames are bare tokens.
 * - authenticated: every request is served (PLAINTEXT and SSL listeners start here).
 * - reauthenticate: SaslHandshake on an authenticated connection (KIP-368); SaslAuthenticate only.
 * - failed: answered with the error; the connection closes and reads nothing more.
 */
export type AuthState = 'initial' | 'authenticate' | 'authenticate-raw' | 'authenticated' | 'reauthenticate' | 'failed'

type AuthEvent = 'handshake' | 'handshake-v0' | 'step' | 'success' | 'failure' | 'reauth-handshake'

// Every allowed transition, in one place; anything absent is a bug, not a client error.
const TRANSITIONS: Record<AuthState, Partial<Record<AuthEvent, AuthState>>> = {
  initial: { handshake: 'authenticate', 'handshake-v0': 'authenticate-raw', failure: 'failed' },
  authenticate: { step: 'authenticate', success: 'authenticated', failure: 'failed' },
  'authenticate-raw': { step: 'authenticate-raw', success: 'authenticated', failure: 'failed' },
  authenticated: { 'reauth-handshake': 'reauthenticate' },
  reauthenticate: { step: 'reauthenticate', success: 'authenticated', failure: 'failed' },
  failed: {},
}

/** Requests each state lets through; `*` is everything. */
const ADMITTED: Record<AuthState, readonly number[] | '*'> = {
  initial: [ApiKeys.ApiVersions, ApiKeys.SaslHandshake],
  authenticate: [ApiKeys.SaslAuthenticate],
  'authenticate-raw': [],
  authenticated: '*',
  reauthenticate: [ApiKeys.SaslAuthenticate],
  failed: [],
}

// KIP-511's retry after UNSUPPORTED_VERSION needs two; more before a handshake is not a client.
const MAX_API_VERSIONS_BEFORE_HANDSHAKE = 3

export interface HandshakeResult {
  errorCode: number
  mechanisms: string[]
  /** Close once the answer is written. */
  close: boolean
}

export interface AuthenticateResult {
  errorCode: number
  errorMessage: string | null
  authBytes: Buffer
  sessionLifetimeMs: bigint
  close: boolean
}

/**
 * KIP-368's session lifetime, as Kafka's SaslServerAuthenticator computes it: the shorter of
 * connections.max.reauth.ms (when > 0) and the credential's own remaining life (an
 * OAUTHBEARER token's exp); undefined when neither bounds the session.
 */
export function sessionLifetimeMs(reauthMs: number, credentialExpiresAt: number | undefined, now: number): number | undefined {
  if (credentialExpiresAt === undefined && reauthMs <= 0) return undefined
  const credential = credentialExpiresAt === undefined ? Infinity : Math.max(0, credentialExpiresAt - now)
  return Math.min(credential, reauthMs > 0 ? reauthMs : Infinity)
}

/** One connection's authentication: its state, its principal, and its session's end (KIP-368). */
export class ConnectionSecurity {
  private state: AuthState
  private server: SaslServer | undefined
  private mechanism: string | undefined
  private apiVersionsSeen = 0
  /** A callback handler is deciding the current token. */
  private pending = false
  /** KIP-368 needs SaslAuthenticate v1+ from the client to re-authenticate. */
  private authenticateVersion = -1
  /** When the session ends (Date.now() scale); Infinity without connections.max.reauth.ms. */
  private expiresAt = Infinity
  /** `User:name` (SASL), `User:<subject DN>` (mTLS) or `User:ANONYMOUS`. */
  principal: string

  constructor(
    readonly manager: SecurityManager,
    readonly listener: ListenerSpec,
    tlsPrincipal: string | undefined,
    private readonly now: () => number = Date.now,
  ) {
    this.state = usesSasl(listener.protocol) ? 'initial' : 'authenticated'
    this.principal = tlsPrincipal ?? 'User:ANONYMOUS'
  }

  get current(): AuthState {
    return this.state
  }

  /** The next frames are bare SASL tokens (handshake v0), not requests. */
  get rawTokens(): boolean {
    return this.state === 'authenticate-raw'
  }

  private move(event: AuthEvent): void {
    const next = TRANSITIONS[this.state][event]
    if (next === undefined) throw new Error(`SASL state ${this.state} has no transition on ${event}`)
    this.state = next
  }

  /** Undefined when the request may be served; otherwise why the connection closes (Kafka's IllegalSaslStateException). */
  admit(apiKey: number): string | undefined {
    const allowed = ADMITTED[this.state]
    if (allowed !== '*' && !allowed.includes(apiKey)) {
      const name = getApi(apiKey)?.name ?? `api key ${apiKey}`
      const phase = this.state === 'initial' ? 'SASL handshake' : 'SASL authentication'
      return `Unexpected Kafka request of type ${name} during ${phase}.`
    }
    if (this.state === 'initial' && apiKey === ApiKeys.ApiVersions && ++this.apiVersionsSeen > MAX_API_VERSIONS_BEFORE_HANDSHAKE) {
      return 'too many ApiVersions requests before SaslHandshake'
    }
    // KIP-368: past its session, a connection may only start re-authenticating.
    if (this.state === 'authenticated' && apiKey !== ApiKeys.SaslHandshake && this.now() >= this.expiresAt) {
      return 'the authenticated session expired (connections.max.reauth.ms) and was not re-authenticated'
    }
    return undefined
  }

  handshake(mechanism: string, version: number): HandshakeResult {
    if (!usesSasl(this.listener.protocol)) return { errorCode: ErrorCodes.ILLEGAL_SASL_STATE, mechanisms: [], close: false }
    const enabled = this.manager.mechanismsFor(this.listener)
    if (this.state === 'authenticated') {
      // Only a client that spoke SaslAuthenticate v1+ can re-authenticate, and with the same mechanism.
      if (version < 1 || this.authenticateVersion < 1) return { errorCode: ErrorCodes.ILLEGAL_SASL_STATE, mechanisms: [], close: false }
      if (mechanism !== this.mechanism) {
        this.state = 'failed'
        return { errorCode: ErrorCodes.UNSUPPORTED_SASL_MECHANISM, mechanisms: [this.mechanism!], close: true }
      }
      this.server = this.manager.createServer(mechanism, this.listener)
      this.move('reauth-handshake')
      return { errorCode: ErrorCodes.NONE, mechanisms: [...enabled], close: false }
    }
    if (this.state !== 'initial') return { errorCode: ErrorCodes.ILLEGAL_SASL_STATE, mechanisms: [], close: true }
    const server = enabled.includes(mechanism) ? this.manager.createServer(mechanism, this.listener) : undefined
    if (server === undefined) {
      this.move('failure')
      return { errorCode: ErrorCodes.UNSUPPORTED_SASL_MECHANISM, mechanisms: [...enabled], close: true }
    }
    this.server = server
    this.mechanism = mechanism
    this.move(version === 0 ? 'handshake-v0' : 'handshake')
    return { errorCode: ErrorCodes.NONE, mechanisms: [...enabled], close: false }
  }

  /**
   * One SaslAuthenticate request (or, after handshake v0, one bare token). A promise when a
   * callback handler decides; while it is pending the exchange takes no other token.
   */
  authenticate(token: Buffer, version: number): AuthenticateResult | Promise<AuthenticateResult> {
    const none = Buffer.alloc(0)
    if (this.state === 'authenticated' || this.server === undefined || this.pending) {
      return {
        errorCode: ErrorCodes.ILLEGAL_SASL_STATE,
        errorMessage: this.pending ? 'SaslAuthenticate request received while the previous one is being decided' : 'SaslAuthenticate request received after successful authentication',
        authBytes: none,
        sessionLifetimeMs: 0n,
        close: this.pending,
      }
    }
    const server = this.server
    const reauthenticating = this.state === 'reauthenticate'
    this.authenticateVersion = version
    let response: Buffer | Promise<Buffer>
    try {
      response = server.evaluate(token)
    } catch (err) {
      return this.failed(server, err, reauthenticating)
    }
    if (!(response instanceof Promise)) return this.evaluated(server, response, reauthenticating)
    this.pending = true
    return response.then(
      (r) => {
        this.pending = false
        return this.evaluated(server, r, reauthenticating)
      },
      (err: unknown) => {
        this.pending = false
        return this.failed(server, err, reauthenticating)
      },
    )
  }

  private failed(server: SaslServer, err: unknown, reauthenticating: boolean): AuthenticateResult {
    this.move('failure')
    const message = err instanceof SaslFailure ? err.clientMessage : genericFailure(server.mechanism, reauthenticating)
    this.manager.authenticationFailed(this.listener, server.mechanism)
    return { errorCode: ErrorCodes.SASL_AUTHENTICATION_FAILED, errorMessage: message, authBytes: Buffer.alloc(0), sessionLifetimeMs: 0n, close: true }
  }

  private evaluated(server: SaslServer, response: Buffer, reauthenticating: boolean): AuthenticateResult {
    const none = Buffer.alloc(0)
    if (!server.complete) {
      this.move('step')
      return { errorCode: ErrorCodes.NONE, errorMessage: null, authBytes: response, sessionLifetimeMs: 0n, close: false }
    }
    const principal = `User:${server.authorizationId}`
    if (reauthenticating && principal !== this.principal) {
      this.move('failure')
      return {
        errorCode: ErrorCodes.SASL_AUTHENTICATION_FAILED,
        errorMessage: `Cannot change principals during re-authentication from ${this.principal}: ${principal}`,
        authBytes: none,
        sessionLifetimeMs: 0n,
        close: true,
      }
    }
    this.principal = principal
    this.manager.authenticated(this.listener, server.mechanism, principal)
    const lifetime = sessionLifetimeMs(this.manager.reauthMs, server.credentialExpiresAt, this.now())
    this.server = undefined
    this.move('success')
    this.expiresAt = lifetime === undefined ? Infinity : this.now() + lifetime
    return { errorCode: ErrorCodes.NONE, errorMessage: null, authBytes: response, sessionLifetimeMs: BigInt(lifetime ?? 0), close: false }
  }
}
