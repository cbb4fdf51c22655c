/**
 * Kafka's ACL model (org.apache.kafka.common.acl / resource): the wire codes of resource types,
 * pattern types, operations and permissions, an ACL binding, and the filters DescribeAcls and
 * DeleteAcls match bindings with. The codes are Kafka's, so what kafka-acls.sh sends is used as is.
 */

import { AclOperation, AclPermission, PatternType, ResourceType } from '@tidelog/protocol'

export { AclOperation, AclPermission, PatternType, ResourceType }

export type ResourceTypeCode = (typeof ResourceType)[keyof typeof ResourceType]
export type OperationCode = (typeof AclOperation)[keyof typeof AclOperation]

/** The only name a CLUSTER resource has (Kafka's CLUSTER_NAME). */
export const CLUSTER_NAME = 'kafka-cluster'
export const WILDCARD_RESOURCE = '*'
export const WILDCARD_PRINCIPAL = 'User:*'
export const WILDCARD_HOST = '*'

const nameOf = (table: Record<string, number>, code: number): string => Object.keys(table).find((k) => table[k] === code) ?? 'UNKNOWN'
export const resourceTypeName = (c: number): string => nameOf(ResourceType, c)
export const patternTypeName = (c: number): string => nameOf(PatternType, c)
export const operationName = (c: number): string => nameOf(AclOperation, c)
export const permissionName = (c: number): string => nameOf(AclPermission, c)

const known = (table: Record<string, number>, code: number): boolean => Object.values(table).includes(code) && code !== 0

/** One ACL: who (principal, host) may or may not do what (operation) on which resources (pattern). */
export interface AclBinding {
  resourceType: number
  resourceName: string
  patternType: number
  principal: string
  host: string
  operation: number
  permissionType: number
}

/** A DescribeAcls / DeleteAcls filter; null strings match anything. */
export interface AclFilter {
  resourceType: number
  resourceName: string | null
  patternType: number
  principal: string | null
  host: string | null
  operation: number
  permissionType: number
}

export const bindingKey = (b: AclBinding): string =>
  JSON.stringify([b.resourceType, b.resourceName, b.patternType, b.principal, b.host, b.operation, b.permissionType])

/**
 * Why a new binding cannot be stored (Kafka's AclControlManager.validateNewAcl and the checks
 * of the CreateAcls handler), as the INVALID_REQUEST message; undefined when it can.
 */
export function invalidBinding(b: AclBinding): string | undefined {
  if (!known(ResourceType, b.resourceType) || b.resourceType === ResourceType.ANY) return `Invalid resourceType ${resourceTypeName(b.resourceType)}`
  if (b.patternType !== PatternType.LITERAL && b.patternType !== PatternType.PREFIXED) return `Invalid patternType ${patternTypeName(b.patternType)}`
  if (!known(AclOperation, b.operation) || b.operation === AclOperation.ANY) return `Invalid operation ${operationName(b.operation)}`
  if (b.permissionType !== AclPermission.ALLOW && b.permissionType !== AclPermission.DENY) return `Invalid permissionType ${permissionName(b.permissionType)}`
  if (b.resourceName === '') return 'Invalid empty resource name'
  if (b.resourceType === ResourceType.CLUSTER && b.resourceName !== CLUSTER_NAME) return `The only valid name for the CLUSTER resource is ${CLUSTER_NAME}`
  if (!b.principal.includes(':')) {
    return `Could not parse principal from \`${b.principal}\` (no colon is present separating the principal type from the principal name)`
  }
  if (b.host === '') return 'Invalid empty host'
  return undefined
}

/** Why a filter cannot be used (one of its fields is UNKNOWN), or undefined. */
export function invalidFilter(f: AclFilter): string | undefined {
  if (!known(ResourceType, f.resourceType)) return 'Unknown patternFilter: the resource type is UNKNOWN'
  if (!known(PatternType, f.patternType)) return 'Unknown patternFilter: the pattern type is UNKNOWN'
  if (!known(AclOperation, f.operation)) return 'Unknown entryFilter: the operation is UNKNOWN'
  if (!known(AclPermission, f.permissionType)) return 'Unknown entryFilter: the permission type is UNKNOWN'
  return undefined
}

/** Kafka's ResourcePatternFilter.matches: MATCH finds the patterns that would apply to a resource. */
function patternMatches(f: AclFilter, b: AclBinding): boolean {
  if (f.resourceType !== ResourceType.ANY && f.resourceType !== b.resourceType) return false
  if (f.patternType !== PatternType.ANY && f.patternType !== PatternType.MATCH && f.patternType !== b.patternType) return false
  if (f.resourceName === null) return true
  if (f.patternType === PatternType.ANY || f.patternType === b.patternType) return f.resourceName === b.resourceName
  return b.patternType === PatternType.LITERAL
    ? f.resourceName === b.resourceName || b.resourceName === WILDCARD_RESOURCE
    : f.resourceName.startsWith(b.resourceName)
}

/** Kafka's AclBindingFilter.matches. */
export function filterMatches(f: AclFilter, b: AclBinding): boolean {
  return (
    patternMatches(f, b) &&
    (f.principal === null || f.principal === b.principal) &&
    (f.host === null || f.host === b.host) &&
    (f.operation === AclOperation.ANY || f.operation === b.operation) &&
    (f.permissionType === AclPermission.ANY || f.permissionType === b.permissionType)
  )
}
