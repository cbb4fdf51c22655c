import { randomBytes } from 'node:crypto'
import type { Socket } from 'node:net'
import { type ConnectionOptions, connect as tlsConnect } from 'node:tls'
import {
  ApiKeys,
  SCRAM_MECHANISMS,
  parseScramAttributes,
  saslName,
  scramHmac,
  scramKeysSync,
  xorBytes,
} from '@tidelog/protocol'
import { createLogger } from '../../src/logger.js'
import { RawClient } from '../helpers/raw-client.js'

/** A RawClient over TLS (the helper's constructor takes any connected socket). */
export function connectTls(port: number, options: ConnectionOptions): Promise<RawClient> {
  return new Promise((resolve, reject) => {
    const s = tlsConnect({ host: '127.0.0.1', port, servername: 'localhost', ...options }, () =>
      resolve(new (RawClient as unknown as new (s: Socket) => RawClient)(s)),
    )
    s.once('error', reject)
  })
}

export type Mechanism = 'PLAIN' | 'SCRAM-SHA-256' | 'SCRAM-SHA-512'

const hashOf = (m: Mechanism) => SCRAM_MECHANISMS.find((x) => x.name === m)!.hash

/** Creates (or replaces) a SCRAM user through AlterUserScramCredentials, salting as a KIP-554 client does. */
export async function upsertScramUser(c: RawClient, user: string, password: string, mechanism: Exclude<Mechanism, 'PLAIN'>, iterations = 4096) {
  const salt = randomBytes(16)
  const { salted } = scramKeysSync(hashOf(mechanism), password, salt, iterations)
  const mech = SCRAM_MECHANISMS.find((m) => m.name === mechanism)!.id
  const res = await c.request(ApiKeys.AlterUserScramCredentials, 0, {
    deletions: [],
    upsertions: [{ name: user, mechanism: mech, iterations, salt, saltedPassword: salted }],
  })
  return res.results as { user: string; errorCode: number; errorMessage: string | null }[]
}

export interface LoginResult {
  errorCode: number
  errorMessage: string | null
  sessionLifetimeMs: bigint
  /** The server signature matched (SCRAM): the broker really knew the credential. */
  serverVerified: boolean
}

/** SaslHandshake v1 and SaslAuthenticate (v`authVersion`) for PLAIN or SCRAM, as a client plays it. */
export async function login(c: RawClient, mechanism: Mechanism, user: string, password: string, authVersion = 2): Promise<LoginResult> {
  const hs = await c.request(ApiKeys.SaslHandshake, 1, { mechanism })
  if (hs.errorCode !== 0) return { errorCode: hs.errorCode, errorMessage: null, sessionLifetimeMs: 0n, serverVerified: false }
  const auth = (bytes: Buffer) => c.request(ApiKeys.SaslAuthenticate, authVersion, { authBytes: bytes })
  if (mechanism === 'PLAIN') {
    const r = await auth(Buffer.from(`\0${user}\0${password}`))
    return { errorCode: r.errorCode, errorMessage: r.errorMessage, sessionLifetimeMs: r.sessionLifetimeMs ?? 0n, serverVerified: false }
  }
  const hash = hashOf(mechanism)
  const nonce = randomBytes(18).toString('base64url')
  const bare = `n=${saslName(user)},r=${nonce}`
  const first = await auth(Buffer.from(`n,,${bare}`))
  if (first.errorCode !== 0) return { errorCode: first.errorCode, errorMessage: first.errorMessage, sessionLifetimeMs: 0n, serverVerified: false }
  const serverFirst = Buffer.from(first.authBytes).toString()
  const a = parseScramAttributes(serverFirst)
  const keys = scramKeysSync(hash, password, Buffer.from(a.get('s')!, 'base64'), Number(a.get('i')))
  const withoutProof = `c=biws,r=${a.get('r')}`
  const authMessage = `${bare},${serverFirst},${withoutProof}`
  const proof = xorBytes(keys.clientKey, scramHmac(hash, keys.storedKey, authMessage))
  const fin = await auth(Buffer.from(`${withoutProof},p=${proof.toString('base64')}`))
  const v = fin.errorCode === 0 ? parseScramAttributes(Buffer.from(fin.authBytes).toString()).get('v') : undefined
  return {
    errorCode: fin.errorCode,
    errorMessage: fin.errorMessage,
    sessionLifetimeMs: fin.sessionLifetimeMs ?? 0n,
    serverVerified: v === scramHmac(hash, keys.serverKey, authMessage).toString('base64'),
  }
}

/** A log sink the test can read, to check what is (and is not) logged. */
export function captureLogger() {
  const lines: string[] = []
  return { lines, logger: createLogger('debug', (l) => lines.push(l)) }
}
