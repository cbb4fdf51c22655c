import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { SCRAM_MECHANISMS, type ScramHash, scramKeysFromSalted } from '@tidelog/protocol'
import { writeFileAtomicSync } from '../log/checkpoint.js'
import type { Logger } from '../logger.js'

export type ScramMechanismName = (typeof SCRAM_MECHANISMS)[number]['name']

/** What the broker keeps of a SCRAM password: never the password or the salted password itself. */
export interface ScramCredential {
  salt: Buffer
  storedKey: Buffer
  serverKey: Buffer
  iterations: number
}

export const SCRAM_CREDENTIALS_FILE = 'scram-credentials.json'

export function scramHashOf(mechanism: ScramMechanismName): ScramHash {
  return SCRAM_MECHANISMS.find((m) => m.name === mechanism)!.hash
}

// Kafka's ScramCredentialUtils text form, so the file reads like Kafka's stored credential.
function toText(c: ScramCredential): string {
  return `salt=${c.salt.toString('base64')},stored_key=${c.storedKey.toString('base64')},server_key=${c.serverKey.toString('base64')},iterations=${c.iterations}`
}

function fromText(text: string): ScramCredential {
  const f = new Map(text.split(',').map((p) => [p.slice(0, p.indexOf('=')), p.slice(p.indexOf('=') + 1)]))
  const iterations = Number(f.get('iterations'))
  const salt = f.get('salt')
  const storedKey = f.get('stored_key')
  const serverKey = f.get('server_key')
  if (salt === undefined || storedKey === undefined || serverKey === undefined || !Number.isInteger(iterations)) {
    throw new Error('malformed credential')
  }
  return { salt: Buffer.from(salt, 'base64'), storedKey: Buffer.from(storedKey, 'base64'), serverKey: Buffer.from(serverKey, 'base64'), iterations }
}

/**
 * SCRAM credentials per user and mechanism, kept in the data directory (Kafka keeps them
 * in its metadata log) and rewritten atomically on every change, so a crash leaves either
 * the old set or the new one.
 */
export class ScramCredentialStore {
  private readonly users = new Map<string, Map<ScramMechanismName, ScramCredential>>()
  private readonly path: string

  constructor(dataDir: string, logger: Logger) {
    this.path = join(dataDir, SCRAM_CREDENTIALS_FILE)
    let text: string | undefined
    try {
      text = readFileSync(this.path, 'utf8')
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err
    }
    if (text === undefined) return
    const parsed = JSON.parse(text) as { version: number; users: Record<string, Record<string, string>> }
    if (parsed.version !== 1) throw new Error(`${this.path}: unknown version ${parsed.version}`)
    for (const [user, mechs] of Object.entries(parsed.users)) {
      for (const [mech, cred] of Object.entries(mechs)) {
        if (!SCRAM_MECHANISMS.some((m) => m.name === mech)) {
          logger.warn(`${this.path}: ignoring unknown mechanism ${mech} for a user`)
          continue
        }
        this.set(user, mech as ScramMechanismName, fromText(cred), false)
      }
    }
  }

  get(user: string, mechanism: ScramMechanismName): ScramCredential | undefined {
    return this.users.get(user)?.get(mechanism)
  }

  /** Users with at least one credential, and their mechanisms. */
  list(): [string, [ScramMechanismName, ScramCredential][]][] {
    return [...this.users].map(([u, m]) => [u, [...m]])
  }

  mechanisms(user: string): [ScramMechanismName, ScramCredential][] | undefined {
    const m = this.users.get(user)
    return m === undefined ? undefined : [...m]
  }

  /** KIP-554 sends the salted password; only the derived keys are kept. */
  static fromSalted(mechanism: ScramMechanismName, salt: Buffer, salted: Buffer, iterations: number): ScramCredential {
    const keys = scramKeysFromSalted(scramHashOf(mechanism), salted)
    return { salt, storedKey: keys.storedKey, serverKey: keys.serverKey, iterations }
  }

  /** Applies a batch of changes and writes the file once. */
  apply(changes: { user: string; mechanism: ScramMechanismName; credential: ScramCredential | null }[]): void {
    if (changes.length === 0) return
    for (const c of changes) {
      if (c.credential === null) this.delete(c.user, c.mechanism)
      else this.set(c.user, c.mechanism, c.credential, false)
    }
    this.persist()
  }

  private set(user: string, mechanism: ScramMechanismName, c: ScramCredential, persist: boolean): void {
    let m = this.users.get(user)
    if (m === undefined) this.users.set(user, (m = new Map()))
    m.set(mechanism, c)
    if (persist) this.persist()
  }

  private delete(user: string, mechanism: ScramMechanismName): void {
    const m = this.users.get(user)
    if (m === undefined) return
    m.delete(mechanism)
    if (m.size === 0) this.users.delete(user)
  }

  private persist(): void {
    const users: Record<string, Record<string, string>> = {}
    for (const [u, m] of this.users) {
      users[u] = {}
      for (const [mech, c] of m) users[u][mech] = toText(c)
    }
    writeFileAtomicSync(this.path, JSON.stringify({ version: 1, users }, null, 2) + '\n')
  }
}

/**
 * PLAIN users from a JAAS-style file, as Kafka's PlainLoginModule reads them:
 * every `user_NAME="password"` option is a user. Other options (username, password
 * for inter-broker use) are ignored.
 */
export function parsePlainUsers(text: string): Map<string, string> {
  const users = new Map<string, string>()
  const option = /user_([^\s="]+)\s*=\s*"((?:[^"\\]|\\.)*)"/g
  for (const m of text.matchAll(option)) users.set(m[1]!, m[2]!.replace(/\\(.)/g, '$1'))
  return users
}
