import { DescribeAcls, type DescribeAclsResponseResource, ErrorCodes } from '@tidelog/protocol'
import { type AclFilter, PatternType, invalidFilter } from '../security/acl.js'
import type { StandardAuthorizer } from '../security/authorizer.js'
import { defineHandler } from './types.js'

/** Kafka's answer to the ACL APIs when no authorizer is configured. */
export const NO_AUTHORIZER = 'No Authorizer is configured.'

export const aclFilterOf = (f: {
  resourceTypeFilter: number
  resourceNameFilter: string | null
  patternTypeFilter?: number
  principalFilter: string | null
  hostFilter: string | null
  operation: number
  permissionType: number
}): AclFilter => ({
  resourceType: f.resourceTypeFilter,
  resourceName: f.resourceNameFilter,
  patternType: f.patternTypeFilter ?? PatternType.LITERAL,
  principal: f.principalFilter,
  host: f.hostFilter,
  operation: f.operation,
  permissionType: f.permissionType,
})

/** DescribeAcls 1-3: the bindings a filter matches, grouped by resource pattern as Kafka answers. */
export function describeAclsHandler(authorizer: StandardAuthorizer | undefined) {
  return defineHandler({
    api: DescribeAcls,
    minVersion: 1,
    maxVersion: 3,
    handle(_ctx, req) {
      if (authorizer === undefined) return { throttleTimeMs: 0, errorCode: ErrorCodes.SECURITY_DISABLED, errorMessage: NO_AUTHORIZER, resources: [] }
      const filter = aclFilterOf(req)
      const invalid = invalidFilter(filter)
      if (invalid !== undefined) return { throttleTimeMs: 0, errorCode: ErrorCodes.INVALID_REQUEST, errorMessage: invalid, resources: [] }
      const resources = new Map<string, DescribeAclsResponseResource>()
      for (const b of authorizer.store.matching(filter)) {
        const key = JSON.stringify([b.resourceType, b.resourceName, b.patternType])
        let r = resources.get(key)
        if (r === undefined) resources.set(key, (r = { resourceType: b.resourceType, resourceName: b.resourceName, patternType: b.patternType, acls: [] }))
        r.acls.push({ principal: b.principal, host: b.host, operation: b.operation, permissionType: b.permissionType })
      }
      return { throttleTimeMs: 0, errorCode: ErrorCodes.NONE, errorMessage: null, resources: [...resources.values()] }
    },
    errorResponse(_req, errorCode) {
      return { throttleTimeMs: 0, errorCode, errorMessage: null, resources: [] }
    },
  })
}
