import { AdminError, type AclBinding, type AclBindingFilter, type Admin as NativeAdmin } from '@tidelog/client'
import { AclOperationTypes, AclPermissionTypes, AclResourceTypes, ResourcePatternTypes } from './admin-answers.js'
import { errorByCode, ProtocolError } from '@tidelog/protocol'
import { KafkaJSNonRetriableError, KafkaJSProtocolError, toKafkaJSError } from './errors.js'

/** kafkajs' Acl: a resource pattern and an entry, every enum as its numeric Kafka code. */
export interface Acl {
  resourceType: AclResourceTypes
  resourceName: string
  resourcePatternType: ResourcePatternTypes
  principal: string
  host: string
  operation: AclOperationTypes
  permissionType: AclPermissionTypes
}

export type AclFilter = Omit<Acl, 'resourceName' | 'principal' | 'host'> & { resourceName?: string; principal?: string; host?: string }

export interface AclResource {
  resourceType: AclResourceTypes
  resourceName: string
  resourcePatternType: ResourcePatternTypes
  acls: { principal: string; host: string; operation: AclOperationTypes; permissionType: AclPermissionTypes }[]
}

export interface DescribeAclResponse {
  resources: AclResource[]
}

export interface DeleteAclResponse {
  filterResponses: { errorCode: number; errorMessage: string | null; matchingAcls: (Acl & { errorCode: number; errorMessage: string | null })[] }[]
}

// kafkajs' order of checks and its messages (admin/index.js), so a bad argument fails the same way.
const ENUMS = [
  ['operation', AclOperationTypes, 'operation type'],
  ['resourcePatternType', ResourcePatternTypes, 'resource pattern type'],
  ['permissionType', AclPermissionTypes, 'permission type'],
  ['resourceType', AclResourceTypes, 'resource type'],
] as const

const isCode = (table: object, v: unknown): boolean => typeof v === 'number' && Object.values(table).includes(v)

function checkList(list: unknown, what: 'ACL' | 'ACL Filter', optionalStrings: boolean): asserts list is Record<string, unknown>[] {
  if (!list || !Array.isArray(list)) throw new KafkaJSNonRetriableError(`Invalid ${what} array ${String(list)}`)
  if (list.length === 0) throw new KafkaJSNonRetriableError(`Empty ${what} array`)
  const bad = (v: unknown) => typeof v !== 'string' && !(optionalStrings && v === undefined)
  for (const [field, label] of [['principal', 'principals'], ['host', 'hosts'], ['resourceName', 'resourceNames']] as const) {
    if (list.some((a) => bad((a as Record<string, unknown>)[field]))) throw new KafkaJSNonRetriableError(`Invalid ${what} array, the ${label} have to be a valid string`)
  }
  for (const [field, table, label] of ENUMS) {
    const invalid = list.find((a) => !isCode(table, (a as Record<string, unknown>)[field]))
    if (invalid !== undefined) throw new KafkaJSNonRetriableError(`Invalid ${label} ${String(invalid[field])}: ${JSON.stringify(invalid)}`)
  }
}

function checkFilter(f: Record<string, unknown>): void {
  for (const [field, label] of [['principal', 'principal, the principal'], ['host', 'host, the host'], ['resourceName', 'resourceName, the resourceName']] as const) {
    if (typeof f[field] !== 'string' && f[field] !== undefined) throw new KafkaJSNonRetriableError(`Invalid ${label} have to be a valid string`)
  }
  const labels: Record<string, string> = { operation: 'operation type', resourcePatternType: 'resource pattern filter type', permissionType: 'permission type', resourceType: 'resource type' }
  for (const [field, table] of ENUMS) if (!isCode(table, f[field])) throw new KafkaJSNonRetriableError(`Invalid ${labels[field]} ${String(f[field])}`)
}

// The native client names Kafka's codes; the numeric enums map both ways.
const binding = (a: Acl): AclBinding => ({
  resourceType: AclResourceTypes[a.resourceType] as AclBinding['resourceType'],
  resourceName: a.resourceName,
  patternType: ResourcePatternTypes[a.resourcePatternType] as AclBinding['patternType'],
  principal: a.principal,
  host: a.host,
  operation: AclOperationTypes[a.operation] as AclBinding['operation'],
  permission: AclPermissionTypes[a.permissionType] as AclBinding['permission'],
})

const filter = (f: AclFilter): AclBindingFilter => ({
  resourceType: AclResourceTypes[f.resourceType] as AclBindingFilter['resourceType'],
  resourceName: f.resourceName ?? null,
  patternType: ResourcePatternTypes[f.resourcePatternType] as AclBindingFilter['patternType'],
  principal: f.principal ?? null,
  host: f.host ?? null,
  operation: AclOperationTypes[f.operation] as AclBindingFilter['operation'],
  permission: AclPermissionTypes[f.permissionType] as AclBindingFilter['permission'],
})

const acl = (b: AclBinding): Acl => ({
  resourceType: AclResourceTypes[b.resourceType as keyof typeof AclResourceTypes],
  resourceName: b.resourceName,
  resourcePatternType: ResourcePatternTypes[(b.patternType ?? 'LITERAL') as keyof typeof ResourcePatternTypes],
  principal: b.principal,
  host: b.host ?? '*',
  operation: AclOperationTypes[b.operation as keyof typeof AclOperationTypes],
  permissionType: AclPermissionTypes[b.permission as keyof typeof AclPermissionTypes],
})

/**
 * kafkajs throws the first failure, not an aggregate, made by createErrorFromCode: its own text
 * for the code (Java's, without the final period), not the broker's message.
 */
function firstFailure(e: unknown): Error {
  const first = e instanceof AdminError && e.errors.length > 0 ? e.errors[0] : e
  if (!(first instanceof ProtocolError)) return toKafkaJSError(first)
  const message = errorByCode(first.code).message.replace(/\.$/, '')
  return new KafkaJSProtocolError({ message, type: first.type, code: first.code, retriable: first.retriable }, { cause: first })
}

export async function createAcls(admin: NativeAdmin, list: unknown): Promise<boolean> {
  checkList(list, 'ACL', false)
  await admin.createAcls((list as unknown as Acl[]).map(binding)).catch((e) => Promise.reject(firstFailure(e)))
  return true
}

/** The matching bindings grouped by resource pattern, in the broker's order, as DescribeAcls answers. */
export async function describeAcls(admin: NativeAdmin, f: AclFilter): Promise<DescribeAclResponse> {
  checkFilter((f ?? {}) as Record<string, unknown>)
  const found = await admin.describeAcls(filter(f)).catch((e) => Promise.reject(firstFailure(e)))
  const resources = new Map<string, AclResource>()
  for (const b of found.map(acl)) {
    const key = `${b.resourceType}\u0000${b.resourcePatternType}\u0000${b.resourceName}`
    let r = resources.get(key)
    if (r === undefined) resources.set(key, (r = { resourceType: b.resourceType, resourceName: b.resourceName, resourcePatternType: b.resourcePatternType, acls: [] }))
    r.acls.push({ principal: b.principal, host: b.host, operation: b.operation, permissionType: b.permissionType })
  }
  return { resources: [...resources.values()] }
}

export async function deleteAcls(admin: NativeAdmin, filters: unknown): Promise<DeleteAclResponse> {
  checkList(filters, 'ACL Filter', true)
  const removed = await admin.deleteAcls((filters as unknown as AclFilter[]).map(filter)).catch((e) => Promise.reject(firstFailure(e)))
  return { filterResponses: removed.map((list) => ({ errorCode: 0, errorMessage: null, matchingAcls: list.map((b) => ({ errorCode: 0, errorMessage: null, ...acl(b) })) })) }
}
