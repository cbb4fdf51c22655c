import { type KeyObject, X509Certificate, createPrivateKey, generateKeyPairSync, randomBytes } from 'node:crypto'
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { isIP } from 'node:net'
import { join, resolve } from 'node:path'
import { pkcs12Keystore, pkcs12Truststore } from './pkcs12.js'
import { type NameAttribute, createCertificate, toPem } from './x509.js'

export type KeyType = 'ec' | 'rsa'

export interface DevCertificateOptions {
  dir: string
  /** Names beyond localhost and 127.0.0.1: host names or IP addresses. */
  sans?: readonly string[]
  /** Validity of the server and client certificates (the CA gets ten times as long). */
  days?: number
  /** EC P-256 (default) or RSA 2048. */
  keyType?: KeyType
  /** Password of the .p12 stores; random when absent. */
  password?: string
  /** The client certificate's common name: its principal is User:CN=<name>. */
  clientName?: string
  /** Overwrite server and client files that exist (the CA is kept when present). */
  force?: boolean
  now?: Date
}

/** Every file written, by role; paths are absolute. */
export interface DevCertificateFiles {
  dir: string
  caCert: string
  caKey: string
  serverCert: string
  serverKey: string
  /** Key and certificate in one PEM file: --ssl-keystore-location. */
  serverKeystore: string
  serverP12: string
  clientCert: string
  clientKey: string
  /** Key and certificate in one PEM file (Java's ssl.keystore.type=PEM, kcat). */
  clientKeystore: string
  clientP12: string
  truststoreP12: string
  /** The PKCS12 password, also in `passwordFile`. */
  password: string
  passwordFile: string
  /** Java client settings for SSL with mTLS (PEM truststore, KIP-651; PKCS12 keystore). */
  clientProperties: string
  /** Whether an existing CA in `dir` signed the new certificates. */
  reusedCa: boolean
  dnsNames: string[]
  ipAddresses: string[]
}

export class CertificateError extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'CertificateError'
  }
}

const DAY_MS = 86_400_000
const HOST_NAME = /^(\*\.)?([A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/

function newKey(type: KeyType): KeyObject {
  return type === 'rsa' ? generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey : generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey
}

/** Splits --san values into DNS names and IP addresses; the defaults come first. */
export function subjectAltNames(extra: readonly string[] = []): { dnsNames: string[]; ipAddresses: string[] } {
  const dnsNames = ['localhost']
  const ipAddresses = ['127.0.0.1', '::1']
  for (const raw of extra) {
    const v = raw.trim().replace(/^(DNS|IP):/i, '')
    if (v === '') continue
    if (isIP(v) !== 0) {
      if (!ipAddresses.includes(v)) ipAddresses.push(v)
    } else if (HOST_NAME.test(v) && v.length <= 253) {
      if (!dnsNames.includes(v.toLowerCase())) dnsNames.push(v.toLowerCase())
    } else {
      throw new CertificateError(`--san ${JSON.stringify(raw)} is neither a host name nor an IP address`)
    }
  }
  return { dnsNames, ipAddresses }
}

function write(path: string, content: string | Buffer, secret: boolean): void {
  writeFileSync(path, content, secret ? { mode: 0o600 } : {})
  // writeFileSync's mode applies only to a new file.
  if (secret) chmodSync(path, 0o600)
}

/**
 * Development certificates for the broker's SSL and SASL_SSL listeners: a CA, a server
 * certificate it signs for localhost, 127.0.0.1 and ::1 (plus `sans`), so that Java's
 * default ssl.endpoint.identification.algorithm=https accepts it, and a client certificate
 * for mTLS. Each is checked with node's X509Certificate before anything is written.
 */
export function generateDevCertificates(opts: DevCertificateOptions): DevCertificateFiles {
  const dir = resolve(opts.dir)
  const days = opts.days ?? 365
  if (!Number.isInteger(days) || days < 1 || days > 3650) throw new CertificateError(`--days must be a whole number from 1 to 3650, got ${days}`)
  const keyType = opts.keyType ?? 'ec'
  const { dnsNames, ipAddresses } = subjectAltNames(opts.sans)
  const clientName = opts.clientName ?? 'client'
  const password = opts.password ?? randomBytes(12).toString('base64url')
  const now = opts.now ?? new Date()
  // An hour back, so a client whose clock runs a little behind accepts them at once.
  const notBefore = new Date(now.getTime() - 3_600_000)
  const p = (f: string) => join(dir, f)
  const files = {
    caCert: p('ca.pem'), caKey: p('ca.key'),
    serverCert: p('server.pem'), serverKey: p('server.key'), serverKeystore: p('server-keystore.pem'), serverP12: p('server.p12'),
    clientCert: p('client.pem'), clientKey: p('client.key'), clientKeystore: p('client-keystore.pem'), clientP12: p('client.p12'),
    truststoreP12: p('truststore.p12'), passwordFile: p('store-password'), clientProperties: p('client-ssl.properties'),
  }
  mkdirSync(dir, { recursive: true })
  if (!opts.force) {
    const existing = Object.entries(files).filter(([role, f]) => role !== 'caCert' && role !== 'caKey' && existsSync(f))
    if (existing.length > 0) throw new CertificateError(`${existing[0]![1]} exists; pass --force to replace the server and client certificates (the CA in ${dir} is kept)`)
  }

  const caSubject: NameAttribute[] = [['O', 'tidelog development'], ['CN', 'tidelog development CA']]
  let caKey: KeyObject
  let caDer: Buffer
  const reusedCa = existsSync(files.caCert) && existsSync(files.caKey)
  if (reusedCa) {
    caKey = createPrivateKey(readFileSync(files.caKey))
    const ca = new X509Certificate(readFileSync(files.caCert))
    if (!ca.checkPrivateKey(caKey)) throw new CertificateError(`${files.caKey} is not the key of ${files.caCert}`)
    if (!ca.ca) throw new CertificateError(`${files.caCert} is not a CA certificate`)
    caDer = ca.raw
    // The issuer must be the CA's subject byte for byte; ours is always written the same way.
    if (ca.subject !== 'O=tidelog development\nCN=tidelog development CA') throw new CertificateError(`${files.caCert} was not made by this command; move it away to make a new CA`)
  } else {
    caKey = newKey(keyType)
    caDer = createCertificate({
      subject: caSubject, issuer: caSubject, publicKey: caKey, signingKey: caKey, issuerPublicKey: caKey,
      notBefore, notAfter: new Date(now.getTime() + days * 10 * DAY_MS), ca: true,
    })
  }
  const leaf = (subject: NameAttribute[], usage: 'serverAuth' | 'clientAuth', sans: boolean) => {
    const key = newKey(keyType)
    const der = createCertificate({
      subject, issuer: caSubject, publicKey: key, signingKey: caKey, issuerPublicKey: caKey,
      notBefore, notAfter: new Date(now.getTime() + days * DAY_MS), ca: false, extendedKeyUsage: [usage],
      ...(sans ? { dnsNames, ipAddresses } : {}),
    })
    return { key, der }
  }
  const server = leaf([['O', 'tidelog development'], ['CN', 'localhost']], 'serverAuth', true)
  const client = leaf([['O', 'tidelog development'], ['CN', clientName]], 'clientAuth', false)

  const caCert = new X509Certificate(caDer)
  const serverCert = new X509Certificate(server.der)
  const clientCert = new X509Certificate(client.der)
  for (const [what, cert] of [['server', serverCert], ['client', clientCert]] as const) {
    if (!cert.verify(caCert.publicKey)) throw new CertificateError(`the ${what} certificate does not verify against the CA`)
  }
  for (const host of dnsNames) if (serverCert.checkHost(host) === undefined) throw new CertificateError(`the server certificate does not match ${host}`)
  for (const ip of ipAddresses) if (serverCert.checkIP(ip) === undefined) throw new CertificateError(`the server certificate does not match ${ip}`)

  const pem = (der: Buffer) => toPem('CERTIFICATE', der)
  const keyPem = (k: KeyObject) => k.export({ type: 'pkcs8', format: 'pem' }) as string
  if (!reusedCa) {
    write(files.caKey, keyPem(caKey), true)
    write(files.caCert, pem(caDer), false)
  }
  write(files.serverKey, keyPem(server.key), true)
  write(files.serverCert, pem(server.der), false)
  write(files.serverKeystore, keyPem(server.key) + pem(server.der), true)
  write(files.serverP12, pkcs12Keystore(server.key, [server.der, caDer], password, 'server'), true)
  write(files.clientKey, keyPem(client.key), true)
  write(files.clientCert, pem(client.der), false)
  write(files.clientKeystore, keyPem(client.key) + pem(client.der), true)
  write(files.clientP12, pkcs12Keystore(client.key, [client.der, caDer], password, 'client'), true)
  write(files.truststoreP12, pkcs12Truststore([{ alias: 'tidelog-dev-ca', der: caDer }], password), false)
  write(files.passwordFile, `${password}\n`, true)
  write(
    files.clientProperties,
    [
      '# Java client over SSL to a tidelog broker, with the certificates next to this file.',
      '# For SASL_SSL set security.protocol=SASL_SSL, add sasl.mechanism and sasl.jaas.config, and drop the keystore lines.',
      'security.protocol=SSL',
      'ssl.truststore.type=PEM',
      `ssl.truststore.location=${files.caCert}`,
      'ssl.keystore.type=PKCS12',
      `ssl.keystore.location=${files.clientP12}`,
      `ssl.keystore.password=${password}`,
      '',
    ].join('\n'),
    true,
  )
  return { dir, ...files, password, reusedCa, dnsNames, ipAddresses }
}
