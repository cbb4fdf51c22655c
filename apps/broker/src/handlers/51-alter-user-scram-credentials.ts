import {
  AlterUserScramCredentials,
  type AlterUserScramCredentialsResponseResult,
  ErrorCodes,
  SCRAM_KEY_LENGTH,
  SCRAM_MAX_ITERATIONS,
  SCRAM_MECHANISMS,
  SCRAM_MIN_ITERATIONS,
} from '@tidelog/protocol'
import { type ScramCredential, ScramCredentialStore, type ScramMechanismName } from '../security/credentials.js'
import { defineHandler } from './types.js'

interface Change {
  user: string
  mechanism: number
  upsert?: { iterations: number; salt: Uint8Array; saltedPassword: Uint8Array }
}

const buf = (b: Uint8Array): Buffer => Buffer.from(b.buffer, b.byteOffset, b.byteLength)

/**
 * AlterUserScramCredentials 0 (KIP-554): the client salts the password, the broker keeps only
 * StoredKey and ServerKey. Checked per user as Kafka does; a user with any bad change gets that
 * error and none of its changes, the others are applied and written to disk together.
 */
export const alterUserScramCredentialsHandler = defineHandler({
  api: AlterUserScramCredentials,
  minVersion: 0,
  maxVersion: 0,
  handle(ctx, req) {
    const store = ctx.security?.manager.scram
    const byUser = new Map<string, Change[]>()
    const add = (c: Change): void => {
      let list = byUser.get(c.user)
      if (list === undefined) byUser.set(c.user, (list = []))
      list.push(c)
    }
    for (const d of req.deletions) add({ user: d.name, mechanism: d.mechanism })
    for (const u of req.upsertions) add({ user: u.name, mechanism: u.mechanism, upsert: u })
    const results: AlterUserScramCredentialsResponseResult[] = []
    const apply: { user: string; mechanism: ScramMechanismName; credential: ScramCredential | null }[] = []
    for (const [user, changes] of byUser) {
      const fail = (errorCode: number, errorMessage: string): void => {
        results.push({ user, errorCode, errorMessage })
      }
      if (store === undefined) {
        fail(ErrorCodes.UNSUPPORTED_VERSION, 'SCRAM credentials are not available on this connection')
        continue
      }
      if (user === '') {
        fail(ErrorCodes.UNACCEPTABLE_CREDENTIAL, 'Username must not be empty')
        continue
      }
      const seen = new Set<number>()
      const staged: typeof apply = []
      let error: [number, string] | undefined
      for (const c of changes) {
        const mech = SCRAM_MECHANISMS.find((m) => m.id === c.mechanism)
        if (mech === undefined) {
          error = [ErrorCodes.UNSUPPORTED_SASL_MECHANISM, 'Unknown SCRAM mechanism']
          break
        }
        if (seen.has(c.mechanism)) {
          error = [ErrorCodes.DUPLICATE_RESOURCE, 'A user credential cannot be altered twice in the same request']
          break
        }
        seen.add(c.mechanism)
        if (c.upsert === undefined) {
          if (store.get(user, mech.name) === undefined) {
            error = [ErrorCodes.RESOURCE_NOT_FOUND, 'Attempt to delete a user credential that does not exist']
            break
          }
          staged.push({ user, mechanism: mech.name, credential: null })
          continue
        }
        const { iterations, salt, saltedPassword } = c.upsert
        if (iterations < SCRAM_MIN_ITERATIONS) {
          error = [ErrorCodes.UNACCEPTABLE_CREDENTIAL, 'Too few iterations']
          break
        }
        if (iterations > SCRAM_MAX_ITERATIONS) {
          error = [ErrorCodes.UNACCEPTABLE_CREDENTIAL, 'Too many iterations']
          break
        }
        if (salt.length === 0 || saltedPassword.length !== SCRAM_KEY_LENGTH[mech.hash]) {
          error = [ErrorCodes.UNACCEPTABLE_CREDENTIAL, `The salt must not be empty and the salted password must be ${SCRAM_KEY_LENGTH[mech.hash]} bytes for ${mech.name}`]
          break
        }
        staged.push({
          user,
          mechanism: mech.name,
          credential: ScramCredentialStore.fromSalted(mech.name, Buffer.from(buf(salt)), buf(saltedPassword), iterations),
        })
      }
      if (error !== undefined) {
        fail(error[0], error[1])
        continue
      }
      apply.push(...staged)
      results.push({ user, errorCode: ErrorCodes.NONE, errorMessage: null })
    }
    store?.apply(apply)
    return { throttleTimeMs: 0, results }
  },
  errorResponse(req, errorCode) {
    const users = new Set([...req.deletions.map((d) => d.name), ...req.upsertions.map((u) => u.name)])
    return { throttleTimeMs: 0, results: [...users].map((user) => ({ user, errorCode, errorMessage: null })) }
  },
})
