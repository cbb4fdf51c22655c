import type { Admin, GroupDescription, GroupOffset, PartitionOffset } from '@tidelog/client'
import { exclusive, JSON_FLAG, parseBigInt, parseInteger } from '../args.js'
import type { Command, Context } from '../context.js'
import { CliError, UsageError } from '../errors.js'
import { table, toJson } from '../output/table.js'
import { parseTime } from './consume.js'

function groupArg(ctx: Context): string[] {
  const ids = [...(ctx.args.lists.get('group') ?? []), ...ctx.args.positionals]
  if (ids.length === 0) throw new UsageError(`${ctx.command.name} needs a group id`)
  return ids
}

async function describeExisting(admin: Admin, id: string): Promise<GroupDescription> {
  const [g] = await admin.describeGroups([id])
  // Kafka answers an unknown group as Dead with no members, and its tool says so in words.
  if (g === undefined || (g.state === 'Dead' && g.members.length === 0)) throw new CliError(`GROUP_ID_NOT_FOUND: consumer group '${id}' does not exist`, "check the name with 'tidelog groups list'")
  return g
}

const list: Command = {
  name: 'groups list',
  summary: 'list consumer groups',
  usage: '',
  options: [{ name: 'state', kind: 'flag', help: 'show each group\'s state too' }, JSON_FLAG],
  async run(ctx) {
    const groups = (await ctx.admin().listGroups()).sort((a, b) => a.groupId.localeCompare(b.groupId))
    if (ctx.args.flags.has('json')) return void (await ctx.write(toJson(groups) + '\n'))
    if (ctx.args.flags.has('state')) return void (await ctx.write(table(['GROUP', 'STATE'], groups.map((g) => [g.groupId, g.state || '-']))))
    await ctx.write(groups.map((g) => `${g.groupId}\n`).join(''))
  },
}

interface LagRow {
  group: string
  topic: string
  partition: number
  currentOffset: bigint | null
  logEndOffset: bigint
  lag: bigint | null
  consumerId: string | null
  host: string | null
  clientId: string | null
}

async function lagRows(admin: Admin, g: GroupDescription): Promise<LagRow[]> {
  const owner = new Map<string, GroupDescription['members'][number]>()
  for (const m of g.members) for (const tp of m.memberAssignment?.assignedPartitions ?? []) for (const p of tp.partitions) owner.set(`${tp.topic}:${p}`, m)
  const committed = await admin.fetchOffsets(g.groupId)
  const keys = new Map<string, { topic: string; partition: number }>()
  for (const o of committed) if (o.offset >= 0n) keys.set(`${o.topic}:${o.partition}`, o)
  for (const k of owner.keys()) {
    const at = k.lastIndexOf(':')
    keys.set(k, { topic: k.slice(0, at), partition: Number(k.slice(at + 1)) })
  }
  const tps = [...keys.values()].sort((a, b) => a.topic.localeCompare(b.topic) || a.partition - b.partition)
  const ends = tps.length === 0 ? [] : await admin.listOffsets(tps.map((tp) => ({ ...tp, timestamp: 'latest' as const })))
  const endOf = new Map(ends.map((e) => [`${e.topic}:${e.partition}`, e.offset]))
  const offsetOf = new Map(committed.map((o) => [`${o.topic}:${o.partition}`, o.offset]))
  return tps.map((tp) => {
    const k = `${tp.topic}:${tp.partition}`
    const cur = offsetOf.get(k)
    const current = cur === undefined || cur < 0n ? null : cur
    const end = endOf.get(k) ?? -1n
    const m = owner.get(k)
    return {
      group: g.groupId,
      ...tp,
      currentOffset: current,
      logEndOffset: end,
      lag: current === null ? null : end - current > 0n ? end - current : 0n,
      consumerId: m?.memberId ?? null,
      host: m?.clientHost ?? null,
      clientId: m?.clientId ?? null,
    }
  })
}

const dash = (v: unknown) => (v === null || v === undefined || v === '' ? '-' : String(v))

const describe: Command = {
  name: 'groups describe',
  summary: 'a group\'s offsets and lag per partition (or --members, --state), as kafka-consumer-groups.sh --describe',
  usage: 'GROUP...',
  options: [
    { name: 'group', kind: 'list', arg: 'GROUP', help: 'a group (repeatable; or give ids as arguments)' },
    { name: 'members', kind: 'flag', help: 'one row per member instead' },
    { name: 'state', kind: 'flag', help: 'the group\'s state, assignor and member count instead' },
    JSON_FLAG,
  ],
  async run(ctx) {
    const view = exclusive(ctx.args, ['members', 'state']) ?? 'offsets'
    const admin = ctx.admin()
    for (const id of groupArg(ctx)) {
      const g = await describeExisting(admin, id)
      if (view === 'state') {
        const coordinator = (await admin.cluster.findCoordinators([id])).get(id)
        const coord = coordinator instanceof Error || coordinator === undefined ? '-' : `${coordinator.host}:${coordinator.port} (${coordinator.nodeId})`
        if (ctx.args.flags.has('json')) await ctx.write(toJson({ group: id, coordinator: coord, assignmentStrategy: g.protocol, state: g.state, members: g.members.length }) + '\n')
        else await ctx.write(table(['GROUP', 'COORDINATOR (ID)', 'ASSIGNMENT-STRATEGY', 'STATE', '#MEMBERS'], [[id, coord, dash(g.protocol), g.state, g.members.length]]))
        continue
      }
      if (view === 'members') {
        const rows = g.members.map((m) => ({ group: id, consumerId: m.memberId, groupInstanceId: m.groupInstanceId, host: m.clientHost, clientId: m.clientId, partitions: (m.memberAssignment?.assignedPartitions ?? []).reduce((n, tp) => n + tp.partitions.length, 0) }))
        if (ctx.args.flags.has('json')) await ctx.write(toJson(rows) + '\n')
        else if (rows.length === 0) await ctx.write(`Consumer group '${id}' has no active members.\n`)
        else await ctx.write(table(['GROUP', 'CONSUMER-ID', 'GROUP-INSTANCE-ID', 'HOST', 'CLIENT-ID', '#PARTITIONS'], rows.map((r) => [r.group, r.consumerId, dash(r.groupInstanceId), r.host, r.clientId, r.partitions])))
        continue
      }
      const rows = await lagRows(admin, g)
      if (ctx.args.flags.has('json')) {
        await ctx.write(toJson({ group: id, state: g.state, partitions: rows }) + '\n')
        continue
      }
      if (g.members.length === 0) await ctx.write(`Consumer group '${id}' has no active members.\n\n`)
      await ctx.write(
        table(
          ['GROUP', 'TOPIC', 'PARTITION', 'CURRENT-OFFSET', 'LOG-END-OFFSET', 'LAG', 'CONSUMER-ID', 'HOST', 'CLIENT-ID'],
          rows.map((r) => [r.group, r.topic, r.partition, dash(r.currentOffset), r.logEndOffset, dash(r.lag), dash(r.consumerId), dash(r.host), dash(r.clientId)]),
        ),
      )
    }
  },
}

// ISO-8601 durations as kafka-consumer-groups.sh's --by-duration takes them: PnDTnHnMnS.
export function parseDuration(v: string): number {
  const m = /^P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?$/i.exec(v.trim())
  if (m === null || v.trim().toUpperCase() === 'P' || v.trim().toUpperCase().endsWith('T')) throw new UsageError(`--by-duration must be an ISO-8601 duration like PT1H or P1DT30M, got ${JSON.stringify(v)}`)
  const [, d, h, min, s] = m
  return ((Number(d ?? 0) * 24 + Number(h ?? 0)) * 60 + Number(min ?? 0)) * 60_000 + Number(s ?? 0) * 1000
}

const RESET_SPECS = ['to-earliest', 'to-latest', 'to-current', 'to-offset', 'shift-by', 'to-datetime', 'by-duration'] as const

async function targets(ctx: Context, admin: Admin, group: string): Promise<{ topic: string; partition: number }[]> {
  const scope = exclusive(ctx.args, ['topic', 'all-topics'])
  if (scope === undefined) throw new UsageError('reset-offsets needs --topic TOPIC[:P,P...] or --all-topics')
  if (scope === 'all-topics') {
    const committed = await admin.fetchOffsets(group)
    return committed.filter((o) => o.offset >= 0n).map(({ topic, partition }) => ({ topic, partition }))
  }
  const out: { topic: string; partition: number }[] = []
  for (const t of ctx.args.lists.get('topic')!) {
    const [name, parts] = t.split(':') as [string, string | undefined]
    const described = (await admin.describeTopics([name]))[0]!
    const all = described.partitions.map((p) => p.partition)
    const wanted = parts === undefined ? all : parts.split(',').map((p) => parseInteger(p, `--topic ${t}`, { min: 0 }))
    for (const p of wanted) {
      if (!all.includes(p)) throw new UsageError(`--topic ${t}: ${name} has no partition ${p}`)
      out.push({ topic: name, partition: p })
    }
  }
  return out
}

async function plan(ctx: Context, admin: Admin, group: string, tps: { topic: string; partition: number }[]): Promise<GroupOffset[]> {
  const spec = exclusive(ctx.args, RESET_SPECS)
  if (spec === undefined) throw new UsageError(`reset-offsets needs one of ${RESET_SPECS.map((s) => `--${s}`).join(', ')}`)
  const lookup = (timestamp: 'earliest' | 'latest' | number) => admin.listOffsets(tps.map((tp) => ({ ...tp, timestamp })))
  const key = (o: { topic: string; partition: number }) => `${o.topic}:${o.partition}`
  const [earliest, latest] = await Promise.all([lookup('earliest'), lookup('latest')])
  const lo = new Map(earliest.map((o) => [key(o), o.offset]))
  const hi = new Map(latest.map((o) => [key(o), o.offset]))
  // Kafka clamps a target outside the log to its nearest end (a warning in its tool, here silently in range).
  const clamp = (tp: { topic: string; partition: number }, o: bigint) => (o < lo.get(key(tp))! ? lo.get(key(tp))! : o > hi.get(key(tp))! ? hi.get(key(tp))! : o)
  let offsets: bigint[]
  const committed = async () => new Map((await admin.fetchOffsets(group, [...new Set(tps.map((t) => t.topic))])).map((o) => [key(o), o.offset]))
  switch (spec) {
    case 'to-earliest':
      offsets = tps.map((tp) => lo.get(key(tp))!)
      break
    case 'to-latest':
      offsets = tps.map((tp) => hi.get(key(tp))!)
      break
    case 'to-offset': {
      const n = parseBigInt(ctx.args.values.get('to-offset')!, '--to-offset')
      offsets = tps.map((tp) => clamp(tp, n))
      break
    }
    case 'to-current':
    case 'shift-by': {
      const cur = await committed()
      const by = spec === 'shift-by' ? parseBigInt(ctx.args.values.get('shift-by')!, '--shift-by') : 0n
      offsets = tps.map((tp) => {
        const c = cur.get(key(tp))
        if (c === undefined || c < 0n) {
          if (spec === 'to-current') return hi.get(key(tp))!
          throw new CliError(`cannot shift the offset of ${key(tp)}: group '${group}' has no committed offset there`, 'reset it with --to-earliest or --to-latest first')
        }
        return clamp(tp, c + by)
      })
      break
    }
    case 'to-datetime':
    case 'by-duration': {
      const ms = spec === 'to-datetime' ? parseTime(ctx.args.values.get('to-datetime')!, '--to-datetime') : Date.now() - parseDuration(ctx.args.values.get('by-duration')!)
      const found: PartitionOffset[] = await lookup(ms)
      // No record at or after the time: the end, as Kafka's tool does.
      offsets = found.map((o) => (o.offset < 0n ? hi.get(key(o))! : o.offset))
      break
    }
  }
  return tps.map((tp, i) => ({ ...tp, offset: offsets[i]!, leaderEpoch: -1, metadata: null }))
}

const resetOffsets: Command = {
  name: 'groups reset-offsets',
  summary: "move an inactive group's offsets (--dry-run shows the plan, --execute applies it)",
  usage: 'GROUP',
  options: [
    { name: 'group', kind: 'list', arg: 'GROUP', help: 'the group (or give it as an argument)' },
    { name: 'topic', short: 't', kind: 'list', arg: 'TOPIC[:P,...]', help: 'a topic, or some of its partitions (repeatable)' },
    { name: 'all-topics', kind: 'flag', help: 'every topic the group has committed offsets for' },
    { name: 'to-earliest', kind: 'flag', help: 'to the log start' },
    { name: 'to-latest', kind: 'flag', help: 'to the log end' },
    { name: 'to-current', kind: 'flag', help: 'to the committed offset (the log end where none)' },
    { name: 'to-offset', kind: 'value', arg: 'N', help: 'to offset N (kept within the log)' },
    { name: 'shift-by', kind: 'value', arg: 'N', help: 'by N from the committed offset (negative: back)' },
    { name: 'to-datetime', kind: 'value', arg: 'TIME', help: "to the first record at or after TIME ('YYYY-MM-DDTHH:mm:SS.sss', ms)" },
    { name: 'by-duration', kind: 'value', arg: 'DURATION', help: 'to the first record at or after now minus DURATION (PnDTnHnMnS)' },
    { name: 'dry-run', kind: 'flag', help: 'show the new offsets only (the default)' },
    { name: 'execute', kind: 'flag', help: 'commit the new offsets' },
    JSON_FLAG,
  ],
  async run(ctx) {
    const ids = groupArg(ctx)
    if (ids.length > 1) throw new UsageError('reset-offsets takes one group')
    const group = ids[0]!
    const mode = exclusive(ctx.args, ['dry-run', 'execute'])
    const admin = ctx.admin()
    const [g] = await admin.describeGroups([group])
    if (g !== undefined && g.state !== 'Empty' && g.state !== 'Dead') {
      throw new CliError(`assignments can only be reset if the group '${group}' is inactive, but the current state is ${g.state}`, "stop the group's consumers first")
    }
    const tps = await targets(ctx, admin, group)
    const offsets = await plan(ctx, admin, group, tps)
    if (mode === undefined) ctx.info('WARN: no action was performed as --execute is missing; showing the plan (pass --dry-run to say so)')
    if (mode === 'execute' && offsets.length > 0) await admin.alterOffsets(group, offsets.map(({ topic, partition, offset }) => ({ topic, partition, offset })))
    if (ctx.args.flags.has('json')) await ctx.write(toJson(offsets.map(({ topic, partition, offset }) => ({ group, topic, partition, newOffset: offset }))) + '\n')
    else await ctx.write(table(['GROUP', 'TOPIC', 'PARTITION', 'NEW-OFFSET'], offsets.map((o) => [group, o.topic, o.partition, o.offset])))
  },
}

const del: Command = {
  name: 'groups delete',
  summary: 'delete inactive groups and their committed offsets',
  usage: 'GROUP...',
  options: [{ name: 'group', kind: 'list', arg: 'GROUP', help: 'a group (repeatable; or give ids as arguments)' }],
  async run(ctx) {
    const ids = groupArg(ctx)
    await ctx.admin().deleteGroups(ids)
    await ctx.write(`Deletion of requested consumer groups (${ids.map((i) => `'${i}'`).join(', ')}) was successful.\n`)
  },
}

export const groupCommands: Command[] = [list, describe, resetOffsets, del]
