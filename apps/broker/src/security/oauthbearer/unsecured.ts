import { type TokenValidator, TokenRejected, type ValidatedToken, checkScope, checkTimes, parseCompactJws, scopeOf, stringClaim } from './jwt.js'

/** The JAAS options of Kafka's OAuthBearerUnsecuredValidatorCallbackHandler. */
export interface UnsecuredValidatorOptions {
  /** unsecuredValidatorPrincipalClaimName, default `sub`. */
  principalClaimName?: string
  /** unsecuredValidatorScopeClaimName, default `scope`. */
  scopeClaimName?: string
  /** unsecuredValidatorRequiredScope: space-delimited values the token must grant. */
  requiredScope?: string[]
  /** unsecuredValidatorAllowableClockSkewMs, default 0. */
  allowableClockSkewMs?: number
}

/** Reads those options from JAAS module options, refusing what Kafka refuses (a negative or non-integer skew). */
export function unsecuredOptionsFromJaas(options: ReadonlyMap<string, string>): UnsecuredValidatorOptions {
  const trimmed = (k: string): string | undefined => {
    const v = options.get(k)?.trim()
    return v === undefined || v === '' ? undefined : v
  }
  const skew = trimmed('unsecuredValidatorAllowableClockSkewMs')
  if (skew !== undefined && !/^\d+$/.test(skew)) {
    throw new Error(`unsecuredValidatorAllowableClockSkewMs must be a non-negative integer, got ${JSON.stringify(skew)}`)
  }
  const out: UnsecuredValidatorOptions = {}
  const principal = trimmed('unsecuredValidatorPrincipalClaimName')
  const scope = trimmed('unsecuredValidatorScopeClaimName')
  const required = trimmed('unsecuredValidatorRequiredScope')
  if (principal !== undefined) out.principalClaimName = principal
  if (scope !== undefined) out.scopeClaimName = scope
  if (required !== undefined) out.requiredScope = required.split(' ').filter((s) => s !== '')
  if (skew !== undefined) out.allowableClockSkewMs = Number(skew)
  return out
}

/**
 * Kafka's default OAUTHBEARER validator, for development only: the token is an unsecured
 * JWS (RFC 7515 appendix A.5: `"alg":"none"` and an empty signature), so anyone can claim
 * any principal. A signed token is refused here, so a validator mix-up fails closed.
 */
export class UnsecuredJwsValidator implements TokenValidator {
  readonly kind = 'unsecured'

  constructor(private readonly o: UnsecuredValidatorOptions = {}) {}

  validate(token: string, nowMs: number): ValidatedToken {
    const jws = parseCompactJws(token)
    if (jws.header.alg !== 'none') throw new TokenRejected(`an unsecured JWS must have "alg":"none", this one has ${JSON.stringify(jws.header.alg)}`)
    if (jws.signature.length !== 0) throw new TokenRejected('an unsecured JWS must have an empty signature')
    const principalName = stringClaim(jws.payload, this.o.principalClaimName ?? 'sub')
    const times = checkTimes(jws.payload, nowMs, this.o.allowableClockSkewMs ?? 0)
    const scope = scopeOf(jws.payload, this.o.scopeClaimName ?? 'scope')
    checkScope(scope, this.o.requiredScope ?? [])
    return { principalName, expiresAtMs: times.expiresAtMs, scope }
  }
}
