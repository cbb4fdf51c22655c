import { X509Certificate, createDecipheriv, createHash, createHmac, pbkdf2Sync, timingSafeEqual } from 'node:crypto'

/**
 * Kafka's ssl.keystore.type / ssl.truststore.type. A PKCS12 keystore goes to node's TLS as a
 * pfx; a PKCS12 truststore (keytool's: trusted-certificate entries only, no key, which node's
 * pfx loader refuses) is read here into PEM. JKS is Java's own format, which node cannot read.
 */
export type StoreType = 'PEM' | 'PKCS12' | 'JKS'

export class KeystoreError extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'KeystoreError'
  }
}

const JKS_MAGIC = 0xfeedfeed

/** The config error for JKS, naming the conversion that makes the file usable. */
export function jksUnsupported(setting: 'ssl.keystore' | 'ssl.truststore', location: string | undefined): KeystoreError {
  const file = location ?? 'store.jks'
  return new KeystoreError(
    `${setting}.type=JKS: Java KeyStore files cannot be read outside the JVM. Convert it once with ` +
      `"keytool -importkeystore -srckeystore ${file} -destkeystore ${file.replace(/\.jks$/i, '')}.p12 -deststoretype PKCS12" ` +
      `and set ${setting}.type=PKCS12 (or use PEM files)`,
  )
}

/** Refuses a JKS file given as PKCS12 with the same advice, instead of a bare "unable to load PFX". */
export function checkNotJks(bytes: Buffer, setting: 'ssl.keystore' | 'ssl.truststore', location: string): void {
  if (bytes.length >= 4 && bytes.readUInt32BE(0) === JKS_MAGIC) throw jksUnsupported(setting, location)
}

// --- a DER reader, as much as PKCS #12 needs ---------------------------------------------

interface Der {
  tag: number
  /** The value's bytes. */
  value: Buffer
  /** The whole element, header included. */
  raw: Buffer
}

function readDer(buf: Buffer, at = 0): Der {
  if (at + 2 > buf.length) throw new KeystoreError('truncated DER')
  const tag = buf[at]!
  let len = buf[at + 1]!
  let off = at + 2
  if (len === 0x80) throw new KeystoreError('indefinite-length encoding is not DER')
  if (len > 0x80) {
    const n = len & 0x7f
    if (n > 4 || off + n > buf.length) throw new KeystoreError('bad DER length')
    len = 0
    for (let i = 0; i < n; i++) len = len * 256 + buf[off + i]!
    off += n
  }
  if (off + len > buf.length) throw new KeystoreError('truncated DER')
  return { tag, value: buf.subarray(off, off + len), raw: buf.subarray(at, off + len) }
}

function children(d: Der): Der[] {
  const out: Der[] = []
  for (let at = 0; at < d.value.length; ) {
    const c = readDer(d.value, at)
    out.push(c)
    at += c.raw.length
  }
  return out
}

function expectTag(d: Der | undefined, tag: number, what: string): Der {
  if (d === undefined || d.tag !== tag) throw new KeystoreError(`unexpected structure at ${what}`)
  return d
}

function oid(d: Der): string {
  const v = expectTag(d, 0x06, 'an object identifier').value
  const parts = [Math.floor(v[0]! / 40), v[0]! % 40]
  let n = 0
  for (let i = 1; i < v.length; i++) {
    n = n * 128 + (v[i]! & 0x7f)
    if ((v[i]! & 0x80) === 0) {
      parts.push(n)
      n = 0
    }
  }
  return parts.join('.')
}

function int(d: Der): number {
  const v = expectTag(d, 0x02, 'an integer').value
  if (v.length > 6) throw new KeystoreError('integer too large')
  return v.reduce((n, b) => n * 256 + b, 0)
}

// Java's PKCS12KeyStore refuses counts above 5,000,000 (keytool writes 10,000, OpenSSL 2,048);
// a damaged count in the billions would otherwise hang the start.
const MAX_ITERATIONS = 5_000_000

function iterations(d: Der): number {
  const n = int(d)
  if (n < 1 || n > MAX_ITERATIONS) throw new KeystoreError(`an iteration count of ${n} is outside 1..${MAX_ITERATIONS}`)
  return n
}

const seq = (d: Der | undefined, what: string) => children(expectTag(d, 0x30, what))
/** The content of a context-specific [0] EXPLICIT wrapper. */
const explicit0 = (d: Der | undefined, what: string) => readDer(expectTag(d, 0xa0, what).value)

// --- PKCS #12 (RFC 7292) ----------------------------------------------------------------

export const PKCS12_OID = {
  data: '1.2.840.113549.1.7.1',
  encryptedData: '1.2.840.113549.1.7.6',
  certBag: '1.2.840.113549.1.12.10.1.3',
  x509Certificate: '1.2.840.113549.1.9.22.1',
  pbes2: '1.2.840.113549.1.5.13',
  pbkdf2: '1.2.840.113549.1.5.12',
}

const HMACS: Record<string, string> = {
  '1.2.840.113549.2.7': 'sha1',
  '1.2.840.113549.2.9': 'sha256',
  '1.2.840.113549.2.10': 'sha384',
  '1.2.840.113549.2.11': 'sha512',
}
const DIGESTS: Record<string, string> = {
  '1.3.14.3.2.26': 'sha1',
  '2.16.840.1.101.3.4.2.1': 'sha256',
  '2.16.840.1.101.3.4.2.2': 'sha384',
  '2.16.840.1.101.3.4.2.3': 'sha512',
}
const CIPHERS: Record<string, string> = {
  '2.16.840.1.101.3.4.1.2': 'aes-128-cbc',
  '2.16.840.1.101.3.4.1.22': 'aes-192-cbc',
  '2.16.840.1.101.3.4.1.42': 'aes-256-cbc',
}

/** RFC 7292 appendix B.2, for the MAC key (ID 3); one hash block suffices since the key is one digest long. */
export function pkcs12MacKey(hash: string, password: string, salt: Buffer, iterations: number): Buffer {
  const v = hash === 'sha384' || hash === 'sha512' ? 128 : 64
  const bmp = Buffer.alloc((password.length + 1) * 2)
  for (let i = 0; i < password.length; i++) bmp.writeUInt16BE(password.charCodeAt(i), i * 2)
  const fill = (b: Buffer) => (b.length === 0 ? b : Buffer.alloc(v * Math.ceil(b.length / v), b))
  let a = createHash(hash).update(Buffer.concat([Buffer.alloc(v, 3), fill(salt), fill(bmp)])).digest()
  for (let i = 1; i < iterations; i++) a = createHash(hash).update(a).digest()
  return a
}

function verifyMac(pfx: Der[], authSafeContent: Buffer, password: string): void {
  const macData = pfx[2]
  // A store without a MAC (keytool -storepass '' ) has nothing to check.
  if (macData === undefined) return
  const [digestInfo, macSalt, count] = seq(macData, 'MacData')
  const [algorithm, digest] = seq(digestInfo, 'DigestInfo')
  const hash = DIGESTS[oid(seq(algorithm, 'the MAC algorithm')[0]!)]
  if (hash === undefined) throw new KeystoreError('unsupported MAC algorithm')
  const key = pkcs12MacKey(hash, password, expectTag(macSalt, 0x04, 'the MAC salt').value, count === undefined ? 1 : iterations(count))
  const mac = createHmac(hash, key).update(authSafeContent).digest()
  const expected = expectTag(digest, 0x04, 'the MAC').value
  if (mac.length !== expected.length || !timingSafeEqual(mac, expected)) {
    throw new KeystoreError('the password is wrong or the file is corrupt (its MAC does not verify)')
  }
}

function decryptPbes2(algorithm: Der, encrypted: Buffer, password: string): Buffer {
  const [algOid, params] = seq(algorithm, 'the encryption algorithm')
  const name = oid(algOid!)
  if (name !== PKCS12_OID.pbes2) {
    throw new KeystoreError(`entries encrypted with ${name} cannot be read (only PBES2, the default of keytool since Java 12 and of OpenSSL 3); re-create the store with a current keytool`)
  }
  const [kdf, scheme] = seq(params, 'PBES2 parameters')
  const [kdfOid, kdfParams] = seq(kdf, 'the key derivation function')
  if (oid(kdfOid!) !== PKCS12_OID.pbkdf2) throw new KeystoreError('PBES2 without PBKDF2 is not supported')
  const p = seq(kdfParams, 'PBKDF2 parameters')
  const salt = expectTag(p[0], 0x04, 'the PBKDF2 salt').value
  const rounds = iterations(p[1]!)
  const prf = p.find((d) => d.tag === 0x30)
  const hmac = prf === undefined ? 'sha1' : HMACS[oid(seq(prf, 'the PRF')[0]!)]
  const [cipherOid, iv] = seq(scheme, 'the encryption scheme')
  const cipher = CIPHERS[oid(cipherOid!)]
  if (hmac === undefined || cipher === undefined) throw new KeystoreError('unsupported PBES2 cipher or PRF')
  const keyLength = Number(cipher.split('-')[1]) / 8
  const key = pbkdf2Sync(Buffer.from(password, 'utf8'), salt, rounds, keyLength, hmac)
  try {
    const d = createDecipheriv(cipher, key, expectTag(iv, 0x04, 'the IV').value)
    return Buffer.concat([d.update(encrypted), d.final()])
  } catch {
    throw new KeystoreError('the password is wrong (an entry does not decrypt)')
  }
}

function certificatesIn(safeContents: Buffer, into: string[]): void {
  for (const bag of seq(readDer(safeContents), 'SafeContents')) {
    const [bagId, bagValue] = seq(bag, 'a SafeBag')
    if (oid(bagId!) !== PKCS12_OID.certBag) continue
    const [certId, certValue] = seq(explicit0(bagValue, 'a CertBag'), 'a CertBag')
    if (oid(certId!) !== PKCS12_OID.x509Certificate) continue
    const der = expectTag(explicit0(certValue, 'a certificate'), 0x04, 'a certificate').value
    try {
      into.push(new X509Certificate(der).toString())
    } catch {
      throw new KeystoreError('an entry is not an X.509 certificate')
    }
  }
}

/**
 * The certificates of a PKCS #12 file as PEM text: a keytool truststore's trusted entries,
 * checked against the store's MAC. Throws KeystoreError naming what is wrong.
 */
export function pkcs12Certificates(bytes: Buffer, password: string): string[] {
  const pfx = seq(readDer(bytes), 'the PFX')
  if (int(pfx[0]!) !== 3) throw new KeystoreError('not a PKCS #12 version 3 file')
  const [contentType, content] = seq(pfx[1], 'the AuthenticatedSafe')
  if (oid(contentType!) !== PKCS12_OID.data) throw new KeystoreError('public-key integrity mode is not supported')
  const authSafe = expectTag(explicit0(content, 'the AuthenticatedSafe'), 0x04, 'the AuthenticatedSafe').value
  verifyMac(pfx, authSafe, password)
  const certs: string[] = []
  for (const info of seq(readDer(authSafe), 'the AuthenticatedSafe')) {
    const [type, value] = seq(info, 'a ContentInfo')
    const kind = oid(type!)
    if (kind === PKCS12_OID.data) {
      certificatesIn(expectTag(explicit0(value, 'data'), 0x04, 'data').value, certs)
    } else if (kind === PKCS12_OID.encryptedData) {
      const [, encryptedContentInfo] = seq(explicit0(value, 'EncryptedData'), 'EncryptedData')
      const [, algorithm, encrypted] = seq(encryptedContentInfo, 'EncryptedContentInfo')
      // [0] IMPLICIT OCTET STRING: primitive (0x80) from keytool and OpenSSL.
      if (encrypted === undefined || encrypted.tag !== 0x80) throw new KeystoreError('unexpected structure at the encrypted content')
      certificatesIn(decryptPbes2(algorithm!, encrypted.value, password), certs)
    }
  }
  return certs
}
