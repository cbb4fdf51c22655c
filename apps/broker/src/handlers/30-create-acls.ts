import { CreateAcls, ErrorCodes } from '@tidelog/protocol'
import { type AclBinding, PatternType, invalidBinding } from '../security/acl.js'
import type { StandardAuthorizer } from '../security/authorizer.js'
import { NO_AUTHORIZER } from './29-describe-acls.js'
import { defineHandler } from './types.js'

/**
 * CreateAcls 1-3: each creation is checked on its own (INVALID_REQUEST names what is wrong);
 * the valid ones are stored together and answered once the ACL file is durable.
 */
export function createAclsHandler(authorizer: StandardAuthorizer | undefined) {
  return defineHandler({
    api: CreateAcls,
    minVersion: 1,
    maxVersion: 3,
    async handle(_ctx, req) {
      if (authorizer === undefined) {
        return { throttleTimeMs: 0, results: req.creations.map(() => ({ errorCode: ErrorCodes.SECURITY_DISABLED, errorMessage: NO_AUTHORIZER })) }
      }
      const bindings: (AclBinding | string)[] = req.creations.map((c) => {
        const b: AclBinding = {
          resourceType: c.resourceType,
          resourceName: c.resourceName,
          patternType: c.resourcePatternType ?? PatternType.LITERAL,
          principal: c.principal,
          host: c.host,
          operation: c.operation,
          permissionType: c.permissionType,
        }
        return invalidBinding(b) ?? b
      })
      await authorizer.store.add(bindings.filter((b): b is AclBinding => typeof b !== 'string'))
      return {
        throttleTimeMs: 0,
        results: bindings.map((b) => (typeof b === 'string' ? { errorCode: ErrorCodes.INVALID_REQUEST, errorMessage: b } : { errorCode: ErrorCodes.NONE, errorMessage: null })),
      }
    },
    errorResponse(req, errorCode) {
      return { throttleTimeMs: 0, results: req.creations.map(() => ({ errorCode, errorMessage: null })) }
    },
  })
}
