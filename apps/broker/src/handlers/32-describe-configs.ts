import { DescribeConfigs, ErrorCodes, type DescribeConfigsResponseResourceResult } from '@tidelog/protocol'
import type { BrokerConfig } from '../config.js'
import { describeTopicConfigs } from '../topic-config.js'
import { defineHandler } from './types.js'

const TOPIC = 2
const BROKER = 4
// ConfigSource (KIP-226) and ConfigType (KIP-569) values.
const DYNAMIC_TOPIC_CONFIG = 1
const STATIC_BROKER_CONFIG = 4
const DEFAULT_CONFIG = 5
const TYPES: Record<string, number> = {
  'cleanup.policy': 7,
  'retention.ms': 5,
  'retention.bytes': 5,
  'segment.bytes': 3,
  'segment.ms': 5,
  'flush.messages': 5,
  'flush.ms': 5,
  'max.message.bytes': 3,
  'message.timestamp.type': 2,
  'index.interval.bytes': 3,
  'min.insync.replicas': 3,
}

// What the broker itself reports, by Kafka's broker config names.
function brokerConfigs(b: BrokerConfig): [string, string, number][] {
  const long = (n: number) => (n === Infinity ? '9223372036854775807' : String(n))
  return [
    ['node.id', String(b.nodeId), 3],
    ['num.partitions', String(b.numPartitions), 3],
    ['auto.create.topics.enable', String(b.autoCreateTopics), 1],
    ['log.segment.bytes', String(b.segmentBytes), 3],
    ['log.roll.ms', String(b.segmentMs), 5],
    ['log.retention.ms', String(b.retentionMs), 5],
    ['log.retention.bytes', String(b.retentionBytes), 5],
    ['log.flush.interval.messages', long(b.flushMessages), 5],
    ['log.flush.interval.ms', long(b.flushMs), 5],
    ['message.max.bytes', String(b.maxMessageBytes), 3],
    ['socket.request.max.bytes', String(b.maxRequestBytes), 3],
    ['default.replication.factor', '1', 3],
    ['offsets.topic.replication.factor', '1', 4],
  ]
}

/**
 * DescribeConfigs 1-4: a topic's effective configs (its overrides, else the
 * broker-wide values), with sources and, when asked, synonyms; and the
 * broker's own settings.
 */
export const describeConfigsHandler = defineHandler({
  api: DescribeConfigs,
  minVersion: 1,
  maxVersion: 4,
  handle(ctx, req) {
    const broker = ctx.broker
    const v = ctx.version
    const synonyms = req.includeSynonyms === true
    const results = req.resources.map((r) => {
      const base = { errorMessage: null, resourceType: r.resourceType, resourceName: r.resourceName }
      const wanted = (name: string) => r.configurationKeys === null || r.configurationKeys.includes(name)
      let configs: DescribeConfigsResponseResourceResult[]
      if (r.resourceType === TOPIC) {
        const topic = broker.topics.get(r.resourceName)
        if (topic === undefined) return { ...base, errorCode: ErrorCodes.UNKNOWN_TOPIC_OR_PARTITION, errorMessage: `topic ${r.resourceName} does not exist`, configs: [] }
        configs = describeTopicConfigs(topic.configs, broker.config)
          .filter((c) => wanted(c.name))
          .map((c) => {
            const source = c.isDefault ? DEFAULT_CONFIG : DYNAMIC_TOPIC_CONFIG
            return {
              name: c.name,
              value: c.value,
              readOnly: false,
              configSource: source,
              isSensitive: false,
              synonyms: synonyms ? [{ name: c.name, value: c.value, source }] : [],
              ...(v >= 3 ? { configType: TYPES[c.name] ?? 0, documentation: null } : {}),
            }
          })
      } else if (r.resourceType === BROKER) {
        if (r.resourceName !== '' && r.resourceName !== String(broker.nodeId)) {
          return { ...base, errorCode: ErrorCodes.INVALID_REQUEST, errorMessage: `this is broker ${broker.nodeId}`, configs: [] }
        }
        configs = brokerConfigs(broker.config)
          .filter(([name]) => wanted(name))
          .map(([name, value, type]) => ({
            name,
            value,
            readOnly: true,
            configSource: STATIC_BROKER_CONFIG,
            isSensitive: false,
            synonyms: synonyms ? [{ name, value, source: STATIC_BROKER_CONFIG }] : [],
            ...(v >= 3 ? { configType: type, documentation: null } : {}),
          }))
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
