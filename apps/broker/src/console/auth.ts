import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto'
import type { IncomingMessage } from 'node:http'
import { scramKeys } from '@tidelog/protocol'
import { AclOperation, CLUSTER_NAME, ResourceType } from '../security/acl.js'
import type { Requester, StandardAuthorizer } from '../security/authorizer.js'
import { type ScramMechanismName, scramHashOf } from '../security/credentials.js'
import { type ListenerSpec, usesSasl } from '../security/listeners.js'
import type { SecurityManager } from '../security/manager.js'
import { SaslFailure } from '../security/mechanisms.js'

/** What the console needs of the broker's security: its users, its authorizer, and whether SASL is on. */
export interface ConsoleSecurityOptions {
  security: SecurityManager
  authorizer?: StandardAuthorizer
  listeners: readonly ListenerSpec[]
}

/**
 * What one console request may see, asked of the broker's own authorizer with the same
 * operations Kafka's APIs check: Metadata (DESCRIBE topic), Fetch (READ topic),
 * DescribeConfigs (DESCRIBE_CONFIGS topic), ListGroups / DescribeGroups (DESCRIBE group),
 * DescribeCluster (DESCRIBE cluster).
 */
export interface Access {
  readonly principal: string | null
  topic(operation: number, name: string): boolean
  group(operation: number, id: string): boolean
  cluster(operation: number): boolean
}

/** Everything allowed: a broker without an authorizer. */
export function openAccess(principal: string | null): Access {
  return { principal, topic: () => true, group: () => true, cluster: () => true }
}

function authorizerAccess(authorizer: StandardAuthorizer, who: Requester): Access {
  return {
    principal: who.principal,
    topic: (op, name) => authorizer.authorize(who, op, ResourceType.TOPIC, name),
    group: (op, id) => authorizer.authorize(who, op, ResourceType.GROUP, id),
    cluster: (op) => authorizer.authorize(who, op, ResourceType.CLUSTER, CLUSTER_NAME),
  }
}

export const DESCRIBE = AclOperation.DESCRIBE
export const READ = AclOperation.READ
export const DESCRIBE_CONFIGS = AclOperation.DESCRIBE_CONFIGS

/** The answer to a request without valid credentials: 401 with the challenge a browser turns into its login prompt. */
export class LoginRequired extends Error {
  constructor(readonly failed: boolean) {
    super(failed ? 'SASL_AUTHENTICATION_FAILED: invalid username or password' : 'SASL_AUTHENTICATION_FAILED: the broker has security on; log in with a SASL user of the broker')
    this.name = 'LoginRequired'
  }
}

export const CHALLENGE = 'Basic realm="tidelog console", charset="UTF-8"'

const SCRAM: readonly ScramMechanismName[] = ['SCRAM-SHA-256', 'SCRAM-SHA-512']
const CACHE_LIMIT = 1000

/**
 * The console's login when the broker has security on (a SASL listener): HTTP Basic, checked
 * against the broker's own SASL users for the mechanisms it enables: the PLAIN users file and
 * the SCRAM credentials (the store kafka-configs.sh --alter --add-config 'SCRAM-SHA-256=...'
 * writes). The principal is `User:name`, as the SASL listener gives it, and every console call
 * is authorized with the broker's authorizer for it. Without a SASL listener the console acts as
 * User:ANONYMOUS, the principal a PLAINTEXT client has.
 */
export class ConsoleAuth {
  readonly loginRequired: boolean
  private readonly key = randomBytes(32)
  /**
   * A browser sends its Basic credentials with every request, and the console polls: PBKDF2
   * (4096+ iterations) per request would cost more than the request. A verified password is
   * remembered as an HMAC under a per-process key, with the stored key it matched, so a changed
   * or deleted credential stops matching at once.
   */
  private readonly verified = new Map<string, { mac: Buffer; mechanism: string; storedKey?: Buffer }>()
  constructor(
    private readonly opts: ConsoleSecurityOptions,
    /** Called for each refused login (/metrics counts them). */
    private readonly onFailure: () => void = () => {},
  ) {
    this.loginRequired = opts.listeners.some((l) => usesSasl(l.protocol))
  }

  /** Who is asking, and what they may see; throws LoginRequired. */
  async access(req: IncomingMessage): Promise<Access> {
    const host = req.socket.remoteAddress ?? '127.0.0.1'
    const principal = this.loginRequired ? `User:${await this.login(req.headers.authorization)}` : 'User:ANONYMOUS'
    const { authorizer } = this.opts
    return authorizer === undefined ? openAccess(principal) : authorizerAccess(authorizer, { principal, host: host.replace(/^::ffff:/, '') })
  }

  private async login(header: string | undefined): Promise<string> {
    const m = header === undefined ? null : /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header)
    if (m === null) throw new LoginRequired(false)
    const decoded = Buffer.from(m[1]!, 'base64').toString('utf8')
    const colon = decoded.indexOf(':')
    const user = colon < 0 ? '' : decoded.slice(0, colon)
    const password = colon < 0 ? '' : decoded.slice(colon + 1)
    if (user !== '' && password !== '' && (await this.check(user, password))) return user
    this.onFailure()
    // As a SASL failure: answered only after connection.failed.authentication.delay.ms, to slow guessing.
    await new Promise((r) => setTimeout(r, this.opts.security.failedAuthenticationDelayMs))
    throw new LoginRequired(true)
  }

  private async check(user: string, password: string): Promise<boolean> {
    const { security } = this.opts
    const enabled = security.enabledMechanisms
    const mac = createHmac('sha256', this.key).update(user).update('\0').update(password).digest()
    const known = this.verified.get(user)
    if (known !== undefined && timingSafeEqual(known.mac, mac) && this.stillValid(user, known)) return true
    if (enabled.includes('PLAIN')) {
      try {
        await security.createServer('PLAIN')!.evaluate(Buffer.from(`\0${user}\0${password}`, 'utf8'))
        this.remember(user, { mac, mechanism: 'PLAIN' })
        return true
      } catch (err) {
        if (!(err instanceof SaslFailure)) throw err
      }
    }
    for (const mechanism of SCRAM) {
      if (!enabled.includes(mechanism)) continue
      const c = security.scram.get(user, mechanism)
      if (c === undefined) continue
      const keys = await scramKeys(scramHashOf(mechanism), password, c.salt, c.iterations)
      if (keys.storedKey.length === c.storedKey.length && timingSafeEqual(keys.storedKey, c.storedKey)) {
        this.remember(user, { mac, mechanism, storedKey: c.storedKey })
        return true
      }
    }
    return false
  }

  private stillValid(user: string, v: { mechanism: string; storedKey?: Buffer }): boolean {
    const { security } = this.opts
    if (!security.enabledMechanisms.includes(v.mechanism)) return false
    // PLAIN users come from a file read once at start; only SCRAM credentials change while running.
    if (v.storedKey === undefined) return true
    const c = security.scram.get(user, v.mechanism as ScramMechanismName)
    return c !== undefined && c.storedKey.equals(v.storedKey)
  }

  private remember(user: string, v: { mac: Buffer; mechanism: string; storedKey?: Buffer }): void {
    if (this.verified.size >= CACHE_LIMIT && !this.verified.has(user)) this.verified.delete(this.verified.keys().next().value!)
    this.verified.set(user, v)
  }
}
