import { createHmac } from 'node:crypto'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { parseConfig } from '../src/config.js'
import { silentLogger } from '../src/logger.js'
import { sessionLifetimeMs } from '../src/security/authenticator.js'
import { SaslFailure } from '../src/security/mechanisms.js'
import { createTokenValidator, parseJaasConfig } from '../src/security/oauthbearer/config.js'
import { DEFAULT_OAUTHBEARER } from '../src/security/manager.js'
import { JwksKeySet, JwtValidator, type JwtValidatorOptions } from '../src/security/oauthbearer/jwks.js'
import { TokenRejected, type TokenValidator } from '../src/security/oauthbearer/jwt.js'
import { OAuthBearerServer, parseClientInitialResponse } from '../src/security/oauthbearer/server.js'
import { UnsecuredJwsValidator, unsecuredOptionsFromJaas } from '../src/security/oauthbearer/unsecured.js'
import { tempDir } from './helpers/tmp.js'
import { claims, initialResponse, jwks, signedJwt, signingKey, unsecuredJws } from './oauthbearer-helpers.js'

const rejection = (v: TokenValidator, token: string, now = Date.now()): TokenRejected => {
  try {
    v.validate(token, now)
  } catch (err) {
    expect(err).toBeInstanceOf(TokenRejected)
    return err as TokenRejected
  }
  throw new Error('the token was accepted')
}

describe('the OAUTHBEARER client initial response (RFC 7628, KIP-342)', () => {
  it('reads the token, the authorization id and the extensions', () => {
    const r = parseClientInitialResponse(initialResponse('a.b.c', { logicalCluster: 'lkc-1', traceId: 'x y' }, 'alice'))
    expect(r).toEqual({ token: 'a.b.c', authorizationId: 'alice', extensions: new Map([['logicalCluster', 'lkc-1'], ['traceId', 'x y']]) })
    expect(parseClientInitialResponse(Buffer.from('n,,\u0001auth=bearer tok\u0001\u0001')).token).toBe('tok')
  })

  it.each([
    ['no GS2 header', '\u0001auth=Bearer t\u0001\u0001'],
    ['channel binding requested', 'p=tls,,\u0001auth=Bearer t\u0001\u0001'],
    ['no auth key', 'n,,\u0001x=1\u0001\u0001'],
    ['another scheme', 'n,,\u0001auth=Basic dXNlcg\u0001\u0001'],
    ['no closing ^A', 'n,,\u0001auth=Bearer t\u0001'],
    ['a token with a space', 'n,,\u0001auth=Bearer t u\u0001\u0001'],
    ['an extension key with a digit', 'n,,\u0001auth=Bearer t\u0001k1=v\u0001\u0001'],
    ['an extension value with a control byte', 'n,,\u0001auth=Bearer t\u0001k=\u0002\u0001\u0001'],
    ['an empty message', ''],
  ])('refuses %s with Kafka\'s generic failure', (_what, text) => {
    expect(() => parseClientInitialResponse(Buffer.from(text))).toThrow(
      'Authentication failed during authentication due to invalid credentials with SASL mechanism OAUTHBEARER',
    )
  })
})

describe("the unsecured JWS validator (Kafka's OAuthBearerUnsecuredValidatorCallbackHandler)", () => {
  const v = new UnsecuredJwsValidator()

  it('accepts alg none with a sub and an exp, and says when the token expires', () => {
    const c = claims('alice', 60, { scope: 'read write' })
    expect(v.validate(unsecuredJws(c), Date.now())).toEqual({ principalName: 'alice', expiresAtMs: (c.exp as number) * 1000, scope: ['read', 'write'] })
  })

  it('refuses expired tokens, unless within unsecuredValidatorAllowableClockSkewMs', () => {
    const token = unsecuredJws(claims('alice', -5))
    expect(rejection(v, token).reason).toMatch(/expired/)
    const lenient = new UnsecuredJwsValidator(unsecuredOptionsFromJaas(new Map([['unsecuredValidatorAllowableClockSkewMs', '10000']])))
    expect(lenient.validate(token, Date.now()).principalName).toBe('alice')
  })

  it('refuses a token without exp, without its principal claim, or issued in the future', () => {
    expect(rejection(v, unsecuredJws({ sub: 'alice' })).reason).toMatch(/exp is missing/)
    expect(rejection(v, unsecuredJws(claims('alice', 60, { sub: undefined }))).reason).toMatch(/sub is missing/)
    expect(rejection(v, unsecuredJws(claims('alice', 600, { iat: Math.floor(Date.now() / 1000) + 300 }))).reason).toMatch(/in the future/)
    const byEmail = new UnsecuredJwsValidator(unsecuredOptionsFromJaas(new Map([['unsecuredValidatorPrincipalClaimName', 'email']])))
    expect(byEmail.validate(unsecuredJws(claims('x', 60, { email: 'a@b' })), Date.now()).principalName).toBe('a@b')
  })

  it('unsecuredValidatorRequiredScope: a missing scope is insufficient_scope, naming the required scope', () => {
    const scoped = new UnsecuredJwsValidator(unsecuredOptionsFromJaas(new Map([['unsecuredValidatorRequiredScope', 'kafka produce']])))
    const r = rejection(scoped, unsecuredJws(claims('alice', 60, { scope: ['kafka'] })))
    expect([r.status, r.scope]).toEqual(['insufficient_scope', 'kafka produce'])
    expect(scoped.validate(unsecuredJws(claims('alice', 60, { scope: 'produce kafka' })), Date.now()).principalName).toBe('alice')
  })

  it('alg confusion: a signed token (RS256) is not accepted as unsecured, nor alg none with a signature', () => {
    const key = signingKey('k1')
    expect(rejection(v, signedJwt(key, claims('alice'))).reason).toMatch(/"alg":"none"/)
    expect(rejection(v, unsecuredJws(claims('alice')) + 'c2ln').reason).toMatch(/empty signature/)
    expect(rejection(v, 'not-a-jwt').reason).toMatch(/3 parts/)
  })

  it('refuses a negative or non-numeric clock skew option at configuration', () => {
    expect(() => unsecuredOptionsFromJaas(new Map([['unsecuredValidatorAllowableClockSkewMs', '-1']]))).toThrow(/non-negative integer/)
  })
})

describe('the KIP-768 JWT validator with a JWKS', () => {
  const rsa = signingKey('rsa-1')
  const ec = signingKey('ec-1', 'ES256')
  const pss = signingKey('pss-1', 'PS256')
  const stranger = signingKey('rsa-1')
  let keys: JwksKeySet
  const options: JwtValidatorOptions = { expectedAudience: ['kafka'], expectedIssuer: 'https://idp.example', subClaimName: 'sub', scopeClaimName: 'scope', clockSkewMs: 30_000 }
  let v: JwtValidator
  const good = (extra: Record<string, unknown> = {}) => claims('svc-orders', 300, { aud: 'kafka', iss: 'https://idp.example', ...extra })

  beforeAll(async () => {
    const file = join(tempDir(), 'jwks.json')
    writeFileSync(file, jwks(rsa, ec, pss))
    keys = new JwksKeySet(pathToFileURL(file).href, 0, silentLogger)
    await keys.start()
    v = new JwtValidator(options, keys)
  })
  afterAll(() => keys.close())

  it('accepts RS256, ES256 and PS256 tokens signed by keys in the set', () => {
    expect(keys.size).toBe(3)
    for (const k of [rsa, ec, pss]) expect(v.validate(signedJwt(k, good({ aud: ['other', 'kafka'] })), Date.now()).principalName).toBe('svc-orders')
  })

  it('refuses a bad signature: a tampered payload, or the right kid from the wrong key', () => {
    const token = signedJwt(rsa, good())
    const [h, , s] = token.split('.')
    const forged = `${h}.${Buffer.from(JSON.stringify(good({ sub: 'admin' }))).toString('base64url')}.${s}`
    expect(rejection(v, forged).reason).toBe('the JWS signature does not verify')
    expect(rejection(v, signedJwt(stranger, good())).reason).toBe('the JWS signature does not verify')
  })

  it('refuses expired tokens beyond the clock skew, and accepts them within it', () => {
    const expired = signedJwt(rsa, good({ iat: Math.floor(Date.now() / 1000) - 100, exp: Math.floor(Date.now() / 1000) - 10 }))
    expect(v.validate(expired, Date.now()).principalName).toBe('svc-orders')
    expect(rejection(v, signedJwt(rsa, good({ iat: Math.floor(Date.now() / 1000) - 100, exp: Math.floor(Date.now() / 1000) - 60 }))).reason).toMatch(/expired/)
  })

  it('refuses the wrong audience, the wrong issuer, a missing iat or sub', () => {
    expect(rejection(v, signedJwt(rsa, good({ aud: 'billing' }))).reason).toMatch(/audience/)
    expect(rejection(v, signedJwt(rsa, good({ aud: undefined }))).reason).toMatch(/audience/)
    expect(rejection(v, signedJwt(rsa, good({ iss: 'https://evil.example' }))).reason).toMatch(/issuer/)
    expect(rejection(v, signedJwt(rsa, good({ iat: undefined }))).reason).toMatch(/iat is missing/)
    expect(rejection(v, signedJwt(rsa, good({ sub: undefined }))).reason).toMatch(/sub is missing/)
  })

  it('a token naming an audience is refused when no expected audience is configured (as jose4j by default)', () => {
    const open = new JwtValidator({ ...options, expectedAudience: [], expectedIssuer: undefined }, keys)
    expect(rejection(open, signedJwt(rsa, good())).reason).toMatch(/expected.audience is not set/)
    expect(open.validate(signedJwt(rsa, good({ aud: undefined })), Date.now()).principalName).toBe('svc-orders')
  })

  it('alg confusion: none, HS256 keyed with the public key, and an unknown kid are refused', () => {
    const payload = Buffer.from(JSON.stringify(good())).toString('base64url')
    const none = `${Buffer.from(JSON.stringify({ alg: 'none', kid: 'rsa-1' })).toString('base64url')}.${payload}.`
    expect(rejection(v, none).reason).toMatch(/algorithm "none" is not accepted/)
    const hsHeader = Buffer.from(JSON.stringify({ alg: 'HS256', kid: 'rsa-1' })).toString('base64url')
    const secret = JSON.stringify(rsa.jwk)
    const hs = `${hsHeader}.${payload}.${createHmac('sha256', secret).update(`${hsHeader}.${payload}`).digest('base64url')}`
    expect(rejection(v, hs).reason).toMatch(/algorithm "HS256" is not accepted/)
    // An RS256 header on the EC key's kid finds no key that fits.
    expect(rejection(v, signedJwt(rsa, good(), { kid: 'ec-1' })).reason).toMatch(/no key in the JWKS/)
    expect(rejection(v, signedJwt(rsa, good(), { kid: 'nope' })).reason).toMatch(/no key in the JWKS/)
  })

  it('the broker does not start on an unreadable or empty key set', async () => {
    const dir = tempDir()
    await expect(new JwksKeySet(pathToFileURL(join(dir, 'missing.json')).href, 0, silentLogger).start()).rejects.toThrow(/cannot load the JWKS/)
    writeFileSync(join(dir, 'empty.json'), '{"keys":[]}')
    await expect(new JwksKeySet(pathToFileURL(join(dir, 'empty.json')).href, 0, silentLogger).start()).rejects.toThrow(/no RSA or EC signing key/)
    expect(() => new JwksKeySet('ftp://idp/jwks', 0, silentLogger)).toThrow(/ftp: is not served/)
  })
})

describe('the OAUTHBEARER SASL server', () => {
  const reasons: string[] = []
  const server = () => new OAuthBearerServer(new UnsecuredJwsValidator(), (r) => reasons.push(r))

  it('completes with the token principal and its expiry; an authorization id must match it', () => {
    const s = server()
    const c = claims('alice', 60)
    expect(s.evaluate(initialResponse(unsecuredJws(c), { traceId: 't1' }, 'alice'))).toEqual(Buffer.alloc(0))
    expect([s.complete, s.authorizationId, s.credentialExpiresAt, s.extensions.get('traceId')]).toEqual([true, 'alice', (c.exp as number) * 1000, 't1'])
    expect(() => server().evaluate(initialResponse(unsecuredJws(c), {}, 'bob'))).toThrow(/different from the token's principal name \(alice\)/)
  })

  it('a refused token gets the error document, then ^A fails with it; anything else fails generically', () => {
    const s = server()
    const doc = s.evaluate(initialResponse(unsecuredJws(claims('alice', -100))))
    expect(doc.toString()).toBe('{"status":"invalid_token"}')
    expect(s.complete).toBe(false)
    expect(reasons.at(-1)).toMatch(/expired/)
    let failure: unknown
    try {
      s.evaluate(Buffer.from([1]))
    } catch (err) {
      failure = err
    }
    expect(failure).toBeInstanceOf(SaslFailure)
    expect((failure as SaslFailure).clientMessage).toBe('{"status":"invalid_token"}')
    const t = server()
    t.evaluate(initialResponse(unsecuredJws(claims('alice', -100))))
    expect(() => t.evaluate(initialResponse(unsecuredJws(claims('alice', 100))))).toThrow(/invalid credentials with SASL mechanism OAUTHBEARER/)
  })
})

describe('KIP-368 session lifetime', () => {
  it('is the shorter of connections.max.reauth.ms and the token life; unbounded when neither is set', () => {
    expect(sessionLifetimeMs(0, undefined, 1000)).toBeUndefined()
    expect(sessionLifetimeMs(5000, undefined, 1000)).toBe(5000)
    expect(sessionLifetimeMs(0, 61_000, 1000)).toBe(60_000)
    expect(sessionLifetimeMs(5000, 61_000, 1000)).toBe(5000)
    expect(sessionLifetimeMs(90_000, 61_000, 1000)).toBe(60_000)
    expect(sessionLifetimeMs(0, 500, 1000)).toBe(0)
  })
})

describe('sasl.jaas.config', () => {
  it("reads Kafka's JAAS entry: login module, flag, quoted and bare options", () => {
    const j = parseJaasConfig('org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required unsecuredValidatorRequiredScope="a b" unsecuredValidatorAllowableClockSkewMs=3000;')
    expect(j.loginModule).toBe('org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule')
    expect([...j.options]).toEqual([['unsecuredValidatorRequiredScope', 'a b'], ['unsecuredValidatorAllowableClockSkewMs', '3000']])
    expect(() => parseJaasConfig('OAuthBearerLoginModule required')).toThrow(/expected/)
  })
})

describe("OAUTHBEARER settings under Kafka's names", () => {
  it('a config file with server.properties spellings sets them; OAUTHBEARER is an accepted mechanism', () => {
    const file = {
      'sasl.enabled.mechanisms': 'SCRAM-SHA-512,OAUTHBEARER',
      'sasl.oauthbearer.jwks.endpoint.url': 'https://idp.example/jwks',
      'sasl.oauthbearer.expected.audience': 'kafka,kafka-admin',
      'sasl.oauthbearer.expected.issuer': 'https://idp.example',
      'sasl.oauthbearer.clock.skew.seconds': '5',
      'oauthbearer.sasl.jaas.config': 'org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;',
    }
    const r = parseConfig({ argv: ['--config', 'server.json'], env: {}, readFile: () => JSON.stringify(file) })
    if (r.help) throw new Error('unexpected --help')
    expect(r.config).toMatchObject({
      saslEnabledMechanisms: 'SCRAM-SHA-512,OAUTHBEARER',
      saslOauthbearerJwksEndpointUrl: 'https://idp.example/jwks',
      saslOauthbearerExpectedAudience: 'kafka,kafka-admin',
      saslOauthbearerExpectedIssuer: 'https://idp.example',
      saslOauthbearerClockSkewSeconds: 5,
      saslOauthbearerSubClaimName: 'sub',
      oauthbearerSaslJaasConfig: 'org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;',
    })
    expect(() => parseConfig({ argv: ['--sasl-enabled-mechanisms', 'GSSAPI'], env: {} })).toThrow(/GSSAPI is not/)
    const plain = { ...DEFAULT_OAUTHBEARER, jaasConfig: 'org.apache.kafka.common.security.plain.PlainLoginModule required;' }
    expect(() => createTokenValidator(plain, silentLogger)).toThrow(/OAUTHBEARER needs org\.apache\.kafka\.common\.security\.oauthbearer\.OAuthBearerLoginModule/)
    expect(createTokenValidator(DEFAULT_OAUTHBEARER, silentLogger).validator.kind).toBe('unsecured')
  })
})
