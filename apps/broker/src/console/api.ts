import { decodeConsumerProtocolAssignment } from '@tidelog/protocol'
import type { BrokerContext } from '../context.js'
import type { BrokerMetrics, ThroughputSample, TopicCounters } from '../metrics/broker-metrics.js'
import { groupLag } from '../metrics/lag.js'
import { describeTopicConfigs } from '../topic-config.js'
import type { Topic } from '../topics.js'
import { type Access, DESCRIBE, DESCRIBE_CONFIGS, READ } from './auth.js'
import { MAX_RECORDS, browse, offsetForTime } from './messages.js'

/** A request the console refuses, with the HTTP status and Kafka's error name for it. */
export class ConsoleError extends Error {
  constructor(
    readonly status: number,
    readonly error: string,
    message: string,
  ) {
    super(message)
    this.name = 'ConsoleError'
  }
}

function partitionsOf(t: Topic) {
  return t.logs.map((log, partition) =>
    log.isClosed
      ? { partition, offline: true }
      : {
          partition,
          offline: log.isOffline,
          logStartOffset: log.logStartOffset,
          logEndOffset: log.logEndOffset,
          highWatermark: log.highWatermark,
          lastStableOffset: log.lastStableOffset,
          size: log.size,
          segments: log.segments.length,
        },
  )
}

/**
 * Refused before the topic is looked up, as Kafka answers TOPIC_AUTHORIZATION_FAILED for a topic
 * the principal may not describe whether or not it exists: its existence is not told either.
 */
function topicOrThrow(broker: BrokerContext, access: Access, name: string, operation: number = DESCRIBE): Topic {
  if (!access.topic(operation, name)) throw new ConsoleError(403, 'TOPIC_AUTHORIZATION_FAILED', `${access.principal} is not authorized to ${operation === READ ? 'read' : 'describe'} topic ${name}`)
  const t = broker.topics.get(name)
  if (t === undefined) throw new ConsoleError(404, 'UNKNOWN_TOPIC_OR_PARTITION', `topic ${name} does not exist`)
  return t
}

function intParam(q: URLSearchParams, name: string, fallback: number | undefined): number | undefined {
  const raw = q.get(name)
  if (raw === null || raw === '') return fallback
  if (!/^-?\d+$/.test(raw) || !Number.isSafeInteger(Number(raw))) throw new ConsoleError(400, 'INVALID_REQUEST', `${name} must be an integer, not ${JSON.stringify(raw)}`)
  return Number(raw)
}

/** The topics the principal may describe: the rest are left out, as Metadata leaves them out. */
function visibleTopics(broker: BrokerContext, access: Access): Topic[] {
  return [...broker.topics.all()].filter((t) => access.topic(DESCRIBE, t.name))
}

export function health(broker: BrokerContext, metrics: BrokerMetrics, access: Access) {
  let partitions = 0
  let offline = 0
  let topics = 0
  let bytes = 0
  const visible = visibleTopics(broker, access)
  for (const t of visible) {
    topics++
    for (const log of t.logs) {
      partitions++
      if (log.isClosed || log.isOffline) offline++
      else bytes += log.size
    }
  }
  const mem = process.memoryUsage()
  return {
    status: offline === 0 ? 'online' : 'degraded',
    clusterId: broker.clusterId,
    nodeId: broker.nodeId,
    advertised: broker.advertised,
    uptimeMs: Date.now() - metrics.startedAt,
    topics,
    partitions,
    offlinePartitions: offline,
    logBytes: bytes,
    groups: broker.groups.listGroups().filter((g) => access.group(DESCRIBE, g.groupId)).length,
    eventLoopDelay: metrics.eventLoopDelay,
    memory: { rss: mem.rss, heapUsed: mem.heapUsed },
    totals: access.cluster(DESCRIBE) ? metrics.total : sumCounters(visible.map((t) => metrics.topics.get(t.name))),
    principal: access.principal,
    node: process.version,
  }
}

function sumCounters(list: readonly (TopicCounters | undefined)[]): TopicCounters {
  const total: TopicCounters = { bytesIn: 0, bytesOut: 0, messagesIn: 0, produceRequests: 0, fetchRequests: 0, failedProduceRequests: 0 }
  for (const c of list) if (c !== undefined) for (const k of Object.keys(total) as (keyof TopicCounters)[]) total[k] += c[k]
  return total
}

export function listTopics(broker: BrokerContext, access: Access) {
  const out = []
  for (const t of visibleTopics(broker, access)) {
    const parts = partitionsOf(t)
    let size = 0
    let messages = 0
    for (const p of parts) {
      if (p.size !== undefined) size += p.size
      if (p.highWatermark !== undefined) messages += p.highWatermark - p.logStartOffset
    }
    out.push({ name: t.name, topicId: t.topicId, internal: t.isInternal, partitions: parts.length, size, messages })
  }
  out.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
  return out
}

export function describeTopic(broker: BrokerContext, access: Access, name: string) {
  const t = topicOrThrow(broker, access, name)
  // DescribeConfigs needs DESCRIBE_CONFIGS: without it the configs are withheld, not guessed.
  const configs = !access.topic(DESCRIBE_CONFIGS, name) ? null : describeTopicConfigs(t.configs, broker.config, broker.topics.dynamic.layers).map((c) => ({
    name: c.name,
    value: c.value,
    override: t.configs[c.name] !== undefined,
  }))
  return { name: t.name, topicId: t.topicId, internal: t.isInternal, partitions: partitionsOf(t), configs }
}

/** GET /api/topics/:t/partitions/:p/messages?offset=|timestamp=|last=&limit=&isolation= */
export async function messages(broker: BrokerContext, access: Access, name: string, partitionText: string, q: URLSearchParams) {
  const t = topicOrThrow(broker, access, name, READ)
  const partition = intParam(new URLSearchParams({ partition: partitionText }), 'partition', undefined)!
  const log = t.logs[partition]
  if (log === undefined || log.isClosed) throw new ConsoleError(404, 'UNKNOWN_TOPIC_OR_PARTITION', `${name} has no partition ${partition}`)
  if (log.isOffline) throw new ConsoleError(503, 'KAFKA_STORAGE_ERROR', `${name}-${partition} is offline`)
  const limit = intParam(q, 'limit', 50)!
  if (limit < 1 || limit > MAX_RECORDS) throw new ConsoleError(400, 'INVALID_REQUEST', `limit must be 1..${MAX_RECORDS}`)
  const isolation = q.get('isolation') ?? 'read_uncommitted'
  if (isolation !== 'read_uncommitted' && isolation !== 'read_committed') throw new ConsoleError(400, 'INVALID_REQUEST', `isolation must be read_uncommitted or read_committed, not ${JSON.stringify(isolation)}`)
  const timestamp = intParam(q, 'timestamp', undefined)
  const last = intParam(q, 'last', undefined)
  let offset: number
  if (timestamp !== undefined) offset = await offsetForTime(log, timestamp)
  else if (last !== undefined) offset = (isolation === 'read_committed' ? log.lastStableOffset : log.highWatermark) - Math.max(0, last)
  else offset = intParam(q, 'offset', log.logStartOffset)!
  return { topic: name, partition, isolation, ...(await browse(log, offset, limit, isolation)) }
}

/** Members' assignments decoded when the group speaks the consumer protocol; other protocols show bytes only. */
function assignmentOf(protocolType: string, bytes: Uint8Array): { topic: string; partitions: number[] }[] | null {
  if (protocolType !== 'consumer' || bytes.length === 0) return null
  try {
    return decodeConsumerProtocolAssignment(bytes).assignedPartitions.map((a) => ({ topic: a.topic, partitions: [...a.partitions].sort((x, y) => x - y) }))
  } catch {
    return null
  }
}

/** A group's lag on the topics the principal may describe (OffsetFetch leaves the others out). */
function visibleLag(broker: BrokerContext, access: Access, groupId: string) {
  return groupLag(broker, groupId).filter((p) => access.topic(DESCRIBE, p.topic))
}

export function listGroups(broker: BrokerContext, access: Access) {
  return broker.groups
    .listGroups()
    .filter((g) => access.group(DESCRIBE, g.groupId))
    .map((g) => {
      const lag = visibleLag(broker, access, g.groupId)
      return {
        groupId: g.groupId,
        state: g.state,
        protocolType: g.protocolType,
        members: broker.groups.describeGroup(g.groupId).members.length,
        totalLag: lag.reduce((s, p) => s + (p.lag ?? 0), 0),
      }
    })
    .sort((a, b) => (a.groupId < b.groupId ? -1 : a.groupId > b.groupId ? 1 : 0))
}

export function describeGroup(broker: BrokerContext, access: Access, groupId: string) {
  if (!access.group(DESCRIBE, groupId)) throw new ConsoleError(403, 'GROUP_AUTHORIZATION_FAILED', `${access.principal} is not authorized to describe group ${groupId}`)
  if (!broker.groups.listGroups().some((g) => g.groupId === groupId)) throw new ConsoleError(404, 'GROUP_ID_NOT_FOUND', `group ${groupId} does not exist`)
  const g = broker.groups.describeGroup(groupId)
  const members = g.members.map((m) => ({
    memberId: m.memberId,
    groupInstanceId: m.groupInstanceId,
    clientId: m.clientId,
    clientHost: m.clientHost,
    assignment: assignmentOf(g.protocolType, m.assignment),
  }))
  const owner = new Map<string, string>()
  for (const m of members) for (const a of m.assignment ?? []) for (const p of a.partitions) owner.set(`${a.topic}\0${p}`, m.memberId)
  const lag = visibleLag(broker, access, groupId).map((p) => ({ ...p, memberId: owner.get(`${p.topic}\0${p.partition}`) ?? null }))
  return { groupId, state: g.state, protocolType: g.protocolType, protocol: g.protocol, members, lag, totalLag: lag.reduce((s, p) => s + (p.lag ?? 0), 0) }
}

/** The throughput history, each sample cut down to the topics the principal may describe. */
export function throughput(metrics: BrokerMetrics, access: Access): ThroughputSample[] {
  return metrics.throughput().map((s) => ({ t: s.t, topics: Object.fromEntries(Object.entries(s.topics).filter(([name]) => access.topic(DESCRIBE, name))) }))
}
