/**
 * TLS certificates reload without a restart (issue 16): the broker watches its keystore and
 * truststore files; new connections get a renewed certificate once it parses and matches,
 * open connections keep working, and a broken or incompatible renewal keeps the old one.
 */
import { X509Certificate, createPrivateKey } from 'node:crypto'
import { copyFileSync, readFileSync, renameSync, writeFileSync } from 'node:fs'
import type { Socket } from 'node:net'
import { join } from 'node:path'
import { connect as tlsConnect } from 'node:tls'
import { ApiKeys } from '@tidelog/protocol'
import { describe, expect, it } from 'vitest'
import { startBroker } from '../src/index.js'
import { createLogger } from '../src/logger.js'
import { generateDevCertificates } from '../src/security/certs/generate.js'
import { createCertificate, toPem } from '../src/security/certs/x509.js'
import { TlsContextProvider } from '../src/security/tls.js'
import { RawClient } from './helpers/raw-client.js'
import { tempDir } from './helpers/tmp.js'
import { until } from './helpers/until.js'
import { captureLogger } from './security/helpers.js'

/** A TLS connection that checks the host name as a client does, and the serial it was shown. */
function connect(port: number, ca: string): Promise<{ client: RawClient; serial: string }> {
  return new Promise((resolve, reject) => {
    const s = tlsConnect({ host: '127.0.0.1', port, servername: 'localhost', ca }, () =>
      resolve({ client: new (RawClient as unknown as new (s: Socket) => RawClient)(s), serial: s.getPeerX509Certificate()!.serialNumber }),
    )
    s.once('error', reject)
  })
}

const serialOf = (file: string) => new X509Certificate(readFileSync(file)).serialNumber
const metadata = (c: RawClient) => c.request(ApiKeys.Metadata, 12, { topics: null, allowAutoTopicCreation: false, includeTopicAuthorizedOperations: false })

describe('certificate reload on an SSL listener', () => {
  it('new connections see the renewed certificate, the open one keeps working, a broken file keeps the last good one', async () => {
    const dir = tempDir()
    const a = generateDevCertificates({ dir })
    const ca = readFileSync(a.caCert, 'utf8')
    const serialA = serialOf(a.serverCert)
    const log = captureLogger()
    const b = await startBroker({ dataDir: tempDir(), listeners: 'SSL://127.0.0.1:0', sslKeystoreLocation: a.serverKeystore, logger: log.logger, consolePort: 0 })
    const metric = async (name: string) => {
      const text = await (await fetch(`${b.console!.url}metrics`)).text()
      return text.split('\n').filter((l) => l.startsWith(name)).join('\n')
    }
    const port = b.listeners[0]!.port
    const open: RawClient[] = []
    try {
      const first = await connect(port, ca)
      open.push(first.client)
      expect(first.serial).toBe(serialA)

      // `certs --force` with the CA kept: the renewal a developer makes.
      const renewed = generateDevCertificates({ dir, force: true })
      const serialB = serialOf(renewed.serverCert)
      expect(serialB).not.toBe(serialA)
      await until('a new connection shown the renewed certificate', async () => {
        const c = await connect(port, ca)
        c.client.close()
        return c.serial === serialB ? true : undefined
      })
      expect((await metadata(first.client)).brokers[0].port).toBe(port)
      expect(log.lines.some((l) => l.includes('TLS: reloaded') && l.includes(`serial ${serialB}`))).toBe(true)

      // A renewal cut short: not used, said so once, the last good certificate stays.
      writeFileSync(renewed.serverKeystore, '-----BEGIN PRIVATE KEY-----\nMIIB\n')
      await until('the broken file to be refused', async () => (log.lines.some((l) => l.includes('cannot be used')) ? true : undefined))
      const during = await connect(port, ca)
      open.push(during.client)
      expect(during.serial).toBe(serialB)
      expect(log.lines.find((l) => l.includes('cannot be used'))).toMatch(new RegExp(`keep the certificate loaded before .*serial ${serialB}`))

      // A key that is not the certificate's: refused too.
      const other = generateDevCertificates({ dir: tempDir() })
      writeFileSync(renewed.serverKeystore, readFileSync(other.serverKey, 'utf8') + readFileSync(renewed.serverCert, 'utf8'))
      await until('the mismatched key to be refused', async () => (log.lines.filter((l) => l.includes('cannot be used')).length >= 2 ? true : undefined))
      expect((await connect(port, ca).then((c) => (c.client.close(), c.serial)))).toBe(serialB)

      // Replaced by rename, as editors and cert-manager do: the directory watch still sees it.
      const side = tempDir()
      for (const f of ['ca.pem', 'ca.key']) copyFileSync(join(dir, f), join(side, f))
      const third = generateDevCertificates({ dir: side })
      expect(third.reusedCa).toBe(true)
      renameSync(third.serverKeystore, renewed.serverKeystore)
      const serialC = serialOf(third.serverCert)
      await until('a new connection shown the third certificate', async () => {
        const c = await connect(port, ca)
        c.client.close()
        return c.serial === serialC ? true : undefined
      })
      for (const c of open) expect((await metadata(c)).brokers[0].port).toBe(port)
      // Two renewals in use, two refused; the expiry is the certificate served now.
      expect(await metric('tidelog_tls_certificate_reloads_total')).toBe(
        'tidelog_tls_certificate_reloads_total{result="success"} 2\ntidelog_tls_certificate_reloads_total{result="failure"} 2',
      )
      const notAfter = Math.floor(Date.parse(new X509Certificate(readFileSync(third.serverCert)).validTo) / 1000)
      expect(await metric('tidelog_tls_certificate_expiry_timestamp_seconds')).toBe(`tidelog_tls_certificate_expiry_timestamp_seconds{serial="${serialC}"} ${notAfter}`)
    } finally {
      for (const c of open) c.close()
      await b.close()
    }
  })
})

describe('what a reload accepts (Kafka rules for a keystore update)', () => {
  const quiet = createLogger('error', () => {})

  function keystoreWith(dir: string, subject: [['O', string], ['CN', string]], sans: { dnsNames: string[]; ipAddresses: string[] }) {
    const f = generateDevCertificates({ dir, force: true })
    const caKey = createPrivateKey(readFileSync(f.caKey))
    const key = createPrivateKey(readFileSync(f.serverKey))
    const der = createCertificate({
      subject, issuer: [['O', 'tidelog development'], ['CN', 'tidelog development CA']], publicKey: key, signingKey: caKey, issuerPublicKey: caKey,
      notBefore: new Date(Date.now() - 60_000), notAfter: new Date(Date.now() + 86_400_000), ca: false, ...sans,
    })
    return key.export({ type: 'pkcs8', format: 'pem' }) + toPem('CERTIFICATE', der)
  }

  it('refuses a changed subject or a dropped SAN unless ssl.allow.dn.changes / ssl.allow.san.changes; accepts added SANs', () => {
    const dir = tempDir()
    const f = generateDevCertificates({ dir })
    const provider = (opts: { allowDnChanges?: boolean; allowSanChanges?: boolean }) =>
      new TlsContextProvider({ keystoreLocation: f.serverKeystore, keystoreCertificateChain: undefined, keystoreKey: undefined, keyPassword: undefined, truststoreLocation: undefined, truststoreCertificates: undefined, clientAuth: 'none' }, { logger: quiet, pollMs: 0, ...opts })
    const original = readFileSync(f.serverKeystore, 'utf8')
    const same = { dnsNames: ['localhost'], ipAddresses: ['127.0.0.1', '::1'] }
    const cases: [string, string, { allowDnChanges?: boolean; allowSanChanges?: boolean }, boolean, RegExp | undefined][] = [
      ['another subject', keystoreWith(dir, [['O', 'tidelog development'], ['CN', 'broker-2']], same), {}, false, /DistinguishedName does not match/],
      ['another subject, allowed', keystoreWith(dir, [['O', 'tidelog development'], ['CN', 'broker-2']], same), { allowDnChanges: true }, true, undefined],
      ['127.0.0.1 dropped', keystoreWith(dir, [['O', 'tidelog development'], ['CN', 'localhost']], { dnsNames: ['localhost'], ipAddresses: ['::1'] }), {}, false, /lacks IP Address:127\.0\.0\.1/],
      ['127.0.0.1 dropped, allowed', keystoreWith(dir, [['O', 'tidelog development'], ['CN', 'localhost']], { dnsNames: ['localhost'], ipAddresses: ['::1'] }), { allowSanChanges: true }, true, undefined],
      ['a SAN added', keystoreWith(dir, [['O', 'tidelog development'], ['CN', 'localhost']], { ...same, dnsNames: ['localhost', 'kafka.test'] }), {}, true, undefined],
    ]
    for (const [what, keystore, opts, accepted, reason] of cases) {
      writeFileSync(f.serverKeystore, original)
      const p = provider(opts)
      try {
        writeFileSync(f.serverKeystore, keystore)
        expect(p.reload(), what).toBe(accepted)
        const st = p.status()
        expect(st.generation, what).toBe(accepted ? 2 : 1)
        if (reason !== undefined) expect(st.lastFailure, what).toMatch(reason)
        // Unchanged files are not read into a new context again, nor refused twice.
        expect(p.reload(), what).toBe(false)
        expect(p.status().failedReloads, what).toBe(accepted ? 0 : 1)
      } finally {
        p.close()
      }
    }
  })
})
