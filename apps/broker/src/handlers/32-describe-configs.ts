import { DescribeConfigs, ErrorCodes, type DescribeConfigsResponseResourceResult } from '@tidelog/protocol'
import { type BrokerConfig, DEFAULT_CONFIG as BROKER_DEFAULTS } from '../config.js'
import { ConfigSource, ConfigType, type ConfigSynonym, brokerTopicDefaults, describeTopicConfigs } from '../topic-config.js'
import { defineHandler } from './types.js'

const TOPIC = 2
const BROKER = 4

interface BrokerEntry {
  name: string
  type: number
  value: string
  source: number
  /** This broker's default, for the DEFAULT_CONFIG synonym. */
  defaultValue: string
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
  ['queued.max.request.bytes', 'queuedMaxRequestBytes', ConfigType.LONG, 'Memory all partial and queued requests may hold; -1 unbounded.'],
  ['producer.id.expiration.ms', 'producerIdExpirationMs', ConfigType.INT, 'Forget an idempotent producer this long after its last write.'],
]

/** What the broker reports about itself, by Kafka's broker config names, sorted by name. */
function brokerConfigs(b: BrokerConfig): BrokerEntry[] {
  const entries: BrokerEntry[] = [
    // Kafka requires node.id in server.properties, so it is always a static setting.
    { name: 'node.id', type: ConfigType.INT, value: String(b.nodeId), source: ConfigSource.STATIC_BROKER_CONFIG, defaultValue: String(b.nodeId), doc: "This broker's node id." },
    // A single node: one replica of everything.
    { name: 'default.replication.factor', type: ConfigType.INT, value: '1', source: ConfigSource.DEFAULT_CONFIG, defaultValue: '1', doc: 'Replication factor of auto-created topics; always 1 on a single node.' },
    { name: 'offsets.topic.replication.factor', type: ConfigType.SHORT, value: '1', source: ConfigSource.DEFAULT_CONFIG, defaultValue: '1', doc: 'Replication factor of the offsets topic; always 1 on a single node.' },
  ]
  for (const [name, key, type, doc] of BROKER_ONLY) {
    const set = b[key] !== BROKER_DEFAULTS[key]
    entries.push({ name, type, value: asKafka(b[key]), source: set ? ConfigSource.STATIC_BROKER_CONFIG : ConfigSource.DEFAULT_CONFIG, defaultValue: asKafka(BROKER_DEFAULTS[key]), doc })
  }
  // The broker-level names behind the topic configs (ServerTopicConfigSynonyms), once each.
  const seen = new Set(entries.map((e) => e.name))
  const defaults = new Map(brokerTopicDefaults(BROKER_DEFAULTS).map((d) => [d.name, d.value]))
  for (const d of brokerTopicDefaults(b)) {
    if (seen.has(d.name)) continue
    seen.add(d.name)
    entries.push({ name: d.name, type: d.type, value: d.value, source: d.source, defaultValue: defaults.get(d.name)!, doc: d.doc })
  }
  return entries.sort((x, y) => (x.name < y.name ? -1 : 1))
}

/**
 * DescribeConfigs 1-4, as Kafka answers it: for a topic every config Kafka 4.4
 * defines with its effective value and source (DYNAMIC_TOPIC_CONFIG for the topic's
 * override, STATIC_BROKER_CONFIG when a broker flag sets it, else DEFAULT_CONFIG),
 * its synonyms in precedence order when asked (override, broker setting, default),
 * its type (v3+) and documentation when asked; for the broker its settings by
 * Kafka's names, read-only (this broker does not alter them at run time).
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
    const entry = (name: string, value: string, source: number, readOnly: boolean, type: number, doc: string, synonyms: ConfigSynonym[]): DescribeConfigsResponseResourceResult => ({
      name,
      value,
      readOnly,
      configSource: source,
      isSensitive: false,
      synonyms: withSynonyms ? synonyms : [],
      ...(v >= 3 ? { configType: type, documentation: withDocs ? doc : null } : {}),
    })
    const results = req.resources.map((r) => {
      const base = { errorMessage: null, resourceType: r.resourceType, resourceName: r.resourceName }
      const wanted = (name: string) => r.configurationKeys === null || r.configurationKeys.includes(name)
      let configs: DescribeConfigsResponseResourceResult[]
      if (r.resourceType === TOPIC) {
        const topic = broker.topics.get(r.resourceName)
        if (topic === undefined) return { ...base, errorCode: ErrorCodes.UNKNOWN_TOPIC_OR_PARTITION, errorMessage: `topic ${r.resourceName} does not exist`, configs: [] }
        configs = describeTopicConfigs(topic.configs, broker.config)
          .filter((c) => wanted(c.name))
          .map((c) => entry(c.name, c.value, c.source, false, c.configType, c.documentation, c.synonyms))
      } else if (r.resourceType === BROKER && r.resourceName === '') {
        // The cluster-wide default resource holds dynamic broker defaults only (ConfigCommand
        // --entity-default); this broker has none, its settings are all static.
        configs = []
      } else if (r.resourceType === BROKER) {
        if (r.resourceName !== String(broker.nodeId)) {
          return { ...base, errorCode: ErrorCodes.INVALID_REQUEST, errorMessage: `this is broker ${broker.nodeId}`, configs: [] }
        }
        configs = brokerConfigs(broker.config)
          .filter((e) => wanted(e.name))
          .map((e) => {
            const synonyms: ConfigSynonym[] = []
            if (e.source === ConfigSource.STATIC_BROKER_CONFIG) synonyms.push({ name: e.name, value: e.value, source: e.source })
            if (e.name !== 'node.id') synonyms.push({ name: e.name, value: e.defaultValue, source: ConfigSource.DEFAULT_CONFIG })
            return entry(e.name, e.value, e.source, true, e.type, e.doc, synonyms)
          })
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
