import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { X509Certificate } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { ApiKeys } from '@tidelog/protocol'
import { ConfigError, parseConfig } from '../src/config.js'
import { startBroker } from '../src/index.js'
import { KeystoreError, pkcs12Certificates } from '../src/security/keystore.js'
import { tempDir } from './helpers/tmp.js'
import { connectTls } from './security/helpers.js'

// Made by fixtures/keystore/make.sh with Java's keytool (JDK 17), so the layout read is Java's own.
const FIXTURES = join(import.meta.dirname, 'fixtures', 'keystore')
const file = (name: string) => join(FIXTURES, name)
const read = (name: string) => readFileSync(file(name))

describe('PKCS12 truststores as keytool writes them', () => {
  it('yields the trusted certificate, after checking the MAC and decrypting the PBES2 entry', () => {
    const certs = pkcs12Certificates(read('trust.p12'), 'trust-pw')
    expect(certs).toHaveLength(1)
    expect(new X509Certificate(certs[0]!).fingerprint256).toBe(new X509Certificate(read('ca.pem')).fingerprint256)
  })

  it('a wrong password, a truncated or a foreign file is a KeystoreError, not a crash', () => {
    expect(() => pkcs12Certificates(read('trust.p12'), 'nope')).toThrow(/password is wrong/)
    const bytes = read('trust.p12')
    for (const cut of [0, 1, 10, 100, bytes.length - 1]) expect(() => pkcs12Certificates(bytes.subarray(0, cut), 'trust-pw')).toThrow(KeystoreError)
    expect(() => pkcs12Certificates(read('ca.pem'), 'trust-pw')).toThrow(KeystoreError)
    const flipped = Buffer.from(bytes)
    flipped[flipped.length - 40] ^= 0xff
    expect(() => pkcs12Certificates(flipped, 'trust-pw')).toThrow(KeystoreError)
  })
})

describe('damaged PKCS12 truststores', () => {
  it('40 seeded single-byte corruptions: each is refused with a KeystoreError or still reads the one certificate, never hangs or crashes', () => {
    const good = read('trust.p12')
    let seed = 12
    const next = () => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32
    let refused = 0
    // Each attempt derives the MAC key (10,000 hash rounds), so the count stays small.
    for (let i = 0; i < 40; i++) {
      const bad = Buffer.from(good)
      bad[Math.floor(next() * bad.length)] = Math.floor(next() * 256)
      try {
        expect(pkcs12Certificates(bad, 'trust-pw')).toHaveLength(1)
      } catch (err) {
        expect(err).toBeInstanceOf(KeystoreError)
        refused++
      }
    }
    expect(refused).toBeGreaterThan(30)
  })
})

describe('ssl.keystore.type=PKCS12 on a listener', () => {
  it('serves TLS with the keytool keystore and checks client certificates against the PKCS12 truststore', async () => {
    const b = await startBroker({
      dataDir: tempDir(),
      listeners: 'SSL://127.0.0.1:0',
      sslKeystoreType: 'PKCS12',
      sslKeystoreLocation: file('broker.p12'),
      sslKeystorePassword: 'broker-store-pw',
      sslTruststoreType: 'PKCS12',
      sslTruststoreLocation: file('trust.p12'),
      sslTruststorePassword: 'trust-pw',
      sslClientAuth: 'required',
      logLevel: 'error',
    })
    try {
      const ca = readFileSync(file('broker.pem'), 'utf8')
      const c = await connectTls(b.port, { ca, key: read('client.key'), cert: read('client.pem') })
      const md = await c.request(ApiKeys.Metadata, 12, { topics: null, allowAutoTopicCreation: false, includeTopicAuthorizedOperations: false })
      expect(md.brokers).toHaveLength(1)
      expect((c.socket as unknown as { getPeerX509Certificate(): X509Certificate }).getPeerX509Certificate().subject).toBe('CN=localhost')
      c.close()
      // Without a client certificate the handshake (or the first read) fails.
      const refused = await connectTls(b.port, { ca }).then(
        async (r) => {
          await r.request(ApiKeys.ApiVersions, 3, { clientSoftwareName: 't', clientSoftwareVersion: '1' })
          return 'served'
        },
        (e: Error) => e.message,
      ).catch((e: Error) => e.message)
      expect(refused).not.toBe('served')
    } finally {
      await b.close()
    }
  })

  it('a wrong keystore password stops the start with an error', async () => {
    await expect(
      startBroker({ dataDir: tempDir(), listeners: 'SSL://127.0.0.1:0', sslKeystoreType: 'PKCS12', sslKeystoreLocation: file('broker.p12'), sslKeystorePassword: 'wrong', logLevel: 'error' }),
    ).rejects.toThrow(/mac verify failure|PKCS12|password/i)
    await expect(
      startBroker({ dataDir: tempDir(), listeners: 'SSL://127.0.0.1:0', sslKeystoreLocation: file('broker.pem'), sslKeystoreKey: 'x', sslTruststoreType: 'PKCS12', sslTruststoreLocation: file('trust.p12'), sslTruststorePassword: 'wrong', sslClientAuth: 'required', logLevel: 'error' }),
    ).rejects.toThrow(/trust\.p12: the password is wrong/)
  })

  it('JKS is a config error naming the keytool conversion, as a type and as a file given as PKCS12', async () => {
    const parse = (args: string[]) => () => parseConfig({ argv: args, env: {} })
    expect(parse(['--listeners', 'SSL://127.0.0.1:0', '--ssl-keystore-type', 'JKS', '--ssl-keystore-location', 'broker.jks'])).toThrow(ConfigError)
    expect(parse(['--ssl-keystore-type', 'JKS', '--ssl-keystore-location', 'broker.jks'])).toThrow(
      /keytool -importkeystore -srckeystore broker\.jks -destkeystore broker\.p12 -deststoretype PKCS12/,
    )
    expect(parse(['--ssl-truststore-type', 'JKS'])).toThrow(/ssl\.truststore\.type=JKS/)
    await expect(
      startBroker({ dataDir: tempDir(), listeners: 'SSL://127.0.0.1:0', sslKeystoreType: 'PKCS12', sslKeystoreLocation: file('broker.jks'), sslKeystorePassword: 'broker-store-pw', logLevel: 'error' }),
    ).rejects.toThrow(/Java KeyStore files cannot be read outside the JVM/)
  })
})
