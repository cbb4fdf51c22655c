import { DescribeConfigs, ErrorCodes, type DescribeConfigsResponseResourceResult } from '@tidelog/protocol'
import { type BrokerConfig, DEFAULT_CONFIG as BROKER_DEFAULTS } from '../config.js'
import { brokerConfigKind, isSensitiveBrokerConfig } from '../dynamic-config.js'
import { describeGroupConfigs } from '../groups/group-config.js'
import { ConfigSource, ConfigType, type ConfigSynonym, type DynamicLayers, brokerTopicDefaults, describeTopicConfigs } from '../topic-config.js'
import { defineHandler } from './types.js'

const TOPIC = 2
const BROKER = 4
const GROUP = 32

interface BrokerEntry {
  name: string
  type: number
  value: string
  source: number
  synonyms: ConfigSynonym[]
  doc: string
}

const asKafka = (v: unknown): string => (v === Infinity ? '9223372036854775807' : String(v))

// Broker settings with no topic-level counterpart, by Kafka's names and types.
const BROKER_ONLY: readonly [name: string, key: keyof BrokerConfig, type: number, doc: string][] = [
  ['num.partitions', 'numPartitions', ConfigType.INT, 'Partitions of an auto-created topic.'],
  ['auto.create.topics.enable', 'autoCreateTopics', ConfigType.BOOLEAN, 'Create an unknown topic when a client asks for its metadata.'],
  ['socket.request.max.bytes', 'maxRequestBytes', ConfigType.INT, 'Largest request frame accepted.'],
  ['fetch.max.bytes', 'fetchMaxBytes', ConfigType.INT, 'Record bytes in one Fetch response (at least one batch).'],
  ['max.connections', 'maxConnections', ConfigType.INT, 'Connections open at once.'],
  ['max.connections.per.ip', 'maxConnectionsPerIp', ConfigType.INT, 'Connections open at once from one address.'],
  ['connections.max.idle.ms', 'connectionsMaxIdleMs', ConfigType.LONG, 'Close connections idle this long; -1 never.'],
  // librdkafka (and its test 0142) read it to learn the re-authentication interval (KIP-368).
  ['connections.max.reauth.ms', 'connectionsMaxReauthMs', ConfigType.LONG, 'SASL sessions must re-authenticate within this long; 0 never expires them.'],
  ['queued.max.request.bytes', 'queuedMaxRequestBytes', ConfigType.LONG, 'Memory all partial and queued requests may hold; -1 unbounded.'],
  ['producer.id.expiration.ms', 'producerIdExpirationMs', ConfigType.INT, 'Forget an idempotent producer this long after its last write.'],
]

/** A broker-level value's source and synonyms in Kafka's order: this node's dynamic value, the cluster default, the command line, the default. */
function layered(name: string, dyn: DynamicLayers, staticValue: string | undefined, defaultValue: string | undefined): { value: string; source: number; synonyms: ConfigSynonym[] } {
  const synonyms: ConfigSynonym[] = []
  if (dyn.node[name] !== undefined) synonyms.push({ name, value: dyn.node[name]!, source: ConfigSource.DYNAMIC_BROKER_CONFIG })
  if (dyn.clusterDefault[name] !== undefined) synonyms.push({ name, value: dyn.clusterDefault[name]!, source: ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG })
  if (staticValue !== undefined) synonyms.push({ name, value: staticValue, source: ConfigSource.STATIC_BROKER_CONFIG })
  if (defaultValue !== undefined) synonyms.push({ name, value: defaultValue, source: ConfigSource.DEFAULT_CONFIG })
  const top = synonyms[0] ?? { value: '', source: ConfigSource.DEFAULT_CONFIG }
  return { value: top.value, source: top.source, synonyms }
}

/** What the broker reports about itself, by Kafka's broker config names, sorted by name. */
function brokerConfigs(b: BrokerConfig, dyn: DynamicLayers): BrokerEntry[] {
  const nodeId = String(b.nodeId)
  const entries: BrokerEntry[] = [
    // Kafka requires node.id in server.properties, so it is always a static setting.
    { name: 'node.id', type: ConfigType.INT, value: nodeId, source: ConfigSource.STATIC_BROKER_CONFIG, synonyms: [{ name: 'node.id', value: nodeId, source: ConfigSource.STATIC_BROKER_CONFIG }], doc: "This broker's node id." },
    // A single node: one replica of everything.
    { name: 'default.replication.factor', type: ConfigType.INT, ...layered('default.replication.factor', dyn, undefined, '1'), doc: 'Replication factor of auto-created topics; always 1 on a single node.' },
    { name: 'offsets.topic.replication.factor', type: ConfigType.SHORT, ...layered('offsets.topic.replication.factor', dyn, undefined, '1'), doc: 'Replication factor of the offsets topic; always 1 on a single node.' },
  ]
  for (const [name, key, type, doc] of BROKER_ONLY) {
    const set = b[key] !== BROKER_DEFAULTS[key]
    entries.push({ name, type, ...layered(name, dyn, set ? asKafka(b[key]) : undefined, asKafka(BROKER_DEFAULTS[key])), doc })
  }
  // The broker-level names behind the topic configs (ServerTopicConfigSynonyms), once each.
  const seen = new Set(entries.map((e) => e.name))
  for (const d of brokerTopicDefaults(b, dyn)) {
    if (seen.has(d.name)) continue
    seen.add(d.name)
    entries.push({ name: d.name, type: d.type, value: d.value, source: d.source, synonyms: d.synonyms, doc: d.doc })
  }
  // Dynamic configs stored that the lists above do not name (num.io.threads, ...): Kafka lists them too.
  for (const name of new Set([...Object.keys(dyn.node), ...Object.keys(dyn.clusterDefault)])) {
    if (seen.has(name)) continue
    entries.push({ name, type: ConfigType.STRING, ...layered(name, dyn, undefined, undefined), doc: 'A dynamic broker config stored for compatibility; it has no effect on this broker.' })
  }
  return entries.sort((x, y) => (x.name < y.name ? -1 : 1))
}

/**
 * DescribeConfigs 1-4, as Kafka answers it: for a topic every config Kafka 4.4
 * defines with its effective value and source (DYNAMIC_TOPIC_CONFIG for the topic's
 * override, DYNAMIC_BROKER_CONFIG / DYNAMIC_DEFAULT_BROKER_CONFIG for this node's or
 * the cluster's dynamic value, STATIC_BROKER_CONFIG for a broker flag, else
 * DEFAULT_CONFIG), its synonyms in that precedence order when asked, its type (v3+)
 * and documentation when asked; for the broker its settings by Kafka's names,
 * read-only unless Kafka can change them without a restart (KIP-226); for a group
 * (KIP-848) its group configs, DYNAMIC_GROUP_CONFIG where set, else DEFAULT_CONFIG.
 */
export const describeConfigsHandler = defineHandler({
  api: DescribeConfigs,
  minVersion: 1,
  maxVersion: 4,
  handle(ctx, req) {
    const broker = ctx.broker
    const v = ctx.version
    const withSynonyms = req.includeSynonyms === true
    const withDocs = v >= 3 && req.includeDocumentation === true
    const entry = (name: string, value: string, source: number, readOnly: boolean, type: number, doc: string, synonyms: ConfigSynonym[], sensitive = false): DescribeConfigsResponseResourceResult => ({
      name,
      // Kafka never returns a sensitive value (passwords, and names it cannot type).
      value: sensitive ? null : value,
      readOnly,
      configSource: source,
      isSensitive: sensitive,
      synonyms: withSynonyms ? synonyms.map((syn) => (sensitive ? { ...syn, value: null } : syn)) : [],
      ...(v >= 3 ? { configType: type, documentation: withDocs ? doc : null } : {}),
    })
    const results = req.resources.map((r) => {
      const base = { errorMessage: null, resourceType: r.resourceType, resourceName: r.resourceName }
      const wanted = (name: string) => r.configurationKeys === null || r.configurationKeys.includes(name)
      let configs: DescribeConfigsResponseResourceResult[]
      if (r.resourceType === TOPIC) {
        const topic = broker.topics.get(r.resourceName)
        if (topic === undefined) return { ...base, errorCode: ErrorCodes.UNKNOWN_TOPIC_OR_PARTITION, errorMessage: `topic ${r.resourceName} does not exist`, configs: [] }
        configs = describeTopicConfigs(topic.configs, broker.config, broker.topics.dynamic.layers)
          .filter((c) => wanted(c.name))
          .map((c) => entry(c.name, c.value, c.source, false, c.configType, c.documentation, c.synonyms))
      } else if (r.resourceType === BROKER && r.resourceName === '') {
        // The cluster-wide default resource lists the dynamic broker defaults only (ConfigCommand --entity-default).
        configs = Object.entries(broker.topics.dynamic.layers.clusterDefault)
          .filter(([name]) => wanted(name))
          .sort(([a], [b]) => (a < b ? -1 : 1))
          .map(([name, value]) => {
            const source = ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG
            return entry(name, value, source, false, ConfigType.STRING, 'Cluster-wide dynamic broker default.', [{ name, value, source }], isSensitiveBrokerConfig(name))
          })
      } else if (r.resourceType === BROKER) {
        if (r.resourceName !== String(broker.nodeId)) {
          return { ...base, errorCode: ErrorCodes.INVALID_REQUEST, errorMessage: `Unexpected broker id, expected ${broker.nodeId}, but received ${r.resourceName}`, configs: [] }
        }
        configs = brokerConfigs(broker.config, broker.topics.dynamic.layers)
          .filter((e) => wanted(e.name))
          .map((e) => entry(e.name, e.value, e.source, brokerConfigKind(e.name) !== 'dynamic', e.type, e.doc, e.synonyms, isSensitiveBrokerConfig(e.name)))
      } else if (r.resourceType === GROUP) {
        // KIP-848: any group id, existing or not, has configs (Kafka's defaults until set).
        if (r.resourceName === '') return { ...base, errorCode: ErrorCodes.INVALID_REQUEST, errorMessage: 'Group name must not be empty', configs: [] }
        configs = describeGroupConfigs(broker.topics.dynamic.group(r.resourceName))
          .filter((c) => wanted(c.name))
          .map((c) => entry(c.name, c.value, c.source, false, c.configType, c.documentation, c.synonyms))
      } else {
        return { ...base, errorCode: ErrorCodes.INVALID_REQUEST, errorMessage: `resource type ${r.resourceType} is not supported`, configs: [] }
      }
      return { ...base, errorCode: ErrorCodes.NONE, configs }
    })
    return { throttleTimeMs: 0, results }
  },
  errorResponse(req, errorCode) {
    return {
      throttleTimeMs: 0,
      results: req.resources.map((r) => ({ errorCode, errorMessage: null, resourceType: r.resourceType, resourceName: r.resourceName, configs: [] })),
    }
  },
})
