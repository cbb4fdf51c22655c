import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { writeFileAtomicSync } from './log/checkpoint.js'
import { DurableFile } from './durable-file.js'
import { UnsupportedFormatError } from './log/errors.js'
import type { LogManager } from './log/index.js'
import type { Logger } from './logger.js'
import { type Kind, parse } from './topic-config-values.js'
import { type DynamicLayers, checkBrokerTopicDefault, topicConfigOfBrokerName } from './topic-config.js'

export const DYNAMIC_CONFIGS_FILE = 'dynamic-configs.json'
/** The dynamic-configs.json layout this release writes; a newer one stops startup, as topics.json does. */
export const DYNAMIC_CONFIGS_FORMAT_VERSION = 1

// Kafka 4.4's DynamicBrokerConfig.ALL_DYNAMIC_CONFIGS, besides the broker-level synonyms of
// topic configs (log.retention.ms, message.max.bytes, ...: topic-config.ts). Every one of
// these can be changed without a restart on Kafka; here they are accepted and stored so
// kafka-configs.sh scripts work, and only the topic-config synonyms change what the broker
// does (README, "Dynamic broker configs").
const OTHER_DYNAMIC = [
  'background.threads', 'config.providers', 'cordoned.log.dirs', 'errors.deadletterqueue.auto.create.topics.enable',
  'errors.deadletterqueue.topic.name.prefix', 'follower.fetch.last.tiered.offset.enable', 'follower.replication.throttled.rate',
  'group.consumer.assignment.interval.ms', 'group.consumer.assignor.offload.enable', 'group.coordinator.cached.buffer.max.bytes',
  'group.share.assignment.interval.ms', 'group.share.assignor.offload.enable', 'group.streams.assignment.interval.ms',
  'group.streams.assignor.offload.enable', 'leader.replication.throttled.rate', 'listener.security.protocol.map', 'listeners',
  'log.cleaner.backoff.ms', 'log.cleaner.dedupe.buffer.size', 'log.cleaner.io.buffer.load.factor', 'log.cleaner.io.buffer.size',
  'log.cleaner.io.max.bytes.per.second', 'log.cleaner.threads', 'max.connection.creation.rate', 'max.connections',
  'max.connections.per.ip', 'max.connections.per.ip.overrides', 'metric.reporters', 'num.io.threads', 'num.network.threads',
  'num.recovery.threads.per.data.dir', 'num.replica.fetchers', 'principal.builder.class', 'producer.id.expiration.ms',
  'remote.fetch.max.wait.ms', 'remote.list.offsets.request.timeout.ms', 'remote.log.index.file.cache.total.size.bytes',
  'remote.log.manager.copier.thread.pool.size', 'remote.log.manager.copy.max.bytes.per.second',
  'remote.log.manager.expiration.thread.pool.size', 'remote.log.manager.fetch.max.bytes.per.second',
  'remote.log.manager.follower.thread.pool.size', 'remote.log.reader.threads', 'replica.alter.log.dirs.io.max.bytes.per.second',
  'share.coordinator.cached.buffer.max.bytes', 'transaction.partition.verification.enable',
]
const SECURITY = [
  'sasl.enabled.mechanisms', 'sasl.jaas.config', 'sasl.kerberos.kinit.cmd', 'sasl.kerberos.min.time.before.relogin',
  'sasl.kerberos.principal.to.local.rules', 'sasl.kerberos.service.name', 'sasl.kerberos.ticket.renew.jitter',
  'sasl.kerberos.ticket.renew.window.factor', 'sasl.login.refresh.buffer.seconds', 'sasl.login.refresh.min.period.seconds',
  'sasl.login.refresh.window.factor', 'sasl.login.refresh.window.jitter', 'sasl.mechanism.inter.broker.protocol',
  'ssl.cipher.suites', 'ssl.client.auth', 'ssl.enabled.protocols', 'ssl.endpoint.identification.algorithm', 'ssl.engine.factory.class',
  'ssl.key.password', 'ssl.keymanager.algorithm', 'ssl.keystore.certificate.chain', 'ssl.keystore.key', 'ssl.keystore.location',
  'ssl.keystore.password', 'ssl.keystore.type', 'ssl.protocol', 'ssl.provider', 'ssl.secure.random.implementation',
  'ssl.trustmanager.algorithm', 'ssl.truststore.certificates', 'ssl.truststore.location', 'ssl.truststore.password', 'ssl.truststore.type',
]
// Kafka's PER_BROKER_CONFIGS: refused at the cluster-default resource.
const PER_BROKER = new Set(['cordoned.log.dirs', 'listener.security.protocol.map', 'listeners', 'principal.builder.class', ...SECURITY])
// Kafka's password-typed ones: described as sensitive, with no value.
const PASSWORDS = new Set(['sasl.jaas.config', 'ssl.key.password', 'ssl.keystore.key', 'ssl.keystore.password', 'ssl.truststore.password'])
const OTHER_DYNAMIC_SET = new Set([...OTHER_DYNAMIC, ...SECURITY])
// Kafka's list-typed ones among them, for APPEND / SUBTRACT.
const LISTS = new Set(['config.providers', 'cordoned.log.dirs', 'listeners', 'metric.reporters', 'sasl.enabled.mechanisms', 'ssl.cipher.suites', 'ssl.enabled.protocols'])

/**
 * Kafka broker configs that exist but only at startup (read-only in DescribeConfigs):
 * changing one dynamically is refused, as Kafka refuses it. Names Kafka does not know
 * at all are accepted and stored, as Kafka accepts them.
 */
const STATIC_ONLY = new Set([
  'node.id', 'broker.id', 'process.roles', 'log.dir', 'log.dirs', 'num.partitions', 'auto.create.topics.enable',
  'default.replication.factor', 'offsets.topic.replication.factor', 'offsets.topic.num.partitions',
  'transaction.state.log.replication.factor', 'transaction.state.log.num.partitions', 'transaction.state.log.min.isr',
  'socket.request.max.bytes', 'fetch.max.bytes', 'connections.max.idle.ms', 'connections.max.reauth.ms', 'queued.max.request.bytes',
  'producer.id.expiration.check.interval.ms', 'log.retention.hours', 'log.retention.minutes', 'log.roll.hours',
  'log.roll.jitter.hours', 'advertised.listeners', 'controller.listener.names', 'controller.quorum.voters',
  'inter.broker.listener.name', 'group.initial.rebalance.delay.ms', 'delete.topic.enable', 'log.cleaner.enable',
  'socket.send.buffer.bytes', 'socket.receive.buffer.bytes', 'replica.fetch.max.bytes', 'message.timestamp.type',
])

// Kafka's types of the non-topic dynamic configs that are numbers or booleans, so a value of
// the wrong type is refused with ConfigDef's message instead of being stored.
const TYPED: Readonly<Record<string, Kind>> = {
  'background.threads': 'INT', 'num.io.threads': 'INT', 'num.network.threads': 'INT', 'num.replica.fetchers': 'INT',
  'num.recovery.threads.per.data.dir': 'INT', 'log.cleaner.threads': 'INT', 'max.connections': 'INT', 'max.connections.per.ip': 'INT',
  'max.connection.creation.rate': 'INT', 'producer.id.expiration.ms': 'INT', 'log.cleaner.backoff.ms': 'LONG',
  'log.cleaner.dedupe.buffer.size': 'LONG', 'log.cleaner.io.buffer.size': 'INT', 'log.cleaner.io.buffer.load.factor': 'DOUBLE',
  'log.cleaner.io.max.bytes.per.second': 'DOUBLE', 'follower.replication.throttled.rate': 'LONG', 'leader.replication.throttled.rate': 'LONG',
  'replica.alter.log.dirs.io.max.bytes.per.second': 'LONG', 'transaction.partition.verification.enable': 'BOOLEAN',
}

export type BrokerConfigKind = 'dynamic' | 'static' | 'unknown'

/** Whether Kafka changes `name` without a restart, only at startup, or does not know it. */
export function brokerConfigKind(name: string): BrokerConfigKind {
  if (topicConfigOfBrokerName(name) !== undefined || OTHER_DYNAMIC_SET.has(name)) return 'dynamic'
  return STATIC_ONLY.has(name) ? 'static' : 'unknown'
}

export const isSensitiveBrokerConfig = (name: string): boolean => PASSWORDS.has(name) || brokerConfigKind(name) === 'unknown'

/** The dynamic-only names (not topic synonyms) Kafka lists, for DescribeConfigs of the broker. */
export const isListBrokerConfig = (name: string): boolean => LISTS.has(name)

export interface ConfigChangeError {
  /** INVALID_REQUEST (Kafka's ConfigException) or INVALID_CONFIG (a value this broker cannot honour). */
  code: 'INVALID_REQUEST' | 'INVALID_CONFIG'
  message: string
}

/**
 * Checks the complete set of dynamic configs a broker resource would hold after a
 * change, as Kafka's DynamicBrokerConfig.validate does: read-only names first (all
 * of them named in one message), per-broker names at the cluster default, then each
 * topic-config synonym's type, range and what this broker supports.
 */
export function checkBrokerConfigs(configs: Readonly<Record<string, string>>, perBroker: boolean): ConfigChangeError | undefined {
  const names = Object.keys(configs)
  const readOnly = names.filter((n) => brokerConfigKind(n) === 'static')
  if (readOnly.length > 0) return { code: 'INVALID_REQUEST', message: `Cannot update these configs dynamically: [${readOnly.join(', ')}]` }
  const nodeOnly = names.filter((n) => PER_BROKER.has(n))
  if (!perBroker && nodeOnly.length > 0) {
    return { code: 'INVALID_REQUEST', message: `Cannot update these configs at default cluster level, broker id must be specified: [${nodeOnly.join(', ')}]` }
  }
  for (const [name, value] of Object.entries(configs)) {
    const type = TYPED[name]
    const p = type === undefined ? undefined : parse(type, value)
    if (p !== undefined && 'error' in p) return { code: 'INVALID_REQUEST', message: `Invalid value ${value} for configuration ${name}: ${p.error}` }
    const bad = checkBrokerTopicDefault(name, value)
    if (bad !== undefined) return { code: bad.invalidConfig ? 'INVALID_CONFIG' : 'INVALID_REQUEST', message: bad.message }
  }
  return undefined
}

interface Stored {
  version: number
  clusterDefault: Record<string, string>
  /** By node id: only this node's entry is read; others are kept as found. */
  brokers: Record<string, Record<string, string>>
  /** Group configs (KIP-848) by group id; a group with none has no entry. Absent in files written before them. */
  groups: Record<string, Record<string, string>>
}

// Group ids are any string ("__proto__" included), so they are kept in a Map, never as object keys.
interface Loaded {
  version: number
  clusterDefault: Record<string, string>
  brokers: Record<string, Record<string, string>>
  groups: Map<string, Record<string, string>>
}

const isStringMap = (v: unknown): v is Record<string, string> =>
  v !== null && typeof v === 'object' && !Array.isArray(v) && Object.values(v).every((x) => typeof x === 'string')

/**
 * The broker's dynamic configs and their durable store, `<dataDir>/dynamic-configs.json`
 * (Kafka keeps them in its metadata log): replaced atomically off the event loop, read
 * at startup before any topic's settings are computed.
 */
export class DynamicConfigStore {
  private stored: Loaded = { version: DYNAMIC_CONFIGS_FORMAT_VERSION, clusterDefault: {}, brokers: {}, groups: new Map() }
  private readonly path: string
  private readonly file: DurableFile

  constructor(
    dataDir: string,
    private readonly nodeId: number,
    logs: LogManager,
    private readonly logger: Logger,
  ) {
    this.path = join(dataDir, DYNAMIC_CONFIGS_FILE)
    this.file = new DurableFile(this.path, DYNAMIC_CONFIGS_FILE, logs, () => JSON.stringify({ ...this.stored, groups: Object.fromEntries(this.stored.groups) } satisfies Stored, null, 2) + '\n')
  }

  get layers(): DynamicLayers {
    return { node: this.stored.brokers[String(this.nodeId)] ?? {}, clusterDefault: this.stored.clusterDefault }
  }

  /** Reads the file (missing: no dynamic configs); throws UnsupportedFormatError for a newer layout. */
  load(): void {
    let text: string
    try {
      text = readFileSync(this.path, 'utf8')
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return
      throw err
    }
    let parsed: Partial<Stored>
    try {
      parsed = JSON.parse(text) as Partial<Stored>
    } catch (err) {
      // Damaged: kept aside rather than overwritten by the next change, so an operator can get it back.
      this.logger.warn(`ignoring ${this.path}: ${(err as Error).message}; kept as ${DYNAMIC_CONFIGS_FILE}.unreadable, the broker starts with no dynamic configs`)
      writeFileAtomicSync(`${this.path}.unreadable`, text)
      return
    }
    if (parsed === null || typeof parsed !== 'object') parsed = {}
    const version = parsed.version
    if (typeof version === 'number' && Number.isInteger(version) && version > DYNAMIC_CONFIGS_FORMAT_VERSION) {
      throw new UnsupportedFormatError(this.path, version, DYNAMIC_CONFIGS_FORMAT_VERSION)
    }
    const maps = (v: unknown) => Object.entries(v !== null && typeof v === 'object' ? v : {}).filter((e): e is [string, Record<string, string>] => isStringMap(e[1]))
    this.stored = {
      version: DYNAMIC_CONFIGS_FORMAT_VERSION,
      clusterDefault: isStringMap(parsed.clusterDefault) ? parsed.clusterDefault : {},
      brokers: Object.fromEntries(maps(parsed.brokers)),
      groups: new Map(maps(parsed.groups)),
    }
  }

  /** Replaces one scope's configs; resolves when the file holding them is durable. */
  replace(scope: 'node' | 'clusterDefault', configs: Record<string, string>): Promise<void> {
    if (scope === 'clusterDefault') this.stored.clusterDefault = configs
    else this.stored.brokers[String(this.nodeId)] = configs
    return this.file.save()
  }

  /** A group's configs (none for a group never configured, existing or not, as in Kafka). */
  group(groupId: string): Readonly<Record<string, string>> {
    return this.stored.groups.get(groupId) ?? {}
  }

  /** The groups that have configs (Kafka's GroupConfigManager.groupIds, which ListConfigResources lists). */
  groupIds(): string[] {
    return [...this.stored.groups.keys()]
  }

  /** Replaces a group's configs; resolves when the file holding them is durable. */
  replaceGroup(groupId: string, configs: Record<string, string>): Promise<void> {
    if (Object.keys(configs).length === 0) this.stored.groups.delete(groupId)
    else this.stored.groups.set(groupId, configs)
    return this.file.save()
  }

  persisted(): Promise<void> {
    return this.file.persisted()
  }
}
