import { AclOperation as AclOperationCode, AclPermission as AclPermissionCode, CreateAcls, DeleteAcls, DescribeAcls, ErrorCodes, PatternType, ProtocolError, ResourceType } from '@tidelog/protocol'
import { retry } from '../retry.js'
import { type AdminContext, type Outcomes, perItem } from './engine.js'

const RESOURCE_TYPES = ResourceType
const PATTERN_TYPES = PatternType
const OPERATIONS = AclOperationCode
const PERMISSIONS = AclPermissionCode

export type AclResourceType = Exclude<keyof typeof RESOURCE_TYPES, 'ANY' | 'UNKNOWN'>
export type AclPatternType = 'LITERAL' | 'PREFIXED'
export type AclOperation = Exclude<keyof typeof OPERATIONS, 'ANY' | 'UNKNOWN'>
export type AclPermission = 'ALLOW' | 'DENY'

/** One ACL, as Java's AclBinding: the resource pattern and the entry (who, from where, what, allowed or denied). */
export interface AclBinding {
  resourceType: AclResourceType
  resourceName: string
  /** Default LITERAL. */
  patternType?: AclPatternType
  /** `User:name`, or `User:*` for everyone. */
  principal: string
  /** An address, or `*` (the default) for any. */
  host?: string
  operation: AclOperation
  permission: AclPermission
}

/** Java's AclBindingFilter: fields left out match anything; MATCH finds every pattern that applies to a name. */
export interface AclBindingFilter {
  resourceType?: AclResourceType | 'ANY'
  resourceName?: string | null
  /** Default ANY. */
  patternType?: AclPatternType | 'ANY' | 'MATCH'
  principal?: string | null
  host?: string | null
  operation?: AclOperation | 'ANY'
  permission?: AclPermission | 'ANY'
}

const nameOf = <T extends Record<string, number>>(table: T, code: number): keyof T => {
  const name = Object.keys(table).find((k) => table[k] === code)
  if (name === undefined) throw new ProtocolError(ErrorCodes.INVALID_REQUEST, { message: `the broker answered an unknown ACL code ${code}` })
  return name as keyof T
}

const toBinding = (b: { resourceType: number; resourceName: string; patternType?: number; principal: string; host: string; operation: number; permissionType: number }): AclBinding => ({
  resourceType: nameOf(RESOURCE_TYPES, b.resourceType) as AclResourceType,
  resourceName: b.resourceName,
  patternType: nameOf(PATTERN_TYPES, b.patternType ?? PATTERN_TYPES.LITERAL) as AclPatternType,
  principal: b.principal,
  host: b.host,
  operation: nameOf(OPERATIONS, b.operation) as AclOperation,
  permission: nameOf(PERMISSIONS, b.permissionType) as AclPermission,
})

const filterFields = (f: AclBindingFilter) => ({
  resourceTypeFilter: RESOURCE_TYPES[f.resourceType ?? 'ANY'],
  resourceNameFilter: f.resourceName ?? null,
  patternTypeFilter: PATTERN_TYPES[f.patternType ?? 'ANY'],
  principalFilter: f.principal ?? null,
  hostFilter: f.host ?? null,
  operation: OPERATIONS[f.operation ?? 'ANY'],
  permissionType: PERMISSIONS[f.permission ?? 'ANY'],
})

const bindingKey = (b: AclBinding): string => JSON.stringify(b)

/** CreateAcls (30): each binding is created or fails with its own error (an AdminError lists them). */
export async function createAcls(ctx: AdminContext, bindings: readonly AclBinding[], options: { timeoutMs?: number } = {}): Promise<void> {
  await perItem(
    ctx,
    'createAcls',
    bindings,
    bindingKey,
    async (pending) => {
      const conn = await ctx.cluster.anyConnection()
      const res = await conn.request(CreateAcls, {
        creations: pending.map((b) => ({
          resourceType: RESOURCE_TYPES[b.resourceType],
          resourceName: b.resourceName,
          resourcePatternType: PATTERN_TYPES[b.patternType ?? 'LITERAL'],
          principal: b.principal,
          host: b.host ?? '*',
          operation: OPERATIONS[b.operation],
          permissionType: PERMISSIONS[b.permission],
        })),
      })
      const out: Outcomes<true> = new Map()
      pending.forEach((b, i) => {
        const r = res.results[i]
        const code = r?.errorCode ?? ErrorCodes.UNKNOWN_SERVER_ERROR
        out.set(bindingKey(b), code === ErrorCodes.NONE ? true : new ProtocolError(code, { api: 'CreateAcls', apiKey: CreateAcls.apiKey, message: r?.errorMessage }))
      })
      return out
    },
    options,
  )
}

/** DescribeAcls (29): the bindings the filter matches (default: every binding). */
export async function describeAcls(ctx: AdminContext, filter: AclBindingFilter = {}, options: { timeoutMs?: number } = {}): Promise<AclBinding[]> {
  return retry(
    async () => {
      const conn = await ctx.cluster.anyConnection()
      const res = await conn.request(DescribeAcls, filterFields(filter))
      if (res.errorCode !== ErrorCodes.NONE) throw new ProtocolError(res.errorCode, { api: 'DescribeAcls', apiKey: DescribeAcls.apiKey, message: res.errorMessage })
      return res.resources.flatMap((r) => r.acls.map((a) => toBinding({ ...r, ...a })))
    },
    { timeoutMs: options.timeoutMs ?? ctx.timeoutMs, backoff: ctx.cluster.retryBackoff, onRetry: (e) => ctx.cluster.handleError(e) },
  )
}

/** DeleteAcls (31): per filter, in order, the bindings it removed. */
export async function deleteAcls(ctx: AdminContext, filters: readonly AclBindingFilter[], options: { timeoutMs?: number } = {}): Promise<AclBinding[][]> {
  const keyed = filters.map((f, i) => ({ i, f }))
  return perItem(
    ctx,
    'deleteAcls',
    keyed,
    (k) => String(k.i),
    async (pending) => {
      const conn = await ctx.cluster.anyConnection()
      const res = await conn.request(DeleteAcls, { filters: pending.map((k) => filterFields(k.f)) })
      const out: Outcomes<AclBinding[]> = new Map()
      pending.forEach((k, i) => {
        const r = res.filterResults[i]
        const code = r?.errorCode ?? ErrorCodes.UNKNOWN_SERVER_ERROR
        out.set(String(k.i), code === ErrorCodes.NONE ? r!.matchingAcls.map(toBinding) : new ProtocolError(code, { api: 'DeleteAcls', apiKey: DeleteAcls.apiKey, message: r?.errorMessage }))
      })
      return out
    },
    options,
  )
}
