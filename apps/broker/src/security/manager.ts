import { readFileSync } from 'node:fs'
import type { Logger } from '../logger.js'
import { ScramCredentialStore, parsePlainUsers } from './credentials.js'
import type { ListenerSpec } from './listeners.js'
import { type PlainCheck, PlainServer, type SaslServer, SUPPORTED_MECHANISMS, ScramServer, plainUsersCheck } from './mechanisms.js'
import { type OAuthBearerSettings, createTokenValidator, parseJaasConfig } from './oauthbearer/config.js'
import type { JwksKeySet } from './oauthbearer/jwks.js'
import type { TokenValidator } from './oauthbearer/jwt.js'
import { OAuthBearerServer } from './oauthbearer/server.js'
import { loadPlainCallbackHandler } from './sasl-listener/callback-handler.js'
import type { ListenerSaslSettings } from './sasl-listener/settings.js'

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
  /** sasl.server.callback.handler.class: a module that decides PLAIN logins instead of the users file. */
  plainCallbackHandler?: string | undefined
  /** The listener.name.<listener>.* settings, by upper-case listener name (KIP-103: they win over the broker-wide ones). */
  listeners?: ReadonlyMap<string, ListenerSaslSettings>
}

/**
 * How one listener authenticates: its mechanisms, its PLAIN check and its OAUTHBEARER
 * validator, each from the listener's own settings or else the broker-wide ones.
 */
interface Realm {
  name: string
  enabledMechanisms: readonly string[]
  plain: PlainCheck
  /** Set where a callback handler module decides PLAIN; loaded by start(). */
  plainHandler?: { setting: string; path: string }
  tokenValidator: TokenValidator | undefined
  jwks: JwksKeySet | undefined
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

/** What every connection's authenticator shares: the mechanisms, the users and their credentials, per listener. */
export class SecurityManager {
  readonly scram: ScramCredentialStore
  /** The broker-wide sasl.enabled.mechanisms (a listener may narrow or change it). */
  readonly enabledMechanisms: readonly string[]
  readonly reauthMs: number
  readonly failedAuthenticationDelayMs: number
  private readonly logger: Logger
  private readonly global: Realm
  private readonly realms = new Map<string, Realm>()
  /** Failed authentications since start, per listener (for tests and, later, metrics). */
  readonly failures = new Map<string, number>()

  constructor(o: SecurityOptions) {
    this.enabledMechanisms = checkMechanisms(o.enabledMechanisms, 'sasl.enabled.mechanisms')
    this.reauthMs = o.reauthMs
    this.failedAuthenticationDelayMs = o.failedAuthenticationDelayMs
    this.logger = o.logger
    this.scram = new ScramCredentialStore(o.dataDir, o.logger)
    const plainUsers = o.plainUsersFile === undefined ? new Map<string, string>() : parsePlainUsers(readFileSync(o.plainUsersFile, 'utf8'))
    if (o.plainUsersFile !== undefined && plainUsers.size === 0) {
      o.logger.warn(`${o.plainUsersFile} names no user_NAME="password" entries: nobody can log in with PLAIN`)
    }
    const oauth = o.oauthbearer ?? DEFAULT_OAUTHBEARER
    this.global = this.realm('', this.enabledMechanisms, plainUsersCheck(plainUsers), oauth, o.plainCallbackHandler === undefined ? undefined : { setting: 'sasl.server.callback.handler.class', path: o.plainCallbackHandler })
    for (const [name, l] of o.listeners ?? []) {
      const prefix = `listener.name.${name.toLowerCase()}.`
      const mechanisms = l.enabledMechanisms === undefined ? this.enabledMechanisms : checkMechanisms(l.enabledMechanisms, `${prefix}sasl.enabled.mechanisms`)
      const plainJaas = l.jaasConfig.get('PLAIN')
      let plain = this.global.plain
      if (plainJaas !== undefined) {
        // The login module was checked with the config (parseListenerSaslSettings).
        const jaas = parseJaasConfig(plainJaas)
        const users = new Map([...jaas.options].filter(([k]) => k.startsWith('user_')).map(([k, v]) => [k.slice(5), v]))
        plain = plainUsersCheck(users)
      }
      for (const m of l.callbackHandler.keys()) {
        if (m !== 'PLAIN') throw new Error(`${prefix}${m.toLowerCase()}.sasl.server.callback.handler.class: only PLAIN takes a callback handler here (SCRAM uses the stored credentials, OAUTHBEARER the sasl.oauthbearer.* validator)`)
      }
      const handler = l.callbackHandler.get('PLAIN')
      const oauthJaas = l.jaasConfig.get('OAUTHBEARER')
      const ownOauth = oauthJaas !== undefined || Object.keys(l.oauthbearer).length > 0
      const settings: OAuthBearerSettings = { ...oauth, ...l.oauthbearer, ...(oauthJaas === undefined ? {} : { jaasConfig: oauthJaas }) }
      // A listener's own handler wins; its own users (a JAAS config) replace the broker-wide handler too.
      const plainHandler = handler !== undefined ? { setting: `${prefix}plain.sasl.server.callback.handler.class`, path: handler } : plainJaas === undefined ? this.global.plainHandler : undefined
      const shared = ownOauth || this.global.tokenValidator === undefined ? undefined : this.global
      this.realms.set(name, this.realm(name, mechanisms, plain, settings, plainHandler, shared))
    }
  }

  /** A realm; its OAUTHBEARER validator is `shared`'s when the listener sets nothing of its own for it. */
  private realm(name: string, mechanisms: readonly string[], plain: PlainCheck, oauth: OAuthBearerSettings, plainHandler: Realm['plainHandler'], shared?: Realm): Realm {
    const r: Realm = { name, enabledMechanisms: mechanisms, plain, tokenValidator: undefined, jwks: undefined, ...(plainHandler === undefined ? {} : { plainHandler }) }
    if (!mechanisms.includes('OAUTHBEARER')) return r
    if (shared !== undefined) {
      r.tokenValidator = shared.tokenValidator
      r.jwks = shared.jwks
    } else {
      const v = createTokenValidator(oauth, this.logger)
      r.tokenValidator = v.validator
      r.jwks = v.keys
    }
    return r
  }

  private realmsInUse(): Realm[] {
    return [...new Set([this.global, ...this.realms.values()])]
  }

  /**
   * What must happen before the first connection: loading the OAUTHBEARER JWKS (KIP-768) and
   * the callback handler modules, so a missing one stops the start with its setting named.
   */
  async start(): Promise<void> {
    const realms = this.realmsInUse()
    for (const keys of new Set(realms.map((r) => r.jwks))) await keys?.start()
    const loaded = new Map<string, Awaited<ReturnType<typeof loadPlainCallbackHandler>>>()
    for (const r of realms) {
      if (r.plainHandler === undefined) continue
      const { setting, path } = r.plainHandler
      let authenticate = loaded.get(path)
      if (authenticate === undefined) loaded.set(path, (authenticate = await loadPlainCallbackHandler(setting, path)))
      const fn = authenticate
      r.plain = (username, password, listener) => this.askHandler(fn, r, username, password, listener)
    }
  }

  // A handler that throws or rejects fails that one login; its message is logged, the password never is.
  private async askHandler(authenticate: Awaited<ReturnType<typeof loadPlainCallbackHandler>>, r: Realm, username: string, password: string, listener: string): Promise<boolean> {
    try {
      return (await authenticate({ mechanism: 'PLAIN', username, password, listener })) === true
    } catch (err) {
      const message = (err instanceof Error ? err.message : String(err)).split(password).join('***')
      this.logger.warn(`${r.plainHandler?.setting ?? 'sasl.server.callback.handler.class'} failed on listener ${listener}: ${message}`)
      return false
    }
  }

  close(): void {
    for (const keys of new Set(this.realmsInUse().map((r) => r.jwks))) keys?.close()
  }

  private realmOf(listener: ListenerSpec | undefined): Realm {
    return (listener === undefined ? undefined : this.realms.get(listener.name)) ?? this.global
  }

  /** The mechanisms a listener offers: listener.name.<l>.sasl.enabled.mechanisms, else sasl.enabled.mechanisms. */
  mechanismsFor(listener: ListenerSpec | undefined): readonly string[] {
    return this.realmOf(listener).enabledMechanisms
  }

  /** The server side of one exchange on a listener (the broker-wide settings without one), or undefined when not served there. */
  createServer(mechanism: string, listener?: ListenerSpec): SaslServer | undefined {
    const r = this.realmOf(listener)
    if (!r.enabledMechanisms.includes(mechanism)) return undefined
    switch (mechanism) {
      case 'PLAIN':
        return new PlainServer(r.plain, listener?.name ?? '')
      case 'SCRAM-SHA-256':
      case 'SCRAM-SHA-512':
        return new ScramServer(mechanism, this.scram)
      case 'OAUTHBEARER':
        if (r.tokenValidator === undefined) return undefined
        // The reason names the failed check (expired, audience, signature), never the token.
        return new OAuthBearerServer(r.tokenValidator, (reason) => this.logger.info(`OAUTHBEARER token refused: ${reason}`))
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

function checkMechanisms(list: readonly string[], setting: string): readonly string[] {
  for (const m of list) {
    if (!(SUPPORTED_MECHANISMS as readonly string[]).includes(m)) {
      throw new Error(`${setting}: ${m} is not supported (supported: ${SUPPORTED_MECHANISMS.join(', ')}; GSSAPI and delegation tokens are not)`)
    }
  }
  return list
}
