import { type KeyObject, createHash, createPublicKey, randomBytes, sign } from 'node:crypto'
import { isIP } from 'node:net'
import { bits, bool, explicit, implicit, int, nul, octets, oid, seq, set, time, tlv, utf8 } from './der.js'

/** One attribute of a distinguished name, most general first (C, O, CN), as X.509 orders them. */
export type NameAttribute = readonly ['C' | 'O' | 'OU' | 'CN', string]

export interface CertificateSpec {
  subject: readonly NameAttribute[]
  /** The signer's subject (the same as `subject` for a self-signed CA). */
  issuer: readonly NameAttribute[]
  /** The subject's key (a private key stands for its public half). */
  publicKey: KeyObject
  /** The issuer's private key. */
  signingKey: KeyObject
  /** The issuer's public key, for the authority key identifier. */
  issuerPublicKey: KeyObject
  notBefore: Date
  notAfter: Date
  ca: boolean
  dnsNames?: readonly string[]
  ipAddresses?: readonly string[]
  extendedKeyUsage?: readonly ('serverAuth' | 'clientAuth')[]
}

const ATTRIBUTE_OIDS = { C: '2.5.4.6', O: '2.5.4.10', OU: '2.5.4.11', CN: '2.5.4.3' } as const
const EKU_OIDS = { serverAuth: '1.3.6.1.5.5.7.3.1', clientAuth: '1.3.6.1.5.5.7.3.2' } as const

function name(attrs: readonly NameAttribute[]): Buffer {
  // RFC 5280: countryName is a PrintableString; the rest UTF8String.
  return seq(...attrs.map(([k, v]) => set(seq(oid(ATTRIBUTE_OIDS[k]), k === 'C' ? tlv(0x13, Buffer.from(v, 'ascii')) : utf8(v)))))
}

/** The signature AlgorithmIdentifier for the signer's key type (SHA-256 throughout). */
function signatureAlgorithm(key: KeyObject): Buffer {
  switch (key.asymmetricKeyType) {
    case 'ec':
      return seq(oid('1.2.840.10045.4.3.2'))
    case 'rsa':
      return seq(oid('1.2.840.113549.1.1.11'), nul())
    default:
      throw new Error(`cannot sign with a ${String(key.asymmetricKeyType)} key`)
  }
}

/** SubjectPublicKeyInfo DER of a public key, or of a private key's public half. */
function spkiOf(key: KeyObject): Buffer {
  return (key.type === 'private' ? createPublicKey(key) : key).export({ type: 'spki', format: 'der' })
}

/** RFC 5280 4.2.1.2 method 1: SHA-1 of the subjectPublicKey bits. */
export function keyIdentifier(key: KeyObject): Buffer {
  const spki = spkiOf(key)
  // SEQUENCE { AlgorithmIdentifier, BIT STRING }: the BIT STRING is the last element; skip its tag, length and unused-bits byte.
  const bitString = lastElement(spki)
  return createHash('sha1').update(bitString.subarray(1)).digest()
}

function lastElement(der: Buffer): Buffer {
  let at = headerLength(der, 0)
  let value = Buffer.alloc(0)
  while (at < der.length) {
    const h = headerLength(der, at)
    const len = contentLength(der, at)
    value = der.subarray(at + h, at + h + len)
    at += h + len
  }
  return value
}

function headerLength(der: Buffer, at: number): number {
  const l = der[at + 1]!
  return l < 0x80 ? 2 : 2 + (l & 0x7f)
}

function contentLength(der: Buffer, at: number): number {
  const l = der[at + 1]!
  if (l < 0x80) return l
  let n = 0
  for (let i = 0; i < (l & 0x7f); i++) n = n * 256 + der[at + 2 + i]!
  return n
}

/** The bytes of an IPv4 or IPv6 address, for a SAN iPAddress. */
export function ipBytes(ip: string): Buffer {
  const kind = isIP(ip)
  if (kind === 4) return Buffer.from(ip.split('.').map(Number))
  if (kind !== 6) throw new Error(`not an IP address: ${ip}`)
  let text = ip
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text)
  if (dotted !== null) {
    const [a, b, c, d] = dotted[1]!.split('.').map(Number) as [number, number, number, number]
    text = text.slice(0, dotted.index) + `${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`
  }
  const [head, tail] = text.includes('::') ? text.split('::') : [text, undefined]
  const groups = (s: string | undefined) => (s === undefined || s === '' ? [] : s.split(':'))
  const h = groups(head)
  const t = groups(tail)
  const all = tail === undefined ? h : [...h, ...Array<string>(8 - h.length - t.length).fill('0'), ...t]
  const out = Buffer.alloc(16)
  all.forEach((g, i) => out.writeUInt16BE(parseInt(g, 16), i * 2))
  return out
}

/** KeyUsage bits (RFC 5280 4.2.1.3), most significant first, with DER's unused-bit count. */
function keyUsage(usages: readonly number[]): Buffer {
  let byte = 0
  for (const u of usages) byte |= 0x80 >> u
  let unused = 0
  while (unused < 7 && (byte & (1 << unused)) === 0) unused++
  return bits(Buffer.from([byte]), unused)
}

function extension(id: string, critical: boolean, value: Buffer): Buffer {
  return seq(oid(id), ...(critical ? [bool(true)] : []), octets(value))
}

/** A positive 127-bit serial number (RFC 5280 allows up to 20 octets; browsers ask for 64 random bits). */
export function randomSerial(): Buffer {
  const b = randomBytes(16)
  b[0] = b[0]! & 0x7f
  if (b[0] === 0) b[0] = 1
  return b
}

/** A signed X.509 v3 certificate, DER encoded. */
export function createCertificate(spec: CertificateSpec, serial: Buffer = randomSerial()): Buffer {
  const extensions: Buffer[] = [
    extension('2.5.29.19', true, spec.ca ? seq(bool(true)) : seq()),
    // CA: keyCertSign, cRLSign; leaf: digitalSignature, plus keyEncipherment for RSA key exchange.
    extension('2.5.29.15', true, keyUsage(spec.ca ? [5, 6] : spec.publicKey.asymmetricKeyType === 'rsa' ? [0, 2] : [0])),
    extension('2.5.29.14', false, octets(keyIdentifier(spec.publicKey))),
  ]
  if (!spec.ca) extensions.push(extension('2.5.29.35', false, seq(implicit(0, keyIdentifier(spec.issuerPublicKey)))))
  if (spec.extendedKeyUsage !== undefined && spec.extendedKeyUsage.length > 0) {
    extensions.push(extension('2.5.29.37', false, seq(...spec.extendedKeyUsage.map((u) => oid(EKU_OIDS[u])))))
  }
  const sans = [
    ...(spec.dnsNames ?? []).map((d) => implicit(2, Buffer.from(d, 'ascii'))),
    ...(spec.ipAddresses ?? []).map((ip) => implicit(7, ipBytes(ip))),
  ]
  if (sans.length > 0) extensions.push(extension('2.5.29.17', false, seq(...sans)))
  const algorithm = signatureAlgorithm(spec.signingKey)
  const tbs = seq(
    explicit(0, int(2)),
    int(serial),
    algorithm,
    name(spec.issuer),
    seq(time(spec.notBefore), time(spec.notAfter)),
    name(spec.subject),
    spkiOf(spec.publicKey),
    explicit(3, seq(...extensions)),
  )
  return seq(tbs, algorithm, bits(sign('sha256', tbs, spec.signingKey)))
}

export function toPem(label: string, der: Buffer): string {
  const b64 = der.toString('base64').replace(/.{1,64}/g, '$&\n')
  return `-----BEGIN ${label}-----\n${b64}-----END ${label}-----\n`
}
