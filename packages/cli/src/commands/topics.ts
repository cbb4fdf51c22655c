import { ConfigSource } from '@tidelog/client'
import { ProtocolError } from '@tidelog/protocol'
import { intValue, JSON_FLAG, keyValues } from '../args.js'
import type { Command, Context } from '../context.js'
import { UsageError } from '../errors.js'
import { toJson } from '../output/table.js'

function topicsArg(ctx: Context, atLeast = 1): string[] {
  const names = [...(ctx.args.lists.get('topic') ?? []), ...ctx.args.positionals]
  if (names.length < atLeast) throw new UsageError(`${ctx.command.name} needs a topic name`)
  return names
}

/** Swallows one Kafka error code for --if-exists / --if-not-exists, as kafka-topics.sh does. */
async function unless(p: Promise<unknown>, type: string): Promise<boolean> {
  try {
    await p
    return true
  } catch (e) {
    const inner = e instanceof ProtocolError ? [e] : ((e as { errors?: unknown[] }).errors ?? [])
    if (inner.length > 0 && inner.every((x) => x instanceof ProtocolError && x.type === type)) return false
    throw e
  }
}

const list: Command = {
  name: 'topics list',
  summary: 'list topic names',
  usage: '',
  options: [{ name: 'exclude-internal', kind: 'flag', help: 'leave out internal topics (__consumer_offsets, ...)' }, JSON_FLAG],
  async run(ctx) {
    const names = (await ctx.admin().listTopics({ includeInternal: !ctx.args.flags.has('exclude-internal') })).sort()
    await ctx.write(ctx.args.flags.has('json') ? toJson(names) + '\n' : names.map((n) => `${n}\n`).join(''))
  },
}

const describe: Command = {
  name: 'topics describe',
  summary: 'partitions, leaders, replicas and overridden configs of topics (all by default)',
  usage: '[TOPIC...]',
  options: [{ name: 'topic', kind: 'list', arg: 'TOPIC', help: 'a topic (repeatable; or give names as arguments)' }, JSON_FLAG],
  async run(ctx) {
    const admin = ctx.admin()
    let names = topicsArg(ctx, 0)
    if (names.length === 0) names = (await admin.listTopics()).sort()
    if (names.length === 0) return
    const [topics, configs] = await Promise.all([
      admin.describeTopics(names),
      admin.describeConfigs(names.map((name) => ({ type: 'topic' as const, name }))),
    ])
    // Every config not at its built-in default, as TopicCommand filters (`!isDefault()`): a topic
    // override and a broker-wide setting the topic inherits alike.
    const overrides = new Map(configs.map((c) => [c.name, Object.fromEntries(c.configs.filter((e) => e.source !== ConfigSource.DEFAULT_CONFIG).map((e) => [e.name, e.value]))]))
    if (ctx.args.flags.has('json')) {
      await ctx.write(toJson(topics.map((t) => ({ ...t, configs: overrides.get(t.name) ?? {} }))) + '\n')
      return
    }
    // kafka-topics.sh --describe's layout, so scripts written for it keep working.
    let out = ''
    for (const t of topics) {
      const cfg = Object.entries(overrides.get(t.name) ?? {}).map(([k, v]) => `${k}=${v ?? ''}`).join(',')
      out += `Topic: ${t.name}\tTopicId: ${t.topicId}\tPartitionCount: ${t.partitions.length}\tReplicationFactor: ${t.partitions[0]?.replicas.length ?? 0}\tConfigs: ${cfg}\n`
      for (const p of t.partitions) {
        out += `\tTopic: ${t.name}\tPartition: ${p.partition}\tLeader: ${p.leader < 0 ? 'none' : p.leader}\tReplicas: ${p.replicas.join(',')}\tIsr: ${p.isr.join(',')}\n`
      }
    }
    await ctx.write(out)
  },
}

const create: Command = {
  name: 'topics create',
  summary: 'create topics',
  usage: 'TOPIC...',
  options: [
    { name: 'topic', kind: 'list', arg: 'TOPIC', help: 'a topic (repeatable; or give names as arguments)' },
    { name: 'partitions', kind: 'value', arg: 'N', help: "partition count (default: the broker's num.partitions)" },
    { name: 'replication-factor', kind: 'value', arg: 'N', help: "replicas per partition (default: the broker's default.replication.factor)" },
    { name: 'config', short: 'c', kind: 'list', arg: 'KEY=VALUE', help: 'a topic config (repeatable)' },
    { name: 'if-not-exists', kind: 'flag', help: 'succeed if the topic exists' },
  ],
  async run(ctx) {
    const names = topicsArg(ctx)
    const partitions = intValue(ctx.args, 'partitions', { min: 1 })
    const replicationFactor = intValue(ctx.args, 'replication-factor', { min: 1, max: 32767 })
    const configs = keyValues(ctx.args.lists.get('config') ?? [], '--config')
    const admin = ctx.admin()
    for (const name of names) {
      const created = await (ctx.args.flags.has('if-not-exists')
        ? unless(admin.createTopics([{ name, partitions, replicationFactor, configs }]), 'TOPIC_ALREADY_EXISTS')
        : admin.createTopics([{ name, partitions, replicationFactor, configs }]).then(() => true))
      await ctx.write(created ? `Created topic ${name}.\n` : `Topic ${name} already exists.\n`)
    }
  },
}

const del: Command = {
  name: 'topics delete',
  summary: 'delete topics and their data',
  usage: 'TOPIC...',
  options: [
    { name: 'topic', kind: 'list', arg: 'TOPIC', help: 'a topic (repeatable; or give names as arguments)' },
    { name: 'if-exists', kind: 'flag', help: 'succeed if the topic does not exist' },
  ],
  async run(ctx) {
    const names = topicsArg(ctx)
    const admin = ctx.admin()
    for (const name of names) {
      const deleted = await (ctx.args.flags.has('if-exists')
        ? unless(admin.deleteTopics([name]), 'UNKNOWN_TOPIC_OR_PARTITION')
        : admin.deleteTopics([name]).then(() => true))
      await ctx.write(deleted ? `Deleted topic ${name}.\n` : `Topic ${name} does not exist.\n`)
    }
  },
}

const alter: Command = {
  name: 'topics alter',
  summary: 'add partitions, set or delete topic configs',
  usage: 'TOPIC',
  options: [
    { name: 'topic', kind: 'list', arg: 'TOPIC', help: 'the topic (or give it as an argument)' },
    { name: 'partitions', kind: 'value', arg: 'N', help: 'the new, larger partition count' },
    { name: 'config', short: 'c', kind: 'list', arg: 'KEY=VALUE', help: 'set a topic config (repeatable)' },
    { name: 'delete-config', kind: 'list', arg: 'KEY', help: "remove a topic override, back to the broker's value (repeatable)" },
  ],
  async run(ctx) {
    const names = topicsArg(ctx)
    const partitions = intValue(ctx.args, 'partitions', { min: 1 })
    const set = keyValues(ctx.args.lists.get('config') ?? [], '--config')
    const remove = ctx.args.lists.get('delete-config') ?? []
    if (partitions === undefined && Object.keys(set).length === 0 && remove.length === 0) {
      throw new UsageError('topics alter needs --partitions, --config or --delete-config')
    }
    const admin = ctx.admin()
    for (const name of names) {
      if (partitions !== undefined) await admin.createPartitions([{ topic: name, count: partitions }])
      const configs = [...Object.entries(set).map(([k, value]) => ({ name: k, value, op: 'set' as const })), ...remove.map((k) => ({ name: k, op: 'delete' as const }))]
      if (configs.length > 0) await admin.incrementalAlterConfigs([{ type: 'topic', name, configs }])
      await ctx.write(`Altered topic ${name}.\n`)
    }
  },
}

export const topicCommands: Command[] = [list, describe, create, del, alter]
