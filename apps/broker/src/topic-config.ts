import type { BrokerConfig } from './config.js'
import type { LogConfig } from './log/index.js'

/** What a partition's handlers need from its topic's configuration. */
export interface TopicSettings {
  log: LogConfig
  maxMessageBytes: number
  /** message.timestamp.type */
  logAppendTime: boolean
}

interface ConfigSpec {
  /** The broker-wide default, as Kafka prints it. */
  defaultValue(b: BrokerConfig): string
  /** Returns an error message, or undefined if `v` is acceptable. */
  check(v: string): string | undefined
}

const LONG_MAX = '9223372036854775807'

function intCheck(min: number, max: number, allowLongMax = false): (v: string) => string | undefined {
  return (v) => {
    if (allowLongMax && v === LONG_MAX) return undefined
    if (!/^-?\d+$/.test(v)) return `must be an integer`
    const n = Number(v)
    if (!Number.isSafeInteger(n) || n < min || n > max) return `must be between ${min} and ${max}`
    return undefined
  }
}

const asKafka = (n: number): string => (n === Infinity ? LONG_MAX : String(n))

// The topic-level configs tidelog understands, by Kafka's names. DescribeConfigs
// reports these; CreateTopics and AlterConfigs accept only these (Kafka rejects
// unknown names with INVALID_CONFIG too).
export const TOPIC_CONFIGS: ReadonlyMap<string, ConfigSpec> = new Map<string, ConfigSpec>([
  ['cleanup.policy', { defaultValue: () => 'delete', check: (v) => (v === 'delete' ? undefined : 'only "delete" is supported') }],
  ['retention.ms', { defaultValue: (b) => String(b.retentionMs), check: intCheck(-1, Number.MAX_SAFE_INTEGER, true) }],
  ['retention.bytes', { defaultValue: (b) => String(b.retentionBytes), check: intCheck(-1, Number.MAX_SAFE_INTEGER, true) }],
  ['segment.bytes', { defaultValue: (b) => String(b.segmentBytes), check: intCheck(14, 2 ** 31 - 1) }],
  ['segment.ms', { defaultValue: (b) => String(b.segmentMs), check: intCheck(1, Number.MAX_SAFE_INTEGER, true) }],
  ['flush.messages', { defaultValue: (b) => asKafka(b.flushMessages), check: intCheck(1, Number.MAX_SAFE_INTEGER, true) }],
  ['flush.ms', { defaultValue: (b) => asKafka(b.flushMs), check: intCheck(0, Number.MAX_SAFE_INTEGER, true) }],
  ['max.message.bytes', { defaultValue: (b) => String(b.maxMessageBytes), check: intCheck(0, 2 ** 31 - 1) }],
  [
    'message.timestamp.type',
    { defaultValue: () => 'CreateTime', check: (v) => (v === 'CreateTime' || v === 'LogAppendTime' ? undefined : 'must be CreateTime or LogAppendTime') },
  ],
  ['index.interval.bytes', { defaultValue: () => '4096', check: intCheck(0, 2 ** 31 - 1) }],
  // Accepted for compatibility with tools that always send it; a single broker has one replica.
  ['min.insync.replicas', { defaultValue: () => '1', check: intCheck(1, 1) }],
])

/** An error message for the first unacceptable entry, or undefined. */
export function checkTopicConfigs(configs: Readonly<Record<string, string | null>>): string | undefined {
  for (const [name, value] of Object.entries(configs)) {
    const spec = TOPIC_CONFIGS.get(name)
    if (spec === undefined) return `unknown topic config ${name}`
    if (value === null) continue
    const err = spec.check(value)
    if (err !== undefined) return `invalid value ${JSON.stringify(value)} for ${name}: ${err}`
  }
  return undefined
}

function num(v: string | undefined, fallback: number, infiniteBelow0 = false): number {
  if (v === undefined) return fallback
  if (v === LONG_MAX) return infiniteBelow0 ? -1 : Infinity
  return Number(v)
}

export function topicSettings(configs: Readonly<Record<string, string>>, b: BrokerConfig): TopicSettings {
  return {
    log: {
      segmentBytes: num(configs['segment.bytes'], b.segmentBytes),
      segmentMs: num(configs['segment.ms'], b.segmentMs),
      retentionMs: num(configs['retention.ms'], b.retentionMs, true),
      retentionBytes: num(configs['retention.bytes'], b.retentionBytes, true),
      flushMessages: num(configs['flush.messages'], b.flushMessages),
      flushMs: num(configs['flush.ms'], b.flushMs),
      indexIntervalBytes: num(configs['index.interval.bytes'], 4096),
    },
    maxMessageBytes: num(configs['max.message.bytes'], b.maxMessageBytes),
    logAppendTime: configs['message.timestamp.type'] === 'LogAppendTime',
  }
}

/** Effective value of every known config for a topic, and whether it was set on the topic. */
export function describeTopicConfigs(
  configs: Readonly<Record<string, string>>,
  b: BrokerConfig,
): { name: string; value: string; isDefault: boolean }[] {
  return [...TOPIC_CONFIGS].map(([name, spec]) => {
    const own = configs[name]
    return own !== undefined ? { name, value: own, isDefault: false } : { name, value: spec.defaultValue(b), isDefault: true }
  })
}
