import { describe, expect, it } from 'vitest'
import { ApiKeys, ErrorCodes } from '@tidelog/protocol'
import { silentLogger } from '../../src/logger.js'
import { type AuthenticateResult, ConnectionSecurity } from '../../src/security/authenticator.js'
import { SecurityManager } from '../../src/security/manager.js'
import { RawClient } from '../helpers/raw-client.js'
import { tempDir } from '../helpers/tmp.js'
import { startBroker } from '../../src/index.js'
import { login, upsertScramUser } from './helpers.js'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'

// A small deterministic PRNG so a failure reproduces from its seed.
function rng(seed: number) {
  let s = seed >>> 0
  return () => {
    s = (s + 0x6d2b79f5) >>> 0
    let t = s
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

const MECHANISMS = ['PLAIN', 'SCRAM-SHA-256', 'SCRAM-SHA-512', 'GSSAPI', 'OAUTHBEARER', '', 'plain', 'SCRAM-SHA-1']
const SCRAM_FIRSTS = ['n,,n=alice,r=abc', 'y,,n=alice,r=abc', 'n,a=bob,n=alice,r=abc', 'n,,n=alice', 'n,,r=abc', 'p=x,,n=alice,r=abc', 'n,,n=al=ZZ,r=a', 'n,,n=alice,r=a,x=1']

function token(rand: () => number): Buffer {
  const kind = Math.floor(rand() * 5)
  if (kind === 0) return Buffer.from(SCRAM_FIRSTS[Math.floor(rand() * SCRAM_FIRSTS.length)]!)
  if (kind === 1) return Buffer.from(`c=biws,r=abc${'x'.repeat(Math.floor(rand() * 40))},p=${Buffer.alloc(Math.floor(rand() * 70)).toString('base64')}`)
  if (kind === 2) return Buffer.from(`\0alice\0${rand() < 0.1 ? 'alice-secret' : 'guess'}`)
  const b = Buffer.alloc(Math.floor(rand() * 200))
  for (let i = 0; i < b.length; i++) b[i] = Math.floor(rand() * 256)
  return b
}

describe('SASL state machine under hostile input', () => {
  it('100,000 random exchanges: only errors, and nothing but ApiVersions/SASL is ever admitted before authentication', () => {
    const dir = tempDir()
    writeFileSync(join(dir, 'users'), 'user_alice="alice-secret";')
    const manager = new SecurityManager({
      dataDir: dir,
      logger: silentLogger,
      enabledMechanisms: ['PLAIN', 'SCRAM-SHA-256', 'SCRAM-SHA-512'],
      plainUsersFile: join(dir, 'users'),
      reauthMs: 0,
      failedAuthenticationDelayMs: 0,
    })
    const rand = rng(16)
    const listener = { name: 'SASL_PLAINTEXT', protocol: 'SASL_PLAINTEXT' as const, host: '127.0.0.1', port: 0 }
    const otherKeys = [ApiKeys.Produce, ApiKeys.Fetch, ApiKeys.Metadata, ApiKeys.CreateTopics, ApiKeys.AlterUserScramCredentials, 999]
    let authenticated = 0
    let refused = 0
    for (let i = 0; i < 100_000; i++) {
      const sec = new ConnectionSecurity(manager, listener, undefined)
      for (let step = 0; step < 6 && sec.current !== 'failed'; step++) {
        const before = sec.current
        const r = rand()
        if (r < 0.15) {
          const key = otherKeys[Math.floor(rand() * otherKeys.length)]!
          const refusal = sec.admit(key)
          if (before !== 'authenticated') {
            expect(refusal).toBeTypeOf('string')
            refused++
            break
          }
        } else if (r < 0.45) {
          if (sec.admit(ApiKeys.SaslHandshake) !== undefined) break
          const res = sec.handshake(MECHANISMS[Math.floor(rand() * MECHANISMS.length)]!, rand() < 0.2 ? 0 : 1)
          expect([ErrorCodes.NONE, ErrorCodes.UNSUPPORTED_SASL_MECHANISM, ErrorCodes.ILLEGAL_SASL_STATE]).toContain(res.errorCode)
          if (res.close) break
        } else {
          if (!sec.rawTokens && sec.admit(ApiKeys.SaslAuthenticate) !== undefined) break
          const res = sec.authenticate(token(rand), 2) as AuthenticateResult
          expect([ErrorCodes.NONE, ErrorCodes.SASL_AUTHENTICATION_FAILED, ErrorCodes.ILLEGAL_SASL_STATE]).toContain(res.errorCode)
          if (res.errorCode === ErrorCodes.SASL_AUTHENTICATION_FAILED) expect(res.errorMessage).not.toMatch(/alice-secret|guess/)
          if (res.close) break
        }
        if (sec.current === 'authenticated' && before !== 'authenticated') {
          // Only the one real password gets through.
          expect(sec.principal).toBe('User:alice')
          authenticated++
        }
      }
    }
    expect(refused).toBeGreaterThan(1000)
    expect(authenticated).toBeGreaterThan(0)
  })

  it('2,000 hostile exchanges over real sockets: the broker keeps serving an honest client', async () => {
    const dir = tempDir()
    const b = await startBroker({ dataDir: dir, listeners: 'PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0', connectionFailedAuthenticationDelayMs: 0 })
    try {
      const admin = await RawClient.connect(b.listeners[0]!.port)
      await upsertScramUser(admin, 'alice', 'alice-secret', 'SCRAM-SHA-256')
      const rand = rng(368)
      const sasl = b.listeners[1]!.port
      let closed = 0
      // 50 connections at a time, each sending a few random SASL frames (or a request before authenticating).
      for (let round = 0; round < 40; round++) {
        await Promise.all(
          Array.from({ length: 50 }, async () => {
            const c = await RawClient.connect(sasl)
            const steps = [
              () => c.request(ApiKeys.SaslHandshake, 1, { mechanism: MECHANISMS[Math.floor(rand() * MECHANISMS.length)]! }),
              () => c.request(ApiKeys.SaslAuthenticate, 2, { authBytes: token(rand) }),
              () => c.request(ApiKeys.Metadata, 12, { topics: null, allowAutoTopicCreation: true, includeTopicAuthorizedOperations: false }),
            ]
            try {
              for (let i = 0; i < 3; i++) {
                const res = await steps[Math.floor(rand() * steps.length)]!()
                // A Metadata answer before authentication would be the one real failure.
                expect(res).not.toHaveProperty('brokers')
              }
            } catch (err) {
              expect((err as Error).message).toMatch(/closed/)
            }
            c.close()
            await c.closed
            closed++
          }),
        )
      }
      expect(closed).toBe(2000)
      const honest = await RawClient.connect(sasl)
      expect(await login(honest, 'SCRAM-SHA-256', 'alice', 'alice-secret')).toMatchObject({ errorCode: 0, serverVerified: true })
      honest.close()
      admin.close()
    } finally {
      await b.close()
    }
  })
})
