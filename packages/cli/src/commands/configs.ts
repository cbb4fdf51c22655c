import { ConfigSource, type ConfigResourceType } from '@tidelog/client'
import { exclusive, JSON_FLAG, keyValues } from '../args.js'
import type { Command, Context } from '../context.js'
import { UsageError } from '../errors.js'
import { toJson } from '../output/table.js'

const SOURCE_NAMES = Object.fromEntries(Object.entries(ConfigSource).map(([k, v]) => [v, k])) as Record<number, string>

const ENTITY_OPTIONS = [
  { name: 'entity-type', kind: 'value', arg: 'TYPE', help: 'topics, brokers or groups (with --entity-name)' },
  { name: 'entity-name', kind: 'value', arg: 'NAME', help: 'the topic, broker id or group' },
  { name: 'entity-default', kind: 'flag', help: 'the cluster-wide broker default (with --entity-type brokers)' },
  { name: 'topic', kind: 'value', arg: 'TOPIC', help: 'short for --entity-type topics --entity-name TOPIC' },
  { name: 'broker', kind: 'value', arg: 'ID', help: 'short for --entity-type brokers --entity-name ID' },
  { name: 'broker-defaults', kind: 'flag', help: 'short for --entity-type brokers --entity-default' },
] as const

const TYPES: Record<string, { type: ConfigResourceType; label: string }> = {
  topics: { type: 'topic', label: 'topic' },
  brokers: { type: 'broker', label: 'broker' },
  groups: { type: 'group', label: 'group' },
}

// kafka-configs.sh's ways of naming the entity, and our shorter ones.
function entity(ctx: Context): { type: ConfigResourceType; name: string; label: string } {
  const short = exclusive(ctx.args, ['topic', 'broker', 'broker-defaults', 'entity-type'])
  if (short === 'topic') return { type: 'topic', name: ctx.args.values.get('topic')!, label: `topic ${ctx.args.values.get('topic')}` }
  if (short === 'broker') return { type: 'broker', name: ctx.args.values.get('broker')!, label: `broker ${ctx.args.values.get('broker')}` }
  if (short === 'broker-defaults') return { type: 'broker', name: '', label: 'the default broker' }
  if (short === undefined) throw new UsageError(`${ctx.command.name} needs --topic, --broker, --broker-defaults or --entity-type with --entity-name`)
  const t = TYPES[ctx.args.values.get('entity-type')!]
  if (t === undefined) throw new UsageError(`--entity-type must be topics, brokers or groups, got ${JSON.stringify(ctx.args.values.get('entity-type'))}`)
  if (ctx.args.flags.has('entity-default')) {
    if (t.type !== 'broker') throw new UsageError('--entity-default goes with --entity-type brokers')
    return { type: 'broker', name: '', label: 'the default broker' }
  }
  const name = ctx.args.values.get('entity-name')
  if (name === undefined) throw new UsageError('--entity-type needs --entity-name (or --entity-default)')
  return { type: t.type, name, label: `${t.label} ${name}` }
}

const describeConfigs: Command = {
  name: 'configs describe',
  summary: 'dynamic configs of a topic, broker or group (--all: every config with its source)',
  usage: '',
  options: [...ENTITY_OPTIONS, { name: 'all', kind: 'flag', help: 'every config, defaults included' }, JSON_FLAG],
  async run(ctx) {
    const e = entity(ctx)
    const [r] = await ctx.admin().describeConfigs([{ type: e.type, name: e.name }], { includeSynonyms: true })
    const all = ctx.args.flags.has('all')
    // kafka-configs.sh without --all: only the entries set for this very entity (ConfigCommand's source filter).
    const only =
      e.type === 'topic' ? ConfigSource.DYNAMIC_TOPIC_CONFIG
      : e.type === 'group' ? ConfigSource.GROUP_CONFIG
      : e.name === '' ? ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG
      : ConfigSource.DYNAMIC_BROKER_CONFIG
    const entries = r!.configs.filter((c) => all || c.source === only)
    if (ctx.args.flags.has('json')) {
      return void (await ctx.write(toJson(entries.map((c) => ({ name: c.name, value: c.value, source: SOURCE_NAMES[c.source] ?? String(c.source), sensitive: c.isSensitive, readOnly: c.readOnly }))) + '\n'))
    }
    let out = `${all ? 'All' : 'Dynamic'} configs for ${e.label} are:\n`
    for (const c of entries.sort((a, b) => a.name.localeCompare(b.name))) {
      const synonyms = c.synonyms.map((s) => `${SOURCE_NAMES[s.source] ?? s.source}:${s.name}=${c.isSensitive ? "" : (s.value ?? "null")}`).join(', ')
      out += `  ${c.name}=${c.isSensitive ? '' : (c.value ?? 'null')} sensitive=${c.isSensitive} synonyms={${synonyms}}\n`
    }
    await ctx.write(out)
  },
}

const alterConfigs: Command = {
  name: 'configs alter',
  summary: 'set or delete configs of a topic, broker or group',
  usage: '',
  options: [
    ...ENTITY_OPTIONS,
    { name: 'add-config', kind: 'list', arg: 'K=V[,K=V]', help: 'set configs (list values in [a,b])' },
    { name: 'delete-config', kind: 'list', arg: 'K[,K]', help: 'remove configs, back to their defaults' },
  ],
  async run(ctx) {
    const e = entity(ctx)
    const set = keyValues(ctx.args.lists.get('add-config') ?? [], '--add-config', true)
    const remove = (ctx.args.lists.get('delete-config') ?? []).flatMap((k) => k.split(',')).map((k) => k.trim()).filter((k) => k !== '')
    if (Object.keys(set).length === 0 && remove.length === 0) throw new UsageError('configs alter needs --add-config or --delete-config')
    await ctx.admin().alterConfigs([{ type: e.type, name: e.name, configs: [...Object.entries(set).map(([name, value]) => ({ name, value })), ...remove.map((name) => ({ name, op: 'delete' as const }))] }])
    await ctx.write(`Completed updating config for ${e.label}.\n`)
  },
}

export const configCommands: Command[] = [describeConfigs, alterConfigs]
