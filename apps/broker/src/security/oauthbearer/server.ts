import { SaslFailure, type SaslServer, genericFailure } from '../mechanisms.js'
import { type TokenValidator, TokenRejected } from './jwt.js'

const SEPARATOR = '\u0001'
// RFC 7628 section 3.1 and Kafka's OAuthBearerClientInitialResponse: the GS2 header (no channel
// binding, optional authzid as a saslname), then key=value pairs each closed by ^A, then ^A.
const SASLNAME = '(?:[\\x01-\\x2b\\x2d-\\x3c\\x3e-\\x7f]|=2C|=3D)+'
const KEY = /^[A-Za-z]+$/
const VALUE = /^[\x21-\x7E \t\r\n]+$/
const INITIAL_RESPONSE = new RegExp(`^n,(?:a=(${SASLNAME}))?,${SEPARATOR}((?:[A-Za-z]+=[\\x21-\\x7E \\t\\r\\n]+${SEPARATOR})*)${SEPARATOR}$`)
const AUTH = /^(\w+) +([-_.a-zA-Z0-9]+)$/

export interface ClientInitialResponse {
  token: string
  authorizationId: string
  /** KIP-342 SASL extensions, `auth` excluded. */
  extensions: Map<string, string>
}

/** Throws SaslFailure with Kafka's generic text: Kafka answers these as SaslException, whose message the client never sees. */
export function parseClientInitialResponse(bytes: Buffer): ClientInitialResponse {
  const m = INITIAL_RESPONSE.exec(bytes.toString('utf8'))
  const invalid = (): never => {
    throw new SaslFailure(genericFailure('OAUTHBEARER'))
  }
  if (m === null) invalid()
  const pairs = new Map<string, string>()
  for (const kv of m![2]!.split(SEPARATOR)) {
    if (kv === '') continue
    const eq = kv.indexOf('=')
    pairs.set(kv.slice(0, eq), kv.slice(eq + 1))
  }
  const auth = pairs.get('auth')
  if (auth === undefined) invalid()
  pairs.delete('auth')
  for (const [k, v] of pairs) if (!KEY.test(k) || !VALUE.test(v)) invalid()
  const a = AUTH.exec(auth!)
  if (a === null || a[1]!.toLowerCase() !== 'bearer') invalid()
  const authzid = m![1] === undefined ? '' : m![1].replace(/=2C/g, ',').replace(/=3D/g, '=')
  return { token: a![2]!, authorizationId: authzid, extensions: pairs }
}

type Step = 'initial' | 'error-sent' | 'done'

/**
 * The server side of SASL/OAUTHBEARER (RFC 7628, KIP-255) as Kafka's OAuthBearerSaslServer:
 * a refused token is answered with an RFC 6750 error document, the client acknowledges with
 * ^A, and only then does the exchange fail with that document as its message.
 * Unlike Kafka, which would evaluate a second client-first message after an error, anything
 * but ^A fails at once: one connection gets one token.
 */
export class OAuthBearerServer implements SaslServer {
  readonly mechanism = 'OAUTHBEARER'
  complete = false
  authorizationId = ''
  /** The token's exp (epoch ms): KIP-368 ends the session there. */
  credentialExpiresAt: number | undefined
  extensions = new Map<string, string>()
  private step: Step = 'initial'
  private errorDocument = ''

  constructor(
    private readonly validator: TokenValidator,
    /** Why a token was refused, for the broker's log (never the token itself). */
    private readonly onRejected: (reason: string) => void,
    private readonly now: () => number = Date.now,
  ) {}

  evaluate(token: Buffer): Buffer {
    switch (this.step) {
      case 'done':
        throw new SaslFailure(genericFailure(this.mechanism))
      case 'error-sent':
        this.step = 'done'
        if (token.length === 1 && token[0] === 1) throw new SaslFailure(this.errorDocument)
        throw new SaslFailure(genericFailure(this.mechanism))
      case 'initial':
        return this.initial(token)
    }
  }

  private initial(bytes: Buffer): Buffer {
    this.step = 'done'
    const response = parseClientInitialResponse(bytes)
    let validated
    try {
      validated = this.validator.validate(response.token, this.now())
    } catch (err) {
      if (!(err instanceof TokenRejected)) throw err
      this.onRejected(err.reason)
      // Kafka's jsonErrorResponse: status, then scope when the failure is about scope.
      this.errorDocument = `{"status":"${err.status}"${err.scope !== undefined ? `, "scope":"${err.scope.replace(/["\\]/g, '')}"` : ''}}`
      this.step = 'error-sent'
      return Buffer.from(this.errorDocument, 'utf8')
    }
    if (response.authorizationId !== '' && response.authorizationId !== validated.principalName) {
      throw new SaslFailure(
        `Authentication failed: Client requested an authorization id (${response.authorizationId}) that is different from the token's principal name (${validated.principalName})`,
      )
    }
    this.extensions = response.extensions
    this.authorizationId = validated.principalName
    this.credentialExpiresAt = validated.expiresAtMs
    this.complete = true
    return Buffer.alloc(0)
  }
}
