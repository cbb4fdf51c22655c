/**
 * Group configs (KIP-848 resource type GROUP = 32), as Kafka 4.4's GroupConfig defines and
 * validates them: names, types, defaults (the broker-level synonyms' defaults), the ConfigDef
 * validators, then the checks against the broker's min/max bounds (GroupConfig.validateValues).
 *
 * None of them changes what this broker does: it serves the classic group protocol only
 * (JoinGroup/SyncGroup/Heartbeat), which uses the member's own session timeout, not these.
 * They are validated, stored durably and reported as Kafka does, so tools and clients that
 * set them (kafka-configs.sh --entity-type groups, librdkafka, AdminClient) work unchanged.
 */
import { type Complaint, type Kind, type Parsed, atLeast, oneOf, parseChecked } from '../topic-config-values.js'
import { ConfigSource, ConfigType, type DescribedConfig } from '../topic-config.js'

/** Kafka's GroupCoordinatorConfig / ShareGroupConfig defaults for the broker-level settings group configs fall back to and are bounded by. */
const BROKER: Readonly<Record<string, number | string>> = {
  'group.consumer.session.timeout.ms': 45000,
  'group.consumer.min.session.timeout.ms': 45000,
  'group.consumer.max.session.timeout.ms': 60000,
  'group.consumer.heartbeat.interval.ms': 5000,
  'group.consumer.min.heartbeat.interval.ms': 5000,
  'group.consumer.max.heartbeat.interval.ms': 15000,
  'group.consumer.assignment.interval.ms': 1000,
  'group.consumer.min.assignment.interval.ms': 0,
  'group.consumer.max.assignment.interval.ms': 15000,
  'group.consumer.assignor.offload.enable': 'true',
  'group.share.session.timeout.ms': 45000,
  'group.share.min.session.timeout.ms': 45000,
  'group.share.max.session.timeout.ms': 60000,
  'group.share.heartbeat.interval.ms': 5000,
  'group.share.min.heartbeat.interval.ms': 5000,
  'group.share.max.heartbeat.interval.ms': 15000,
  'group.share.record.lock.duration.ms': 30000,
  'group.share.min.record.lock.duration.ms': 15000,
  'group.share.max.record.lock.duration.ms': 60000,
  'group.share.delivery.count.limit': 5,
  'group.share.min.delivery.count.limit': 2,
  'group.share.max.delivery.count.limit': 10,
  'group.share.partition.max.record.locks': 2000,
  'group.share.min.partition.max.record.locks': 100,
  'group.share.max.partition.max.record.locks': 4000,
  'group.share.assignment.interval.ms': 1000,
  'group.share.min.assignment.interval.ms': 0,
  'group.share.max.assignment.interval.ms': 15000,
  'group.share.assignor.offload.enable': 'true',
  'group.streams.session.timeout.ms': 45000,
  'group.streams.min.session.timeout.ms': 45000,
  'group.streams.max.session.timeout.ms': 60000,
  'group.streams.heartbeat.interval.ms': 5000,
  'group.streams.min.heartbeat.interval.ms': 5000,
  'group.streams.max.heartbeat.interval.ms': 15000,
  'group.streams.num.standby.replicas': 0,
  'group.streams.max.standby.replicas': 2,
  'group.streams.initial.rebalance.delay.ms': 3000,
  'group.streams.assignment.interval.ms': 1000,
  'group.streams.min.assignment.interval.ms': 0,
  'group.streams.max.assignment.interval.ms': 15000,
  'group.streams.assignor.offload.enable': 'true',
  'group.streams.task.offset.interval.ms': 60000,
  'group.streams.min.task.offset.interval.ms': 15000,
  'group.streams.num.warmup.replicas': 2,
  'group.streams.max.warmup.replicas': 20,
  'group.streams.rack.aware.assignment.tags': '',
  'group.streams.acceptable.recovery.lag': 10000,
}
/** group.streams.assignors: the first one is a group's assignor unless streams.assignor.name names another. */
const STREAMS_ASSIGNORS = ['sticky']

const NO_EFFECT = 'Validated, stored and reported as Kafka does; no effect here, as this broker serves the classic group protocol only.'

interface GroupConfigDef {
  type: Kind
  /** The broker-level config it falls back to (GroupConfig.ALL_GROUP_CONFIG_SYNONYMS); the group name itself when Kafka has none. */
  brokerName?: string
  /** The default when there is no broker-level synonym. */
  ownDefault?: string
  validate?: (v: Parsed) => Complaint | undefined
  /** Kafka's internal group configs: accepted, but described only once set. */
  internal?: boolean
  doc: string
}

// share.auto.offset.reset (KIP-932, KIP-1106): earliest, latest or by_duration:<java.time.Duration, not negative>.
const JAVA_DURATION = /^([-+]?)P(?:([-+]?\d+)D)?(T(?:([-+]?\d+)H)?(?:([-+]?\d+)M)?(?:([-+]?\d+)(?:[.,](\d{0,9}))?S)?)?$/i
function negativeOrInvalidDuration(s: string): boolean {
  const m = JAVA_DURATION.exec(s)
  // Java needs a day or time part, and a T followed by at least one time field.
  if (m === null || (m[2] === undefined && m[3] === undefined) || m[3] === 'T' || m[3] === 't') return true
  const n = (x: string | undefined) => BigInt(x ?? '0')
  const secondsNeg = (m[6] ?? '').startsWith('-')
  const fraction = BigInt((m[7] ?? '').padEnd(9, '0') || '0')
  let nanos = (n(m[2]) * 86400n + n(m[4]) * 3600n + n(m[5]) * 60n + n(m[6])) * 1_000_000_000n + (secondsNeg ? -fraction : fraction)
  if (m[1] === '-') nanos = -nanos
  return nanos < 0n
}
function autoOffsetReset(v: Parsed): Complaint | undefined {
  const s = v as string
  if (s === 'earliest' || s === 'latest') return undefined
  if (s.startsWith('by_duration:') && !negativeOrInvalidDuration(s.slice('by_duration:'.length))) return undefined
  return `Invalid value \`${s}\` for configuration share.auto.offset.reset. The value must be either 'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS>'.`
}

const INT = (min: number, brokerName: string, doc: string, internal = false): GroupConfigDef => ({ type: 'INT', brokerName, validate: atLeast(min), doc, internal })
const BOOL = (brokerName: string | undefined, doc: string, internal = false, ownDefault?: string): GroupConfigDef => ({ type: 'BOOLEAN', brokerName, ownDefault, doc, internal })

// Kafka 4.4's GroupConfig.CONFIG_DEF, in its order.
const DEFS: Record<string, GroupConfigDef> = {
  'consumer.session.timeout.ms': INT(1, 'group.consumer.session.timeout.ms', 'The timeout to detect client failures when using the consumer group protocol.'),
  'consumer.heartbeat.interval.ms': INT(1, 'group.consumer.heartbeat.interval.ms', 'The heartbeat interval given to the members of a consumer group.'),
  'consumer.assignment.interval.ms': INT(0, 'group.consumer.assignment.interval.ms', 'The interval between assignment updates for a consumer group.'),
  'consumer.assignor.offload.enable': BOOL('group.consumer.assignor.offload.enable', 'Whether to offload consumer group assignment to a group coordinator background thread.', true),
  'share.session.timeout.ms': INT(1, 'group.share.session.timeout.ms', 'The timeout to detect client failures when using the share group protocol.'),
  'share.heartbeat.interval.ms': INT(1, 'group.share.heartbeat.interval.ms', 'The heartbeat interval given to the members of a share group.'),
  'share.record.lock.duration.ms': INT(1000, 'group.share.record.lock.duration.ms', 'The record acquisition lock duration in milliseconds for share groups.'),
  'share.delivery.count.limit': INT(2, 'group.share.delivery.count.limit', 'The maximum number of delivery attempts for a record delivered to a share group.'),
  'share.partition.max.record.locks': INT(100, 'group.share.partition.max.record.locks', 'Share-group record lock limit per share-partition.'),
  'share.auto.offset.reset': { type: 'STRING', ownDefault: 'latest', validate: autoOffsetReset, doc: 'The strategy to initialize the share-partition start offset: earliest, latest or by_duration:<ISO 8601 duration>.' },
  'share.isolation.level': { type: 'STRING', ownDefault: 'read_uncommitted', validate: oneOf(['read_committed', 'read_uncommitted']), doc: 'Whether a share group delivers only committed transactional records (read_committed) or all of them.' },
  'share.renew.acknowledge.enable': BOOL(undefined, 'Whether the renew acknowledge type is enabled for the share group.', false, 'true'),
  'share.assignment.interval.ms': INT(0, 'group.share.assignment.interval.ms', 'The interval between assignment updates for a share group.'),
  'share.assignor.offload.enable': BOOL('group.share.assignor.offload.enable', 'Whether to offload share group assignment to a group coordinator background thread.', true),
  'streams.session.timeout.ms': INT(1, 'group.streams.session.timeout.ms', 'The timeout to detect client failures when using the streams group protocol.'),
  'streams.heartbeat.interval.ms': INT(1, 'group.streams.heartbeat.interval.ms', 'The heartbeat interval given to the members.'),
  'streams.num.standby.replicas': INT(0, 'group.streams.num.standby.replicas', 'The number of standby replicas for each task.'),
  'streams.initial.rebalance.delay.ms': INT(0, 'group.streams.initial.rebalance.delay.ms', 'How long a new streams group waits for more members before its first rebalance.'),
  'streams.assignment.interval.ms': INT(0, 'group.streams.assignment.interval.ms', 'The interval between assignment updates for a streams group.'),
  'streams.assignor.offload.enable': BOOL('group.streams.assignor.offload.enable', 'Whether to offload streams group assignment to a group coordinator background thread.', true),
  'streams.task.offset.interval.ms': INT(1, 'group.streams.task.offset.interval.ms', 'How often warmup task changelog offsets are reported to the broker.', true),
  'streams.num.warmup.replicas': INT(0, 'group.streams.num.warmup.replicas', 'The maximum number of warmup task replicas.', true),
  'streams.rack.aware.assignment.tags': { type: 'LIST', brokerName: 'group.streams.rack.aware.assignment.tags', doc: 'Client tag keys used to spread standby replicas across Kafka Streams instances.' },
  'streams.acceptable.recovery.lag': { type: 'LONG', brokerName: 'group.streams.acceptable.recovery.lag', validate: atLeast(0n), internal: true, doc: 'The lag (offsets to catch up) up to which a client counts as caught up for an active task.' },
  'streams.assignor.name': { type: 'STRING', brokerName: 'group.streams.assignors', doc: "The task assignor of this streams group, by name among the broker's group.streams.assignors; unset, the first of them." },
  'errors.deadletterqueue.topic.name': { type: 'STRING', ownDefault: '', doc: 'The dead-letter queue topic of this share group; blank for none.' },
  'errors.deadletterqueue.copy.record.enable': BOOL(undefined, 'Whether the dead-letter queue record copies the original record or only carries context headers.', false, 'false'),
}

export const GROUP_CONFIG_NAMES: readonly string[] = Object.keys(DEFS)

const bound = (name: string) => BROKER[name] as number
// GroupConfig.validateValues, in its order: [config, broker min name, broker max name].
const BOUNDS: readonly [string, string | undefined, string | undefined][] = [
  ['consumer.heartbeat.interval.ms', 'group.consumer.min.heartbeat.interval.ms', 'group.consumer.max.heartbeat.interval.ms'],
  ['consumer.session.timeout.ms', 'group.consumer.min.session.timeout.ms', 'group.consumer.max.session.timeout.ms'],
  ['consumer.assignment.interval.ms', 'group.consumer.min.assignment.interval.ms', 'group.consumer.max.assignment.interval.ms'],
  ['share.heartbeat.interval.ms', 'group.share.min.heartbeat.interval.ms', 'group.share.max.heartbeat.interval.ms'],
  ['share.session.timeout.ms', 'group.share.min.session.timeout.ms', 'group.share.max.session.timeout.ms'],
  ['share.record.lock.duration.ms', 'group.share.min.record.lock.duration.ms', 'group.share.max.record.lock.duration.ms'],
  ['share.delivery.count.limit', 'group.share.min.delivery.count.limit', 'group.share.max.delivery.count.limit'],
  ['share.partition.max.record.locks', 'group.share.min.partition.max.record.locks', 'group.share.max.partition.max.record.locks'],
  ['share.assignment.interval.ms', 'group.share.min.assignment.interval.ms', 'group.share.max.assignment.interval.ms'],
  ['streams.heartbeat.interval.ms', 'group.streams.min.heartbeat.interval.ms', 'group.streams.max.heartbeat.interval.ms'],
  ['streams.session.timeout.ms', 'group.streams.min.session.timeout.ms', 'group.streams.max.session.timeout.ms'],
  ['streams.num.standby.replicas', undefined, 'group.streams.max.standby.replicas'],
  ['streams.assignment.interval.ms', 'group.streams.min.assignment.interval.ms', 'group.streams.max.assignment.interval.ms'],
  ['streams.task.offset.interval.ms', 'group.streams.min.task.offset.interval.ms', undefined],
  ['streams.num.warmup.replicas', undefined, 'group.streams.max.warmup.replicas'],
]
const SESSION_OVER_HEARTBEAT = ['consumer', 'share', 'streams'] as const

function boundsComplaint(name: string, v: number, minName: string | undefined, maxName: string | undefined): string | undefined {
  const min = minName === undefined ? undefined : bound(minName)
  const max = maxName === undefined ? undefined : bound(maxName)
  if (min !== undefined && max !== undefined) return v < min || v > max ? `${name} must be in the range ${min} to ${max} inclusive.` : undefined
  if (max !== undefined && v > max) return `${name} must be less than or equal to ${max}`
  if (min !== undefined && v < min) return `${name} must be greater than or equal to ${min}`
  return undefined
}

/**
 * Checks a group's complete set of configs after a change, as Kafka's GroupConfig.validate:
 * names, duplicate rack tags, each value's type and validator, then the broker's bounds and
 * the session-over-heartbeat rule for the values given. Returns Kafka's INVALID_CONFIG message.
 */
export function checkGroupConfigs(configs: Readonly<Record<string, string>>): string | undefined {
  for (const name of Object.keys(configs)) if (!Object.hasOwn(DEFS, name)) return `Unknown group config name: ${name}`
  const tags = configs['streams.rack.aware.assignment.tags']
  if (tags !== undefined && tags.trim() !== '') {
    const list = tags.split(/\s*,\s*/)
    if (new Set(list).size !== list.length) return 'streams.rack.aware.assignment.tags must not contain duplicate tag keys.'
  }
  const parsed: Record<string, Parsed> = {}
  // ConfigDef.parse goes through the definitions in order.
  for (const [name, def] of Object.entries(DEFS)) {
    const raw = configs[name]
    if (raw === undefined) continue
    const p = parseChecked(def, name, raw)
    if ('error' in p) return p.error
    parsed[name] = p.value
  }
  for (const [name, minName, maxName] of BOUNDS) {
    if (parsed[name] === undefined) continue
    const why = boundsComplaint(name, parsed[name] as number, minName, maxName)
    if (why !== undefined) return why
  }
  const assignor = parsed['streams.assignor.name'] as string | undefined
  if (assignor !== undefined && !STREAMS_ASSIGNORS.includes(assignor)) {
    return `streams.assignor.name '${assignor}' is not a registered task assignor. Registered assignors are: [${STREAMS_ASSIGNORS.join(', ')}].`
  }
  for (const kind of SESSION_OVER_HEARTBEAT) {
    const [s, h] = [`${kind}.session.timeout.ms`, `${kind}.heartbeat.interval.ms`]
    if (parsed[s] === undefined && parsed[h] === undefined) continue
    const session = (parsed[s] as number | undefined) ?? bound(`group.${kind}.session.timeout.ms`)
    const heartbeat = (parsed[h] as number | undefined) ?? bound(`group.${kind}.heartbeat.interval.ms`)
    if (session <= heartbeat) return `${s} must be greater than ${h}`
  }
  const dlq = parsed['errors.deadletterqueue.topic.name'] as string | undefined
  if (dlq !== undefined && dlq.startsWith('__')) return "errors.deadletterqueue.topic.name: DLQ topic name must not start with '__'"
  return undefined
}

const CONFIG_TYPE: Record<Kind, number> = { BOOLEAN: ConfigType.BOOLEAN, STRING: ConfigType.STRING, INT: ConfigType.INT, SHORT: ConfigType.SHORT, LONG: ConfigType.LONG, DOUBLE: ConfigType.DOUBLE, LIST: ConfigType.LIST }

function brokerValue(def: GroupConfigDef): string {
  if (def.brokerName === 'group.streams.assignors') return STREAMS_ASSIGNORS[0]!
  if (def.brokerName !== undefined) return String(BROKER[def.brokerName])
  return def.ownDefault ?? ''
}

/**
 * A group's configs as Kafka 4.4 describes them: every public config (the internal ones only
 * once set), the group's own value as DYNAMIC_GROUP_CONFIG or else the broker-level default as
 * DEFAULT_CONFIG, with the synonyms in that order (the broker-level one under its broker name).
 */
export function describeGroupConfigs(overrides: Readonly<Record<string, string>>): DescribedConfig[] {
  const out: DescribedConfig[] = []
  for (const [name, def] of Object.entries(DEFS)) {
    const own = overrides[name]
    if (def.internal === true && own === undefined) continue
    const fallback = { name: def.brokerName ?? name, value: brokerValue(def), source: ConfigSource.DEFAULT_CONFIG }
    const synonyms = own === undefined ? [fallback] : [{ name, value: own, source: ConfigSource.DYNAMIC_GROUP_CONFIG }, fallback]
    out.push({ name, value: synonyms[0]!.value, source: synonyms[0]!.source, configType: CONFIG_TYPE[def.type], documentation: `${def.doc} ${NO_EFFECT}`, synonyms })
  }
  return out.sort((a, b) => (a.name < b.name ? -1 : 1))
}
