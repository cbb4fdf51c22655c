import { execFileSync } from 'node:child_process'
import { readFileSync, writeFileSync } from 'node:fs'
import { connect } from 'node:net'
import { join } from 'node:path'
import { connect as tlsConnect } from 'node:tls'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ApiKeys } from '@tidelog/protocol'
import { type Broker, type BrokerOptions, startBroker } from '../../src/index.js'
import { RawClient } from '../helpers/raw-client.js'
import { tempDir } from '../helpers/tmp.js'
import { until } from '../helpers/until.js'
import { type TestCertificates, makeCertificates } from './certs.js'
import { captureLogger, connectTls, login, upsertScramUser } from './helpers.js'

let certs: TestCertificates
let certDir: string

beforeAll(() => {
  // Not tempDir(): that one is emptied after each test, and the certificates serve the whole file.
  certDir = execFileSync('mktemp', ['-d']).toString().trim()
  certs = makeCertificates(certDir)
})
afterAll(() => execFileSync('rm', ['-rf', certDir]))

const metadata = (c: RawClient) => c.request(ApiKeys.Metadata, 12, { topics: null, allowAutoTopicCreation: false, includeTopicAuthorizedOperations: false })

async function start(opts: BrokerOptions) {
  const log = captureLogger()
  const b: Broker = await startBroker({
    dataDir: tempDir(),
    listeners: 'PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0,SASL_SSL://127.0.0.1:0',
    sslKeystoreLocation: certs.brokerKeystore,
    sslTruststoreLocation: certs.caFile,
    connectionFailedAuthenticationDelayMs: 0,
    logger: log.logger,
    ...opts,
  })
  return { b, log, plain: b.listeners[0]!.port, ssl: b.listeners[1]!.port, saslSsl: b.listeners[2]!.port }
}

/** Resolves with how a TLS client fared: served, or the error that ended it. */
async function tryTls(port: number, options: Parameters<typeof connectTls>[1]): Promise<string> {
  let c: RawClient
  try {
    c = await connectTls(port, options)
  } catch (err) {
    return `refused: ${(err as Error).message}`
  }
  try {
    const md = await metadata(c)
    return `served on ${md.brokers[0].port}`
  } catch (err) {
    return `refused: ${(err as Error).message}`
  } finally {
    c.close()
  }
}

describe('SSL listener with ssl.client.auth=required (mTLS)', () => {
  it('serves a client whose certificate the truststore signed, as User:<subject DN>; refuses none and a stranger', async () => {
    const { b, log, ssl } = await start({ sslClientAuth: 'required' })
    try {
      expect(await tryTls(ssl, { ca: certs.ca, key: certs.client.key, cert: certs.client.cert })).toBe(`served on ${ssl}`)
      expect(log.lines.some((l) => l.includes('authenticated as User:CN=app-one,O=Tidelog Tests,C=US (TLS) on listener SSL'))).toBe(true)
      expect(await tryTls(ssl, { ca: certs.ca })).toMatch(/^refused/)
      expect(await tryTls(ssl, { ca: certs.ca, key: certs.rogue.key, cert: certs.rogue.cert })).toMatch(/^refused/)
      // The client checks the broker too: a client that trusts another CA gives up.
      expect(await tryTls(ssl, { ca: certs.rogue.cert })).toMatch(/refused: .*(self.signed|unable to verify|certificate)/i)
    } finally {
      await b.close()
    }
  })

  it('with requested, a client without a certificate is User:ANONYMOUS; a bad certificate is still refused', async () => {
    const { b, log, ssl } = await start({ sslClientAuth: 'requested' })
    try {
      expect(await tryTls(ssl, { ca: certs.ca })).toBe(`served on ${ssl}`)
      expect(log.lines.some((l) => l.includes('authenticated as User:ANONYMOUS (TLS)'))).toBe(true)
      expect(await tryTls(ssl, { ca: certs.ca, key: certs.rogue.key, cert: certs.rogue.cert })).toMatch(/^refused/)
    } finally {
      await b.close()
    }
  })
})

describe('ssl.principal.mapping.rules over a real handshake', () => {
  it('maps the certificate subject to the user name, and refuses a subject no rule covers', async () => {
    const { b, log, ssl } = await start({ sslClientAuth: 'required', sslPrincipalMappingRules: 'RULE:^CN=(.*?),O=Tidelog Tests.*$/$1/U' })
    try {
      expect(await tryTls(ssl, { ca: certs.ca, key: certs.client.key, cert: certs.client.cert })).toBe(`served on ${ssl}`)
      expect(log.lines.some((l) => l.includes('authenticated as User:APP-ONE (TLS)'))).toBe(true)
    } finally {
      await b.close()
    }
    const strict = await start({ sslClientAuth: 'required', sslPrincipalMappingRules: 'RULE:^CN=nobody$/x/' })
    try {
      expect(await tryTls(strict.ssl, { ca: certs.ca, key: certs.client.key, cert: certs.client.cert })).toMatch(/^refused/)
      expect(strict.log.lines.some((l) => l.includes('No rules apply to CN=app-one,O=Tidelog Tests,C=US'))).toBe(true)
    } finally {
      await strict.b.close()
    }
  })
})

describe('SASL_SSL', () => {
  it('authenticates SCRAM-SHA-512 inside TLS without asking for a client certificate', async () => {
    const { b, plain, saslSsl } = await start({ sslClientAuth: 'required' })
    try {
      const admin = await RawClient.connect(plain)
      await upsertScramUser(admin, 'alice', 'alice-secret', 'SCRAM-SHA-512')
      admin.close()
      const c = await connectTls(saslSsl, { ca: certs.ca })
      expect(await login(c, 'SCRAM-SHA-512', 'alice', 'alice-secret')).toMatchObject({ errorCode: 0, serverVerified: true })
      expect((await metadata(c)).brokers[0].port).toBe(saslSsl)
      c.close()
    } finally {
      await b.close()
    }
  })
})

describe('TLS robustness', () => {
  it('cuts a client that never finishes its handshake after connections.max.idle.ms, serving others meanwhile', async () => {
    const { b, ssl, plain } = await start({ connectionsMaxIdleMs: 1500 })
    try {
      const silent = connect(ssl, '127.0.0.1')
      silent.on('error', () => {})
      const closed = new Promise<number>((resolve) => {
        const t0 = performance.now()
        silent.on('close', () => resolve(performance.now() - t0))
      })
      // Half a ClientHello, then nothing.
      silent.write(Buffer.from([0x16, 0x03, 0x01, 0x02, 0x00, 0x01]))
      expect(await tryTls(ssl, { ca: certs.ca })).toBe(`served on ${ssl}`)
      const p = await RawClient.connect(plain)
      expect((await metadata(p)).brokers).toHaveLength(1)
      p.close()
      expect(await closed).toBeGreaterThanOrEqual(1000)
      // Garbage instead of TLS: the socket closes, the broker stays up.
      const junk = connect(ssl, '127.0.0.1')
      junk.on('error', () => {})
      junk.write(Buffer.from('GET / HTTP/1.1\r\n\r\n'))
      await new Promise((r) => junk.on('close', r))
      expect(await tryTls(ssl, { ca: certs.ca })).toBe(`served on ${ssl}`)
    } finally {
      await b.close()
    }
  })

  it('picks up a renewed certificate for new connections without a restart', async () => {
    const dir = tempDir()
    const keystore = join(dir, 'keystore.pem')
    writeFileSync(keystore, readFileSync(certs.brokerKeystore))
    const { b, ssl } = await start({ sslKeystoreLocation: keystore })
    const fingerprint = () =>
      new Promise<string>((resolve, reject) => {
        const s = tlsConnect({ host: '127.0.0.1', port: ssl, servername: 'localhost', ca: certs.ca }, () => {
          resolve(s.getPeerX509Certificate()!.fingerprint256)
          s.destroy()
        })
        s.once('error', reject)
      })
    try {
      const before = await fingerprint()
      execFileSync('openssl', ['req', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'new.key', '-out', 'new.csr', '-subj', '/CN=localhost'], { cwd: dir, stdio: 'pipe' })
      execFileSync('openssl', ['x509', '-req', '-in', 'new.csr', '-CA', certs.caFile, '-CAkey', join(certs.dir, 'ca.key'), '-CAcreateserial', '-out', 'new.pem', '-days', '2', '-extfile', join(certs.dir, 'san.ext')], { cwd: dir, stdio: 'pipe' })
      writeFileSync(keystore, readFileSync(join(dir, 'new.key'), 'utf8') + readFileSync(join(dir, 'new.pem'), 'utf8'))
      // The file watch reloads it shortly after the write (debounced): wait for it.
      const renewed = new (await import('node:crypto')).X509Certificate(readFileSync(join(dir, 'new.pem'))).fingerprint256
      expect(renewed).not.toBe(before)
      await until('the renewed certificate', async () => ((await fingerprint()) === renewed ? true : undefined))
    } finally {
      await b.close()
    }
  })
})
