import { type KeyObject, constants, generateKeyPairSync, sign } from 'node:crypto'

const b64 = (v: unknown): string => Buffer.from(JSON.stringify(v)).toString('base64url')

/** An unsecured JWS (alg none, empty signature), as Kafka's OAuthBearerUnsecuredLoginCallbackHandler makes. */
export function unsecuredJws(claims: Record<string, unknown>, header: Record<string, unknown> = { alg: 'none' }): string {
  return `${b64(header)}.${b64(claims)}.`
}

export interface SigningKey {
  kid: string
  alg: 'RS256' | 'ES256' | 'PS256'
  privateKey: KeyObject
  /** The public half as a JWK, as an identity provider publishes it. */
  jwk: Record<string, unknown>
}

export function signingKey(kid: string, alg: SigningKey['alg'] = 'RS256'): SigningKey {
  const pair = alg === 'ES256' ? generateKeyPairSync('ec', { namedCurve: 'P-256' }) : generateKeyPairSync('rsa', { modulusLength: 2048 })
  return { kid, alg, privateKey: pair.privateKey, jwk: { ...pair.publicKey.export({ format: 'jwk' }), kid, alg, use: 'sig' } }
}

export function jwks(...keys: SigningKey[]): string {
  return JSON.stringify({ keys: keys.map((k) => k.jwk) })
}

/** A JWT signed as an identity provider signs it (JWS compact serialisation, RFC 7515). */
export function signedJwt(key: SigningKey, claims: Record<string, unknown>, header: Record<string, unknown> = {}): string {
  const input = `${b64({ alg: key.alg, kid: key.kid, typ: 'JWT', ...header })}.${b64(claims)}`
  const data = Buffer.from(input)
  const signature =
    key.alg === 'ES256'
      ? sign('sha256', data, { key: key.privateKey, dsaEncoding: 'ieee-p1363' })
      : key.alg === 'PS256'
        ? sign('sha256', data, { key: key.privateKey, padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: constants.RSA_PSS_SALTLEN_DIGEST })
        : sign('sha256', data, key.privateKey)
  return `${input}.${signature.toString('base64url')}`
}

/** Claims valid for `seconds` from now (negative: expired that long ago, issued a minute before). */
export function claims(sub: string, seconds = 3600, extra: Record<string, unknown> = {}): Record<string, unknown> {
  const now = Math.floor(Date.now() / 1000)
  return { sub, iat: Math.min(now, now + seconds - 60), exp: now + seconds, ...extra }
}

/** RFC 7628's client initial response, as Kafka's OAuthBearerClientInitialResponse writes it. */
export function initialResponse(token: string, extensions: Record<string, string> = {}, authzid = ''): Buffer {
  const ext = Object.entries(extensions).map(([k, v]) => `\u0001${k}=${v}`).join('')
  return Buffer.from(`n,${authzid === '' ? '' : `a=${authzid}`},\u0001auth=Bearer ${token}${ext}\u0001\u0001`)
}
