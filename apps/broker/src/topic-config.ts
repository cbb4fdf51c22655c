import { DEFAULT_MAX_DECOMPRESSED_BYTES } from '@tidelog/protocol'
import type { CompressionSettings, TopicCompression } from './log/recompress.js'
import { type BrokerConfig, DEFAULT_CONFIG as BROKER_DEFAULTS } from './config.js'
import type { LogConfig } from './log/index.js'
import { type Complaint, type Kind, LONG_MAX_BIG, type Parsed, atLeast, between, oneOf, parseChecked, throttledReplicas } from './topic-config-values.js'

/** What a partition's handlers need from its topic's configuration. */
export interface TopicSettings {
  log: LogConfig
  maxMessageBytes: number
  /** message.timestamp.type */
  logAppendTime: boolean
  /** message.timestamp.before.max.ms / after.max.ms; Infinity accepts any timestamp. */
  messageTimestampBeforeMaxMs: number
  messageTimestampAfterMaxMs: number
  /** max.decompressed.message.bytes: the cap a compressed batch's records may inflate to. */
  maxDecompressedBytes: number
  /** compression.type and compression.gzip.level: broker-side recompression (log/recompress.ts). */
  compression: CompressionSettings
}

/** Kafka's ConfigType (KIP-569), as DescribeConfigs v3+ reports it. */
export const ConfigType = { BOOLEAN: 1, STRING: 2, INT: 3, SHORT: 4, LONG: 5, DOUBLE: 6, LIST: 7 } as const

/** Kafka's ConfigSource (KIP-226; DYNAMIC_GROUP_CONFIG from KIP-848). */
export const ConfigSource = { DYNAMIC_TOPIC_CONFIG: 1, DYNAMIC_BROKER_CONFIG: 2, DYNAMIC_DEFAULT_BROKER_CONFIG: 3, STATIC_BROKER_CONFIG: 4, DEFAULT_CONFIG: 5, DYNAMIC_GROUP_CONFIG: 8 } as const

/**
 * The broker's dynamic configs (KIP-226), by Kafka's broker names: this node's own
 * (resource "<node id>") and the cluster-wide default (resource ""). The node's own
 * wins over the default, which wins over the command line.
 */
export interface DynamicLayers {
  readonly node: Readonly<Record<string, string>>
  readonly clusterDefault: Readonly<Record<string, string>>
}
export const NO_DYNAMIC: DynamicLayers = { node: {}, clusterDefault: {} }

export const LONG_MAX = '9223372036854775807'

interface TopicConfigDef {
  type: Kind
  /** Kafka 4.4's default, used when the broker has no setting of its own for it. */
  kafkaDefault: string
  /** Kafka's value check after parsing; returns the reason, as Kafka words it. */
  validate?: (v: Parsed) => Complaint | undefined
  /** Values Kafka accepts that this broker cannot honour: the reason it refuses them. */
  refuse?: (v: Parsed) => string | undefined
  /** The broker-level config this one falls back to (Kafka's ServerTopicConfigSynonyms). */
  brokerName?: string
  /** Kafka leaves the broker-level name unset by default (derived from *.hours), so DescribeConfigs lists no default synonym. */
  brokerNameUnset?: boolean
  /**
   * The coarser broker config Kafka derives an unset brokerName from (log.retention.hours for
   * log.retention.ms): its default is listed as the last synonym once brokerName has a
   * value of its own.
   */
  brokerFallback?: readonly [name: string, defaultValue: string]
  /** The tidelog broker setting behind brokerName, when there is one. */
  brokerKey?: keyof BrokerConfig
  /** What it does here; DescribeConfigs returns it as the documentation. */
  doc: string
}


const NO_EFFECT_SINGLE_NODE = 'Accepted for compatibility; it has no effect on a single-node broker.'
const NO_EFFECT_TIERED = 'Applies to tiered storage only, which this broker does not have; accepted and stored.'
const LEVEL_NOT_APPLIED = 'Accepted and stored; this broker recompresses with the codec\'s default level.'

// Kafka 4.4's topic configs (LogConfig), by name: type, default, validation and the
// broker-level synonym, as apps/broker/test/golden/kafka-4.4-topic-configs.json
// records them from a real Kafka 4.4.0. Kafka's own names, defaults and checks are
// the reference; `refuse` marks what this broker cannot honour instead of ignoring it.
const DEFS: Record<string, TopicConfigDef> = {
  'cleanup.policy': {
    type: 'LIST',
    kafkaDefault: 'delete',
    validate: oneOf(['compact', 'delete']),
    refuse: (v) => ((v as string[]).length === 0 ? 'an empty cleanup.policy is not supported by this broker; use delete, compact or both' : undefined),
    brokerName: 'log.cleanup.policy',
    doc: 'delete removes old segments by retention.ms and retention.bytes; compact keeps the latest record of every key (the log cleaner); compact,delete does both.',
  },
  'compression.gzip.level': {
    type: 'INT',
    kafkaDefault: '-1',
    validate: (v) => ((v as number) === -1 || ((v as number) >= 1 && (v as number) <= 9) ? undefined : 'Value must be between 1 and 9 or equal to -1'),
    brokerName: 'compression.gzip.level',
    doc: 'gzip level (1-9, -1 for zlib\'s default) the broker recompresses with when compression.type is gzip (KIP-390).',
  },
  'compression.lz4.level': {
    type: 'INT',
    kafkaDefault: '9',
    validate: between(1, 17),
    brokerName: 'compression.lz4.level',
    doc: `lz4 level for broker-side recompression (KIP-390). ${LEVEL_NOT_APPLIED}`,
  },
  'compression.type': {
    type: 'STRING',
    kafkaDefault: 'producer',
    validate: oneOf(['uncompressed', 'zstd', 'lz4', 'snappy', 'gzip', 'producer']),
    brokerName: 'compression.type',
    doc: 'producer stores batches as the producer compressed them, byte for byte; any other codec (uncompressed, gzip, snappy, lz4, zstd) has the broker recompress a batch in another codec on append, as Kafka does.',
  },
  'compression.zstd.level': {
    type: 'INT',
    kafkaDefault: '3',
    validate: between(-131072, 22),
    brokerName: 'compression.zstd.level',
    doc: `zstd level for broker-side recompression (KIP-390). ${LEVEL_NOT_APPLIED}`,
  },
  'delete.retention.ms': {
    type: 'LONG',
    kafkaDefault: '86400000',
    validate: atLeast(0n),
    brokerName: 'log.cleaner.delete.retention.ms',
    doc: 'How long a tombstone (and the marker of a transaction with no data left) stays after the cleaning that first kept it (KIP-534).',
  },
  'errors.deadletterqueue.group.enable': {
    type: 'BOOLEAN',
    kafkaDefault: 'false',
    doc: 'Whether groups may use the topic as a dead-letter queue (KIP-1034); the broker only stores it.',
  },
  'file.delete.delay.ms': {
    type: 'LONG',
    kafkaDefault: '60000',
    validate: atLeast(0n),
    brokerName: 'log.segment.delete.delay.ms',
    doc: 'Accepted and stored; this broker removes a deleted segment once no reader holds it, without a fixed delay.',
  },
  'flush.messages': {
    type: 'LONG',
    kafkaDefault: LONG_MAX,
    validate: atLeast(1n),
    brokerName: 'log.flush.interval.messages',
    brokerKey: 'flushMessages',
    doc: 'fsync a partition after this many appended messages; 9223372036854775807 leaves it to the page cache.',
  },
  'flush.ms': {
    type: 'LONG',
    kafkaDefault: LONG_MAX,
    validate: atLeast(0n),
    brokerName: 'log.flush.interval.ms',
    brokerNameUnset: true,
    brokerFallback: ['log.flush.scheduler.interval.ms', LONG_MAX],
    brokerKey: 'flushMs',
    doc: 'fsync a partition at least this often (ms); 9223372036854775807 leaves it to the page cache.',
  },
  'follower.replication.throttled.replicas': {
    type: 'LIST',
    kafkaDefault: '',
    validate: throttledReplicas('follower.replication.throttled.replicas'),
    doc: `Replicas whose follower replication is throttled. ${NO_EFFECT_SINGLE_NODE}`,
  },
  'index.interval.bytes': {
    type: 'INT',
    kafkaDefault: '4096',
    validate: atLeast(0),
    brokerName: 'log.index.interval.bytes',
    doc: 'Bytes of log between two offset-index entries.',
  },
  'leader.replication.throttled.replicas': {
    type: 'LIST',
    kafkaDefault: '',
    validate: throttledReplicas('leader.replication.throttled.replicas'),
    doc: `Replicas whose leader-side replication is throttled. ${NO_EFFECT_SINGLE_NODE}`,
  },
  'local.retention.bytes': {
    type: 'LONG',
    kafkaDefault: '-2',
    validate: atLeast(-2n),
    brokerName: 'log.local.retention.bytes',
    doc: `Bytes kept locally before tiering. ${NO_EFFECT_TIERED}`,
  },
  'local.retention.ms': {
    type: 'LONG',
    kafkaDefault: '-2',
    validate: atLeast(-2n),
    brokerName: 'log.local.retention.ms',
    doc: `Time kept locally before tiering. ${NO_EFFECT_TIERED}`,
  },
  'max.compaction.lag.ms': {
    type: 'LONG',
    kafkaDefault: LONG_MAX,
    validate: atLeast(1n),
    brokerName: 'log.cleaner.max.compaction.lag.ms',
    doc: 'A log whose oldest dirty record is older than this is cleaned whatever its dirty ratio (KIP-354).',
  },
  'max.decompressed.message.bytes': {
    type: 'INT',
    kafkaDefault: '2147483639',
    validate: atLeast(1),
    // The batch is inflated in memory to be validated, so the cap bounds what one request can make the broker allocate.
    refuse: (v) =>
      (v as number) > DEFAULT_MAX_DECOMPRESSED_BYTES
        ? `this broker inflates a compressed batch in memory to validate it, so at most ${DEFAULT_MAX_DECOMPRESSED_BYTES} is accepted`
        : undefined,
    brokerName: 'max.decompressed.message.bytes',
    doc: `Largest size a produced compressed batch may inflate to (at most ${DEFAULT_MAX_DECOMPRESSED_BYTES} here); larger ones are refused with MESSAGE_TOO_LARGE.`,
  },
  'max.message.bytes': {
    type: 'INT',
    kafkaDefault: '1048588',
    validate: atLeast(0),
    brokerName: 'message.max.bytes',
    brokerKey: 'maxMessageBytes',
    doc: 'Largest record batch accepted for the topic.',
  },
  'message.timestamp.after.max.ms': {
    type: 'LONG',
    kafkaDefault: '3600000',
    validate: atLeast(0n),
    brokerName: 'log.message.timestamp.after.max.ms',
    brokerKey: 'messageTimestampAfterMaxMs',
    doc: 'How far ahead of the broker clock a CreateTime record timestamp may be (INVALID_TIMESTAMP beyond).',
  },
  'message.timestamp.before.max.ms': {
    type: 'LONG',
    kafkaDefault: LONG_MAX,
    validate: atLeast(0n),
    brokerName: 'log.message.timestamp.before.max.ms',
    brokerKey: 'messageTimestampBeforeMaxMs',
    doc: 'How far behind the broker clock a CreateTime record timestamp may be (INVALID_TIMESTAMP beyond).',
  },
  'message.timestamp.type': {
    type: 'STRING',
    kafkaDefault: 'CreateTime',
    validate: oneOf(['CreateTime', 'LogAppendTime']),
    brokerName: 'log.message.timestamp.type',
    doc: 'CreateTime keeps the producer timestamps; LogAppendTime stamps batches with the broker clock.',
  },
  'min.cleanable.dirty.ratio': {
    type: 'DOUBLE',
    kafkaDefault: '0.5',
    validate: between(0, 1),
    brokerName: 'log.cleaner.min.cleanable.ratio',
    doc: 'The cleaner picks a compacted log once its dirty (not yet cleaned) bytes are more than this share of the log.',
  },
  'min.compaction.lag.ms': {
    type: 'LONG',
    kafkaDefault: '0',
    validate: atLeast(0n),
    brokerName: 'log.cleaner.min.compaction.lag.ms',
    doc: 'A segment holding a record younger than this is not cleaned yet (KIP-58).',
  },
  'min.insync.replicas': {
    type: 'INT',
    kafkaDefault: '1',
    validate: atLeast(1),
    // Kafka accepts more than the replication factor and then fails every acks=all write.
    refuse: (v) => ((v as number) > 1 ? 'this broker is a single node, so a topic has 1 replica and acks=all could never be met' : undefined),
    brokerName: 'min.insync.replicas',
    doc: 'In-sync replicas an acks=all write needs; a single node has one, so only 1 is accepted.',
  },
  'preallocate': {
    type: 'BOOLEAN',
    kafkaDefault: 'false',
    brokerName: 'log.preallocate',
    doc: 'Accepted and stored; this broker grows segment files as it writes them.',
  },
  'remote.copy.lag.bytes': {
    type: 'LONG',
    kafkaDefault: '-1',
    validate: atLeast(-1n),
    brokerName: 'log.remote.copy.lag.bytes',
    doc: `Bytes a segment waits before being tiered. ${NO_EFFECT_TIERED}`,
  },
  'remote.copy.lag.ms': {
    type: 'LONG',
    kafkaDefault: '0',
    validate: atLeast(-1n),
    brokerName: 'log.remote.copy.lag.ms',
    doc: `Time a segment waits before being tiered. ${NO_EFFECT_TIERED}`,
  },
  'remote.log.copy.disable': { type: 'BOOLEAN', kafkaDefault: 'false', doc: `Stops copying segments to tiered storage. ${NO_EFFECT_TIERED}` },
  'remote.log.delete.on.disable': { type: 'BOOLEAN', kafkaDefault: 'false', doc: `Deletes tiered segments when tiering is disabled. ${NO_EFFECT_TIERED}` },
  'remote.storage.enable': { type: 'BOOLEAN', kafkaDefault: 'false', doc: 'Tiered storage; this broker has none, so true is refused as Kafka refuses it without tiered storage.' },
  'retention.bytes': {
    type: 'LONG',
    kafkaDefault: '-1',
    brokerName: 'log.retention.bytes',
    brokerKey: 'retentionBytes',
    doc: 'Delete the oldest segments while a partition is larger than this; -1 (any negative) keeps them.',
  },
  'retention.ms': {
    type: 'LONG',
    kafkaDefault: '604800000',
    validate: atLeast(-1n),
    brokerName: 'log.retention.ms',
    brokerNameUnset: true,
    brokerFallback: ['log.retention.hours', '168'],
    brokerKey: 'retentionMs',
    doc: 'Delete segments whose newest record is older than this; -1 keeps them.',
  },
  'segment.bytes': {
    type: 'INT',
    kafkaDefault: '1073741824',
    validate: atLeast(1024 * 1024),
    brokerName: 'log.segment.bytes',
    brokerKey: 'segmentBytes',
    doc: 'Roll a segment once it reaches this size.',
  },
  'segment.index.bytes': {
    type: 'INT',
    kafkaDefault: '10485760',
    validate: atLeast(4),
    brokerName: 'log.index.size.max.bytes',
    doc: 'Accepted and stored; this broker sizes index files to their entries and rolls by segment.bytes and segment.ms only.',
  },
  'segment.jitter.ms': {
    type: 'LONG',
    kafkaDefault: '0',
    validate: atLeast(0n),
    brokerName: 'log.roll.jitter.ms',
    brokerNameUnset: true,
    brokerFallback: ['log.roll.jitter.hours', '0'],
    doc: 'Accepted and stored; this broker rolls exactly at segment.ms, without random jitter.',
  },
  'segment.ms': {
    type: 'LONG',
    kafkaDefault: '604800000',
    validate: atLeast(1n),
    brokerName: 'log.roll.ms',
    brokerNameUnset: true,
    brokerFallback: ['log.roll.hours', '168'],
    brokerKey: 'segmentMs',
    doc: 'Roll a segment once its first record is this old.',
  },
  'unclean.leader.election.enable': {
    type: 'BOOLEAN',
    kafkaDefault: 'false',
    brokerName: 'unclean.leader.election.enable',
    doc: `Whether an out-of-sync replica may become leader. ${NO_EFFECT_SINGLE_NODE}`,
  },
}

// Kafka's testing-only knob (LogConfig.INTERNAL_SEGMENT_BYTES_CONFIG): accepted without
// segment.bytes' 1 MiB minimum and used in place of it, never listed by DescribeConfigs.
// Kafka has no lower bound; a segment must hold at least a batch header here.
const INTERNAL_SEGMENT_BYTES = 'internal.segment.bytes'
const INTERNAL_SEGMENT_BYTES_DEF: TopicConfigDef = {
  type: 'INT',
  kafkaDefault: '',
  refuse: (v) => ((v as number) < 14 ? 'a segment must be able to hold at least 14 bytes' : undefined),
  doc: 'Testing only: segment.bytes without its minimum.',
}
const defOf = (name: string): TopicConfigDef | undefined => (name === INTERNAL_SEGMENT_BYTES ? INTERNAL_SEGMENT_BYTES_DEF : Object.hasOwn(DEFS, name) ? DEFS[name] : undefined)

/** Every topic config Kafka 4.4 lists, sorted by name. */
export const TOPIC_CONFIG_NAMES: readonly string[] = Object.keys(DEFS).sort()


/**
 * Checks CreateTopics (or AlterConfigs) entries as Kafka does: unknown names first
 * ("Unknown topic config name"), then each value's type, range and allowed values,
 * then what this broker cannot honour. Returns Kafka's INVALID_CONFIG message, or
 * undefined when all are acceptable.
 */
export function checkTopicConfigs(configs: Readonly<Record<string, string | null>>): string | undefined {
  for (const name of Object.keys(configs)) {
    if (defOf(name) === undefined) return `Unknown topic config name: ${name}`
  }
  const parsed: Record<string, Parsed> = {}
  for (const [name, raw] of Object.entries(configs)) {
    if (raw === null) return `Null value not supported for topic configs: ${name}`
    const p = parseChecked(defOf(name)!, name, raw)
    if ('error' in p) return p.error
    parsed[name] = p.value
  }
  // Kafka's LogConfig.validateValues, over the effective values.
  const minLag = (parsed['min.compaction.lag.ms'] as bigint | undefined) ?? 0n
  const maxLag = (parsed['max.compaction.lag.ms'] as bigint | undefined) ?? LONG_MAX_BIG
  if (minLag > maxLag) return `conflict topic config setting min.compaction.lag.ms (${minLag}) > max.compaction.lag.ms (${maxLag})`
  // Kafka's own words (golden probe) for a broker without tiered storage.
  if (parsed['remote.storage.enable'] === true) {
    return 'Tiered Storage functionality is disabled in the broker. Topic cannot be configured with remote log storage.'
  }
  for (const [name, v] of Object.entries(parsed)) {
    const why = defOf(name)!.refuse?.(v)
    if (why !== undefined) return `Invalid value ${configs[name]!.trim()} for configuration ${name}: ${why}`
  }
  return undefined
}

const BY_BROKER_NAME = new Map(Object.entries(DEFS).flatMap(([name, d]) => (d.brokerName === undefined ? [] : [[d.brokerName, name] as const])))

/** The topic config a broker-level name is the default of (Kafka's ServerTopicConfigSynonyms), if any. */
export function topicConfigOfBrokerName(brokerName: string): string | undefined {
  return BY_BROKER_NAME.get(brokerName)
}

/** Kafka's type of a topic config (or of its broker-level synonym), for APPEND / SUBTRACT. */
export function topicConfigKind(name: string): { list: boolean; defaultValue: string } | undefined {
  const def = defOf(name) ?? DEFS[BY_BROKER_NAME.get(name) ?? '']
  return def === undefined ? undefined : { list: def.type === 'LIST', defaultValue: def.kafkaDefault }
}

/**
 * Checks a dynamic broker-level value of a topic config's synonym (log.retention.ms, ...):
 * Kafka's ConfigException (INVALID_REQUEST) for type and range, naming the broker config,
 * or what this broker cannot honour (INVALID_CONFIG, as for the topic config).
 */
export function checkBrokerTopicDefault(brokerName: string, raw: string): { invalidConfig: boolean; message: string } | undefined {
  const topicName = BY_BROKER_NAME.get(brokerName)
  if (topicName === undefined) return undefined
  const def = DEFS[topicName]!
  const p = parseChecked(def, brokerName, raw)
  if ('error' in p) return { invalidConfig: false, message: p.error }
  if (topicName === 'remote.storage.enable' && p.value === true) return undefined
  const why = def.refuse?.(p.value)
  return why === undefined ? undefined : { invalidConfig: true, message: `Invalid value ${raw.trim()} for configuration ${brokerName}: ${why}` }
}

/**
 * A topic's overrides with the broker's dynamic values filled in where the topic has
 * none: what the topic's settings are computed from (topic > dynamic > static).
 */
export function withDynamicDefaults(configs: Readonly<Record<string, string>>, dyn: DynamicLayers): Record<string, string> {
  const out: Record<string, string> = {}
  for (const [brokerName, topicName] of BY_BROKER_NAME) {
    const v = dyn.node[brokerName] ?? dyn.clusterDefault[brokerName]
    if (v !== undefined) out[topicName] = v.trim()
  }
  return { ...out, ...configs }
}

/** Trims values as Kafka parses them, so stored overrides read back as they apply. */
export function normalizeTopicConfigs(configs: Readonly<Record<string, string>>): Record<string, string> {
  const out: Record<string, string> = {}
  for (const [k, v] of Object.entries(configs)) out[k] = v.trim()
  return out
}

/** Kafka spells "no limit" as Long.MAX_VALUE; the broker config holds Infinity. */
const asKafka = (v: unknown): string => (v === Infinity ? LONG_MAX : String(v))

function num(v: string | undefined, fallback: number, infinite = Infinity): number {
  if (v === undefined) return fallback
  const n = Number(v.trim())
  // Anything past 2^53 ms or bytes is "never" in practice; Long.MAX_VALUE is Kafka's "unlimited".
  return n >= Number.MAX_SAFE_INTEGER ? infinite : n
}

function cleanupSettings(configs: Readonly<Record<string, string>>): Pick<LogConfig, 'cleanupDelete' | 'cleanupCompact' | 'deleteRetentionMs' | 'minCompactionLagMs' | 'maxCompactionLagMs' | 'minCleanableDirtyRatio'> {
  const policy = (configs['cleanup.policy'] ?? 'delete').split(',').map((p) => p.trim())
  return {
    cleanupDelete: policy.includes('delete'),
    cleanupCompact: policy.includes('compact'),
    deleteRetentionMs: num(configs['delete.retention.ms'], 86_400_000),
    minCompactionLagMs: num(configs['min.compaction.lag.ms'], 0),
    maxCompactionLagMs: num(configs['max.compaction.lag.ms'], Infinity),
    minCleanableDirtyRatio: num(configs['min.cleanable.dirty.ratio'], 0.5),
  }
}

export function topicSettings(configs: Readonly<Record<string, string>>, b: BrokerConfig): TopicSettings {
  const internalSegment = configs[INTERNAL_SEGMENT_BYTES]
  return {
    log: {
      segmentBytes: num(internalSegment ?? configs['segment.bytes'], b.segmentBytes),
      segmentMs: num(configs['segment.ms'], b.segmentMs),
      retentionMs: num(configs['retention.ms'], b.retentionMs, -1),
      retentionBytes: num(configs['retention.bytes'], b.retentionBytes, -1),
      flushMessages: num(configs['flush.messages'], b.flushMessages),
      flushMs: num(configs['flush.ms'], b.flushMs),
      indexIntervalBytes: num(configs['index.interval.bytes'], 4096),
      ...cleanupSettings(configs),
    },
    maxMessageBytes: num(configs['max.message.bytes'], b.maxMessageBytes),
    logAppendTime: configs['message.timestamp.type']?.trim() === 'LogAppendTime',
    messageTimestampBeforeMaxMs: num(configs['message.timestamp.before.max.ms'], b.messageTimestampBeforeMaxMs),
    messageTimestampAfterMaxMs: num(configs['message.timestamp.after.max.ms'], b.messageTimestampAfterMaxMs),
    maxDecompressedBytes: num(configs['max.decompressed.message.bytes'], DEFAULT_MAX_DECOMPRESSED_BYTES),
    compression: { type: (configs['compression.type']?.trim() ?? 'producer') as TopicCompression, gzipLevel: num(configs['compression.gzip.level'], -1) },
  }
}

export interface ConfigSynonym {
  name: string
  value: string
  source: number
}

/** One config as DescribeConfigs (and CreateTopics v5+) report it. */
export interface DescribedConfig {
  name: string
  value: string
  source: number
  configType: number
  documentation: string
  /** Kafka's precedence order: the topic override, the broker's setting, the default. */
  synonyms: ConfigSynonym[]
}

/** This broker's own value for a broker-level topic default (max.decompressed.message.bytes follows the codec cap). */
function brokerDefault(def: TopicConfigDef): string {
  if (def.brokerKey !== undefined) return asKafka(BROKER_DEFAULTS[def.brokerKey])
  if (def.brokerName === 'max.decompressed.message.bytes') return String(DEFAULT_MAX_DECOMPRESSED_BYTES)
  return def.kafkaDefault
}

/**
 * The broker-level value behind a topic config: what the broker flag set
 * (STATIC_BROKER_CONFIG; a flag equal to the default cannot be told apart from
 * none), else this broker's default.
 */
export function brokerLevel(name: string, b: BrokerConfig, dyn: DynamicLayers = NO_DYNAMIC): { value: string; source: number } {
  const def = DEFS[name]!
  if (def.brokerName !== undefined) {
    const node = dyn.node[def.brokerName]
    if (node !== undefined) return { value: node, source: ConfigSource.DYNAMIC_BROKER_CONFIG }
    const cluster = dyn.clusterDefault[def.brokerName]
    if (cluster !== undefined) return { value: cluster, source: ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG }
  }
  return staticLevel(def, b)
}

function staticLevel(def: TopicConfigDef, b: BrokerConfig): { value: string; source: number } {
  if (def.brokerKey !== undefined && b[def.brokerKey] !== BROKER_DEFAULTS[def.brokerKey]) {
    return { value: asKafka(b[def.brokerKey]), source: ConfigSource.STATIC_BROKER_CONFIG }
  }
  return { value: brokerDefault(def), source: ConfigSource.DEFAULT_CONFIG }
}

/** The broker-level synonyms (name, type, value, source) of every topic config that has one. */
export function brokerTopicDefaults(b: BrokerConfig, dyn: DynamicLayers = NO_DYNAMIC): { name: string; type: number; value: string; source: number; synonyms: ConfigSynonym[]; doc: string }[] {
  return TOPIC_CONFIG_NAMES.flatMap((name) => {
    const def = DEFS[name]!
    if (def.brokerName === undefined) return []
    return [{ name: def.brokerName, type: ConfigType[def.type], ...brokerLevel(name, b, dyn), synonyms: brokerSynonyms(def, b, dyn), doc: `Broker-wide default of the topic config ${name}. ${def.doc}` }]
  })
}

/** The broker-level synonyms of a topic config, in Kafka's order: this node's dynamic value, the cluster default, the command line, the default. */
function brokerSynonyms(def: TopicConfigDef, b: BrokerConfig, dyn: DynamicLayers): ConfigSynonym[] {
  const out: ConfigSynonym[] = []
  const bn = def.brokerName
  if (bn === undefined) return out
  if (dyn.node[bn] !== undefined) out.push({ name: bn, value: dyn.node[bn]!, source: ConfigSource.DYNAMIC_BROKER_CONFIG })
  if (dyn.clusterDefault[bn] !== undefined) out.push({ name: bn, value: dyn.clusterDefault[bn]!, source: ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG })
  const st = staticLevel(def, b)
  if (st.source === ConfigSource.STATIC_BROKER_CONFIG) out.push({ name: bn, ...st })
  if (def.brokerNameUnset !== true) out.push({ name: bn, value: brokerDefault(def), source: ConfigSource.DEFAULT_CONFIG })
  // What a live Kafka 4.4 lists once the name has a value of its own, static or dynamic.
  if (def.brokerFallback !== undefined && out.length > 0) {
    out.push({ name: def.brokerFallback[0], value: def.brokerFallback[1], source: ConfigSource.DEFAULT_CONFIG })
  }
  return out
}

/** Every topic config's effective value for a topic, with its source and synonyms, sorted by name. */
export function describeTopicConfigs(configs: Readonly<Record<string, string>>, b: BrokerConfig, dyn: DynamicLayers = NO_DYNAMIC): DescribedConfig[] {
  return TOPIC_CONFIG_NAMES.map((name) => {
    const def = DEFS[name]!
    const synonyms: ConfigSynonym[] = []
    const own = configs[name]
    if (own !== undefined) synonyms.push({ name, value: own, source: ConfigSource.DYNAMIC_TOPIC_CONFIG })
    const broker = brokerLevel(name, b, dyn)
    synonyms.push(...brokerSynonyms(def, b, dyn))
    const effective = own !== undefined ? { value: own, source: ConfigSource.DYNAMIC_TOPIC_CONFIG } : broker
    return { name, ...effective, configType: ConfigType[def.type], documentation: def.doc, synonyms }
  })
}
