/**
 * Hostile SASL for every mechanism the broker serves, OAUTHBEARER included (issue 16): seeded
 * exchanges built from valid messages and then truncated, garbled, padded to megabytes or
 * interleaved with requests before authentication. In process, against the authentication
 * state machine; then over real sockets with connection.failed.authentication.delay.ms=0.
 * Invariants: nothing throws, nothing but ApiVersions and SASL is admitted before
 * authentication, only the principals whose credentials exist ever authenticate, and no
 * error message or log line repeats a password or a token.
 */
import { randomBytes } from 'node:crypto'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { describe, expect, it } from 'vitest'
import { ApiKeys, ErrorCodes, SCRAM_MECHANISMS, parseScramAttributes, scramHmac, scramKeysSync, xorBytes } from '@tidelog/protocol'
import { startBroker } from '../src/index.js'
import { type AuthenticateResult, ConnectionSecurity } from '../src/security/authenticator.js'
import { ScramCredentialStore } from '../src/security/credentials.js'
import { SecurityManager } from '../src/security/manager.js'
import { RawClient } from './helpers/raw-client.js'
import { tempDir } from './helpers/tmp.js'
import { claims, initialResponse, jwks, signedJwt, signingKey, unsecuredJws } from './oauthbearer-helpers.js'
import type { Logger } from '../src/logger.js'
import { captureLogger } from './security/helpers.js'

// A small deterministic PRNG (mulberry32) so a failure reproduces from its seed.
function rng(seed: number): () => number {
  let s = seed >>> 0
  return () => {
    s = (s + 0x6d2b79f5) >>> 0
    let t = s
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

const PASSWORD = 'fuzz-Secret-42'
const SCRAM = SCRAM_MECHANISMS.find((m) => m.name === 'SCRAM-SHA-256')!
const MECHANISMS = ['PLAIN', 'SCRAM-SHA-256', 'SCRAM-SHA-512', 'OAUTHBEARER', 'GSSAPI', '', 'oauthbearer', 'OAUTHBEARER\0', 'X'.repeat(5000)]
const OTHER_KEYS = [ApiKeys.Produce, ApiKeys.Fetch, ApiKeys.Metadata, ApiKeys.CreateTopics, ApiKeys.AlterUserScramCredentials, ApiKeys.CreateAcls, 999, -1]

/** What the fuzz knows: one PLAIN user, one SCRAM user and one JWKS-signed service token. */
function fixtures(dir: string) {
  writeFileSync(join(dir, 'users.jaas'), `user_alice="${PASSWORD}";`)
  const salt = randomBytes(16)
  const keys = scramKeysSync(SCRAM.hash, PASSWORD, salt, 4096)
  new ScramCredentialStore(dir, captureLogger().logger).apply([
    { user: 'alice', mechanism: 'SCRAM-SHA-256', credential: ScramCredentialStore.fromSalted('SCRAM-SHA-256', salt, keys.salted, 4096) },
  ])
  // RS256: verifying is several times cheaper than ES256, so the run spends its time on hostile input, not on ECDSA.
  const key = signingKey('fuzz-1')
  writeFileSync(join(dir, 'jwks.json'), jwks(key))
  const good = signedJwt(key, claims('svc', 3600, { aud: 'kafka' }))
  // Made once: signing per exchange would cost more than the exchange.
  const tokens = [
    good,
    unsecuredJws(claims('admin')),
    signedJwt(signingKey('fuzz-1'), claims('admin', 3600, { aud: 'kafka' })),
    signedJwt(key, claims('svc', -600, { aud: 'kafka' })),
    signedJwt(key, claims('svc', 3600, { aud: 'billing' })),
    good.slice(0, -4) + 'AAAA',
  ]
  return { keys, good, tokens, jwksUrl: pathToFileURL(join(dir, 'jwks.json')).href }
}

type Fixtures = ReturnType<typeof fixtures>

/** Damages a message the way a broken or hostile client would. */
function mutate(rand: () => number, msg: Buffer): Buffer {
  const at = Math.floor(rand() * (msg.length + 1))
  // One message in 500 is padded to up to a megabyte: enough to prove the parsers linear, few enough to stay fast.
  if (rand() < 0.002) {
    return Buffer.concat([msg.subarray(0, at), Buffer.alloc(256 * 1024 + Math.floor(rand() * 768 * 1024), rand() < 0.5 ? 'A' : '='), msg.subarray(at)])
  }
  switch (Math.floor(rand() * 6)) {
    case 0:
      return msg.subarray(0, at)
    case 1: {
      const b = Buffer.from(msg)
      if (b.length > 0) b[at % b.length] = Math.floor(rand() * 256)
      return b
    }
    case 2:
      return Buffer.concat([msg.subarray(0, at), randomBytesFrom(rand, Math.floor(rand() * 40)), msg.subarray(at)])
    case 3:
      return Buffer.concat([msg.subarray(0, at), Buffer.from(rand() < 0.5 ? '\u0001' : ','), msg.subarray(at)])
    case 4:
      return Buffer.concat([msg, msg.subarray(at)])
    default:
      return randomBytesFrom(rand, Math.floor(rand() * 300))
  }
}

function randomBytesFrom(rand: () => number, n: number): Buffer {
  const b = Buffer.alloc(n)
  for (let i = 0; i < n; i++) b[i] = Math.floor(rand() * 256)
  return b
}

/** The client's next message for `mechanism`, given the server's last answer: valid, wrong or damaged. */
function nextMessage(rand: () => number, f: Fixtures, mechanism: string, answer: Buffer | undefined, state: { bare?: string }): Buffer {
  const damaged = rand() < 0.6
  let msg: Buffer
  if (mechanism === 'PLAIN') {
    msg = Buffer.from(`\0alice\0${rand() < 0.5 ? PASSWORD : 'guess'}`)
  } else if (mechanism.startsWith('SCRAM')) {
    if (answer === undefined || answer.length === 0) {
      state.bare = `n=alice,r=${randomBytes(12).toString('base64url')}`
      msg = Buffer.from(`n,,${state.bare}`)
    } else {
      const serverFirst = answer.toString()
      let r = ''
      try {
        r = parseScramAttributes(serverFirst).get('r') ?? ''
      } catch {
        r = 'x'
      }
      const withoutProof = `c=biws,r=${r}`
      const proof = xorBytes(f.keys.clientKey, scramHmac(SCRAM.hash, f.keys.storedKey, `${state.bare},${serverFirst},${withoutProof}`))
      msg = Buffer.from(`${withoutProof},p=${proof.toString('base64')}`)
    }
  } else if (answer !== undefined && answer.length > 0) {
    // After an OAUTHBEARER error document RFC 7628 wants ^A; send that or something else.
    msg = Buffer.from([1])
  } else {
    const pick = Math.floor(rand() * (f.tokens.length + 1))
    const token = f.tokens[pick] ?? 'A'.repeat(1 + Math.floor(rand() * (rand() < 0.005 ? 1_000_000 : 2000)))
    msg = initialResponse(token, rand() < 0.3 ? { traceId: 'x', [`k${'a'.repeat(Math.floor(rand() * 3))}`]: 'v' } : {}, rand() < 0.1 ? 'admin' : '')
  }
  return damaged ? mutate(rand, msg) : msg
}

function manager(dir: string, f: Fixtures, logger: Logger, reauthMs: number): SecurityManager {
  return new SecurityManager({
    dataDir: dir,
    logger,
    enabledMechanisms: ['PLAIN', 'SCRAM-SHA-256', 'OAUTHBEARER'],
    plainUsersFile: join(dir, 'users.jaas'),
    reauthMs,
    failedAuthenticationDelayMs: 0,
    oauthbearer: { jaasConfig: undefined, jwksEndpointUrl: f.jwksUrl, jwksEndpointRefreshMs: 0, expectedAudience: 'kafka', expectedIssuer: undefined, subClaimName: 'sub', scopeClaimName: 'scope', clockSkewSeconds: 30 },
  })
}

// The 100,000: a few seconds of CPU, most of it RS256 verifications and SCRAM HMACs.
const EXCHANGES = 100_000
const LISTENER = { name: 'SASL_PLAINTEXT', protocol: 'SASL_PLAINTEXT' as const, host: '127.0.0.1', port: 0 }
const PRINCIPALS = ['User:alice', 'User:svc']
const HANDSHAKE_CODES: number[] = [ErrorCodes.NONE, ErrorCodes.UNSUPPORTED_SASL_MECHANISM, ErrorCodes.ILLEGAL_SASL_STATE]
const AUTHENTICATE_CODES: number[] = [ErrorCodes.NONE, ErrorCodes.SASL_AUTHENTICATION_FAILED, ErrorCodes.ILLEGAL_SASL_STATE]

describe('hostile SASL exchanges, OAUTHBEARER included', () => {
  it('100,000 seeded exchanges against the state machine: errors only, nothing admitted early, only real credentials authenticate', async () => {
    const dir = tempDir()
    const f = fixtures(dir)
    const { lines, logger } = captureLogger()
    // KIP-368 is fuzzed too: sessions last 2 s of a simulated clock that each step moves on by up to 1.5 s.
    const m = manager(dir, f, logger, 2000)
    await m.start()
    const rand = rng(16_2026)
    const count = { exchanges: 0, refusedEarly: 0, expired: 0, authenticated: new Map<string, number>(), failed: 0 }
    let slowest = 0
    // Checked with plain comparisons and asserted once: expect() per step would cost more than the exchanges.
    const violations: string[] = []
    const check = (ok: boolean, what: () => string) => {
      if (!ok && violations.length < 10) violations.push(`exchange ${count.exchanges}: ${what()}`)
    }
    const secret = f.good.split('.')[2]!
    for (let i = 0; i < EXCHANGES; i++) {
      let clock = Date.now()
      let sessionEnd = Infinity
      const sec = new ConnectionSecurity(m, LISTENER, undefined, () => clock)
      const state: { bare?: string } = {}
      let mechanism = ''
      let answer: Buffer | undefined
      count.exchanges++
      for (let step = 0; step < 6 && sec.current !== 'failed'; step++) {
        clock += Math.floor(rand() * 1500)
        const before = sec.current
        const r = rand()
        const t0 = performance.now()
        if (r < 0.1) {
          const refusal = sec.admit(OTHER_KEYS[Math.floor(rand() * OTHER_KEYS.length)]!)
          if (before !== 'authenticated') {
            check(typeof refusal === 'string', () => `a request was admitted in state ${before}`)
            count.refusedEarly++
            break
          }
          // Served while the session lasts, refused (the connection closes) once it is over.
          check((refusal === undefined) === clock < sessionEnd, () => `session ending at ${sessionEnd}, at ${clock}: ${refusal ?? 'served'}`)
          if (refusal !== undefined) {
            count.expired++
            break
          }
        } else if (r < 0.35 || mechanism === '') {
          if (sec.admit(ApiKeys.SaslHandshake) !== undefined) break
          const wanted = rand() < 0.8 ? ['PLAIN', 'SCRAM-SHA-256', 'OAUTHBEARER'][Math.floor(rand() * 3)]! : MECHANISMS[Math.floor(rand() * MECHANISMS.length)]!
          const res = sec.handshake(wanted, rand() < 0.15 ? 0 : 1)
          check(HANDSHAKE_CODES.includes(res.errorCode), () => `handshake answered ${res.errorCode}`)
          if (res.errorCode === ErrorCodes.NONE) [mechanism, answer] = [wanted, undefined]
          if (res.close) break
        } else {
          if (!sec.rawTokens && sec.admit(ApiKeys.SaslAuthenticate) !== undefined) break
          const res = sec.authenticate(nextMessage(rand, f, mechanism, answer, state), sec.rawTokens ? -1 : 2) as AuthenticateResult
          check(AUTHENTICATE_CODES.includes(res.errorCode), () => `authenticate answered ${res.errorCode}`)
          if (res.errorCode === ErrorCodes.SASL_AUTHENTICATION_FAILED) {
            count.failed++
            const message = res.errorMessage ?? ''
            check(!message.includes(PASSWORD) && !message.includes(secret), () => `a secret in ${JSON.stringify(message.slice(0, 200))}`)
          }
          answer = res.authBytes
          if (res.errorCode === ErrorCodes.NONE && sec.current === 'authenticated') sessionEnd = clock + Number(res.sessionLifetimeMs)
          if (res.close) break
        }
        slowest = Math.max(slowest, performance.now() - t0)
        if (sec.current === 'authenticated' && before !== 'authenticated') {
          check(PRINCIPALS.includes(sec.principal), () => `authenticated as ${sec.principal}`)
          count.authenticated.set(sec.principal, (count.authenticated.get(sec.principal) ?? 0) + 1)
        }
      }
    }
    m.close()
    expect(violations).toEqual([])
    // Every kind of outcome happened, so the run explored more than the first refusal.
    expect(count.refusedEarly).toBeGreaterThan(EXCHANGES / 20)
    expect(count.failed).toBeGreaterThan(EXCHANGES / 5)
    expect(count.authenticated.get('User:alice')).toBeGreaterThan(10)
    expect(count.authenticated.get('User:svc')).toBeGreaterThan(10)
    expect(count.expired).toBeGreaterThan(10)
    expect(lines.join('\n')).not.toContain(PASSWORD)
    expect(lines.join('\n')).not.toContain(f.good.split('.')[2])
    console.log(`sasl-fuzz: ${count.exchanges} exchanges, ${count.failed} failed, ${count.refusedEarly} early requests refused, ${count.expired} requests after the session refused, authenticated ${JSON.stringify([...count.authenticated])}, slowest step ${slowest.toFixed(1)} ms`)
  })

  it('2,000 hostile connections over real sockets: no request served before authentication, the broker keeps serving', async () => {
    const dir = tempDir()
    const f = fixtures(dir)
    const { lines, logger } = captureLogger()
    const b = await startBroker({
      dataDir: dir,
      listeners: 'SASL_PLAINTEXT://127.0.0.1:0',
      saslEnabledMechanisms: 'PLAIN,SCRAM-SHA-256,OAUTHBEARER',
      saslPlainUsersFile: join(dir, 'users.jaas'),
      saslOauthbearerJwksEndpointUrl: f.jwksUrl,
      saslOauthbearerExpectedAudience: 'kafka',
      connectionFailedAuthenticationDelayMs: 0,
      logger,
    })
    try {
      const rand = rng(368_2026)
      let served = 0
      let sessions = 0
      const metadata = { topics: null, allowAutoTopicCreation: true, includeTopicAuthorizedOperations: false }
      for (let round = 0; round < 40; round++) {
        await Promise.all(
          Array.from({ length: 50 }, async () => {
            const c = await RawClient.connect(b.port)
            let mechanism = ''
            let answer: Buffer | undefined
            let authenticated = false
            const state: { bare?: string } = {}
            try {
              for (let i = 0; i < 4; i++) {
                const r = rand()
                if (r < 0.2) {
                  const res = await c.request(ApiKeys.Metadata, 12, metadata)
                  if (!authenticated) served++
                  expect(res.brokers).toHaveLength(1)
                } else if (r < 0.25) {
                  // A frame for an api key no broker has, with a garbage body: the broker closes, it does not crash.
                  c.socket.write(Buffer.concat([Buffer.from([0, 0, 0, 12, 0x7f, 0xff]), randomBytesFrom(rand, 10)]))
                  await c.request(ApiKeys.ApiVersions, 3, { clientSoftwareName: 'fuzz', clientSoftwareVersion: '1' })
                } else if (r < 0.5 || mechanism === '') {
                  const wanted = rand() < 0.85 ? ['PLAIN', 'SCRAM-SHA-256', 'OAUTHBEARER'][Math.floor(rand() * 3)]! : MECHANISMS[Math.floor(rand() * MECHANISMS.length)]!
                  const hs = await c.request(ApiKeys.SaslHandshake, 1, { mechanism: wanted })
                  if (hs.errorCode === 0) [mechanism, answer] = [wanted, undefined]
                } else {
                  const res = await c.request(ApiKeys.SaslAuthenticate, 2, { authBytes: nextMessage(rand, f, mechanism, answer, state) })
                  answer = Buffer.from(res.authBytes)
                  // PLAIN and OAUTHBEARER finish in one step with an empty answer; SCRAM's last answer is v=.
                  if (res.errorCode === 0 && (answer.length === 0 || answer.toString().startsWith('v='))) {
                    authenticated = true
                    sessions++
                  }
                }
              }
            } catch (err) {
              expect((err as Error).message).toMatch(/closed/)
            }
            c.close()
            await c.closed
          }),
        )
      }
      expect(served).toBe(0)
      // Each authenticated session the clients saw is one the broker logged, and no more.
      expect(lines.filter((l) => l.includes('authenticated as')).length).toBe(sessions)
      expect(lines.join('\n')).not.toContain(PASSWORD)
      const honest = await RawClient.connect(b.port)
      expect((await honest.request(ApiKeys.SaslHandshake, 1, { mechanism: 'OAUTHBEARER' })).errorCode).toBe(0)
      expect((await honest.request(ApiKeys.SaslAuthenticate, 2, { authBytes: initialResponse(f.good) })).errorCode).toBe(0)
      expect((await honest.request(ApiKeys.Metadata, 12, metadata)).brokers).toHaveLength(1)
      honest.close()
      console.log(`sasl-fuzz sockets: 2000 connections, ${sessions} authenticated sessions, 0 requests served before authentication`)
    } finally {
      await b.close()
    }
  })
})
