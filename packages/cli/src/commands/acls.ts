import type { AclBinding, AclBindingFilter, AclOperation, AclResourceType } from '@tidelog/client'
import { AclOperation as OPERATIONS } from '@tidelog/protocol'
import { JSON_FLAG, type OptionSpec } from '../args.js'
import type { Command, Context } from '../context.js'
import { UsageError } from '../errors.js'
import { table, toJson } from '../output/table.js'

// kafka-acls.sh's resource options; --cluster names Kafka's only cluster resource.
const RESOURCES: readonly [string, AclResourceType][] = [
  ['topic', 'TOPIC'],
  ['group', 'GROUP'],
  ['transactional-id', 'TRANSACTIONAL_ID'],
  ['user', 'USER'],
]
const CLUSTER_NAME = 'kafka-cluster'

const OPERATION_NAMES = Object.keys(OPERATIONS).filter((k) => k !== 'ANY' && k !== 'UNKNOWN') as AclOperation[]

/** kafka-acls.sh spells operations in camel case (Read, DescribeConfigs); both it and Kafka's enum names are accepted. */
function operation(v: string): AclOperation {
  const norm = v.replace(/[-_\s]/g, '').toLowerCase()
  const op = OPERATION_NAMES.find((o) => o.replace(/_/g, '').toLowerCase() === norm)
  if (op === undefined) throw new UsageError(`--operation ${JSON.stringify(v)} is not one of ${OPERATION_NAMES.map(camel).join(', ')}`)
  return op
}

const camel = (s: string) => s.toLowerCase().replace(/(^|_)([a-z])/g, (_m, _u, c: string) => c.toUpperCase())

const RESOURCE_OPTIONS: OptionSpec[] = [
  ...RESOURCES.map(([name]): OptionSpec => ({ name, kind: 'list', arg: 'NAME', help: `a ${name.replace('-', ' ')} resource ('*' for all; repeatable)` })),
  { name: 'cluster', kind: 'flag', help: 'the cluster resource' },
  { name: 'resource-pattern-type', kind: 'value', arg: 'TYPE', help: 'literal (default) or prefixed; for list and delete also any or match' },
]

function patternType(ctx: Context, allowed: readonly string[]): string {
  const v = (ctx.args.values.get('resource-pattern-type') ?? 'literal').toUpperCase()
  if (!allowed.includes(v)) throw new UsageError(`--resource-pattern-type must be one of ${allowed.map((a) => a.toLowerCase()).join(', ')} here, got ${JSON.stringify(v.toLowerCase())}`)
  return v
}

/** The resources named on the command line; none means "all" for a filter. */
function resources(ctx: Context): { resourceType: AclResourceType; resourceName: string }[] {
  const out = RESOURCES.flatMap(([opt, type]) => (ctx.args.lists.get(opt) ?? []).map((resourceName) => ({ resourceType: type, resourceName })))
  if (ctx.args.flags.has('cluster')) out.push({ resourceType: 'CLUSTER', resourceName: CLUSTER_NAME })
  return out
}

function principals(ctx: Context, option: string): string[] {
  const list = ctx.args.lists.get(option) ?? []
  for (const p of list) if (!/^[^:]+:.+$/.test(p)) throw new UsageError(`--${option} takes Type:name, e.g. User:alice; got ${JSON.stringify(p)}`)
  return list
}

function print(ctx: Context, bindings: readonly AclBinding[]): Promise<void> | undefined {
  const sorted = [...bindings].sort((a, b) => `${a.resourceType}\0${a.resourceName}\0${a.principal}\0${a.operation}`.localeCompare(`${b.resourceType}\0${b.resourceName}\0${b.principal}\0${b.operation}`))
  if (ctx.args.flags.has('json')) return ctx.write(toJson(sorted) + '\n')
  return ctx.write(
    table(
      ['RESOURCE-TYPE', 'NAME', 'PATTERN-TYPE', 'PRINCIPAL', 'HOST', 'OPERATION', 'PERMISSION'],
      sorted.map((b) => [b.resourceType, b.resourceName, b.patternType ?? 'LITERAL', b.principal, b.host ?? '*', b.operation, b.permission]),
    ),
  )
}

const FILTER_OPTIONS: OptionSpec[] = [
  ...RESOURCE_OPTIONS,
  { name: 'principal', kind: 'list', arg: 'Type:name', help: 'only ACLs of this principal (repeatable)' },
  { name: 'operation', kind: 'list', arg: 'OP', help: 'only this operation (Read, Write, Describe, ...; repeatable)' },
  JSON_FLAG,
]

/** Every combination of the given resources, principals and operations as filters; an absent dimension matches anything. */
function filters(ctx: Context, allowedPatterns: readonly string[]): AclBindingFilter[] {
  const pattern = patternType(ctx, allowedPatterns) as AclBindingFilter['patternType']
  const res = resources(ctx)
  const who = principals(ctx, 'principal')
  const ops = (ctx.args.lists.get('operation') ?? []).map(operation)
  const out: AclBindingFilter[] = []
  for (const r of res.length === 0 ? [undefined] : res) {
    for (const principal of who.length === 0 ? [undefined] : who) {
      for (const op of ops.length === 0 ? [undefined] : ops) {
        out.push({ ...(r ?? { resourceType: 'ANY' }), patternType: r === undefined ? 'ANY' : pattern, principal: principal ?? null, operation: op ?? 'ANY' })
      }
    }
  }
  return out
}

const list: Command = {
  name: 'acls list',
  summary: 'list ACLs (all, or those matching the resources, principals and operations given)',
  usage: '',
  options: FILTER_OPTIONS,
  async run(ctx) {
    const admin = ctx.admin()
    const found = new Map<string, AclBinding>()
    for (const f of filters(ctx, ['LITERAL', 'PREFIXED', 'ANY', 'MATCH'])) for (const b of await admin.describeAcls(f)) found.set(JSON.stringify(b), b)
    await print(ctx, [...found.values()])
  },
}

const create: Command = {
  name: 'acls create',
  summary: 'add ACLs: each principal allowed (or denied) each operation on each resource, as kafka-acls.sh --add',
  usage: '',
  options: [
    ...RESOURCE_OPTIONS,
    { name: 'allow-principal', kind: 'list', arg: 'Type:name', help: 'a principal to allow (repeatable)' },
    { name: 'deny-principal', kind: 'list', arg: 'Type:name', help: 'a principal to deny (repeatable)' },
    { name: 'allow-host', kind: 'list', arg: 'HOST', help: "a host the allowed principals may come from (default '*')" },
    { name: 'deny-host', kind: 'list', arg: 'HOST', help: "a host the denied principals are denied from (default '*')" },
    { name: 'operation', kind: 'list', arg: 'OP', help: 'an operation (Read, Write, Create, Delete, Alter, Describe, DescribeConfigs, AlterConfigs, IdempotentWrite, All, ...; repeatable)' },
  ],
  async run(ctx) {
    const res = resources(ctx)
    if (res.length === 0) throw new UsageError('acls create needs a resource: --topic, --group, --transactional-id, --user or --cluster')
    const pattern = patternType(ctx, ['LITERAL', 'PREFIXED']) as 'LITERAL' | 'PREFIXED'
    const allow = principals(ctx, 'allow-principal')
    const deny = principals(ctx, 'deny-principal')
    if (allow.length + deny.length === 0) throw new UsageError('acls create needs --allow-principal or --deny-principal')
    const ops = (ctx.args.lists.get('operation') ?? []).map(operation)
    if (ops.length === 0) throw new UsageError('acls create needs --operation')
    const hosts = (o: string) => ctx.args.lists.get(o) ?? ['*']
    const bindings: AclBinding[] = []
    for (const r of res) {
      for (const op of ops) {
        for (const principal of allow) for (const host of hosts('allow-host')) bindings.push({ ...r, patternType: pattern, principal, host, operation: op, permission: 'ALLOW' })
        for (const principal of deny) for (const host of hosts('deny-host')) bindings.push({ ...r, patternType: pattern, principal, host, operation: op, permission: 'DENY' })
      }
    }
    await ctx.admin().createAcls(bindings)
    ctx.info(`Added ${bindings.length} ACL${bindings.length === 1 ? '' : 's'}.`)
    await print(ctx, bindings)
  },
}

const del: Command = {
  name: 'acls delete',
  summary: 'remove the ACLs matching the resources, principals and operations given (prints what was removed)',
  usage: '',
  options: [...FILTER_OPTIONS, { name: 'all', kind: 'flag', help: 'with no resource, principal or operation: remove every ACL' }],
  async run(ctx) {
    const fs = filters(ctx, ['LITERAL', 'PREFIXED', 'ANY', 'MATCH'])
    const unfiltered = fs.length === 1 && fs[0]!.resourceType === 'ANY' && fs[0]!.principal === null && fs[0]!.operation === 'ANY'
    // kafka-acls.sh asks before removing everything; a script has no one to ask, so it must say --all.
    if (unfiltered && !ctx.args.flags.has('all')) throw new UsageError('acls delete without --topic/--group/--cluster/--principal/--operation removes every ACL: pass --all to mean it')
    const removed = (await ctx.admin().deleteAcls(fs)).flat()
    ctx.info(`Removed ${removed.length} ACL${removed.length === 1 ? '' : 's'}.`)
    await print(ctx, removed)
  },
}

export const aclCommands: Command[] = [list, create, del]
