import { randomBytes, timingSafeEqual } from 'node:crypto'
import { parseScramAttributes, scramDigest, scramHmac, unescapeSaslName, xorBytes } from '@tidelog/protocol'
import { type ScramCredentialStore, type ScramMechanismName, scramHashOf } from './credentials.js'

/**
 * A failed exchange. `clientMessage` is what SaslAuthenticate's error_message carries;
 * it never contains a secret. As Kafka's SaslServerAuthenticator, a failure the mechanism
 * explains (SaslAuthenticationException) is sent as is, anything else as the generic
 * "invalid credentials" text.
 */
export class SaslFailure extends Error {
  constructor(readonly clientMessage: string) {
    super(clientMessage)
    this.name = 'SaslFailure'
  }
}

/** The text Kafka sends when the mechanism gives no reason of its own. */
export function genericFailure(mechanism: string, reauthenticating = false): string {
  return `Authentication failed during ${reauthenticating ? 're-authentication' : 'authentication'} due to invalid credentials with SASL mechanism ${mechanism}`
}

/** One server side of one exchange: each client token in, the answer out, until complete. */
export interface SaslServer {
  readonly mechanism: string
  /** Throws (or rejects with) SaslFailure; a promise when a callback handler decides (sasl.server.callback.handler.class). */
  evaluate(token: Buffer): Buffer | Promise<Buffer>
  readonly complete: boolean
  /** The authenticated user name, once complete. */
  readonly authorizationId: string
  /** When the credential itself expires (epoch ms), e.g. an OAUTHBEARER token's exp; KIP-368 ends the session there. */
  readonly credentialExpiresAt?: number | undefined
}

export const SUPPORTED_MECHANISMS = ['PLAIN', 'SCRAM-SHA-256', 'SCRAM-SHA-512', 'OAUTHBEARER'] as const
export type MechanismName = (typeof SUPPORTED_MECHANISMS)[number]

/** Decides a PLAIN user name and password: the users of a JAAS config, or a callback handler module. */
export type PlainCheck = (username: string, password: string, listener: string) => boolean | Promise<boolean>

/** Kafka's PlainServerCallbackHandler: the user_NAME="password" options, compared in constant time. */
export function plainUsersCheck(users: ReadonlyMap<string, string>): PlainCheck {
  return (username, password) => {
    const expected = users.get(username)
    return expected !== undefined && constantTimeEqual(expected, password)
  }
}

/** RFC 4616: one message `authzid NUL authcid NUL password`, checked by the listener's PlainCheck. */
export class PlainServer implements SaslServer {
  readonly mechanism = 'PLAIN'
  complete = false
  authorizationId = ''
  private used = false

  /** `listener` is the upper-case listener name a callback handler is told. */
  constructor(
    private readonly check: PlainCheck,
    private readonly listener = '',
  ) {}

  evaluate(token: Buffer): Buffer | Promise<Buffer> {
    if (this.used) throw new SaslFailure(genericFailure(this.mechanism))
    this.used = true
    const parts = token.toString('utf8').split('\0')
    if (parts.length !== 3) throw new SaslFailure(genericFailure(this.mechanism))
    const [authzid, username, password] = parts as [string, string, string]
    if (username === '') throw new SaslFailure('Authentication failed: username not specified')
    if (password === '') throw new SaslFailure('Authentication failed: password not specified')
    const verdict = this.check(username, password, this.listener)
    if (verdict instanceof Promise) return verdict.then((ok) => this.finish(ok, authzid, username))
    return this.finish(verdict, authzid, username)
  }

  // Kafka's PlainSaslServer checks the credentials before the authorization id.
  private finish(ok: boolean, authzid: string, username: string): Buffer {
    if (ok !== true) throw new SaslFailure('Authentication failed: Invalid username or password')
    if (authzid !== '' && authzid !== username) {
      throw new SaslFailure('Authentication failed: Client requested an authorization id that is different from username')
    }
    this.complete = true
    this.authorizationId = username
    return Buffer.alloc(0)
  }
}

function constantTimeEqual(a: string, b: string): boolean {
  const x = Buffer.from(a, 'utf8')
  const y = Buffer.from(b, 'utf8')
  // Compare equal lengths always, so timing does not reveal the password's length either.
  const same = x.length === y.length
  return timingSafeEqual(same ? x : y, y) && same
}

type ScramStep = 'client-first' | 'client-final' | 'done'

/**
 * The server side of SCRAM (RFC 5802, RFC 7677) as Kafka speaks it (KIP-84): no channel
 * binding, no SASLprep, extensions after the nonce allowed but tokenauth (delegation
 * tokens) not served.
 */
export class ScramServer implements SaslServer {
  complete = false
  authorizationId = ''
  private step: ScramStep = 'client-first'
  private clientFirstBare = ''
  private serverFirst = ''
  private nonce = ''
  private gs2 = ''
  private user = ''

  constructor(
    readonly mechanism: ScramMechanismName,
    private readonly store: ScramCredentialStore,
    private readonly serverNonce: () => string = () => randomBytes(24).toString('base64url'),
  ) {}

  evaluate(token: Buffer): Buffer {
    const text = token.toString('utf8')
    switch (this.step) {
      case 'client-first':
        return this.clientFirst(text)
      case 'client-final':
        return this.clientFinal(text)
      case 'done':
        throw new SaslFailure(genericFailure(this.mechanism))
    }
  }

  private fail(): never {
    this.step = 'done'
    throw new SaslFailure(genericFailure(this.mechanism))
  }

  private clientFirst(text: string): Buffer {
    // gs2-header: "n" or "y" (no channel binding offered/used), optional a=authzid.
    const m = /^([ny]),(a=[^,]*)?,(n=[^,]*,r=[^,]+(?:,.*)?)$/s.exec(text)
    if (m === null) this.fail()
    this.gs2 = `${m[1]},${m[2] ?? ''},`
    this.clientFirstBare = m[3]!
    let attrs: Map<string, string>
    try {
      attrs = parseScramAttributes(this.clientFirstBare)
    } catch {
      this.fail()
    }
    const user = unescapeSaslName(attrs.get('n')!)
    const clientNonce = attrs.get('r')!
    if (user === undefined || user === '' || /[\x00-\x20\x7f,]/.test(clientNonce)) this.fail()
    // KIP-48 delegation tokens are out of scope: refuse rather than treat the token id as a user.
    for (const k of attrs.keys()) if (k !== 'n' && k !== 'r') this.fail()
    if (this.clientFirstBare.includes(',tokenauth=')) this.fail()
    const authzid = m[2]?.slice(2)
    if (authzid !== undefined && authzid !== '' && unescapeSaslName(authzid) !== user) {
      this.step = 'done'
      throw new SaslFailure('Authentication failed: Client requested an authorization id that is different from username')
    }
    const credential = this.store.get(user, this.mechanism)
    if (credential === undefined) {
      this.step = 'done'
      throw new SaslFailure('Authentication failed: Invalid user credentials')
    }
    this.user = user
    this.nonce = clientNonce + this.serverNonce()
    this.serverFirst = `r=${this.nonce},s=${credential.salt.toString('base64')},i=${credential.iterations}`
    this.step = 'client-final'
    return Buffer.from(this.serverFirst, 'utf8')
  }

  private clientFinal(text: string): Buffer {
    const cut = text.lastIndexOf(',p=')
    if (cut < 0) this.fail()
    const withoutProof = text.slice(0, cut)
    let attrs: Map<string, string>
    try {
      attrs = parseScramAttributes(withoutProof)
    } catch {
      this.fail()
    }
    // Kafka checks endsWith, not equality: librdkafka sends the client nonce again in front of the
    // combined one, and Kafka's ScramSaslServer accepts that, so we must too.
    if (!(attrs.get('r') ?? '').endsWith(this.nonce)) {
      this.step = 'done'
      throw new SaslFailure('Invalid client nonce in the final client message.')
    }
    if (attrs.get('c') !== Buffer.from(this.gs2, 'utf8').toString('base64')) this.fail()
    const proof = Buffer.from(text.slice(cut + 3), 'base64')
    const credential = this.store.get(this.user, this.mechanism)
    const hash = scramHashOf(this.mechanism)
    if (credential === undefined || proof.length !== credential.storedKey.length) this.fail()
    const authMessage = `${this.clientFirstBare},${this.serverFirst},${withoutProof}`
    const clientSignature = scramHmac(hash, credential.storedKey, authMessage)
    const clientKey = xorBytes(proof, clientSignature)
    if (!timingSafeEqual(scramDigest(hash, clientKey), credential.storedKey)) this.fail()
    this.step = 'done'
    this.complete = true
    this.authorizationId = this.user
    return Buffer.from(`v=${scramHmac(hash, credential.serverKey, authMessage).toString('base64')}`, 'utf8')
  }
}
