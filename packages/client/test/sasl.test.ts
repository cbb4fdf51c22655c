import { createHash, createHmac, pbkdf2Sync, randomBytes, timingSafeEqual } from 'node:crypto'
import { afterEach, describe, expect, it } from 'vitest'
import { SaslAuthenticate, SaslHandshake, Metadata } from '@tidelog/protocol'
import {
  Connection,
  ConnectionPool,
  SaslAuthenticationError,
  createSaslMechanism,
  saslName,
  scramMechanism,
  type SaslMechanism,
  type SaslOptions,
} from '@tidelog/client'
import { FakeBroker, type FakeRequest } from './fake-broker.js'

const cleanup: (() => Promise<unknown> | unknown)[] = []
afterEach(async () => {
  while (cleanup.length > 0) await cleanup.pop()!()
})

const ctx = { host: 'h', port: 1, nodeId: 0, clientId: 'c' }

describe('SCRAM mechanism', () => {
  it('reproduces the RFC 7677 SCRAM-SHA-256 example exchange', async () => {
    const mech = scramMechanism({ mechanism: 'scram-sha-256', username: 'user', password: 'pencil' }, () => 'rOprNGfwEbeRWgbNEkqO')
    const steps = mech.authenticate(ctx)
    let r = await steps.next()
    expect(Buffer.from(r.value as Uint8Array).toString()).toBe('n,,n=user,r=rOprNGfwEbeRWgbNEkqO')
    r = await steps.next(Buffer.from('r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096'))
    expect(Buffer.from(r.value as Uint8Array).toString()).toBe(
      'c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=',
    )
    r = await steps.next(Buffer.from('v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4='))
    expect(r.done).toBe(true)
  })

  it('rejects a server signature that does not match', async () => {
    const mech = scramMechanism({ mechanism: 'scram-sha-256', username: 'user', password: 'pencil' }, () => 'rOprNGfwEbeRWgbNEkqO')
    const steps = mech.authenticate(ctx)
    await steps.next()
    await steps.next(Buffer.from('r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096'))
    await expect(steps.next(Buffer.from('v=AAAATRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4='))).rejects.toThrow(/server signature does not match/)
  })

  it('refuses fewer than 4096 iterations and a nonce the server did not extend', async () => {
    const low = scramMechanism({ mechanism: 'scram-sha-512', username: 'u', password: 'p' }, () => 'abc').authenticate(ctx)
    await low.next()
    await expect(low.next(Buffer.from('r=abcdef,s=c2FsdA==,i=4095'))).rejects.toThrow(/below the minimum of 4096/)
    const foreign = scramMechanism({ mechanism: 'scram-sha-512', username: 'u', password: 'p' }, () => 'abc').authenticate(ctx)
    await foreign.next()
    await expect(foreign.next(Buffer.from('r=xyz123,s=c2FsdA==,i=4096'))).rejects.toThrow(/nonce/)
  })

  it('escapes , and = in user names (RFC 5802 5.1)', () => {
    expect(saslName('a,b=c')).toBe('a=2Cb=3Dc')
  })
})

// --- a test-side SASL server (RFC 5802 server steps, written here with node:crypto) -----------

interface User {
  password: string
}

function scramServer(hash: 'sha256' | 'sha512', users: Record<string, User>, iterations = 4096) {
  const keyLength = hash === 'sha256' ? 32 : 64
  let state: { clientFirstBare: string; serverFirst: string; nonce: string; storedKey: Buffer; serverKey: Buffer } | undefined
  return (msg: string): { ok: true; reply: string } | { ok: false; message: string } => {
    if (state === undefined) {
      const m = /^n,,(n=([^,]+),r=([^,]+))$/.exec(msg)
      if (m === null) return { ok: false, message: 'bad client-first' }
      const name = m[2]!.replace(/=2C/g, ',').replace(/=3D/g, '=')
      const user = users[name]
      if (user === undefined) return { ok: false, message: 'unknown user' }
      const salt = randomBytes(16)
      const salted = pbkdf2Sync(user.password, salt, iterations, keyLength, hash)
      const clientKey = createHmac(hash, salted).update('Client Key').digest()
      const nonce = m[3]! + randomBytes(12).toString('base64url')
      const serverFirst = `r=${nonce},s=${salt.toString('base64')},i=${iterations}`
      state = {
        clientFirstBare: m[1]!,
        serverFirst,
        nonce,
        storedKey: createHash(hash).update(clientKey).digest(),
        serverKey: createHmac(hash, salted).update('Server Key').digest(),
      }
      return { ok: true, reply: serverFirst }
    }
    const m = /^(c=biws,r=([^,]+)),p=(.+)$/.exec(msg)
    if (m === null || m[2] !== state.nonce) return { ok: false, message: 'bad client-final' }
    const authMessage = `${state.clientFirstBare},${state.serverFirst},${m[1]}`
    const signature = createHmac(hash, state.storedKey).update(authMessage).digest()
    const proof = Buffer.from(m[3]!, 'base64')
    if (proof.length !== signature.length) return { ok: false, message: 'bad proof' }
    const clientKey = Buffer.from(proof.map((b, i) => b ^ signature[i]!))
    if (!timingSafeEqual(createHash(hash).update(clientKey).digest(), state.storedKey)) {
      return { ok: false, message: 'Authentication failed during authentication due to invalid credentials with SASL mechanism' }
    }
    return { ok: true, reply: `v=${createHmac(hash, state.serverKey).update(authMessage).digest('base64')}` }
  }
}

/** Wires SaslHandshake/SaslAuthenticate handlers into a fake broker, per connection. */
function saslBroker(
  b: FakeBroker,
  enabled: string[],
  makeServer: (mechanism: string) => (msg: string) => { ok: true; reply: string } | { ok: false; message: string },
  sessionLifetimeMs = 0n,
): { authBytes: Buffer[] } {
  const perConn = new Map<unknown, (msg: string) => { ok: true; reply: string } | { ok: false; message: string }>()
  const seen = { authBytes: [] as Buffer[] }
  b.on(SaslHandshake.apiKey, (req: FakeRequest) => {
    if (!enabled.includes(req.body.mechanism)) return { errorCode: 33, mechanisms: enabled }
    perConn.set(req.conn, makeServer(req.body.mechanism))
    return { errorCode: 0, mechanisms: enabled }
  })
  b.on(SaslAuthenticate.apiKey, (req: FakeRequest) => {
    const bytes = Buffer.from(req.body.authBytes)
    seen.authBytes.push(bytes)
    const out = perConn.get(req.conn)!(bytes.toString('utf8'))
    if (!out.ok) return { errorCode: 58, errorMessage: out.message, authBytes: Buffer.alloc(0), sessionLifetimeMs: 0n }
    return { errorCode: 0, errorMessage: null, authBytes: Buffer.from(out.reply), sessionLifetimeMs }
  })
  return seen
}

async function broker(): Promise<FakeBroker> {
  const b = await FakeBroker.start()
  cleanup.push(() => b.close())
  return b
}

function connect(b: FakeBroker, sasl: SaslOptions): Promise<Connection> {
  const c = new Connection({ host: '127.0.0.1', port: b.port, sasl: createSaslMechanism(sasl) })
  cleanup.push(() => c.destroy())
  return c.connect().then(() => c)
}

describe('SASL over a connection', () => {
  it('PLAIN sends authzid NUL user NUL password in one SaslAuthenticate', async () => {
    const b = await broker()
    const seen = saslBroker(b, ['PLAIN'], () => () => ({ ok: true, reply: '' }))
    const c = await connect(b, { mechanism: 'plain', username: 'alice', password: 'secret' })
    expect(c.isReady).toBe(true)
    expect(b.requests.map((r) => r.header.apiKey)).toEqual([18, 17, 36])
    expect(b.received(17)[0]!.header.apiVersion).toBe(1)
    expect(seen.authBytes.map((x) => x.toString())).toEqual(['\0alice\0secret'])
  })

  for (const [name, hash] of [['SCRAM-SHA-256', 'sha256'], ['SCRAM-SHA-512', 'sha512']] as const) {
    it(`${name} authenticates against an RFC 5802 server and fails with a wrong password`, async () => {
      const b = await broker()
      saslBroker(b, [name], () => scramServer(hash, { 'bob,x': { password: 'pä55' } }))
      const c = await connect(b, { mechanism: name.toLowerCase() as 'scram-sha-256', username: 'bob,x', password: 'pä55' })
      expect(c.isReady).toBe(true)
      const err = await connect(b, { mechanism: name, username: 'bob,x', password: 'wrong' }).catch((e) => e)
      expect(err).toBeInstanceOf(SaslAuthenticationError)
      expect(err.code).toBe(58)
      expect(err.retriable).toBe(false)
      expect(err.message).toMatch(/SASL_AUTHENTICATION_FAILED: Authentication failed/)
    })
  }

  it('names the mechanisms the broker offers when ours is not enabled', async () => {
    const b = await broker()
    saslBroker(b, ['SCRAM-SHA-512', 'GSSAPI'], () => () => ({ ok: true, reply: '' }))
    const err = await connect(b, { mechanism: 'plain', username: 'a', password: 'b' }).catch((e) => e)
    expect(err).toBeInstanceOf(SaslAuthenticationError)
    expect(err.code).toBe(33)
    expect(err.message).toMatch(/offers SCRAM-SHA-512, GSSAPI/)
  })

  it('OAUTHBEARER sends the RFC 7628 initial response with extensions, and answers an error with ^A', async () => {
    const b = await broker()
    let calls = 0
    const seen = saslBroker(b, ['OAUTHBEARER'], () => (msg) => {
      calls++
      if (msg.includes('Bearer good')) return { ok: true, reply: '' }
      if (msg === '\u0001') return { ok: false, message: 'invalid_token' }
      return { ok: true, reply: '{"status":"invalid_token"}' }
    })
    const c = await connect(b, {
      mechanism: 'oauthbearer',
      oauthBearerProvider: async (cx) => ({ value: cx.host === '127.0.0.1' ? 'good' : 'bad', extensions: { traceId: 'x1' } }),
    })
    expect(c.isReady).toBe(true)
    expect(seen.authBytes[0]!.toString()).toBe('n,,\u0001auth=Bearer good\u0001traceId=x1\u0001\u0001')
    const err = await connect(b, { mechanism: 'OAUTHBEARER', oauthBearerProvider: () => ({ value: 'bad' }) }).catch((e) => e)
    expect(err).toBeInstanceOf(SaslAuthenticationError)
    expect(seen.authBytes.at(-1)!.toString()).toBe('\u0001')
    expect(calls).toBe(3)
  })

  it('runs a custom mechanism', async () => {
    const b = await broker()
    const seen = saslBroker(b, ['X-ECHO'], () => (msg) => ({ ok: true, reply: `echo:${msg}` }))
    const answers: string[] = []
    const custom: SaslMechanism = {
      mechanism: 'X-ECHO',
      async *authenticate(cx) {
        const a = yield Buffer.from(`hello ${cx.clientId}`)
        answers.push(a.toString())
        const b2 = yield Buffer.from('again')
        answers.push(b2.toString())
      },
    }
    const c = new Connection({ host: '127.0.0.1', port: b.port, clientId: 'me', sasl: createSaslMechanism(custom) })
    cleanup.push(() => c.destroy())
    await c.connect()
    expect(seen.authBytes.map(String)).toEqual(['hello me', 'again'])
    expect(answers).toEqual(['echo:hello me', 'echo:again'])
  })

  it('replaces a connection before its SASL session expires (KIP-368)', async () => {
    const b = await broker()
    saslBroker(b, ['PLAIN'], () => () => ({ ok: true, reply: '' }), 400n)
    b.on(Metadata.apiKey, () => ({ brokers: [], topics: [] }))
    const pool = new ConnectionPool({
      factory: (t) => new Connection({ host: t.host, port: t.port, nodeId: t.nodeId, sasl: createSaslMechanism({ mechanism: 'plain', username: 'a', password: 'b' }) }),
    })
    cleanup.push(() => pool.close())
    const target = { nodeId: 0, host: '127.0.0.1', port: b.port }
    const first = await pool.get(target)
    const expiring = new Promise((r) => first.once('expiring', r))
    await expiring
    const second = await pool.get(target)
    expect(second).not.toBe(first)
    await second.request(Metadata, { topics: null })
    await new Promise((r) => setTimeout(r, 20))
    expect(first.isClosed).toBe(true)
    expect(b.connections).toHaveLength(2)
  })
})
