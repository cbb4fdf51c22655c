/**
 * SASL/OAUTHBEARER on the tidelog broker end to end over real sockets (issue 16, KIP-255,
 * KIP-768, KIP-368): our client's oauthBearerProvider against a broker that checks signed
 * JWTs with keys from a JWKS served over HTTP, the token's subject feeding the authorizer,
 * bad tokens refused with SASL_AUTHENTICATION_FAILED and the RFC 6750 error document, the
 * token's exp ending the session, and the unsecured (alg none) validator for development.
 */
import { type Server, createServer } from 'node:http'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type Broker, startBroker } from '@tidelog/broker'
import { Admin, SaslAuthenticationError } from '@tidelog/client'
import { Consumer } from '@tidelog/consumer'
import { Producer } from '@tidelog/producer'
import { ApiKeys, ErrorCodes, ProtocolError } from '@tidelog/protocol'
import { claims, initialResponse, jwks, signedJwt, signingKey, unsecuredJws } from '../../apps/broker/test/oauthbearer-helpers.js'
import { RawClient } from '../../apps/broker/test/helpers/raw-client.js'
import { until } from '../../apps/broker/test/helpers/until.js'

const AUTHORIZER = 'org.apache.kafka.metadata.authorizer.StandardAuthorizer'
const ISSUER = 'https://idp.tidelog.test'
const rsa = signingKey('2026-a')
const ec = signingKey('2026-b', 'ES256')
const rotated = signingKey('2027-a')

let dir: string
let idp: Server
let served = jwks(rsa, ec)
let broker: Broker
const open: { close(): Promise<void> }[] = []
const as = <T extends { close(): Promise<void> }>(c: T): T => (open.push(c), c)

const token = (sub: string, seconds = 300, key = rsa, extra: Record<string, unknown> = {}) => signedJwt(key, claims(sub, seconds, { iss: ISSUER, aud: 'kafka', ...extra }))
const client = (sub: string, make: () => string = () => token(sub)) => ({
  brokers: [`127.0.0.1:${broker.port}`],
  clientId: `oauth-${sub}`,
  sasl: { mechanism: 'OAUTHBEARER' as const, oauthBearerProvider: () => ({ value: make(), extensions: { traceId: 'e2e' } }) },
})

/** SaslHandshake v1 and one SaslAuthenticate v2 carrying `bytes`, as a client plays it. */
async function authenticate(c: RawClient, bytes: Buffer) {
  const hs = await c.request(ApiKeys.SaslHandshake, 1, { mechanism: 'OAUTHBEARER' })
  expect(hs.errorCode).toBe(0)
  return c.request(ApiKeys.SaslAuthenticate, 2, { authBytes: bytes })
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'tidelog-oauth-'))
  idp = createServer((req, res) => {
    if (req.url !== '/jwks') return void res.writeHead(404).end()
    res.writeHead(200, { 'content-type': 'application/json' }).end(served)
  })
  await new Promise<void>((resolve) => idp.listen(0, '127.0.0.1', resolve))
  const port = (idp.address() as { port: number }).port
  broker = await startBroker({
    dataDir: join(dir, 'data'),
    listeners: 'SASL_PLAINTEXT://127.0.0.1:0',
    saslEnabledMechanisms: 'OAUTHBEARER',
    saslOauthbearerJwksEndpointUrl: `http://127.0.0.1:${port}/jwks`,
    saslOauthbearerJwksEndpointRefreshMs: 200,
    saslOauthbearerExpectedAudience: 'kafka',
    saslOauthbearerExpectedIssuer: ISSUER,
    authorizerClassName: AUTHORIZER,
    superUsers: 'User:ops',
    connectionFailedAuthenticationDelayMs: 0,
    logLevel: 'error',
  })
})

afterAll(async () => {
  for (const c of open.splice(0).reverse()) await c.close().catch(() => {})
  await broker?.close()
  await new Promise((resolve) => idp?.close(resolve))
  rmSync(dir, { recursive: true, force: true })
})

describe('OAUTHBEARER with JWKS-verified tokens', () => {
  it("our client's oauthBearerProvider logs in; the token's sub is the principal the ACLs name", async () => {
    const ops = as(new Admin(client('ops')))
    await ops.createTopics([{ name: 'orders', partitions: 1 }])
    const svc = client('svc-orders', () => token('svc-orders', 300, ec))
    const refused = await as(new Producer({ ...svc, idempotent: false, requestTimeoutMs: 3000, deliveryTimeoutMs: 5000 }))
      .send({ topic: 'orders', value: 'before the ACL' })
      .then(() => undefined, (e: unknown) => e)
    expect(refused).toBeInstanceOf(ProtocolError)
    expect((refused as ProtocolError).type).toBe('TOPIC_AUTHORIZATION_FAILED')
    await ops.createAcls([
      { resourceType: 'TOPIC', resourceName: 'orders', principal: 'User:svc-orders', operation: 'WRITE', permission: 'ALLOW' },
      { resourceType: 'TOPIC', resourceName: 'orders', principal: 'User:svc-orders', operation: 'READ', permission: 'ALLOW' },
      { resourceType: 'GROUP', resourceName: 'svc-orders', principal: 'User:svc-orders', operation: 'READ', permission: 'ALLOW' },
    ])
    const p = as(new Producer({ ...svc, idempotent: true }))
    for (let i = 0; i < 20; i++) await p.send({ topic: 'orders', key: `k${i}`, value: `v${i}` })
    const c = as(new Consumer({ ...svc, groupId: 'svc-orders', autoOffsetReset: 'earliest' }))
    await c.subscribe(['orders'])
    const seen = new Set<string>()
    for await (const m of c) {
      seen.add(m.value!.toString())
      if (seen.size === 20) break
    }
    expect(seen.size).toBe(20)
  })

  it.each([
    ['expired', () => token('svc-orders', -120)],
    ['for another audience', () => token('svc-orders', 300, rsa, { aud: 'billing' })],
    ['from another issuer', () => token('svc-orders', 300, rsa, { iss: 'https://evil.test' })],
    ['signed by a key not in the JWKS', () => token('svc-orders', 300, signingKey('2026-a'))],
    ['unsecured (alg none)', () => unsecuredJws(claims('ops'))],
  ])('a token %s is SASL_AUTHENTICATION_FAILED with {"status":"invalid_token"}', async (_what, make) => {
    const admin = as(new Admin({ ...client('svc-orders', make), timeoutMs: 10_000 }))
    const err = await admin.listTopics().then(() => undefined, (e: unknown) => e)
    expect(err).toBeInstanceOf(SaslAuthenticationError)
    expect((err as SaslAuthenticationError).code).toBe(ErrorCodes.SASL_AUTHENTICATION_FAILED)
    expect((err as Error).message).toContain('{"status":"invalid_token"}')
  })

  it('a key added to the JWKS is used after the next refresh (sasl.oauthbearer.jwks.endpoint.refresh.ms)', async () => {
    served = jwks(rsa, ec, rotated)
    await until('a token signed by the new key to be accepted', async () => {
      const c = await RawClient.connect(broker.port)
      const r = await authenticate(c, initialResponse(token('ops', 300, rotated)))
      c.close()
      return r.errorCode === 0 ? true : undefined
    })
  })

  it("KIP-368 with our client: short-lived tokens end sessions, the client logs in again with a fresh token, and nothing is lost", async () => {
    let tokens = 0
    const p = as(new Producer({ ...client('ops', () => (tokens++, token('ops', 3))), idempotent: true }))
    await p.send({ topic: 'orders', value: 'renewed-first' })
    let sent = 1
    const first = tokens
    // Tokens are fetched only to log in: one more means a session ended at its token's exp and the client logged in again.
    await until('a login with a fresh token', async () => {
      await p.send({ topic: 'orders', value: `renewed-${sent++}` })
      await new Promise((r) => setTimeout(r, 50))
      return tokens > first ? true : undefined
    }, 30_000)
    // The record sent after the renewal goes over the new session.
    await p.send({ topic: 'orders', value: `renewed-${sent++}` })
    const admin = as(new Admin(client('ops')))
    const offsets = await admin.listOffsets([{ topic: 'orders', partition: 0, timestamp: 'latest' }])
    expect(offsets[0]!.offset).toBe(BigInt(20 + sent))
  })

  it("KIP-368: the session ends at the token's exp; a request after it closes the connection, re-authenticating renews it", async () => {
    const c = await RawClient.connect(broker.port)
    const first = await authenticate(c, initialResponse(token('ops', 3)))
    expect(first.errorCode).toBe(0)
    // exp is whole seconds, so the session is at most 3 s and more than 1 s (a loaded machine spends some of it).
    expect(Number(first.sessionLifetimeMs)).toBeGreaterThan(1000)
    expect(Number(first.sessionLifetimeMs)).toBeLessThanOrEqual(3000)
    // Re-authentication on the same connection with a fresh token for the same principal.
    const again = await authenticate(c, initialResponse(token('ops', 600)))
    expect(again.errorCode).toBe(0)
    expect(Number(again.sessionLifetimeMs)).toBeGreaterThan(500_000)
    expect((await c.request(ApiKeys.Metadata, 12, { topics: null, allowAutoTopicCreation: false, includeTopicAuthorizedOperations: false })).brokers).toHaveLength(1)
    // Another principal may not take over the connection.
    const other = await authenticate(c, initialResponse(token('svc-orders', 600)))
    expect(other.errorCode).toBe(ErrorCodes.SASL_AUTHENTICATION_FAILED)
    expect(other.errorMessage).toBe('Cannot change principals during re-authentication from User:ops: User:svc-orders')
    await c.closed

    const d = await RawClient.connect(broker.port)
    const short = await authenticate(d, initialResponse(token('ops', 2)))
    expect(short.errorCode).toBe(0)
    const expiresAt = Date.now() + Number(short.sessionLifetimeMs)
    await until('the session to end', async () => (Date.now() > expiresAt + 50 ? true : undefined), 10_000)
    const late = await d.request(ApiKeys.Metadata, 12, { topics: null, allowAutoTopicCreation: false, includeTopicAuthorizedOperations: false }).then(() => 'served', (e: Error) => e.message)
    expect(late).toMatch(/closed/)
  })
})

describe('OAUTHBEARER with the unsecured validator (development)', () => {
  it('accepts alg none tokens with the required scope; a token without it is insufficient_scope', async () => {
    const b = await startBroker({
      dataDir: join(dir, 'unsecured'),
      listeners: 'SASL_PLAINTEXT://127.0.0.1:0',
      saslEnabledMechanisms: 'PLAIN,OAUTHBEARER',
      oauthbearerSaslJaasConfig: 'org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required unsecuredValidatorRequiredScope="kafka";',
      connectionFailedAuthenticationDelayMs: 0,
      logLevel: 'error',
    })
    try {
      const dev = { brokers: [`127.0.0.1:${b.port}`], timeoutMs: 10_000 }
      const provider = (scope: string) => ({ mechanism: 'OAUTHBEARER' as const, oauthBearerProvider: () => ({ value: unsecuredJws(claims('dev', 300, { scope })) }) })
      const ok = new Admin({ ...dev, sasl: provider('kafka other') })
      await ok.createTopics([{ name: 'dev', partitions: 1 }])
      expect(await ok.listTopics()).toContain('dev')
      await ok.close()
      const bad = new Admin({ ...dev, sasl: provider('other') })
      const err = await bad.listTopics().then(() => undefined, (e: unknown) => e)
      await bad.close()
      expect(err).toBeInstanceOf(SaslAuthenticationError)
      expect((err as Error).message).toContain('{"status":"insufficient_scope", "scope":"kafka"}')
    } finally {
      await b.close()
    }
  })
})
