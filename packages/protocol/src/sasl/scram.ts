import { createHash, createHmac, pbkdf2, pbkdf2Sync } from 'node:crypto'

/**
 * SCRAM (RFC 5802, RFC 7677) arithmetic shared by the client's mechanism and the broker's
 * authenticator, so both sides derive keys the same way and cannot drift apart.
 */
export type ScramHash = 'sha256' | 'sha512'

export const SCRAM_KEY_LENGTH: Record<ScramHash, number> = { sha256: 32, sha512: 64 }

/** Kafka's ScramMechanism refuses fewer iterations than this for both SHA-256 and SHA-512. */
export const SCRAM_MIN_ITERATIONS = 4096
/** Kafka's upper bound for stored credentials (ScramMechanism.maxIterations). */
export const SCRAM_MAX_ITERATIONS = 16384

/** The mechanism name Kafka uses and its hash; the numeric types are KIP-554's ScramMechanism ids. */
export const SCRAM_MECHANISMS = [
  { id: 1, name: 'SCRAM-SHA-256', hash: 'sha256' },
  { id: 2, name: 'SCRAM-SHA-512', hash: 'sha512' },
] as const satisfies readonly { id: number; name: string; hash: ScramHash }[]

/** RFC 5802 5.1: ',' and '=' in a username are escaped as =2C and =3D. */
export function saslName(username: string): string {
  return username.replace(/=/g, '=3D').replace(/,/g, '=2C')
}

/** The inverse of saslName; undefined when an '=' is not one of the two escapes (RFC 5802 says fail). */
export function unescapeSaslName(name: string): string | undefined {
  if (/=(?!2C|3D)/.test(name)) return undefined
  return name.replace(/=2C/g, ',').replace(/=3D/g, '=')
}

export function scramHmac(hash: ScramHash, key: Buffer, data: string | Buffer): Buffer {
  return createHmac(hash, key).update(data).digest()
}

export function scramDigest(hash: ScramHash, data: Buffer): Buffer {
  return createHash(hash).update(data).digest()
}

/** Splits `a=1,b=2` into attributes; throws on an attribute that is not one letter then '='. */
export function parseScramAttributes(message: string): Map<string, string> {
  const out = new Map<string, string>()
  for (const part of message.split(',')) {
    const eq = part.indexOf('=')
    if (eq !== 1) throw new Error(`malformed SCRAM message ${JSON.stringify(message)}`)
    out.set(part[0]!, part.slice(2))
  }
  return out
}

export interface ScramKeys {
  salted: Buffer
  clientKey: Buffer
  storedKey: Buffer
  serverKey: Buffer
}

/** ClientKey, StoredKey and ServerKey from an already salted password (what KIP-554 sends the broker). */
export function scramKeysFromSalted(hash: ScramHash, salted: Buffer): ScramKeys {
  const clientKey = scramHmac(hash, salted, 'Client Key')
  return { salted, clientKey, storedKey: scramDigest(hash, clientKey), serverKey: scramHmac(hash, salted, 'Server Key') }
}

// Kafka's ScramFormatter.normalize is plain UTF-8 (no SASLprep); both sides must match it
// or non-ASCII passwords would stop matching.
/** The keys derived from a password (PBKDF2 off the event loop). */
export function scramKeys(hash: ScramHash, password: string, salt: Buffer, iterations: number): Promise<ScramKeys> {
  return new Promise((resolve, reject) => {
    pbkdf2(Buffer.from(password, 'utf8'), salt, iterations, SCRAM_KEY_LENGTH[hash], hash, (err, salted) => {
      if (err) reject(err)
      else resolve(scramKeysFromSalted(hash, salted))
    })
  })
}

/** Synchronous scramKeys, for tools and tests that build credentials up front. */
export function scramKeysSync(hash: ScramHash, password: string, salt: Buffer, iterations: number): ScramKeys {
  return scramKeysFromSalted(hash, pbkdf2Sync(Buffer.from(password, 'utf8'), salt, iterations, SCRAM_KEY_LENGTH[hash], hash))
}

export function xorBytes(a: Buffer, b: Buffer): Buffer {
  const out = Buffer.alloc(a.length)
  for (let i = 0; i < out.length; i++) out[i] = a[i]! ^ (b[i] ?? 0)
  return out
}
