import { createHash, createHmac, pbkdf2, randomBytes, timingSafeEqual } from 'node:crypto'
import { promisify } from 'node:util'
import type { SaslMechanism, ScramOptions } from './types.js'

const pbkdf2Async = promisify(pbkdf2)

type Hash = 'sha256' | 'sha512'

const KEY_LENGTH: Record<Hash, number> = { sha256: 32, sha512: 64 }

/** Kafka's ScramMechanism refuses fewer iterations than this for both SHA-256 and SHA-512. */
export const SCRAM_MIN_ITERATIONS = 4096

/** RFC 5802 5.1: ',' and '=' in a username are escaped as =2C and =3D. */
export function saslName(username: string): string {
  return username.replace(/=/g, '=3D').replace(/,/g, '=2C')
}

function hmac(hash: Hash, key: Buffer, data: string): Buffer {
  return createHmac(hash, key).update(data, 'utf8').digest()
}

function parseAttributes(message: string): Map<string, string> {
  const out = new Map<string, string>()
  for (const part of message.split(',')) {
    const eq = part.indexOf('=')
    if (eq !== 1) throw new Error(`malformed SCRAM message ${JSON.stringify(message)}`)
    out.set(part[0]!, part.slice(2))
  }
  return out
}

/** The keys derived from a password; exported for tests that play the server's part. */
export async function scramKeys(hash: Hash, password: string, salt: Buffer, iterations: number) {
  // Kafka's ScramFormatter.normalize is plain UTF-8 (no SASLprep), so the client must not
  // normalize either or non-ASCII passwords would stop matching.
  const salted = await pbkdf2Async(Buffer.from(password, 'utf8'), salt, iterations, KEY_LENGTH[hash], hash)
  const clientKey = hmac(hash, salted, 'Client Key')
  const storedKey = createHash(hash).update(clientKey).digest()
  const serverKey = hmac(hash, salted, 'Server Key')
  return { salted, clientKey, storedKey, serverKey }
}

/**
 * SCRAM (RFC 5802, RFC 7677 for SHA-256) as Kafka speaks it (KIP-84): no channel binding
 * ("n,,", so c=biws), no SASLprep, at least 4096 iterations. The server's final message is
 * verified, so a broker that does not know the password cannot pass itself off as one that does.
 */
export function scramMechanism(
  options: Omit<ScramOptions, 'mechanism'> & { mechanism: ScramOptions['mechanism'] },
  nonce: () => string = () => randomBytes(24).toString('base64url'),
): SaslMechanism {
  const name = options.mechanism.toUpperCase() as 'SCRAM-SHA-256' | 'SCRAM-SHA-512'
  const hash: Hash = name === 'SCRAM-SHA-512' ? 'sha512' : 'sha256'
  return {
    mechanism: name,
    async *authenticate() {
      const clientNonce = nonce()
      const clientFirstBare = `n=${saslName(options.username)},r=${clientNonce}`
      const serverFirst = (yield Buffer.from(`n,,${clientFirstBare}`, 'utf8')).toString('utf8')
      const first = parseAttributes(serverFirst)
      if (first.has('e')) throw new Error(`server error ${first.get('e')}`)
      const serverNonce = first.get('r')
      const salt = first.get('s')
      const iterations = Number(first.get('i'))
      if (serverNonce === undefined || !serverNonce.startsWith(clientNonce) || serverNonce.length === clientNonce.length) {
        throw new Error('server nonce does not extend the client nonce')
      }
      if (salt === undefined || !Number.isInteger(iterations)) throw new Error(`malformed server-first-message ${JSON.stringify(serverFirst)}`)
      if (iterations < SCRAM_MIN_ITERATIONS) throw new Error(`${iterations} iterations is below the minimum of ${SCRAM_MIN_ITERATIONS}`)

      const keys = await scramKeys(hash, options.password, Buffer.from(salt, 'base64'), iterations)
      const clientFinalWithoutProof = `c=biws,r=${serverNonce}`
      const authMessage = `${clientFirstBare},${serverFirst},${clientFinalWithoutProof}`
      const clientSignature = hmac(hash, keys.storedKey, authMessage)
      const proof = Buffer.alloc(clientSignature.length)
      for (let i = 0; i < proof.length; i++) proof[i] = keys.clientKey[i]! ^ clientSignature[i]!

      const serverFinal = (yield Buffer.from(`${clientFinalWithoutProof},p=${proof.toString('base64')}`, 'utf8')).toString('utf8')
      const final = parseAttributes(serverFinal)
      if (final.has('e')) throw new Error(`server error ${final.get('e')}`)
      const expected = hmac(hash, keys.serverKey, authMessage)
      const got = Buffer.from(final.get('v') ?? '', 'base64')
      if (got.length !== expected.length || !timingSafeEqual(got, expected)) {
        throw new Error('the server signature does not match: the broker could not prove it knows the password')
      }
    },
  }
}
