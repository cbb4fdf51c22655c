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
    let parsed: { version: number; users: Record<string, Record<string, string>> }
    try {
      parsed = JSON.parse(text) as typeof parsed
    } catch (err) {
      throw new Error(`${this.path} is not valid JSON (${(err as Error).message}); restore it or remove it to start without SCRAM users`)
    }
    if (parsed.version !== 1 || typeof parsed.users !== 'object' || parsed.users === null) {
      throw new Error(`${this.path}: unknown version ${String(parsed.version)} or layout`)
    }
    for (const [user, mechs] of Object.entries(parsed.users)) {
      for (const [mech, cred] of Object.entries(mechs)) {
        if (!SCRAM_MECHANISMS.some((m) => m.name === mech)) {
          logger.warn(`${this.path}: ignoring unknown mechanism ${mech} for a user`)
          continue
        }
        let m = this.users.get(user)
        if (m === undefined) this.users.set(user, (m = new Map()))
        m.set(mech as ScramMechanismName, fromText(cred))
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

  /**
   * Applies a batch of changes and writes the file once. The file is written first: if that
   * fails, the error propagates and memory still matches what is on disk.
   */
  apply(changes: { user: string; mechanism: ScramMechanismName; credential: ScramCredential | null }[]): void {
    if (changes.length === 0) return
    const next = new Map([...this.users].map(([u, m]) => [u, new Map(m)]))
    for (const c of changes) {
      let m = next.get(c.user)
      if (c.credential === null) {
        m?.delete(c.mechanism)
        if (m?.size === 0) next.delete(c.user)
        continue
      }
      if (m === undefined) next.set(c.user, (m = new Map()))
      m.set(c.mechanism, c.credential)
    }
    this.persist(next)
    this.users.clear()
    for (const [u, m] of next) this.users.set(u, m)
  }

  private persist(state: Map<string, Map<ScramMechanismName, ScramCredential>>): void {
    const users: Record<string, Record<string, string>> = {}
    for (const [u, m] of state) {
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
