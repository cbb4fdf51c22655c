import { X509Certificate, createHash } from 'node:crypto'
import { readFileSync } from 'node:fs'
import type { Logger } from '../logger.js'
import { FileWatch } from './certs/file-watch.js'
import { type PrincipalRule, mapPrincipal, parsePrincipalRules } from './principal-mapping.js'
import { type SecureContextOptions, type TLSSocket, createSecureContext } from 'node:tls'
import { type StoreType, checkNotJks, jksUnsupported, pkcs12Certificates } from './keystore.js'

export type ClientAuth = 'none' | 'requested' | 'required'

/** Kafka's ssl.* settings in their PEM form (ssl.keystore.type=PEM, ssl.truststore.type=PEM). */
export interface TlsSettings {
  /** A PEM file holding the private key and the certificate chain. */
  keystoreLocation: string | undefined
  /** PEM text of the chain and of the key, as Kafka's ssl.keystore.certificate.chain / ssl.keystore.key. */
  keystoreCertificateChain: string | undefined
  keystoreKey: string | undefined
  keyPassword: string | undefined
  /** PEM file (or text) of the CAs client certificates must chain to. */
  truststoreLocation: string | undefined
  truststoreCertificates: string | undefined
  clientAuth: ClientAuth
  /** Kafka's ssl.principal.mapping.rules; DEFAULT keeps the subject. */
  principalMappingRules?: string
  /** ssl.keystore.type / ssl.truststore.type (PEM when absent) and the PKCS12 passwords. */
  keystoreType?: StoreType
  keystorePassword?: string | undefined
  truststoreType?: StoreType
  truststorePassword?: string | undefined
}

const DEFAULT_RULES: readonly PrincipalRule[] = [{ kind: 'default' }]

export interface TlsReloadOptions {
  logger: Logger
  /** Also compare the files this often (ms), for mounts without change events; 0: events only. */
  pollMs?: number
  /** Wait this long after the last change event before reading (a renewal writes in steps). */
  debounceMs?: number
  /** Kafka's ssl.allow.dn.changes / ssl.allow.san.changes for a reloaded keystore. */
  allowDnChanges?: boolean
  allowSanChanges?: boolean
}

/** What /metrics and the log report about certificate reloads. */
export interface TlsStatus {
  /** 1 for the files read at start, +1 per reload put in use. */
  generation: number
  reloads: number
  failedReloads: number
  lastFailure: string | undefined
  certificate: { subject: string; serialNumber: string; validTo: string } | undefined
}

interface Loaded {
  options: SecureContextOptions
  leaf: X509Certificate | undefined
}

/**
 * The broker's TLS context. The keystore and truststore files are watched: when their bytes
 * change, the new files are parsed and checked (the key must match its certificate; as Kafka
 * checks a dynamic keystore update, the subject and subject alternative names must not change
 * unless ssl.allow.dn.changes / ssl.allow.san.changes) and only then put in use, so the next
 * connection gets them; open connections keep theirs. Files that fail are logged and the
 * last good context stays.
 */
export class TlsContextProvider {
  private loaded: Loaded
  private fingerprint: string
  /** Contents already refused, so one bad renewal is logged once rather than every poll. */
  private refused: string | undefined
  private readonly watch: FileWatch | undefined
  generation = 1
  private reloads = 0
  private failedReloads = 0
  private lastFailure: string | undefined

  constructor(
    private readonly s: TlsSettings,
    private readonly reloadOptions?: TlsReloadOptions,
  ) {
    if (s.keystoreLocation === undefined && (s.keystoreCertificateChain === undefined || s.keystoreKey === undefined)) {
      throw new Error('an SSL or SASL_SSL listener needs ssl-keystore-location, or ssl-keystore-certificate-chain and ssl-keystore-key')
    }
    if (s.keystoreType === 'JKS') throw jksUnsupported('ssl.keystore', s.keystoreLocation)
    if (s.truststoreType === 'JKS') throw jksUnsupported('ssl.truststore', s.truststoreLocation)
    if (s.keystoreType === 'PKCS12' && s.keystoreLocation === undefined) throw new Error('ssl.keystore.type=PKCS12 needs ssl-keystore-location (a .p12 file)')
    if (s.clientAuth !== 'none' && s.truststoreLocation === undefined && s.truststoreCertificates === undefined) {
      throw new Error(`ssl-client-auth=${s.clientAuth} needs ssl-truststore-location or ssl-truststore-certificates to check client certificates`)
    }
    this.principalRules = parsePrincipalRules(s.principalMappingRules ?? 'DEFAULT')
    const contents = this.readFiles()
    this.loaded = this.load(contents)
    this.fingerprint = fingerprintOf(contents)
    const files = this.files()
    if (reloadOptions !== undefined && files.length > 0) {
      this.watch = new FileWatch(files, () => this.reload(), {
        debounceMs: reloadOptions.debounceMs ?? 200,
        pollMs: reloadOptions.pollMs ?? 30_000,
        onError: (err) => reloadOptions.logger.warn(`TLS: watching ${files.join(', ')}: ${err.message}; changes are still found every ${reloadOptions.pollMs ?? 30_000} ms`),
      })
    }
  }

  readonly principalRules: readonly PrincipalRule[]

  get clientAuth(): ClientAuth {
    return this.s.clientAuth
  }

  private files(): string[] {
    return [this.s.keystoreLocation, this.s.truststoreLocation].filter((f): f is string => f !== undefined)
  }

  /** The key, chain and CAs in use: those read at start or by the last good reload. */
  current(): SecureContextOptions {
    return this.loaded.options
  }

  status(): TlsStatus {
    const leaf = this.loaded.leaf
    return {
      generation: this.generation,
      reloads: this.reloads,
      failedReloads: this.failedReloads,
      lastFailure: this.lastFailure,
      certificate: leaf === undefined ? undefined : { subject: subjectText(leaf), serialNumber: leaf.serialNumber, validTo: leaf.validTo },
    }
  }

  /**
   * Compares the files with those in use and, when they differ and pass the checks, puts
   * them in use. Called by the file watch; returns whether a new context is in use.
   */
  reload(): boolean {
    let contents: Map<string, Buffer>
    let fingerprint: string
    try {
      contents = this.readFiles()
      fingerprint = fingerprintOf(contents)
    } catch (err) {
      // A file missing mid-rename: refused until the files are back.
      return this.refuse(`unreadable: ${(err as Error).message}`, err as Error)
    }
    if (fingerprint === this.fingerprint || fingerprint === this.refused) return false
    let next: Loaded
    try {
      next = this.load(contents)
      this.checkCompatible(next)
    } catch (err) {
      return this.refuse(fingerprint, err as Error)
    }
    this.loaded = next
    this.fingerprint = fingerprint
    this.refused = undefined
    this.generation++
    this.reloads++
    this.reloadOptions?.logger.info(`TLS: reloaded ${this.files().join(', ')}${this.serialText()}; new connections use it, open ones keep theirs`)
    return true
  }

  private refuse(key: string, err: Error): false {
    if (this.refused === key) return false
    this.refused = key
    this.failedReloads++
    this.lastFailure = err.message
    this.reloadOptions?.logger.warn(
      `TLS: ${this.files().join(', ')} changed but cannot be used: ${err.message}; new connections keep the certificate loaded before${this.serialText()}`,
    )
    return false
  }

  private serialText(): string {
    const leaf = this.loaded.leaf
    return leaf === undefined ? '' : ` (${subjectText(leaf)}, serial ${leaf.serialNumber}, valid to ${leaf.validTo})`
  }

  close(): void {
    this.watch?.close()
  }

  private readFiles(): Map<string, Buffer> {
    return new Map(this.files().map((f) => [f, readFileSync(f)]))
  }

  /** Kafka's SslFactory rule for a keystore update: the same subject, and every old SAN kept. */
  private checkCompatible(next: Loaded): void {
    const old = this.loaded.leaf
    const now = next.leaf
    if (old === undefined || now === undefined) return
    if (!this.reloadOptions?.allowDnChanges && old.subject !== now.subject) {
      throw new Error(`Keystore DistinguishedName does not match: existing=${subjectText(old)}, new=${subjectText(now)} (set ssl-allow-dn-changes to allow it)`)
    }
    const names = (c: X509Certificate) => new Set((c.subjectAltName ?? '').split(', ').filter((n) => n !== ''))
    const added = names(now)
    const lost = [...names(old)].filter((n) => !added.has(n))
    if (!this.reloadOptions?.allowSanChanges && lost.length > 0) {
      throw new Error(`Keystore SubjectAltNames do not match: the new certificate lacks ${lost.join(', ')} (set ssl-allow-san-changes to allow it)`)
    }
  }

  private load(contents: Map<string, Buffer>): Loaded {
    const options = this.read(contents)
    // Fails on a key that does not match its certificate, a wrong password or bad PEM, before any client sees it.
    createSecureContext(options)
    return { options, leaf: this.leafCertificate(options) }
  }

  private leafCertificate(options: SecureContextOptions): X509Certificate | undefined {
    try {
      if (options.pfx !== undefined) {
        const certs = pkcs12Certificates(options.pfx as Buffer, String(options.passphrase ?? '')).map((pem) => new X509Certificate(pem))
        // The leaf is the certificate that signed no other in the store.
        return certs.find((c) => !certs.some((o) => o !== c && o.issuer === c.subject)) ?? certs[0]
      }
      const chain = String(options.cert ?? '')
      const first = /-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/.exec(chain)
      return first === null ? undefined : new X509Certificate(first[0])
    } catch {
      // Node's TLS read the store (createSecureContext passed); only the subject checks are skipped.
      return undefined
    }
  }

  private read(contents: Map<string, Buffer>): SecureContextOptions {
    const s = this.s
    const trust = this.trustedCertificates(contents)
    if (s.keystoreType === 'PKCS12') {
      const pfx = contents.get(s.keystoreLocation!)!
      checkNotJks(pfx, 'ssl.keystore', s.keystoreLocation!)
      // keytool writes one password for the store and its key; ssl.key.password is the fallback.
      const passphrase = s.keystorePassword ?? s.keyPassword
      return { pfx, ...(passphrase !== undefined ? { passphrase } : {}), ...(trust !== undefined ? { ca: trust } : {}) }
    }
    const pem = s.keystoreLocation !== undefined ? contents.get(s.keystoreLocation)!.toString('utf8') : undefined
    return {
      key: s.keystoreKey ?? pem,
      cert: s.keystoreCertificateChain ?? pem,
      ...(s.keyPassword !== undefined ? { passphrase: s.keyPassword } : {}),
      ...(trust !== undefined ? { ca: trust } : {}),
    }
  }

  private trustedCertificates(contents: Map<string, Buffer>): string | string[] | undefined {
    const s = this.s
    if (s.truststoreCertificates !== undefined) return s.truststoreCertificates
    if (s.truststoreLocation === undefined) return undefined
    const bytes = contents.get(s.truststoreLocation)!
    if (s.truststoreType !== 'PKCS12') return bytes.toString('utf8')
    checkNotJks(bytes, 'ssl.truststore', s.truststoreLocation)
    try {
      const certs = pkcs12Certificates(bytes, s.truststorePassword ?? '')
      if (certs.length === 0) throw new Error('it holds no trusted certificate')
      return certs
    } catch (err) {
      throw new Error(`ssl.truststore.location ${s.truststoreLocation}: ${(err as Error).message}`)
    }
  }
}

/** A certificate subject on one line, as log lines and /metrics show it. */
const subjectText = (c: X509Certificate): string => c.subject.replace(/\n/g, ', ')

function fingerprintOf(contents: Map<string, Buffer>): string {
  const h = createHash('sha256')
  for (const [file, bytes] of contents) h.update(file).update('\0').update(bytes).update('\0')
  return h.digest('hex')
}

// RFC 2253 escaping, as Java's X500Principal.getName() writes a DN.
function escapeDnValue(v: string): string {
  return v.replace(/([,+"\\<>;=])/g, '\\$1').replace(/^([ #])/, '\\$1').replace(/ $/, '\\ ')
}

/**
 * Kafka's default SSL principal: `User:` and the client certificate's subject in RFC 2253
 * form (most specific attribute first), or User:ANONYMOUS without a certificate.
 */
export function tlsPrincipal(socket: TLSSocket, rules: readonly PrincipalRule[] = DEFAULT_RULES): string {
  const cert = socket.getPeerX509Certificate()
  if (cert === undefined) return 'User:ANONYMOUS'
  const rdns = cert.subject.split('\n').filter((l) => l !== '')
  const dn = rdns
    .reverse()
    .map((rdn) => {
      const eq = rdn.indexOf('=')
      return `${rdn.slice(0, eq)}=${escapeDnValue(rdn.slice(eq + 1))}`
    })
    .join(',')
  return `User:${mapPrincipal(rules, dn)}`
}
