import { randomBytes } from 'node:crypto'
import {
  AlterUserScramCredentials,
  DescribeUserScramCredentials,
  ErrorCodes,
  ProtocolError,
  SCRAM_MECHANISMS,
  type ScramHash,
  scramKeys,
} from '@tidelog/protocol'
import { AdminError } from '../errors.js'
import { retry } from '../retry.js'
import { type AdminContext, type Outcomes, perItem } from './engine.js'

/** Java's ScramMechanism, by its mechanismName(); UNKNOWN is what a broker's unknown type id reads as. */
export type ScramMechanism = 'SCRAM-SHA-256' | 'SCRAM-SHA-512'

/** Java's ScramCredentialInfo: a mechanism and its iteration count (never the salt or keys). */
export interface ScramCredentialInfo {
  mechanism: ScramMechanism | 'UNKNOWN'
  iterations: number
}

/** Java's UserScramCredentialsDescription. */
export interface UserScramCredentialsDescription {
  name: string
  credentialInfos: ScramCredentialInfo[]
}

/**
 * Java's UserScramCredentialUpsertion: the password is salted here (RFC 5802 Hi(), i.e. PBKDF2
 * with the mechanism's HMAC), so it never crosses the wire (KIP-554). Without a salt one is
 * made as Java makes it: 130 random bits written in base 36.
 */
export interface UserScramCredentialUpsertion {
  user: string
  credentialInfo: { mechanism: ScramMechanism; iterations: number }
  password: string
  salt?: Uint8Array
}

/** Java's UserScramCredentialDeletion. */
export interface UserScramCredentialDeletion {
  user: string
  mechanism: ScramMechanism
}

export type UserScramCredentialAlteration = UserScramCredentialUpsertion | UserScramCredentialDeletion

/** A per-user failure of describeUserScramCredentials or alterUserScramCredentials, Kafka's error code and message with the user. */
export class UserScramCredentialError extends ProtocolError {
  constructor(
    readonly user: string,
    code: number,
    api: 'DescribeUserScramCredentials' | 'AlterUserScramCredentials',
    message: string | null,
  ) {
    super(code, { api, apiKey: api === 'DescribeUserScramCredentials' ? DescribeUserScramCredentials.apiKey : AlterUserScramCredentials.apiKey, message })
    // ProtocolError's text names the API; the user is what a caller needs to find.
    this.message = `${this.message} (user ${JSON.stringify(user)})`
  }
}

const isUpsertion = (a: UserScramCredentialAlteration): a is UserScramCredentialUpsertion => 'password' in a

const mechanismById = (id: number): ScramMechanism | 'UNKNOWN' => SCRAM_MECHANISMS.find((m) => m.id === id)?.name ?? 'UNKNOWN'
const mechanismByName = (name: string) => SCRAM_MECHANISMS.find((m) => m.name === name)

/** Java's UserScramCredentialUpsertion.generateRandomSalt: BigInteger(130, SecureRandom).toString(36) as UTF-8. */
export function randomScramSalt(): Uint8Array {
  const bits = randomBytes(17)
  bits[0]! &= 0x03 // 17 bytes are 136 bits; keep 130
  return Buffer.from(BigInt(`0x${bits.toString('hex')}`).toString(36), 'utf8')
}

/** The salted password KIP-554 sends: Hi(password, salt, iterations) of RFC 5802, as Java's ScramFormatter.hi. */
export async function saltedPassword(mechanism: ScramMechanism, password: string, salt: Uint8Array, iterations: number): Promise<Uint8Array> {
  const hash: ScramHash = mechanismByName(mechanism)!.hash
  return (await scramKeys(hash, password, Buffer.from(salt), iterations)).salted
}

/**
 * DescribeUserScramCredentials (50): each user's mechanisms and iterations; no users (or an
 * empty list) describes every user that has a credential. As Java's result.all(), one user's
 * error (RESOURCE_NOT_FOUND for an unknown user, DUPLICATE_RESOURCE for one named twice) fails
 * the call: here an AdminError of UserScramCredentialErrors next to the users that were described.
 */
export async function describeUserScramCredentials(
  ctx: AdminContext,
  users?: readonly string[],
  options: { timeoutMs?: number } = {},
): Promise<UserScramCredentialsDescription[]> {
  const res = await retry(
    async () => {
      const conn = await ctx.cluster.anyConnection()
      const r = await conn.request(DescribeUserScramCredentials, { users: users === undefined || users.length === 0 ? null : users.map((name) => ({ name })) })
      if (r.errorCode !== ErrorCodes.NONE) {
        throw new ProtocolError(r.errorCode, { api: 'DescribeUserScramCredentials', apiKey: DescribeUserScramCredentials.apiKey, message: r.errorMessage })
      }
      return r
    },
    { timeoutMs: options.timeoutMs ?? ctx.timeoutMs, backoff: ctx.cluster.retryBackoff, onRetry: (e) => ctx.cluster.handleError(e) },
  )
  const described: UserScramCredentialsDescription[] = []
  const errors: Error[] = []
  for (const u of res.results) {
    if (u.errorCode !== ErrorCodes.NONE) errors.push(new UserScramCredentialError(u.user, u.errorCode, 'DescribeUserScramCredentials', u.errorMessage))
    else described.push({ name: u.user, credentialInfos: u.credentialInfos.map((c) => ({ mechanism: mechanismById(c.mechanism), iterations: c.iterations })) })
  }
  if (errors.length > 0) throw new AdminError('describeUserScramCredentials', errors, described)
  return described
}

interface UserChanges {
  user: string
  deletions: { name: string; mechanism: number }[]
  upsertions: { name: string; mechanism: number; iterations: number; salt: Uint8Array; saltedPassword: Uint8Array }[]
}

/**
 * Checks what Java's KafkaAdminClient checks before sending (an empty user name or password:
 * UNACCEPTABLE_CREDENTIAL; an unknown mechanism: UNSUPPORTED_SASL_MECHANISM) and salts each
 * password. A user with such an error sends none of its alterations, as in Java.
 */
async function prepare(alterations: readonly UserScramCredentialAlteration[]): Promise<{ send: UserChanges[]; refused: Map<string, Error> }> {
  const refused = new Map<string, Error>()
  const byUser = new Map<string, UserChanges>()
  const refuse = (user: string, code: number, message: string): void => {
    if (!refused.has(user)) refused.set(user, new UserScramCredentialError(user, code, 'AlterUserScramCredentials', message))
  }
  for (const a of alterations) {
    if (a.user === '') {
      refuse(a.user, ErrorCodes.UNACCEPTABLE_CREDENTIAL, 'Username must not be empty')
      continue
    }
    const mechanism = mechanismByName(isUpsertion(a) ? a.credentialInfo.mechanism : a.mechanism)
    if (mechanism === undefined) {
      refuse(a.user, ErrorCodes.UNSUPPORTED_SASL_MECHANISM, 'Unknown SCRAM mechanism')
      continue
    }
    if (isUpsertion(a) && a.password === '') {
      refuse(a.user, ErrorCodes.UNACCEPTABLE_CREDENTIAL, 'Password must not be empty')
      continue
    }
    let changes = byUser.get(a.user)
    if (changes === undefined) byUser.set(a.user, (changes = { user: a.user, deletions: [], upsertions: [] }))
    if (!isUpsertion(a)) {
      changes.deletions.push({ name: a.user, mechanism: mechanism.id })
      continue
    }
    const salt = a.salt ?? randomScramSalt()
    const { iterations } = a.credentialInfo
    // The broker judges the iteration count (UNACCEPTABLE_CREDENTIAL outside 4096-16384); only
    // a value PBKDF2 cannot take at all is refused here, with the same error.
    if (!Number.isInteger(iterations) || iterations < 1) {
      refuse(a.user, ErrorCodes.UNACCEPTABLE_CREDENTIAL, `Iterations must be a positive integer, got ${iterations}`)
      continue
    }
    changes.upsertions.push({ name: a.user, mechanism: mechanism.id, iterations, salt, saltedPassword: await saltedPassword(mechanism.name, a.password, salt, iterations) })
  }
  return { send: [...byUser.values()].filter((c) => !refused.has(c.user)), refused }
}

/**
 * AlterUserScramCredentials (51, KIP-554): upserts and deletes credentials. Each user succeeds
 * or fails as a whole with Kafka's error (UNACCEPTABLE_CREDENTIAL, RESOURCE_NOT_FOUND for
 * deleting a credential that does not exist, DUPLICATE_RESOURCE for one mechanism altered
 * twice, UNSUPPORTED_SASL_MECHANISM); an AdminError lists the failures and the users changed.
 */
export async function alterUserScramCredentials(
  ctx: AdminContext,
  alterations: readonly UserScramCredentialAlteration[],
  options: { timeoutMs?: number } = {},
): Promise<string[]> {
  const { send, refused } = await prepare(alterations)
  let changed: string[] = []
  const errors: Error[] = [...refused.values()]
  try {
    changed = await perItem(
      ctx,
      'alterUserScramCredentials',
      send,
      (c) => c.user,
      async (pending) => {
        const conn = await ctx.cluster.anyConnection()
        const res = await conn.request(AlterUserScramCredentials, { deletions: pending.flatMap((c) => c.deletions), upsertions: pending.flatMap((c) => c.upsertions) })
        const out: Outcomes<string> = new Map()
        for (const r of res.results) {
          out.set(r.user, r.errorCode === ErrorCodes.NONE ? r.user : new UserScramCredentialError(r.user, r.errorCode, 'AlterUserScramCredentials', r.errorMessage))
        }
        return out
      },
      options,
    )
  } catch (e) {
    if (!(e instanceof AdminError)) throw e
    errors.push(...e.errors)
    changed = e.results as string[]
  }
  if (errors.length > 0) throw new AdminError('alterUserScramCredentials', errors, changed)
  return changed
}
