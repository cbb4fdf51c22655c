import type { Logger } from '../../logger.js'
import { JwksKeySet, JwtValidator } from './jwks.js'
import type { TokenValidator } from './jwt.js'
import { UnsecuredJwsValidator, unsecuredOptionsFromJaas } from './unsecured.js'

/** The broker's OAUTHBEARER settings, in Kafka's names. */
export interface OAuthBearerSettings {
  /** oauthbearer.sasl.jaas.config: OAuthBearerLoginModule and its unsecuredValidator* options. */
  jaasConfig: string | undefined
  /** sasl.oauthbearer.jwks.endpoint.url: set, tokens are checked against it (KIP-768); unset, the unsecured validator. */
  jwksEndpointUrl: string | undefined
  jwksEndpointRefreshMs: number
  /** sasl.oauthbearer.expected.audience, comma separated. */
  expectedAudience: string | undefined
  expectedIssuer: string | undefined
  subClaimName: string
  scopeClaimName: string
  clockSkewSeconds: number
}

const LOGIN_MODULE = 'org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule'

/**
 * A JAAS configuration entry as Kafka's JaasConfig reads sasl.jaas.config:
 * `<LoginModule class> <required|requisite|sufficient|optional> key=value ...;`,
 * values quoted or bare.
 */
export function parseJaasConfig(text: string): { loginModule: string; options: Map<string, string> } {
  const m = /^\s*([\w.$]+)\s+(required|requisite|sufficient|optional)\b([\s\S]*?);\s*$/i.exec(text)
  if (m === null) throw new Error(`sasl.jaas.config: expected "<LoginModule> required key=\\"value\\" ...;", got ${JSON.stringify(text)}`)
  const options = new Map<string, string>()
  const rest = m[3]!.trim()
  const option = /([\w.-]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s"]+))\s*/gy
  let at = 0
  while (at < rest.length) {
    option.lastIndex = at
    const o = option.exec(rest)
    if (o === null) throw new Error(`sasl.jaas.config: cannot read the options from ${JSON.stringify(rest.slice(at))}`)
    options.set(o[1]!, o[2] !== undefined ? o[2].replace(/\\(.)/g, '$1') : o[3]!)
    at = option.lastIndex
  }
  return { loginModule: m[1]!, options }
}

/** The validator the settings ask for, and what must run before the first token (loading the JWKS). */
export function createTokenValidator(s: OAuthBearerSettings, logger: Logger): { validator: TokenValidator; keys?: JwksKeySet } {
  const jaas = s.jaasConfig === undefined ? undefined : parseJaasConfig(s.jaasConfig)
  if (jaas !== undefined && jaas.loginModule !== LOGIN_MODULE) {
    throw new Error(`oauthbearer.sasl.jaas.config: OAUTHBEARER needs ${LOGIN_MODULE}, not ${jaas.loginModule}`)
  }
  if (s.jwksEndpointUrl === undefined) {
    logger.warn('OAUTHBEARER accepts unsecured JWS tokens (alg none): anyone can claim any principal. Set sasl.oauthbearer.jwks.endpoint.url outside development')
    return { validator: new UnsecuredJwsValidator(unsecuredOptionsFromJaas(jaas?.options ?? new Map())) }
  }
  const keys = new JwksKeySet(s.jwksEndpointUrl, s.jwksEndpointRefreshMs, logger)
  const audience = (s.expectedAudience ?? '').split(',').map((a) => a.trim()).filter((a) => a !== '')
  const validator = new JwtValidator(
    {
      expectedAudience: audience,
      expectedIssuer: s.expectedIssuer,
      subClaimName: s.subClaimName,
      scopeClaimName: s.scopeClaimName,
      clockSkewMs: s.clockSkewSeconds * 1000,
    },
    keys,
  )
  return { validator, keys }
}
