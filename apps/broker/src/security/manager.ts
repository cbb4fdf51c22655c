import { readFileSync } from 'node:fs'
import type { Logger } from '../logger.js'
import { ScramCredentialStore, parsePlainUsers } from './credentials.js'
import type { ListenerSpec } from './listeners.js'
import { PlainServer, type SaslServer, SUPPORTED_MECHANISMS, ScramServer } from './mechanisms.js'
import { type OAuthBearerSettings, createTokenValidator } from './oauthbearer/config.js'
import type { JwksKeySet } from './oauthbearer/jwks.js'
import type { TokenValidator } from './oauthbearer/jwt.js'
import { OAuthBearerServer } from './oauthbearer/server.js'

export interface SecurityOptions {
  dataDir: string
  logger: Logger
  /** sasl.enabled.mechanisms, upper case. */
  enabledMechanisms: readonly string[]
  /** A JAAS-style file whose user_NAME="password" options are the PLAIN users. */
  plainUsersFile: string | undefined
  /** connections.max.reauth.ms; 0 leaves sessions unbounded (KIP-368). */
  reauthMs: number
  /** connection.failed.authentication.delay.ms: how long a failure's answer is held back. */
  failedAuthenticationDelayMs: number
  /** Needed when OAUTHBEARER is enabled; without it OAUTHBEARER uses the unsecured validator with its defaults. */
  oauthbearer?: OAuthBearerSettings
}

/** Kafka's defaults for the sasl.oauthbearer.* settings, for callers that give none. */
export const DEFAULT_OAUTHBEARER: Readonly<OAuthBearerSettings> = Object.freeze({
  jaasConfig: undefined,
  jwksEndpointUrl: undefined,
  jwksEndpointRefreshMs: 3_600_000,
  expectedAudience: undefined,
  expectedIssuer: undefined,
  subClaimName: 'sub',
  scopeClaimName: 'scope',
  clockSkewSeconds: 30,
})

/** What every connection's authenticator shares: the mechanisms, the users and their credentials. */
export class SecurityManager {
  readonly scram: ScramCredentialStore
  readonly enabledMechanisms: readonly string[]
  readonly reauthMs: number
  readonly failedAuthenticationDelayMs: number
  private readonly plainUsers: ReadonlyMap<string, string>
  private readonly logger: Logger
  private readonly tokenValidator: TokenValidator | undefined
  private readonly jwks: JwksKeySet | undefined
  /** Failed authentications since start, per listener (for tests and, later, metrics). */
  readonly failures = new Map<string, number>()

  constructor(o: SecurityOptions) {
    for (const m of o.enabledMechanisms) {
      if (!(SUPPORTED_MECHANISMS as readonly string[]).includes(m)) {
        throw new Error(`sasl.enabled.mechanisms: ${m} is not supported (supported: ${SUPPORTED_MECHANISMS.join(', ')}; GSSAPI and delegation tokens are not)`)
      }
    }
    this.enabledMechanisms = o.enabledMechanisms
    this.reauthMs = o.reauthMs
    this.failedAuthenticationDelayMs = o.failedAuthenticationDelayMs
    this.logger = o.logger
    this.scram = new ScramCredentialStore(o.dataDir, o.logger)
    this.plainUsers = o.plainUsersFile === undefined ? new Map() : parsePlainUsers(readFileSync(o.plainUsersFile, 'utf8'))
    if (o.plainUsersFile !== undefined && this.plainUsers.size === 0) {
      o.logger.warn(`${o.plainUsersFile} names no user_NAME="password" entries: nobody can log in with PLAIN`)
    }
    if (o.enabledMechanisms.includes('OAUTHBEARER')) {
      const v = createTokenValidator(o.oauthbearer ?? DEFAULT_OAUTHBEARER, o.logger)
      this.tokenValidator = v.validator
      this.jwks = v.keys
    }
  }

  /** What must happen before the first connection: loading the OAUTHBEARER JWKS (KIP-768). */
  async start(): Promise<void> {
    await this.jwks?.start()
  }

  close(): void {
    this.jwks?.close()
  }

  createServer(mechanism: string): SaslServer | undefined {
    switch (mechanism) {
      case 'PLAIN':
        return new PlainServer(this.plainUsers)
      case 'SCRAM-SHA-256':
      case 'SCRAM-SHA-512':
        return new ScramServer(mechanism, this.scram)
      case 'OAUTHBEARER':
        if (this.tokenValidator === undefined) return undefined
        // The reason names the failed check (expired, audience, signature), never the token.
        return new OAuthBearerServer(this.tokenValidator, (reason) => this.logger.info(`OAUTHBEARER token refused: ${reason}`))
      default:
        return undefined
    }
  }

  authenticated(listener: ListenerSpec, how: string, principal: string): void {
    this.logger.debug(`authenticated as ${principal} (${how}) on listener ${listener.name}`)
  }

  // Logged without the user name or token: a password typed into the user field must not land in logs.
  authenticationFailed(listener: ListenerSpec, mechanism: string): void {
    this.failures.set(listener.name, (this.failures.get(listener.name) ?? 0) + 1)
    this.logger.info(`failed ${mechanism} authentication on listener ${listener.name}`)
  }
}
