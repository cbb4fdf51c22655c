/**
 * Kafka 4.4's own tools change and read configs on the tidelog broker exactly as they do on
 * Apache Kafka 4.4, side by side in this file (one Kafka and one tidelog broker):
 *
 * - kafka-configs.sh (org.apache.kafka.tools.ConfigCommand) --alter --add-config /
 *   --delete-config and --describe for a topic, this broker and the cluster default
 *   (--entity-default): the same output, line for line, and the same refusal for a
 *   read-only broker config;
 * - kafka-topics.sh (TopicCommand) --create --config and --alter --partitions, then --describe;
 * - kafka-configs.sh --entity-type groups (KIP-848 group configs): --alter, --describe --all, a refusal;
 * - kafka-configs.sh --describe --entity-type groups (every group) and kafka-client-metrics.sh --list,
 *   which list config resources with ListConfigResources (KIP-1142);
 * - kafka-log-dirs.sh (LogDirsCommand) --describe: the same JSON shape and partitions;
 * - kafka-topics.sh --create against a tidelog broker with a create.topic.policy module: Kafka's
 *   PolicyViolationException with the policy's message (tidelog only: Kafka's policy is a Java class).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startBroker, type Broker } from '@tidelog/broker'
import { Admin } from '@tidelog/client'
import { KAFKA_VERSIONS, javaTool, peerUnavailable, startKafka, type KafkaNode } from '../helpers/kafka.js'
import { kafkaUse, recordsPeers } from '../helpers/peers.js'

const version = KAFKA_VERSIONS.latest
const CONFIGS = 'org.apache.kafka.tools.ConfigCommand'
const TOPICS = 'org.apache.kafka.tools.TopicCommand'
const LOG_DIRS = 'org.apache.kafka.tools.LogDirsCommand'
const CLIENT_METRICS = 'org.apache.kafka.tools.ClientMetricsCommand'

interface Target {
  name: string
  bootstrap: string
}

/** Runs a tool; a failing run gives its exit output instead of throwing, so refusals can be compared. */
async function tool(main: string, t: Target, args: string[]): Promise<{ ok: boolean; out: string }> {
  try {
    const { stdout } = await javaTool(main, ['--bootstrap-server', t.bootstrap, ...args], { version })
    return { ok: true, out: stdout }
  } catch (e) {
    const err = e as { stdout?: string; stderr?: string; message: string }
    return { ok: false, out: `${err.stdout ?? ''}${err.stderr ?? ''}` || err.message }
  }
}

/** The lines a tool printed that say something (not JVM or log noise), with addresses and ids made neutral. */
function lines(out: string): string[] {
  return out
    .split('\n')
    .map((l) => l.replace(/\s+$/, ''))
    .filter((l) => l !== '' && !/^\[\d{4}-|^WARNING|^SLF4J|^\s+at /.test(l))
    .map((l) => l.replace(/TopicId: \S+/, 'TopicId: <id>'))
}

/**
 * TopicCommand --describe, without what differs for reasons outside configs: Kafka 4.4 (with
 * eligible leader replicas, KIP-966) keeps a cluster-level min.insync.replicas=1 that it lists
 * among every topic's configs, and prints ELR fields from DescribeTopicPartitions, which the
 * tidelog broker does not serve (the tool then prints N/A).
 */
function topicDescribe(out: string): string[] {
  return lines(out).map((l) => l.replace(/Configs: min\.insync\.replicas=1,?/, 'Configs: ').replace(/\tElr: .*$/, ''))
}

describe(`Kafka ${version}'s kafka-configs.sh, kafka-topics.sh and kafka-log-dirs.sh: tidelog answers as Apache Kafka does`, () => {
  let kafka: KafkaNode | undefined
  let broker: Broker
  let dataDir: string
  let skip: string | undefined
  const targets: Target[] = []
  recordsPeers(() => kafkaUse(kafka))

  /** The same command against both at once (two independent brokers); returns [kafka, tidelog]. */
  async function both(main: string, args: string[]) {
    const [k, t] = await Promise.all([tool(main, targets[0]!, args), tool(main, targets[1]!, args)])
    return { kafka: k, tidelog: t }
  }

  beforeAll(async () => {
    try {
      kafka = await startKafka({ version })
    } catch (e) {
      skip = peerUnavailable(`Apache Kafka ${version}`, e) as string
      return
    }
    dataDir = mkdtempSync(join(tmpdir(), 'tidelog-configs-tools-'))
    // The same static settings the Kafka helper writes in server.properties, so synonyms compare equal.
    broker = await startBroker({ port: 0, dataDir, logLevel: 'warn', nodeId: 1, numPartitions: 1 })
    targets.push({ name: 'kafka', bootstrap: kafka.bootstrap }, { name: 'tidelog', bootstrap: `127.0.0.1:${broker.port}` })
  })

  afterAll(async () => {
    await broker?.close()
    await kafka?.stop()
    if (dataDir) rmSync(dataDir, { recursive: true, force: true })
  })

  it('kafka-topics.sh --create --config, --alter --partitions and --describe print the same', async (ctx) => {
    if (skip) return ctx.skip()
    const created = await both(TOPICS, ['--create', '--topic', 'tools', '--partitions', '1', '--config', 'retention.ms=86400000', '--config', 'max.message.bytes=2000000'])
    expect(created.tidelog).toEqual(created.kafka)
    expect(created.kafka.out).toContain('Created topic tools.')
    const altered = await both(TOPICS, ['--alter', '--topic', 'tools', '--partitions', '2'])
    expect(lines(altered.tidelog.out)).toEqual(lines(altered.kafka.out))
    const described = await both(TOPICS, ['--describe', '--topic', 'tools'])
    const kafkaLines = topicDescribe(described.kafka.out)
    expect(kafkaLines[0]).toMatch(/Configs: retention\.ms=86400000,max\.message\.bytes=2000000$/)
    expect(topicDescribe(described.tidelog.out)).toEqual(kafkaLines)
  })

  it('kafka-configs.sh --alter --add-config / --delete-config and --describe of a topic', async (ctx) => {
    if (skip) return ctx.skip()
    const add = await both(CONFIGS, ['--alter', '--entity-type', 'topics', '--entity-name', 'tools', '--add-config', 'segment.ms=600000,cleanup.policy=delete,retention.bytes=10000000'])
    expect(add.tidelog).toEqual(add.kafka)
    expect(add.kafka.out).toContain('Completed updating config for topic tools.')
    const del = await both(CONFIGS, ['--alter', '--entity-type', 'topics', '--entity-name', 'tools', '--delete-config', 'max.message.bytes'])
    expect(del.tidelog).toEqual(del.kafka)
    const described = await both(CONFIGS, ['--describe', '--entity-type', 'topics', '--entity-name', 'tools'])
    expect(lines(described.kafka.out)).toEqual([
      'Dynamic configs for topic tools are:',
      '  cleanup.policy=delete sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:cleanup.policy=delete, DEFAULT_CONFIG:log.cleanup.policy=delete}',
      '  retention.bytes=10000000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:retention.bytes=10000000, DEFAULT_CONFIG:log.retention.bytes=-1}',
      '  retention.ms=86400000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms=86400000}',
      '  segment.ms=600000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:segment.ms=600000}',
    ])
    expect(lines(described.tidelog.out)).toEqual(lines(described.kafka.out))
    // A bad value: both refuse it with Kafka's message.
    const bad = await both(CONFIGS, ['--alter', '--entity-type', 'topics', '--entity-name', 'tools', '--add-config', 'retention.ms=soon'])
    expect(bad.kafka.ok).toBe(false)
    expect(bad.tidelog.ok).toBe(false)
    const why = (out: string) => lines(out).find((l) => l.includes('Invalid value'))
    expect(why(bad.kafka.out)).toContain('Invalid value soon for configuration retention.ms: Not a number of type LONG')
    expect(why(bad.tidelog.out)).toEqual(why(bad.kafka.out))
  })

  it('kafka-configs.sh on the broker and the cluster default: dynamic configs, their synonyms, and a read-only refusal', async (ctx) => {
    if (skip) return ctx.skip()
    const node = await both(CONFIGS, ['--alter', '--entity-type', 'brokers', '--entity-name', '1', '--add-config', 'log.retention.ms=7200000,message.max.bytes=3000000'])
    expect(node.tidelog).toEqual(node.kafka)
    expect(node.kafka.out).toContain('Completed updating config for broker 1.')
    const dflt = await both(CONFIGS, ['--alter', '--entity-type', 'brokers', '--entity-default', '--add-config', 'message.max.bytes=2000000,log.segment.bytes=4194304'])
    expect(dflt.tidelog).toEqual(dflt.kafka)
    expect(dflt.kafka.out).toContain('Completed updating default config for brokers in the cluster.')

    const describedNode = await both(CONFIGS, ['--describe', '--entity-type', 'brokers', '--entity-name', '1'])
    expect(lines(describedNode.kafka.out)).toEqual([
      'Dynamic configs for broker 1 are:',
      '  log.retention.ms=7200000 sensitive=false synonyms={DYNAMIC_BROKER_CONFIG:log.retention.ms=7200000, DEFAULT_CONFIG:log.retention.hours=168}',
      '  message.max.bytes=3000000 sensitive=false synonyms={DYNAMIC_BROKER_CONFIG:message.max.bytes=3000000, DYNAMIC_DEFAULT_BROKER_CONFIG:message.max.bytes=2000000, DEFAULT_CONFIG:message.max.bytes=1048588}',
    ])
    expect(lines(describedNode.tidelog.out)).toEqual(lines(describedNode.kafka.out))
    const describedDefault = await both(CONFIGS, ['--describe', '--entity-type', 'brokers', '--entity-default'])
    // Less the cluster-level min.insync.replicas=1 Kafka 4.4 keeps for ELR (see topicDescribe).
    const kafkaDefault = lines(describedDefault.kafka.out).filter((l) => !l.startsWith('  min.insync.replicas=1 '))
    expect(lines(describedDefault.tidelog.out)).toEqual(kafkaDefault)
    expect(lines(describedDefault.kafka.out)).toContain('  log.segment.bytes=4194304 sensitive=false synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:log.segment.bytes=4194304}')

    // A topic without its own value follows them: the topic --describe --all shows it.
    const all = await both(CONFIGS, ['--describe', '--all', '--entity-type', 'topics', '--entity-name', 'tools'])
    const seg = (out: string) => lines(out).find((l) => l.startsWith('  segment.bytes='))
    expect(seg(all.kafka.out)).toBe('  segment.bytes=4194304 sensitive=false synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:log.segment.bytes=4194304, DEFAULT_CONFIG:log.segment.bytes=1073741824}')
    expect(seg(all.tidelog.out)).toEqual(seg(all.kafka.out))
    const ret = (out: string) => lines(out).find((l) => l.startsWith('  retention.ms='))
    expect(ret(all.tidelog.out)).toEqual(ret(all.kafka.out))
    const mmb = (out: string) => lines(out).find((l) => l.startsWith('  max.message.bytes='))
    expect(mmb(all.tidelog.out)).toEqual(mmb(all.kafka.out))

    const deleted = await both(CONFIGS, ['--alter', '--entity-type', 'brokers', '--entity-name', '1', '--delete-config', 'log.retention.ms'])
    expect(deleted.tidelog).toEqual(deleted.kafka)
    const after = await both(CONFIGS, ['--describe', '--entity-type', 'brokers', '--entity-name', '1'])
    expect(lines(after.tidelog.out)).toEqual(lines(after.kafka.out))

    const readOnly = await both(CONFIGS, ['--alter', '--entity-type', 'brokers', '--entity-name', '1', '--add-config', 'num.partitions=3'])
    expect([readOnly.kafka.ok, readOnly.tidelog.ok]).toEqual([false, false])
    const why = (out: string) => lines(out).find((l) => l.includes('Cannot update these configs dynamically'))
    expect(why(readOnly.kafka.out)).toContain('Cannot update these configs dynamically: [num.partitions]')
    expect(why(readOnly.tidelog.out)).toEqual(why(readOnly.kafka.out))
  })

  it('kafka-configs.sh --entity-type groups: --alter, --describe (with --all) and a refusal print the same (KIP-848 group configs)', async (ctx) => {
    if (skip) return ctx.skip()
    const group = ['--entity-type', 'groups', '--entity-name', 'tools-group']
    const add = await both(CONFIGS, ['--alter', ...group, '--add-config', 'consumer.session.timeout.ms=50000,share.auto.offset.reset=earliest'])
    expect(add.tidelog).toEqual(add.kafka)
    expect(add.kafka.out).toContain('Completed updating config for group tools-group.')
    // Every public group config, the group's own values first in their synonyms, line for line.
    const all = await both(CONFIGS, ['--describe', '--all', ...group])
    expect(lines(all.kafka.out)).toEqual(expect.arrayContaining([
      'All configs for group tools-group are:',
      '  consumer.session.timeout.ms=50000 sensitive=false synonyms={DYNAMIC_GROUP_CONFIG:consumer.session.timeout.ms=50000, DEFAULT_CONFIG:group.consumer.session.timeout.ms=45000}',
      '  share.auto.offset.reset=earliest sensitive=false synonyms={DYNAMIC_GROUP_CONFIG:share.auto.offset.reset=earliest, DEFAULT_CONFIG:share.auto.offset.reset=latest}',
      '  streams.assignor.name=sticky sensitive=false synonyms={DEFAULT_CONFIG:group.streams.assignors=sticky}',
    ]))
    expect(lines(all.tidelog.out)).toEqual(lines(all.kafka.out))
    // Below the broker's group.consumer.min.session.timeout.ms: the same refusal.
    const bad = await both(CONFIGS, ['--alter', ...group, '--add-config', 'consumer.session.timeout.ms=1000'])
    expect([bad.kafka.ok, bad.tidelog.ok]).toEqual([false, false])
    const why = (out: string) => lines(out).find((l) => l.startsWith('Caused by'))
    expect(why(bad.kafka.out)).toBe('Caused by: org.apache.kafka.common.errors.InvalidConfigurationException: consumer.session.timeout.ms must be in the range 45000 to 60000 inclusive.')
    expect(why(bad.tidelog.out)).toEqual(why(bad.kafka.out))
  })

  it('kafka-configs.sh --describe --entity-type groups lists groups that only have configs, and kafka-client-metrics.sh --list works (ListConfigResources, KIP-1142)', async (ctx) => {
    if (skip) return ctx.skip()
    // A group nobody joined is known only as a config resource: without ListConfigResources v1
    // the tool (which falls back to ListGroups) would not list it.
    // Set and listed by @tidelog/client's Admin on both (no JVM): the same resources from both brokers.
    const admins = targets.map((t) => new Admin({ brokers: [t.bootstrap] }))
    try {
      const resources = await Promise.all(
        admins.map(async (admin) => {
          await admin.incrementalAlterConfigs([{ type: 'group', name: 'config-only-group', configs: [{ name: 'consumer.heartbeat.interval.ms', value: '6000' }] }])
          const listed = await admin.listConfigResources(['group', 'broker', 'broker-logger'])
          return listed.map((r) => `${r.type}:${r.name}`).sort()
        }),
      )
      expect(resources[0]).toEqual(expect.arrayContaining(['group:config-only-group', 'broker:1', 'broker-logger:1']))
      expect(resources[1]).toEqual(resources[0])
    } finally {
      await Promise.all(admins.map((a) => a.close()))
    }
    const listed = await both(CONFIGS, ['--describe', '--entity-type', 'groups'])
    expect([listed.kafka.ok, listed.tidelog.ok]).toEqual([true, true])
    // One block per group; Kafka lists its config resources in hash order, so blocks are compared by group.
    const blocks = (out: string) => {
      const byHeader = new Map<string, string[]>()
      let current: string[] = []
      for (const l of lines(out)) {
        if (l.startsWith(' ')) current.push(l)
        else byHeader.set(l, (current = []))
      }
      return byHeader
    }
    expect(blocks(listed.kafka.out).get('Dynamic configs for group config-only-group are:')).toEqual([
      '  consumer.heartbeat.interval.ms=6000 sensitive=false synonyms={DYNAMIC_GROUP_CONFIG:consumer.heartbeat.interval.ms=6000, DEFAULT_CONFIG:group.consumer.heartbeat.interval.ms=5000}',
    ])
    expect(blocks(listed.tidelog.out)).toEqual(blocks(listed.kafka.out))
    // No client-metrics subscription exists on either: the same empty list, not an UnsupportedVersionException.
    const metrics = await both(CLIENT_METRICS, ['--list'])
    expect(metrics.kafka).toEqual({ ok: true, out: expect.any(String) })
    expect(lines(metrics.tidelog.out)).toEqual(lines(metrics.kafka.out))
    expect(metrics.tidelog.ok).toBe(true)
  })

  it('kafka-topics.sh --create refused by a create.topic.policy module prints Kafka\'s PolicyViolationException with its message', async (ctx) => {
    if (skip) return ctx.skip()
    const policy = join(dataDir, '..', `${dataDir.split('/').pop()}-policy.mjs`)
    writeFileSync(policy, "export default { validate(md) { if (md.numPartitions > 2) { const e = new Error(md.topic + ': at most 2 partitions'); e.name = 'PolicyViolationError'; throw e } } }\n")
    const guarded = await startBroker({ port: 0, dataDir: `${dataDir}-policy`, logLevel: 'warn', createTopicPolicyClassName: policy })
    try {
      const r = await tool(TOPICS, { name: 'tidelog-policy', bootstrap: `127.0.0.1:${guarded.port}` }, ['--create', '--topic', 'wide', '--partitions', '3'])
      expect(r.ok).toBe(false)
      expect(lines(r.out)).toContain('Error while executing topic command : wide: at most 2 partitions')
      expect(r.out).toContain('org.apache.kafka.common.errors.PolicyViolationException: wide: at most 2 partitions')
    } finally {
      await guarded.close()
      rmSync(`${dataDir}-policy`, { recursive: true, force: true })
      rmSync(policy, { force: true })
    }
  })

  it('kafka-log-dirs.sh --describe prints the same JSON shape and partitions', async (ctx) => {
    if (skip) return ctx.skip()
    const r = await both(LOG_DIRS, ['--describe', '--topic-list', 'tools'])
    const parse = (out: string) => {
      const json = lines(out).find((l) => l.startsWith('{'))
      expect(json, out).toBeDefined()
      return JSON.parse(json!) as { version: number; brokers: { broker: number; logDirs: { logDir: string; error: string | null; partitions: { partition: string; size: number; offsetLag: number; isFuture: boolean }[] }[] }[] }
    }
    const k = parse(r.kafka.out)
    const t = parse(r.tidelog.out)
    const shape = (x: typeof k) => ({
      version: x.version,
      brokers: x.brokers.map((b) => ({
        broker: b.broker,
        logDirs: b.logDirs.map((d) => ({
          keys: Object.keys(d).sort(),
          error: d.error,
          partitions: d.partitions.map((p) => ({ partition: p.partition, offsetLag: p.offsetLag, isFuture: p.isFuture, keys: Object.keys(p).sort() })).sort((a, b) => (a.partition < b.partition ? -1 : 1)),
        })),
      })),
    })
    expect(shape(t)).toEqual(shape(k))
    expect(shape(k).brokers[0]!.logDirs[0]!.partitions.map((p) => p.partition)).toEqual(['tools-0', 'tools-1'])
    expect(t.brokers[0]!.logDirs[0]!.logDir).toBe(broker.dataDir)
    expect(lines(r.tidelog.out).slice(0, 2)).toEqual(lines(r.kafka.out).slice(0, 2))
  })
})
