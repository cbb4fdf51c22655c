import { readFileSync, statSync } from 'node:fs'
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

/**
 * The broker's TLS context. Files are re-read when their modification time changes, so
 * a renewed certificate is used by the next connection without a restart; connections
 * already open keep theirs.
 */
export class TlsContextProvider {
  private opts: SecureContextOptions | undefined
  private stamp = ''
  /** Bumped whenever the files change and a new context is in use. */
  generation = 0

  constructor(private readonly s: TlsSettings) {
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
    this.current()
  }

  readonly principalRules: readonly PrincipalRule[]

  get clientAuth(): ClientAuth {
    return this.s.clientAuth
  }

  private files(): string[] {
    return [this.s.keystoreLocation, this.s.truststoreLocation].filter((f): f is string => f !== undefined)
  }

  /** The key, chain and CAs to use now, re-read if a file changed since the last call. */
  current(): SecureContextOptions {
    const stamp = this.files()
      .map((f) => {
        try {
          const st = statSync(f)
          return `${st.mtimeMs}:${st.size}`
        } catch {
          return 'missing'
        }
      })
      .join('|')
    if (this.opts === undefined || stamp !== this.stamp) {
      try {
        const next = this.read()
        // Fails on a key that does not match its certificate, before any client sees it.
        createSecureContext(next)
        this.opts = next
        this.stamp = stamp
        this.generation++
      } catch (err) {
        // A half-written renewal keeps the last good context instead of refusing every client.
        if (this.opts === undefined) throw err
      }
    }
    return this.opts
  }

  private read(): SecureContextOptions {
    const s = this.s
    const trust = this.trustedCertificates()
    if (s.keystoreType === 'PKCS12') {
      const pfx = readFileSync(s.keystoreLocation!)
      checkNotJks(pfx, 'ssl.keystore', s.keystoreLocation!)
      // keytool writes one password for the store and its key; ssl.key.password is the fallback.
      const passphrase = s.keystorePassword ?? s.keyPassword
      return { pfx, ...(passphrase !== undefined ? { passphrase } : {}), ...(trust !== undefined ? { ca: trust } : {}) }
    }
    const pem = s.keystoreLocation !== undefined ? readFileSync(s.keystoreLocation, 'utf8') : undefined
    return {
      key: s.keystoreKey ?? pem,
      cert: s.keystoreCertificateChain ?? pem,
      ...(s.keyPassword !== undefined ? { passphrase: s.keyPassword } : {}),
      ...(trust !== undefined ? { ca: trust } : {}),
    }
  }

  private trustedCertificates(): string | string[] | undefined {
    const s = this.s
    if (s.truststoreCertificates !== undefined) return s.truststoreCertificates
    if (s.truststoreLocation === undefined) return undefined
    if (s.truststoreType !== 'PKCS12') return readFileSync(s.truststoreLocation, 'utf8')
    const bytes = readFileSync(s.truststoreLocation)
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
