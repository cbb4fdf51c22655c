import { DeleteAcls, type DeleteAclsResponseFilterResult, ErrorCodes } from '@tidelog/protocol'
import { invalidFilter } from '../security/acl.js'
import type { StandardAuthorizer } from '../security/authorizer.js'
import { NO_AUTHORIZER, aclFilterOf } from './29-describe-acls.js'
import { defineHandler } from './types.js'

/** DeleteAcls 1-3: every valid filter removes what it matches and lists it; answered once durable. */
export function deleteAclsHandler(authorizer: StandardAuthorizer | undefined) {
  return defineHandler({
    api: DeleteAcls,
    minVersion: 1,
    maxVersion: 3,
    async handle(_ctx, req) {
      const result = (errorCode: number, errorMessage: string | null): DeleteAclsResponseFilterResult => ({ errorCode, errorMessage, matchingAcls: [] })
      if (authorizer === undefined) return { throttleTimeMs: 0, filterResults: req.filters.map(() => result(ErrorCodes.SECURITY_DISABLED, NO_AUTHORIZER)) }
      const filters = req.filters.map(aclFilterOf)
      const invalid = filters.map(invalidFilter)
      const removed = await authorizer.store.remove(filters.filter((_, i) => invalid[i] === undefined))
      return {
        throttleTimeMs: 0,
        filterResults: invalid.map((why) => {
          if (why !== undefined) return result(ErrorCodes.INVALID_REQUEST, why)
          const matchingAcls = removed.shift()!.map((b) => ({ errorCode: ErrorCodes.NONE, errorMessage: null, ...b }))
          return { ...result(ErrorCodes.NONE, null), matchingAcls }
        }),
      }
    },
    errorResponse(req, errorCode) {
      return { throttleTimeMs: 0, filterResults: req.filters.map(() => ({ errorCode, errorMessage: null, matchingAcls: [] })) }
    },
  })
}
