import {
  DescribeUserScramCredentials,
  type DescribeUserScramCredentialsResponseResult,
  ErrorCodes,
  SCRAM_MECHANISMS,
} from '@tidelog/protocol'
import { defineHandler } from './types.js'

/**
 * DescribeUserScramCredentials 0 (KIP-554): each user's mechanisms and iteration counts, never
 * salts or keys. A null or empty list describes every user; Kafka's errors for an unknown user
 * (RESOURCE_NOT_FOUND) and a user named twice (DUPLICATE_RESOURCE).
 */
export const describeUserScramCredentialsHandler = defineHandler({
  api: DescribeUserScramCredentials,
  minVersion: 0,
  maxVersion: 0,
  handle(ctx, req) {
    const store = ctx.security?.manager.scram
    const info = (user: string): DescribeUserScramCredentialsResponseResult => {
      const mechs = store?.mechanisms(user)
      if (mechs === undefined) {
        return { user, errorCode: ErrorCodes.RESOURCE_NOT_FOUND, errorMessage: `Attempt to describe a user credential that does not exist: ${user}`, credentialInfos: [] }
      }
      return {
        user,
        errorCode: ErrorCodes.NONE,
        errorMessage: null,
        credentialInfos: mechs.map(([name, c]) => ({ mechanism: SCRAM_MECHANISMS.find((m) => m.name === name)!.id, iterations: c.iterations })),
      }
    }
    let results: DescribeUserScramCredentialsResponseResult[]
    if (req.users === null || req.users.length === 0) {
      results = (store?.list() ?? []).map(([user]) => info(user))
    } else {
      const counts = new Map<string, number>()
      for (const u of req.users) counts.set(u.name, (counts.get(u.name) ?? 0) + 1)
      results = [...counts].map(([user, n]) =>
        n > 1
          ? { user, errorCode: ErrorCodes.DUPLICATE_RESOURCE, errorMessage: `Cannot describe SCRAM credentials for the same user twice in a single request: ${user}`, credentialInfos: [] }
          : info(user),
      )
    }
    return { throttleTimeMs: 0, errorCode: ErrorCodes.NONE, errorMessage: null, results }
  },
  errorResponse(_req, errorCode) {
    return { throttleTimeMs: 0, errorCode, errorMessage: null, results: [] }
  },
})
