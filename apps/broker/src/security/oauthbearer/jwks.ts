import { type JsonWebKey, type KeyObject, constants, createPublicKey, verify } from 'node:crypto'
import { readFile } from 'node:fs/promises'
import { get as httpGet } from 'node:http'
import { get as httpsGet } from 'node:https'
import { fileURLToPath } from 'node:url'
import type { Logger } from '../../logger.js'
import { type TokenValidator, TokenRejected, type ValidatedToken, checkTimes, numericDateMs, parseCompactJws, scopeOf, stringClaim } from './jwt.js'

/** Kafka's sasl.oauthbearer.* claim settings for its KIP-768 validator (OAuthBearerValidatorCallbackHandler). */
export interface JwtValidatorOptions {
  /** sasl.oauthbearer.expected.audience: the token's aud must name one of these. */
  expectedAudience: readonly string[]
  /** sasl.oauthbearer.expected.issuer. */
  expectedIssuer: string | undefined
  /** sasl.oauthbearer.sub.claim.name (default sub). */
  subClaimName: string
  /** sasl.oauthbearer.scope.claim.name (default scope). */
  scopeClaimName: string
  /** sasl.oauthbearer.clock.skew.seconds, in milliseconds. */
  clockSkewMs: number
}

interface Verifier {
  kid: string | undefined
  alg: string | undefined
  key: KeyObject
}

// JWS algorithms (RFC 7518) checked with a public key. HS* is absent on purpose: an HMAC
// "verified" with a public key as its secret is the classic algorithm-confusion forgery.
const ALGORITHMS: Record<string, { kty: 'RSA' | 'EC'; hash: string; curve?: string; pss?: boolean }> = {
  RS256: { kty: 'RSA', hash: 'sha256' },
  RS384: { kty: 'RSA', hash: 'sha384' },
  RS512: { kty: 'RSA', hash: 'sha512' },
  PS256: { kty: 'RSA', hash: 'sha256', pss: true },
  PS384: { kty: 'RSA', hash: 'sha384', pss: true },
  PS512: { kty: 'RSA', hash: 'sha512', pss: true },
  ES256: { kty: 'EC', hash: 'sha256', curve: 'prime256v1' },
  ES384: { kty: 'EC', hash: 'sha384', curve: 'secp384r1' },
  ES512: { kty: 'EC', hash: 'sha512', curve: 'secp521r1' },
}

const FETCH_TIMEOUT_MS = 10_000
// A token naming an unknown kid asks for a fresh key set (the provider may have rotated), but
// not more often than this, so hostile tokens cannot turn the broker into a load on the provider.
const ON_DEMAND_REFRESH_MIN_MS = 10_000
const MAX_JWKS_BYTES = 1024 * 1024

function fetchText(url: URL): Promise<string> {
  if (url.protocol === 'file:') return readFile(fileURLToPath(url), 'utf8')
  const get = url.protocol === 'https:' ? httpsGet : httpGet
  return new Promise((resolve, reject) => {
    const req = get(url, { timeout: FETCH_TIMEOUT_MS, headers: { accept: 'application/json' } }, (res) => {
      if (res.statusCode !== 200) {
        res.resume()
        reject(new Error(`HTTP ${res.statusCode} from ${url.href}`))
        return
      }
      let body = ''
      res.setEncoding('utf8')
      res.on('data', (d: string) => {
        body += d
        if (body.length > MAX_JWKS_BYTES) req.destroy(new Error(`${url.href} answered more than ${MAX_JWKS_BYTES} bytes`))
      })
      res.on('end', () => resolve(body))
      res.on('error', reject)
    })
    req.on('timeout', () => req.destroy(new Error(`no answer from ${url.href} within ${FETCH_TIMEOUT_MS} ms`)))
    req.on('error', reject)
  })
}

/** The signing keys of a JWK Set (RFC 7517); keys that are not for signatures, or that node cannot import, are skipped. */
export function parseJwks(text: string): Verifier[] {
  const doc = JSON.parse(text) as { keys?: unknown }
  if (!Array.isArray(doc.keys)) throw new Error('a JWK Set must have a "keys" array')
  const out: Verifier[] = []
  for (const jwk of doc.keys as (JsonWebKey & { kid?: unknown; alg?: unknown; use?: unknown })[]) {
    if (jwk === null || typeof jwk !== 'object' || (jwk.use !== undefined && jwk.use !== 'sig')) continue
    if (jwk.kty !== 'RSA' && jwk.kty !== 'EC') continue
    let key: KeyObject
    try {
      key = createPublicKey({ key: jwk, format: 'jwk' })
    } catch {
      continue
    }
    out.push({ kid: typeof jwk.kid === 'string' ? jwk.kid : undefined, alg: typeof jwk.alg === 'string' ? jwk.alg : undefined, key })
  }
  return out
}

/**
 * The keys from sasl.oauthbearer.jwks.endpoint.url, held in memory so a token is checked
 * without waiting on the network, and refreshed every jwks.endpoint.refresh.ms (as Kafka's
 * RefreshingHttpsJwks). A failed refresh keeps the last good set.
 */
export class JwksKeySet {
  private keys: Verifier[] = []
  private timer: NodeJS.Timeout | undefined
  private lastRefresh = 0
  private inFlight: Promise<void> | undefined
  private readonly url: URL

  constructor(
    url: string,
    private readonly refreshMs: number,
    private readonly logger: Logger,
  ) {
    try {
      this.url = new URL(url)
    } catch {
      throw new Error(`sasl.oauthbearer.jwks.endpoint.url: ${JSON.stringify(url)} is not a URL`)
    }
    if (!['http:', 'https:', 'file:'].includes(this.url.protocol)) {
      throw new Error(`sasl.oauthbearer.jwks.endpoint.url: ${this.url.protocol} is not served (http:, https: or file:)`)
    }
  }

  /** The first load: the broker does not start without keys, as Kafka's validator fails to configure. */
  async start(): Promise<void> {
    await this.refresh(true)
    if (this.refreshMs > 0) {
      this.timer = setInterval(() => void this.refresh(false), this.refreshMs)
      this.timer.unref()
    }
  }

  close(): void {
    if (this.timer !== undefined) clearInterval(this.timer)
    this.timer = undefined
  }

  get size(): number {
    return this.keys.length
  }

  private refresh(first: boolean): Promise<void> {
    this.inFlight ??= (async () => {
      this.lastRefresh = Date.now()
      try {
        const keys = parseJwks(await fetchText(this.url))
        if (keys.length === 0) throw new Error('it holds no RSA or EC signing key')
        this.keys = keys
      } catch (err) {
        const message = `cannot load the JWKS from ${this.url.href}: ${(err as Error).message}`
        if (first) throw new Error(`sasl.oauthbearer.jwks.endpoint.url: ${message}`)
        this.logger.warn(`${message}; keeping the ${this.keys.length} keys loaded before`)
      } finally {
        this.inFlight = undefined
      }
    })()
    return this.inFlight
  }

  /** The keys that may have signed a token with this header. An unknown kid starts a (rate-limited) refresh. */
  candidates(kid: string | undefined, alg: string): Verifier[] {
    const spec = ALGORITHMS[alg]!
    const found = this.keys.filter((k) => (kid === undefined || k.kid === kid) && (k.alg === undefined || k.alg === alg) && keyFits(k.key, spec))
    if (found.length === 0 && kid !== undefined && !this.keys.some((k) => k.kid === kid) && Date.now() - this.lastRefresh >= ON_DEMAND_REFRESH_MIN_MS) {
      void this.refresh(false)
    }
    return found
  }
}

function keyFits(key: KeyObject, spec: (typeof ALGORITHMS)[string]): boolean {
  if (spec.kty === 'RSA') return key.asymmetricKeyType === 'rsa'
  return key.asymmetricKeyType === 'ec' && key.asymmetricKeyDetails?.namedCurve === spec.curve
}

function signatureValid(alg: string, key: KeyObject, data: string, signature: Buffer): boolean {
  const spec = ALGORITHMS[alg]!
  const input = Buffer.from(data, 'ascii')
  if (spec.kty === 'EC') return verify(spec.hash, input, { key, dsaEncoding: 'ieee-p1363' }, signature)
  if (spec.pss === true) return verify(spec.hash, input, { key, padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: constants.RSA_PSS_SALTLEN_DIGEST }, signature)
  return verify(spec.hash, input, key, signature)
}

/**
 * Kafka's KIP-768 broker validator (BrokerJwtValidator): a signed JWT whose key is in the
 * provider's JWKS, with exp, iat and the subject claim present, the issuer and audience
 * as configured, and times within the allowed clock skew.
 */
export class JwtValidator implements TokenValidator {
  readonly kind = 'jwks'

  constructor(
    private readonly o: JwtValidatorOptions,
    private readonly keys: JwksKeySet,
  ) {}

  validate(token: string, nowMs: number): ValidatedToken {
    const jws = parseCompactJws(token)
    const alg = jws.header.alg
    if (typeof alg !== 'string' || ALGORITHMS[alg] === undefined) {
      throw new TokenRejected(`the JWS algorithm ${JSON.stringify(alg)} is not accepted (${Object.keys(ALGORITHMS).join(', ')})`)
    }
    const kid = typeof jws.header.kid === 'string' ? jws.header.kid : undefined
    const candidates = this.keys.candidates(kid, alg)
    if (candidates.length === 0) throw new TokenRejected(`no key in the JWKS fits kid ${JSON.stringify(kid ?? null)} and alg ${alg}`)
    if (!candidates.some((k) => signatureValid(alg, k.key, jws.signingInput, jws.signature))) throw new TokenRejected('the JWS signature does not verify')
    const claims = jws.payload
    const times = checkTimes(claims, nowMs, this.o.clockSkewMs)
    if (numericDateMs(claims, 'iat', true) === undefined) throw new TokenRejected('the required claim iat is missing')
    if (this.o.expectedIssuer !== undefined && claims.iss !== this.o.expectedIssuer) {
      throw new TokenRejected(`the issuer ${JSON.stringify(claims.iss ?? null)} is not the expected ${JSON.stringify(this.o.expectedIssuer)}`)
    }
    const aud = claims.aud === undefined ? [] : Array.isArray(claims.aud) ? claims.aud : [claims.aud]
    if (this.o.expectedAudience.length > 0) {
      if (!aud.some((a) => typeof a === 'string' && this.o.expectedAudience.includes(a))) {
        throw new TokenRejected(`the audience ${JSON.stringify(aud)} names none of ${JSON.stringify(this.o.expectedAudience)}`)
      }
    } else if (aud.length > 0) {
      // jose4j's default, which Kafka keeps: a token meant for a named audience is not for a broker that expects none.
      throw new TokenRejected(`the token names an audience ${JSON.stringify(aud)} but sasl.oauthbearer.expected.audience is not set`)
    }
    const principalName = stringClaim(claims, this.o.subClaimName)
    return { principalName, expiresAtMs: times.expiresAtMs, scope: scopeOf(claims, this.o.scopeClaimName) }
  }
}
