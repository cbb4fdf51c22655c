/**
 * The parts of a compact JWS (RFC 7515) and the claim checks Kafka's two OAUTHBEARER
 * validators share (OAuthBearerValidationUtils for the unsecured one, jose4j's checks for
 * the KIP-768 one): expiry, issued-at, not-before, scope.
 */

/** Why a token is refused: the reason is for the broker's log, `status`/`scope` for the client's error document (RFC 6750). */
export class TokenRejected extends Error {
  constructor(
    readonly reason: string,
    readonly status: 'invalid_token' | 'insufficient_scope' = 'invalid_token',
    readonly scope?: string,
  ) {
    super(reason)
    this.name = 'TokenRejected'
  }
}

export type Claims = Record<string, unknown>

export interface CompactJws {
  header: Claims
  payload: Claims
  /** `header.payload`, the bytes the signature covers. */
  signingInput: string
  signature: Buffer
}

// RFC 7515 section 2: base64url without padding; anything else is not a JWS.
const B64URL = /^[A-Za-z0-9_-]*$/

function decodeJsonPart(part: string, what: string): Claims {
  if (!B64URL.test(part)) throw new TokenRejected(`the JWS ${what} is not base64url`)
  let value: unknown
  try {
    value = JSON.parse(Buffer.from(part, 'base64url').toString('utf8'))
  } catch {
    throw new TokenRejected(`the JWS ${what} is not JSON`)
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new TokenRejected(`the JWS ${what} is not a JSON object`)
  return value as Claims
}

export function parseCompactJws(token: string): CompactJws {
  const parts = token.split('.')
  if (parts.length !== 3) throw new TokenRejected(`a JWS has 3 parts separated by '.', this one has ${parts.length}`)
  const [h, p, s] = parts as [string, string, string]
  if (!B64URL.test(s)) throw new TokenRejected('the JWS signature is not base64url')
  return { header: decodeJsonPart(h, 'header'), payload: decodeJsonPart(p, 'payload'), signingInput: `${h}.${p}`, signature: Buffer.from(s, 'base64url') }
}

/** A NumericDate claim (seconds, possibly fractional) as milliseconds; undefined when absent. */
export function numericDateMs(claims: Claims, name: string, required: boolean): number | undefined {
  const v = claims[name]
  if (v === undefined) {
    if (required) throw new TokenRejected(`the required claim ${name} is missing`)
    return undefined
  }
  if (typeof v !== 'number' || !Number.isFinite(v)) throw new TokenRejected(`the claim ${name} is not a number`)
  return Math.round(v * 1000)
}

export function stringClaim(claims: Claims, name: string): string {
  const v = claims[name]
  if (v === undefined) throw new TokenRejected(`the required claim ${name} is missing`)
  if (typeof v !== 'string' || v.trim() === '') throw new TokenRejected(`the claim ${name} is not a non-empty string`)
  return v
}

/** A scope claim is a space-delimited string or a list of strings (RFC 8693, and Kafka's OAuthBearerScopeUtils). */
export function scopeOf(claims: Claims, name: string): string[] {
  const v = claims[name]
  if (v === undefined) return []
  if (typeof v === 'string') return v.split(' ').filter((s) => s !== '')
  if (Array.isArray(v) && v.every((s) => typeof s === 'string')) return v as string[]
  throw new TokenRejected(`the scope claim ${name} is neither a string nor a list of strings`)
}

export interface TimeChecked {
  expiresAtMs: number
  issuedAtMs: number | undefined
}

/** exp (required), iat and nbf against `now`, each allowed `skewMs` either way, and consistent with one another. */
export function checkTimes(claims: Claims, nowMs: number, skewMs: number): TimeChecked {
  const exp = numericDateMs(claims, 'exp', true)!
  const iat = numericDateMs(claims, 'iat', false)
  const nbf = numericDateMs(claims, 'nbf', false)
  if (nowMs - skewMs >= exp) throw new TokenRejected(`the token expired at ${new Date(exp).toISOString()}`)
  if (iat !== undefined && iat > nowMs + skewMs) throw new TokenRejected(`the token's issued-at time ${new Date(iat).toISOString()} is in the future`)
  if (nbf !== undefined && nbf > nowMs + skewMs) throw new TokenRejected(`the token is not valid before ${new Date(nbf).toISOString()}`)
  if (iat !== undefined && iat >= exp) throw new TokenRejected('the token expires before it was issued')
  if (nbf !== undefined && nbf >= exp) throw new TokenRejected('the token expires before it becomes valid')
  return { expiresAtMs: exp, issuedAtMs: iat }
}

/** Every required scope value must be granted; the error names them, as Kafka's validateScope does. */
export function checkScope(granted: readonly string[], required: readonly string[]): void {
  const missing = required.filter((r) => !granted.includes(r))
  // JSON-quoted: the granted values come from the client and go to the broker's log.
  if (missing.length > 0) throw new TokenRejected(`the token's scope ${JSON.stringify(granted)} lacks ${JSON.stringify(missing)}`, 'insufficient_scope', required.join(' '))
}

/** A validated token: what the SASL server needs from it. */
export interface ValidatedToken {
  principalName: string
  /** exp, as epoch milliseconds: the credential's end for KIP-368. */
  expiresAtMs: number
  scope: string[]
}

/** A pluggable token validator (Kafka's sasl.server.callback.handler.class for OAUTHBEARER). Throws TokenRejected. */
export interface TokenValidator {
  readonly kind: string
  validate(token: string, nowMs: number): ValidatedToken
}
