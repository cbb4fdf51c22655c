/**
 * `tidelog-broker certs`: development certificates written in TypeScript (no openssl at run
 * time), checked with node's X509Certificate, openssl and keytool when present, and served by
 * the broker to TLS clients that check the host name, with PEM and with PKCS12 stores.
 */
import { X509Certificate, createPrivateKey } from 'node:crypto'
import { execFileSync, spawnSync } from 'node:child_process'
import { readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { Writable } from 'node:stream'
import { fileURLToPath } from 'node:url'
import { ApiKeys } from '@tidelog/protocol'
import { describe, expect, it } from 'vitest'
import { type BrokerOptions, startBroker } from '../src/index.js'
import { pkcs12Certificates } from '../src/security/keystore.js'
import { generateDevCertificates, subjectAltNames } from '../src/security/certs/generate.js'
import { parseCertsArgs, runCertsCommand } from '../src/security/certs/command.js'
import { ipBytes } from '../src/security/certs/x509.js'
import { tempDir } from './helpers/tmp.js'
import { connectTls } from './security/helpers.js'

const MAIN = fileURLToPath(new URL('../src/main.ts', import.meta.url))
const ROOT = fileURLToPath(new URL('../../../', import.meta.url))

// Under CI=true a missing tool fails its test instead of skipping it (a missing peer is a failure there).
function has(tool: string, args: string[]): boolean {
  return process.env.CI === 'true' || spawnSync(tool, args, { stdio: 'ignore', timeout: 30_000 }).status === 0
}

describe('generated certificates', () => {
  it('a CA, a server certificate for localhost, 127.0.0.1, ::1 and --san names, a client certificate; all verify', () => {
    const f = generateDevCertificates({ dir: tempDir(), sans: ['kafka.example.com', 'IP:10.1.2.3', 'DNS:Broker-2.local'] })
    const ca = new X509Certificate(readFileSync(f.caCert))
    const server = new X509Certificate(readFileSync(f.serverCert))
    const client = new X509Certificate(readFileSync(f.clientCert))
    expect(ca.ca).toBe(true)
    expect(ca.verify(ca.publicKey)).toBe(true)
    expect(server.ca).toBe(false)
    expect(server.verify(ca.publicKey)).toBe(true)
    expect(client.verify(ca.publicKey)).toBe(true)
    expect(server.issuer).toBe(ca.subject)
    expect(server.subjectAltName).toBe('DNS:localhost, DNS:kafka.example.com, DNS:broker-2.local, IP Address:127.0.0.1, IP Address:0:0:0:0:0:0:0:1, IP Address:10.1.2.3')
    for (const host of ['localhost', 'kafka.example.com', 'broker-2.local']) expect(server.checkHost(host)).toBe(host)
    for (const ip of ['127.0.0.1', '::1', '10.1.2.3']) expect(server.checkIP(ip)).toBe(ip)
    expect(server.checkHost('example.com')).toBeUndefined()
    expect(server.checkIP('127.0.0.2')).toBeUndefined()
    expect(server.keyUsage).toEqual(['1.3.6.1.5.5.7.3.1'])
    expect(client.keyUsage).toEqual(['1.3.6.1.5.5.7.3.2'])
    expect(client.subject).toBe('O=tidelog development\nCN=client')
    expect(server.checkPrivateKey(createPrivateKey(readFileSync(f.serverKey)))).toBe(true)
    const days = (new Date(server.validTo).getTime() - Date.now()) / 86_400_000
    expect(days).toBeGreaterThan(364)
    expect(days).toBeLessThan(366)
    // Keys and stores are for the owner only; certificates may be read by anyone.
    expect(statSync(f.caKey).mode & 0o777).toBe(0o600)
    expect(statSync(f.serverKeystore).mode & 0o777).toBe(0o600)
    expect(statSync(f.caCert).mode & 0o077).not.toBe(0)
    // The truststore reads back (MAC checked) as the CA.
    expect(pkcs12Certificates(readFileSync(f.truststoreP12), f.password).map((pem) => new X509Certificate(pem).fingerprint256)).toEqual([ca.fingerprint256])
    expect(() => pkcs12Certificates(readFileSync(f.truststoreP12), 'wrong')).toThrow(/MAC does not verify/)
  })

  it('RSA keys on request; a second run keeps the CA and refuses to overwrite without --force', () => {
    const dir = tempDir()
    const first = generateDevCertificates({ dir, keyType: 'rsa', days: 30 })
    const firstServer = new X509Certificate(readFileSync(first.serverCert))
    expect(firstServer.publicKey.asymmetricKeyType).toBe('rsa')
    expect(() => generateDevCertificates({ dir })).toThrow(/server\.pem exists; pass --force/)
    const ca = readFileSync(first.caCert, 'utf8')
    const second = generateDevCertificates({ dir, force: true })
    expect(second.reusedCa).toBe(true)
    expect(readFileSync(second.caCert, 'utf8')).toBe(ca)
    const renewed = new X509Certificate(readFileSync(second.serverCert))
    expect(renewed.serialNumber).not.toBe(firstServer.serialNumber)
    expect(renewed.verify(new X509Certificate(ca).publicKey)).toBe(true)
  })

  it('refuses a --san that is no host name, and bad options', () => {
    expect(() => subjectAltNames(['bad name'])).toThrow(/neither a host name nor an IP address/)
    expect(() => generateDevCertificates({ dir: tempDir(), days: 0 })).toThrow(/--days must be/)
    expect(() => parseCertsArgs(['--key-type', 'dsa'])).toThrow(/ec or rsa/)
    expect(() => parseCertsArgs(['--dir'])).toThrow(/--dir needs a value/)
    expect(parseCertsArgs(['--dir=x', '--san', 'a.test,10.0.0.1', '--san', 'b.test'])).toMatchObject({ dir: 'x', sans: ['a.test', '10.0.0.1', 'b.test'] })
    expect(ipBytes('::ffff:10.0.0.1').toString('hex')).toBe('00000000000000000000ffff0a000001')
    expect(ipBytes('fe80::1:2').toString('hex')).toBe('fe800000000000000000000000010002')
  })

  it.skipIf(!has('openssl', ['version']))('openssl verifies both certificates against the CA', () => {
    const f = generateDevCertificates({ dir: tempDir() })
    const out = execFileSync('openssl', ['verify', '-CAfile', f.caCert, '-purpose', 'sslserver', f.serverCert], { encoding: 'utf8' })
    expect(out.trim()).toBe(`${f.serverCert}: OK`)
    expect(execFileSync('openssl', ['verify', '-CAfile', f.caCert, '-purpose', 'sslclient', f.clientCert], { encoding: 'utf8' }).trim()).toBe(`${f.clientCert}: OK`)
    // The PKCS12 keystore's MAC and shrouded key read with OpenSSL 3 too.
    execFileSync('openssl', ['pkcs12', '-in', f.serverP12, '-passin', `pass:${f.password}`, '-noout'])
  })

  // One JVM: the keystores' PrivateKeyEntry is what the Java interop test (security-broker) loads.
  it.skipIf(!has('keytool', ['-help']))('keytool reads the truststore (its MAC checked): one trustedCertEntry, the CA', () => {
    const f = generateDevCertificates({ dir: tempDir() })
    const out = execFileSync('keytool', ['-list', '-v', '-keystore', f.truststoreP12, '-storetype', 'PKCS12', '-storepass', f.password], { encoding: 'utf8' })
    expect(out).toContain('Your keystore contains 1 entry')
    expect(out).toMatch(/Alias name: tidelog-dev-ca[\s\S]*Entry type: trustedCertEntry[\s\S]*Owner: CN=tidelog development CA, O=tidelog development/)
    expect(out).toMatch(/BasicConstraints:\[\s*CA:true/)
  })
})

describe('the broker serves them to clients that check the host name', () => {
  const metadataPort = async (port: number, tls: Parameters<typeof connectTls>[1]) => {
    const c = await connectTls(port, tls)
    try {
      const md = await c.request(ApiKeys.Metadata, 12, { topics: null, allowAutoTopicCreation: false, includeTopicAuthorizedOperations: false })
      return md.brokers[0].port as number
    } finally {
      c.close()
    }
  }

  async function serve(opts: Partial<BrokerOptions>, check: (port: number) => Promise<void>) {
    const b = await startBroker({ dataDir: tempDir(), listeners: 'SSL://127.0.0.1:0', logLevel: 'error', ...opts })
    try {
      await check(b.listeners[0]!.port)
    } finally {
      await b.close()
    }
  }

  it('PEM: served as localhost and as 127.0.0.1; another name is refused by the client; mTLS with the client certificate', async () => {
    const f = generateDevCertificates({ dir: tempDir() })
    const ca = readFileSync(f.caCert, 'utf8')
    const client = { key: readFileSync(f.clientKey, 'utf8'), cert: readFileSync(f.clientCert, 'utf8') }
    await serve({ sslKeystoreLocation: f.serverKeystore, sslTruststoreLocation: f.caCert, sslClientAuth: 'required' }, async (port) => {
      expect(await metadataPort(port, { ca, ...client, servername: 'localhost' })).toBe(port)
      // No SNI name: node checks the address connected to, 127.0.0.1, against the IP SANs.
      expect(await metadataPort(port, { ca, ...client, servername: undefined as unknown as string })).toBe(port)
      const wrong = await metadataPort(port, { ca, ...client, servername: 'kafka.example.com' }).catch((e: NodeJS.ErrnoException) => e.code)
      expect(wrong).toBe('ERR_TLS_CERT_ALTNAME_INVALID')
      const noCert = await metadataPort(port, { ca, servername: 'localhost' }).catch(() => 'refused')
      expect(noCert).toBe('refused')
    })
  })

  it('PKCS12: the .p12 keystore and truststore, and a client with client.p12', async () => {
    const f = generateDevCertificates({ dir: tempDir(), password: 'dev-Secret-1' })
    await serve(
      {
        sslKeystoreType: 'PKCS12', sslKeystoreLocation: f.serverP12, sslKeystorePassword: 'dev-Secret-1',
        sslTruststoreType: 'PKCS12', sslTruststoreLocation: f.truststoreP12, sslTruststorePassword: 'dev-Secret-1', sslClientAuth: 'required',
      },
      async (port) => {
        const ca = readFileSync(f.caCert, 'utf8')
        expect(await metadataPort(port, { ca, pfx: readFileSync(f.clientP12), passphrase: 'dev-Secret-1', servername: 'localhost' })).toBe(port)
      },
    )
  })
})

describe('tidelog-broker certs', () => {
  const inProcess = (args: string[]) => {
    const sink = () => {
      const chunks: string[] = []
      return { chunks, stream: new Writable({ write: (c, _e, cb) => (chunks.push(String(c)), cb()) }) }
    }
    const [o, e] = [sink(), sink()]
    const code = runCertsCommand(args, o.stream, e.stream)
    return { code, out: o.chunks.join(''), err: e.chunks.join('') }
  }
  const run = (args: string[]) => spawnSync(process.execPath, ['--import', 'tsx', MAIN, 'certs', ...args], { cwd: ROOT, encoding: 'utf8', timeout: 60_000 })

  it('writes the files and prints how to use them; exits 2 on a second run without --force and on a bad option', () => {
    const dir = tempDir()
    const r = run(['--dir', dir, '--san', 'kafka.test'])
    expect(r.status, r.stderr).toBe(0)
    expect(r.stdout).toContain('new CA')
    expect(r.stdout).toContain('DNS:localhost, DNS:kafka.test, IP:127.0.0.1, IP:::1')
    expect(r.stdout).toContain(`--ssl-keystore-location ${join(dir, 'server-keystore.pem')}`)
    expect(r.stdout).toContain(`ssl.truststore.type=PEM ssl.truststore.location=${join(dir, 'ca.pem')}`)
    const props = readFileSync(join(dir, 'client-ssl.properties'), 'utf8')
    expect(props).toContain(`ssl.keystore.password=${readFileSync(join(dir, 'store-password'), 'utf8').trim()}`)
    // The same command in process (no second node start): usage errors exit 2 with one line.
    const again = inProcess(['--dir', dir])
    expect(again.code).toBe(2)
    expect(again.err).toMatch(/exists; pass --force/)
    const bad = inProcess(['--key-type', 'dsa'])
    expect(bad).toEqual({ code: 2, out: '', err: 'tidelog-broker certs: --key-type must be ec or rsa, got "dsa"\n' })
    expect(inProcess(['--help']).out).toContain('Usage: tidelog-broker certs')
  })
})
