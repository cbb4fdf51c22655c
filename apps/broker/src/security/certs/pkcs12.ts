import { type KeyObject, createHmac, randomBytes } from 'node:crypto'
import { PKCS12_OID, pkcs12MacKey } from '../keystore.js'
import { bmp, explicit, int, nul, octets, oid, seq, set } from './der.js'

/**
 * PKCS #12 (RFC 7292) writing, for what Java reads with ssl.keystore.type=PKCS12 and
 * ssl.truststore.type=PKCS12: certificates in a plain SafeContents, the private key in a
 * PBES2-shrouded key bag (AES-256-CBC, PBKDF2-HMAC-SHA256: readable by Java 8u301+ and
 * OpenSSL 3), and an HMAC-SHA256 integrity MAC as keytool writes since Java 12.
 */

const ATTR = {
  friendlyName: '1.2.840.113549.1.9.20',
  localKeyId: '1.2.840.113549.1.9.21',
  // Java treats a key-less certificate as a trusted entry only with this attribute (keytool writes it).
  oracleTrustedKeyUsage: '2.16.840.1.113894.746875.1.1',
}
const ANY_EXTENDED_KEY_USAGE = '2.5.29.37.0'
const SHROUDED_KEY_BAG = '1.2.840.113549.1.12.10.1.2'
const SHA256 = '2.16.840.1.101.3.4.2.1'
const MAC_ITERATIONS = 10_000

const attribute = (id: string, value: Buffer) => seq(oid(id), set(value))

function certBag(der: Buffer, attributes: Buffer[]): Buffer {
  return seq(oid(PKCS12_OID.certBag), explicit(0, seq(oid(PKCS12_OID.x509Certificate), explicit(0, octets(der)))), set(...attributes))
}

const dataContentInfo = (content: Buffer) => seq(oid(PKCS12_OID.data), explicit(0, octets(content)))

function pfx(safeContents: Buffer[], password: string): Buffer {
  const authSafe = seq(...safeContents.map(dataContentInfo))
  const salt = randomBytes(20)
  const mac = createHmac('sha256', pkcs12MacKey('sha256', password, salt, MAC_ITERATIONS)).update(authSafe).digest()
  return seq(int(3), dataContentInfo(authSafe), seq(seq(seq(oid(SHA256), nul()), octets(mac)), octets(salt), int(MAC_ITERATIONS)))
}

/** A keystore of one private key and its chain (leaf first), under `alias`. */
export function pkcs12Keystore(key: KeyObject, chain: readonly Buffer[], password: string, alias: string): Buffer {
  const localKeyId = attribute(ATTR.localKeyId, octets(Buffer.from(`Time ${Date.now()}`)))
  const named = attribute(ATTR.friendlyName, bmp(alias))
  const shrouded = key.export({ type: 'pkcs8', format: 'der', cipher: 'aes-256-cbc', passphrase: password })
  const keyBag = seq(oid(SHROUDED_KEY_BAG), explicit(0, shrouded), set(localKeyId, named))
  const certs = chain.map((der, i) => certBag(der, i === 0 ? [localKeyId, named] : []))
  return pfx([seq(...certs), seq(keyBag)], password)
}

/** A truststore of trusted-certificate entries, as `keytool -importcert` writes one. */
export function pkcs12Truststore(certificates: readonly { alias: string; der: Buffer }[], password: string): Buffer {
  const bags = certificates.map((c) => certBag(c.der, [attribute(ATTR.friendlyName, bmp(c.alias)), attribute(ATTR.oracleTrustedKeyUsage, oid(ANY_EXTENDED_KEY_USAGE))]))
  return pfx([seq(...bags)], password)
}
