import { randomBytes, timingSafeEqual } from 'node:crypto'
import {
  SCRAM_MIN_ITERATIONS,
  type ScramHash,
  parseScramAttributes as parseAttributes,
  saslName,
  scramHmac,
  scramKeys as deriveKeys,
  xorBytes,
} from '@tidelog/protocol'
import type { SaslMechanism, ScramOptions } from './types.js'

// The arithmetic lives in @tidelog/protocol so the broker's authenticator shares it.
export { SCRAM_MIN_ITERATIONS, saslName }

type Hash = ScramHash

const hmac = (hash: Hash, key: Buffer, data: string): Buffer => scramHmac(hash, key, data)

/** The keys derived from a password; exported for tests that play the server's part. */
export function scramKeys(hash: Hash, password: string, salt: Buffer, iterations: number) {
  return deriveKeys(hash, password, salt, iterations)
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
      const proof = xorBytes(keys.clientKey, clientSignature)

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
