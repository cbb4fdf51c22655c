import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { connect } from 'node:net'
import { ApiKeys, ErrorCodes, FrameDecoder, Metadata, Reader, SaslHandshake, decodeResponseHeader, encodeRequestFrame } from '@tidelog/protocol'
import { type Broker, type BrokerOptions, startBroker } from '../../src/index.js'
import { RawClient } from '../helpers/raw-client.js'
import { tempDir } from '../helpers/tmp.js'
import { captureLogger, login, upsertScramUser } from './helpers.js'

const brokers: Broker[] = []
afterEach(async () => {
  for (const b of brokers.splice(0)) await b.close()
})

function usersFile(dir: string): string {
  const f = join(dir, 'plain.jaas')
  writeFileSync(f, 'KafkaServer { org.apache.kafka.common.security.plain.PlainLoginModule required\n  user_alice="alice-secret"\n  user_bob="b\\"ob";\n};\n')
  return f
}

async function start(opts: BrokerOptions = {}) {
  const dir = tempDir()
  const log = captureLogger()
  const b = await startBroker({
    dataDir: dir,
    listeners: 'PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0',
    saslPlainUsersFile: usersFile(dir),
    connectionFailedAuthenticationDelayMs: 0,
    logger: log.logger,
    ...opts,
  })
  brokers.push(b)
  return { b, dir, log, plain: b.listeners[0]!.port, sasl: b.listeners[1]?.port ?? -1 }
}

const metadata = (c: RawClient) => c.request(ApiKeys.Metadata, 12, { topics: null, allowAutoTopicCreation: false, includeTopicAuthorizedOperations: false })

describe('listeners', () => {
  it('opens each listener on its own port and Metadata advertises the one the client came in on', async () => {
    const { b, plain, sasl } = await start()
    expect(b.listeners.map((l) => [l.name, l.protocol])).toEqual([['PLAINTEXT', 'PLAINTEXT'], ['SASL_PLAINTEXT', 'SASL_PLAINTEXT']])
    expect(plain).not.toBe(sasl)
    const p = await RawClient.connect(plain)
    expect((await metadata(p)).brokers).toEqual([{ nodeId: 1, host: '127.0.0.1', port: plain, rack: null }])
    const s = await RawClient.connect(sasl)
    expect((await login(s, 'PLAIN', 'alice', 'alice-secret')).errorCode).toBe(0)
    expect((await metadata(s)).brokers).toEqual([{ nodeId: 1, host: '127.0.0.1', port: sasl, rack: null }])
    const coord = await s.request(ApiKeys.FindCoordinator, 4, { keyType: 0, coordinatorKeys: ['g'] })
    expect(coord.coordinators[0].port).toBe(sasl)
    p.close()
    s.close()
  })

  it('uses advertised.listeners per listener and refuses a bad listeners value', async () => {
    const { b, sasl } = await start({
      listeners: 'INTERNAL://127.0.0.1:0,EXTERNAL://127.0.0.1:0',
      listenerSecurityProtocolMap: 'INTERNAL:PLAINTEXT,EXTERNAL:SASL_PLAINTEXT',
      advertisedListeners: 'EXTERNAL://kafka.example:19093',
    }).then((r) => ({ ...r, sasl: r.b.listeners[1]!.port }))
    const c = await RawClient.connect(sasl)
    await login(c, 'PLAIN', 'alice', 'alice-secret')
    expect((await metadata(c)).brokers[0]).toMatchObject({ host: 'kafka.example', port: 19093 })
    c.close()
    expect(b.listeners[1]!.protocol).toBe('SASL_PLAINTEXT')
    await expect(startBroker({ dataDir: tempDir(), listeners: 'WEIRD://127.0.0.1:0' })).rejects.toThrow(/WEIRD has no security protocol/)
    await expect(startBroker({ dataDir: tempDir(), listeners: 'PLAINTEXT://nope' })).rejects.toThrow(/not NAME:\/\/host:port/)
  })

  it('keeps the default: one PLAINTEXT listener on host:port', async () => {
    const b = await startBroker({ port: 0, dataDir: tempDir() })
    brokers.push(b)
    expect(b.listeners).toHaveLength(1)
    expect(b.listeners[0]!).toMatchObject({ name: 'PLAINTEXT', protocol: 'PLAINTEXT' })
    const c = await RawClient.connect(b.port)
    expect((await metadata(c)).brokers[0].port).toBe(b.port)
    // SASL on a listener without it: ILLEGAL_SASL_STATE, and the connection stays usable (Kafka's KafkaApis).
    expect((await c.request(ApiKeys.SaslHandshake, 1, { mechanism: 'PLAIN' })).errorCode).toBe(ErrorCodes.ILLEGAL_SASL_STATE)
    expect((await metadata(c)).brokers).toHaveLength(1)
    c.close()
  })
})

describe('SASL/PLAIN', () => {
  it('logs in with a user from the JAAS file; a wrong password gets Kafka error and a closed connection', async () => {
    const { sasl, log } = await start()
    const ok = await RawClient.connect(sasl)
    expect(await ok.request(ApiKeys.ApiVersions, 3, { clientSoftwareName: 't', clientSoftwareVersion: '1' })).toMatchObject({ errorCode: 0 })
    expect(await login(ok, 'PLAIN', 'bob', 'b"ob')).toMatchObject({ errorCode: 0, sessionLifetimeMs: 0n })
    expect((await metadata(ok)).brokers).toHaveLength(1)
    ok.close()

    const bad = await RawClient.connect(sasl)
    const r = await login(bad, 'PLAIN', 'alice', 'not-it')
    expect(r).toMatchObject({ errorCode: ErrorCodes.SASL_AUTHENTICATION_FAILED, errorMessage: 'Authentication failed: Invalid username or password' })
    await bad.closed
    expect(log.lines.join('\n')).not.toContain('not-it')
    expect(log.lines.join('\n')).not.toContain('alice-secret')
    expect(log.lines.some((l) => l.includes('authenticated as User:bob (PLAIN)'))).toBe(true)
  })

  it('holds a failed answer back for connection.failed.authentication.delay.ms', async () => {
    const { sasl } = await start({ connectionFailedAuthenticationDelayMs: 300 })
    const c = await RawClient.connect(sasl)
    const t0 = performance.now()
    const r = await login(c, 'PLAIN', 'alice', 'wrong')
    expect(r.errorCode).toBe(ErrorCodes.SASL_AUTHENTICATION_FAILED)
    expect(performance.now() - t0).toBeGreaterThanOrEqual(290)
    await c.closed
  })

  it('speaks handshake v0 with bare tokens', async () => {
    const { sasl } = await start()
    const sock = connect(sasl, '127.0.0.1')
    const decoder = new FrameDecoder()
    const frames: Buffer[] = []
    let wake = (): void => {}
    sock.on('data', (d: Buffer) => {
      frames.push(...decoder.push(d))
      wake()
    })
    const next = async (): Promise<Buffer> => {
      while (frames.length === 0) await new Promise<void>((r) => (wake = r))
      return frames.shift()!
    }
    await new Promise((r) => sock.once('connect', r))
    sock.write(encodeRequestFrame({ apiKey: ApiKeys.SaslHandshake, apiVersion: 0, correlationId: 1, clientId: 'v0' }, { mechanism: 'PLAIN' }))
    const hs = new Reader(await next())
    decodeResponseHeader(hs, ApiKeys.SaslHandshake, 0)
    expect(SaslHandshake.decodeResponse(hs, 0).errorCode).toBe(0)
    const token = Buffer.from('\0alice\0alice-secret')
    const frame = Buffer.alloc(4 + token.length)
    frame.writeInt32BE(token.length)
    token.copy(frame, 4)
    sock.write(frame)
    // PLAIN's answer is an empty token, size-prefixed.
    expect((await next()).length).toBe(0)
    sock.write(encodeRequestFrame({ apiKey: ApiKeys.Metadata, apiVersion: 12, correlationId: 2, clientId: 'v0' }, { topics: null, allowAutoTopicCreation: false, includeTopicAuthorizedOperations: false }))
    const md = new Reader(await next())
    expect(decodeResponseHeader(md, ApiKeys.Metadata, 12).correlationId).toBe(2)
    expect(Metadata.decodeResponse(md, 12).brokers[0]!.port).toBe(sasl)
    sock.destroy()
  })
})

describe('SASL/SCRAM', () => {
  for (const mechanism of ['SCRAM-SHA-256', 'SCRAM-SHA-512'] as const) {
    it(`${mechanism}: a user created with AlterUserScramCredentials logs in; the server proves it knows the key`, async () => {
      const { plain, sasl } = await start()
      const admin = await RawClient.connect(plain)
      expect(await upsertScramUser(admin, 'svc,one=x', 'pä55', mechanism)).toEqual([{ user: 'svc,one=x', errorCode: 0, errorMessage: null }])
      const c = await RawClient.connect(sasl)
      expect(await login(c, mechanism, 'svc,one=x', 'pä55')).toMatchObject({ errorCode: 0, serverVerified: true })
      expect((await metadata(c)).brokers[0].port).toBe(sasl)
      c.close()
      const bad = await RawClient.connect(sasl)
      expect(await login(bad, mechanism, 'svc,one=x', 'nope')).toMatchObject({
        errorCode: ErrorCodes.SASL_AUTHENTICATION_FAILED,
        errorMessage: `Authentication failed during authentication due to invalid credentials with SASL mechanism ${mechanism}`,
      })
      await bad.closed
      const unknown = await RawClient.connect(sasl)
      expect(await login(unknown, mechanism, 'ghost', 'x')).toMatchObject({
        errorCode: ErrorCodes.SASL_AUTHENTICATION_FAILED,
        errorMessage: 'Authentication failed: Invalid user credentials',
      })
      await unknown.closed
      admin.close()
    })
  }

  it('keeps credentials across a restart, salted: the file holds no password', async () => {
    const { b, dir, plain } = await start()
    const admin = await RawClient.connect(plain)
    await upsertScramUser(admin, 'carol', 'carol-pass', 'SCRAM-SHA-512', 8192)
    admin.close()
    await b.close()
    brokers.splice(brokers.indexOf(b), 1)
    const { readFileSync } = await import('node:fs')
    const stored = readFileSync(join(dir, 'scram-credentials.json'), 'utf8')
    expect(stored).toMatch(/stored_key=.*iterations=8192/)
    expect(stored).not.toContain('carol-pass')
    const again = await startBroker({ dataDir: dir, listeners: 'SASL_PLAINTEXT://127.0.0.1:0', connectionFailedAuthenticationDelayMs: 0 })
    brokers.push(again)
    const c = await RawClient.connect(again.port)
    expect(await login(c, 'SCRAM-SHA-512', 'carol', 'carol-pass')).toMatchObject({ errorCode: 0, serverVerified: true })
    c.close()
  })

  it('describes and validates credentials as Kafka (KIP-554)', async () => {
    const { plain } = await start()
    const c = await RawClient.connect(plain)
    await upsertScramUser(c, 'dave', 'x', 'SCRAM-SHA-256')
    await upsertScramUser(c, 'dave', 'y', 'SCRAM-SHA-512', 5000)
    expect(await upsertScramUser(c, 'erin', 'x', 'SCRAM-SHA-256', 4095)).toEqual([{ user: 'erin', errorCode: ErrorCodes.UNACCEPTABLE_CREDENTIAL, errorMessage: 'Too few iterations' }])
    expect(await upsertScramUser(c, 'erin', 'x', 'SCRAM-SHA-256', 16385)).toEqual([{ user: 'erin', errorCode: ErrorCodes.UNACCEPTABLE_CREDENTIAL, errorMessage: 'Too many iterations' }])
    const altered = await c.request(ApiKeys.AlterUserScramCredentials, 0, {
      deletions: [{ name: 'nobody', mechanism: 1 }, { name: 'dave', mechanism: 1 }, { name: 'x', mechanism: 9 }],
      upsertions: [],
    })
    expect(altered.results).toEqual([
      { user: 'nobody', errorCode: ErrorCodes.RESOURCE_NOT_FOUND, errorMessage: 'Attempt to delete a user credential that does not exist' },
      { user: 'dave', errorCode: 0, errorMessage: null },
      { user: 'x', errorCode: ErrorCodes.UNSUPPORTED_SASL_MECHANISM, errorMessage: 'Unknown SCRAM mechanism' },
    ])
    const all = await c.request(ApiKeys.DescribeUserScramCredentials, 0, { users: null })
    expect(all.results).toEqual([{ user: 'dave', errorCode: 0, errorMessage: null, credentialInfos: [{ mechanism: 2, iterations: 5000 }] }])
    const some = await c.request(ApiKeys.DescribeUserScramCredentials, 0, { users: [{ name: 'erin' }, { name: 'dave' }, { name: 'dave' }] })
    expect(some.results.map((r: { errorCode: number }) => r.errorCode)).toEqual([ErrorCodes.RESOURCE_NOT_FOUND, ErrorCodes.DUPLICATE_RESOURCE])
    c.close()
  })
})

describe('before authentication', () => {
  it('closes a connection that sends anything but ApiVersions or SASL first, and serves nothing of it', async () => {
    const { sasl, b } = await start({ autoCreateTopics: true })
    const c = await RawClient.connect(sasl)
    await expect(c.request(ApiKeys.Metadata, 12, { topics: [{ name: 'sneaky', topicId: undefined }], allowAutoTopicCreation: true, includeTopicAuthorizedOperations: false })).rejects.toThrow(/closed/)
    const after = await RawClient.connect(b.listeners[0]!.port)
    expect((await metadata(after)).topics.map((t: { name: string }) => t.name)).not.toContain('sneaky')
    after.close()
    // After the handshake, only SaslAuthenticate.
    const d = await RawClient.connect(sasl)
    expect((await d.request(ApiKeys.SaslHandshake, 1, { mechanism: 'PLAIN' })).errorCode).toBe(0)
    await expect(metadata(d)).rejects.toThrow(/closed/)
  })

  it('answers an unknown mechanism with the enabled ones and closes', async () => {
    const { sasl } = await start({ saslEnabledMechanisms: 'SCRAM-SHA-512' })
    const c = await RawClient.connect(sasl)
    expect(await c.request(ApiKeys.SaslHandshake, 1, { mechanism: 'PLAIN' })).toEqual({ errorCode: ErrorCodes.UNSUPPORTED_SASL_MECHANISM, mechanisms: ['SCRAM-SHA-512'] })
    await c.closed
  })

  it('answers SaslAuthenticate after a successful one with ILLEGAL_SASL_STATE', async () => {
    const { sasl } = await start()
    const c = await RawClient.connect(sasl)
    await login(c, 'PLAIN', 'alice', 'alice-secret')
    const again = await c.request(ApiKeys.SaslAuthenticate, 2, { authBytes: Buffer.from('\0alice\0alice-secret') })
    expect(again).toMatchObject({ errorCode: ErrorCodes.ILLEGAL_SASL_STATE, errorMessage: 'SaslAuthenticate request received after successful authentication' })
    c.close()
  })
})

describe('KIP-368 session lifetime', () => {
  it('grants connections.max.reauth.ms, closes an expired session on its next request, and lets a client re-authenticate', async () => {
    let now = 1_000_000
    const realNow = Date.now
    const { sasl } = await start({ connectionsMaxReauthMs: 5000 })
    Date.now = () => now
    try {
      const lazy = await RawClient.connect(sasl)
      expect((await login(lazy, 'PLAIN', 'alice', 'alice-secret')).sessionLifetimeMs).toBe(5000n)
      const eager = await RawClient.connect(sasl)
      await login(eager, 'PLAIN', 'alice', 'alice-secret')
      now += 4000
      expect((await metadata(lazy)).brokers).toHaveLength(1)
      // Re-authentication on the same connection, as the Java client does before expiry.
      expect(await login(eager, 'PLAIN', 'alice', 'alice-secret')).toMatchObject({ errorCode: 0, sessionLifetimeMs: 5000n })
      now += 2000
      await expect(metadata(lazy)).rejects.toThrow(/closed/)
      expect((await metadata(eager)).brokers).toHaveLength(1)
      // A different principal may not take over a session.
      const hs = await eager.request(ApiKeys.SaslHandshake, 1, { mechanism: 'PLAIN' })
      expect(hs.errorCode).toBe(0)
      const r = await eager.request(ApiKeys.SaslAuthenticate, 2, { authBytes: Buffer.from('\0bob\0b"ob') })
      expect(r).toMatchObject({ errorCode: ErrorCodes.SASL_AUTHENTICATION_FAILED, errorMessage: 'Cannot change principals during re-authentication from User:alice: User:bob' })
      await eager.closed
    } finally {
      Date.now = realNow
    }
  })
})

describe('hostile input', () => {
  it('survives garbage and oversized tokens and keeps serving others', async () => {
    const { sasl, plain } = await start()
    const payloads = [
      Buffer.alloc(0),
      Buffer.from('n,,'),
      Buffer.from('p=tls-unique,,n=a,r=b'),
      Buffer.from('n,,n=,r=x'),
      Buffer.from('n,,n=a=ZZ,r=x'),
      Buffer.from('n,,n=alice,r=x,tokenauth=true'),
      Buffer.from([0xff, 0xfe, 0x00, 0x01, 0x80]),
    ]
    for (const mechanism of ['SCRAM-SHA-256', 'SCRAM-SHA-512', 'PLAIN']) {
      for (const p of payloads) {
        const c = await RawClient.connect(sasl)
        await c.request(ApiKeys.SaslHandshake, 1, { mechanism })
        const r = await c.request(ApiKeys.SaslAuthenticate, 1, { authBytes: p })
        expect(r.errorCode).toBe(ErrorCodes.SASL_AUTHENTICATION_FAILED)
        await c.closed
      }
    }
    // A 600 KiB "token" is refused before it is buffered (sasl.server.max.receive.size is 512 KiB).
    const big = await RawClient.connect(sasl)
    await big.request(ApiKeys.SaslHandshake, 1, { mechanism: 'PLAIN' })
    big.write(encodeRequestFrame({ apiKey: ApiKeys.SaslAuthenticate, apiVersion: 1, correlationId: 9, clientId: 'x' }, { authBytes: Buffer.alloc(600 * 1024, 1) }))
    await big.closed
    // A raw garbage header on a fresh connection.
    const junk = await RawClient.connect(sasl)
    junk.write(Buffer.from([0, 0, 0, 6, 0x7f, 0x7f, 0, 0, 0, 0]))
    await junk.closed
    const ok = await RawClient.connect(plain)
    expect((await metadata(ok)).brokers).toHaveLength(1)
    ok.close()
    const s = await RawClient.connect(sasl)
    expect((await login(s, 'PLAIN', 'alice', 'alice-secret')).errorCode).toBe(0)
    s.close()
  })
})

describe('SCRAM credential file faults', () => {
  it('refuses to start on a corrupt credentials file, naming it', async () => {
    const dir = tempDir()
    writeFileSync(join(dir, 'scram-credentials.json'), '{ not json')
    await expect(startBroker({ dataDir: dir, port: 0 })).rejects.toThrow(/scram-credentials\.json is not valid JSON/)
  })

  it('keeps memory and disk in step when the write fails', async () => {
    const { plain, dir, sasl } = await start()
    const admin = await RawClient.connect(plain)
    await upsertScramUser(admin, 'frank', 'one', 'SCRAM-SHA-256')
    // A directory where the temp file goes makes the atomic write fail.
    const { mkdirSync } = await import('node:fs')
    mkdirSync(join(dir, 'scram-credentials.json.tmp'))
    const res = await upsertScramUser(admin, 'frank', 'two', 'SCRAM-SHA-256')
    expect(res[0]!.errorCode).toBe(ErrorCodes.UNKNOWN_SERVER_ERROR)
    const c = await RawClient.connect(sasl)
    expect((await login(c, 'SCRAM-SHA-256', 'frank', 'one')).errorCode).toBe(0)
    c.close()
    admin.close()
  })
})
