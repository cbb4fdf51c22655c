import {
  CreatePartitions,
  CreateTopics,
  DeleteTopics,
  ErrorCodes,
  ProtocolError,
  ZERO_UUID,
  type CreateTopicsRequest,
} from '@tidelog/protocol'
import type { Connection } from '../connection.js'
import { isRetriable } from '../errors.js'
import { perItem, type AdminContext, type Outcomes } from './engine.js'
import type { CreatedTopic, NewPartitions, NewTopic, TopicDescription } from './types.js'

function configList(configs: NewTopic['configs']): { name: string; value: string | null }[] {
  if (configs === undefined) return []
  if (Array.isArray(configs)) return configs.map((c) => ({ name: c.name, value: c.value }))
  return Object.entries(configs).map(([name, value]) => ({ name, value }))
}

async function controller(ctx: AdminContext): Promise<Connection> {
  return ctx.cluster.controllerConnection()
}

/**
 * For topic management, a topic that does not exist will not appear by waiting, although
 * Kafka's table calls UNKNOWN_TOPIC_OR_PARTITION retriable (it is, for produce and fetch);
 * Java's AdminClient fails such topics at once too.
 */
function retriableForTopicAdmin(e: Error): boolean {
  return e instanceof ProtocolError ? e.retriable && e.code !== ErrorCodes.UNKNOWN_TOPIC_OR_PARTITION : isRetriable(e)
}

/**
 * Java's retryOnQuotaViolation (KIP-599, default true): a topic refused with
 * THROTTLING_QUOTA_EXCEEDED is tried again (the connection holds the retry for the broker's
 * throttle_time_ms); false fails it at once.
 */
export interface QuotaRetryOption {
  retryOnQuotaViolation?: boolean
}

function quotaRetry(options: QuotaRetryOption, retriable: (e: Error) => boolean): (e: Error) => boolean {
  if (options.retryOnQuotaViolation !== false) return retriable
  return (e) => !(e instanceof ProtocolError && e.code === ErrorCodes.THROTTLING_QUOTA_EXCEEDED) && retriable(e)
}

export async function createTopics(
  ctx: AdminContext,
  topics: readonly NewTopic[],
  options: { validateOnly?: boolean; timeoutMs?: number } & QuotaRetryOption = {},
): Promise<CreatedTopic[]> {
  const timeoutMs = options.timeoutMs ?? ctx.timeoutMs
  // Leaving partitions or replication factor to the broker (-1) arrived in v4 (KIP-464).
  const needsDefaults = topics.some((t) => t.assignments === undefined && (t.partitions === undefined || t.replicationFactor === undefined))
  return perItem(ctx, 'createTopics', topics, (t) => t.name, async (pending, deadline) => {
    const conn = await controller(ctx)
    const body = (v: number): CreateTopicsRequest => {
      const req: CreateTopicsRequest = {
        topics: pending.map((t) => ({
          name: t.name,
          numPartitions: t.assignments !== undefined ? -1 : (t.partitions ?? -1),
          replicationFactor: t.assignments !== undefined ? -1 : (t.replicationFactor ?? -1),
          assignments: (t.assignments ?? []).map((brokerIds, partitionIndex) => ({ partitionIndex, brokerIds })),
          configs: configList(t.configs),
        })),
        timeoutMs: Math.max(1, Math.min(timeoutMs, Math.floor(deadline.remaining()))),
      }
      if (v >= 1) req.validateOnly = options.validateOnly === true
      return req
    }
    const minVersion = needsDefaults ? 4 : options.validateOnly === true ? 1 : undefined
    const res = await conn.request(CreateTopics, body, { minVersion })
    const out: Outcomes<CreatedTopic> = new Map()
    const asked = new Map(pending.map((t) => [t.name, t]))
    for (const t of res.topics) {
      if (t.errorCode !== 0) {
        out.set(t.name, new ProtocolError(t.errorCode, { api: 'CreateTopics', apiKey: CreateTopics.apiKey, topic: t.name, message: t.errorMessage }))
        continue
      }
      const req = asked.get(t.name)
      out.set(t.name, {
        name: t.name,
        topicId: t.topicId ?? ZERO_UUID,
        partitions: t.numPartitions !== undefined && t.numPartitions >= 0 ? t.numPartitions : (req?.assignments?.length ?? req?.partitions ?? -1),
        replicationFactor:
          t.replicationFactor !== undefined && t.replicationFactor >= 0 ? t.replicationFactor : (req?.assignments?.[0]?.length ?? req?.replicationFactor ?? -1),
      })
    }
    return out
  }, { timeoutMs, retriable: quotaRetry(options, isRetriable) })
}

export async function deleteTopics(ctx: AdminContext, names: readonly string[], options: { timeoutMs?: number } & QuotaRetryOption = {}): Promise<void> {
  const timeoutMs = options.timeoutMs ?? ctx.timeoutMs
  await perItem(ctx, 'deleteTopics', names, (n) => n, async (pending, deadline) => {
    const conn = await controller(ctx)
    const res = await conn.request(DeleteTopics, (v) => {
      const t = Math.max(1, Math.min(timeoutMs, Math.floor(deadline.remaining())))
      // v6 (KIP-516) names topics by name or id; we always name them.
      return v >= 6
        ? { topics: pending.map((name) => ({ name, topicId: ZERO_UUID })), timeoutMs: t }
        : { topicNames: [...pending], timeoutMs: t }
    })
    const out: Outcomes<true> = new Map()
    for (const r of res.responses) {
      if (r.name === null) continue
      out.set(r.name, r.errorCode === 0 ? true : new ProtocolError(r.errorCode, { api: 'DeleteTopics', apiKey: DeleteTopics.apiKey, topic: r.name, message: r.errorMessage }))
    }
    return out
  }, { timeoutMs, retriable: quotaRetry(options, retriableForTopicAdmin) })
}

export async function createPartitions(
  ctx: AdminContext,
  requests: readonly NewPartitions[],
  options: { validateOnly?: boolean; timeoutMs?: number } & QuotaRetryOption = {},
): Promise<void> {
  const timeoutMs = options.timeoutMs ?? ctx.timeoutMs
  await perItem(ctx, 'createPartitions', requests, (r) => r.topic, async (pending, deadline) => {
    const conn = await controller(ctx)
    const res = await conn.request(CreatePartitions, {
      topics: pending.map((p) => ({
        name: p.topic,
        count: p.count,
        assignments: p.assignments === undefined ? null : p.assignments.map((brokerIds) => ({ brokerIds })),
      })),
      timeoutMs: Math.max(1, Math.min(timeoutMs, Math.floor(deadline.remaining()))),
      validateOnly: options.validateOnly === true,
    })
    const out: Outcomes<true> = new Map()
    for (const r of res.results) {
      out.set(r.name, r.errorCode === 0 ? true : new ProtocolError(r.errorCode, { api: 'CreatePartitions', apiKey: CreatePartitions.apiKey, topic: r.name, message: r.errorMessage }))
    }
    return out
  }, { timeoutMs, retriable: quotaRetry(options, retriableForTopicAdmin) })
}

const NOT_LISTED = new Set<number>([ErrorCodes.UNKNOWN_TOPIC_OR_PARTITION, ErrorCodes.INVALID_TOPIC_EXCEPTION, ErrorCodes.TOPIC_AUTHORIZATION_FAILED])

export async function listTopics(ctx: AdminContext, options: { includeInternal?: boolean; timeoutMs?: number } = {}): Promise<string[]> {
  const { response } = await ctx.cluster.fetchMetadata(null, { timeoutMs: options.timeoutMs ?? ctx.timeoutMs, allowAutoTopicCreation: false })
  const names: string[] = []
  for (const t of response.topics) {
    // As Java's listTopics: a topic whose leader is still being elected (LEADER_NOT_AVAILABLE,
    // right after CreateTopics on KRaft) exists and is listed; only names the broker says do
    // not exist or may not be seen are left out.
    if (t.name === null || NOT_LISTED.has(t.errorCode)) continue
    if (t.isInternal === true && options.includeInternal !== true) continue
    names.push(t.name)
  }
  return names.sort()
}

export async function describeTopics(ctx: AdminContext, names: readonly string[], options: { timeoutMs?: number } = {}): Promise<TopicDescription[]> {
  return perItem(ctx, 'describeTopics', names, (n) => n, async (pending, deadline) => {
    const { metadata, topicErrors } = await ctx.cluster.fetchMetadata(pending, { timeoutMs: deadline.remaining(), allowAutoTopicCreation: false })
    const out: Outcomes<TopicDescription> = new Map()
    for (const name of pending) {
      const code = topicErrors.get(name)
      if (code !== undefined) {
        out.set(name, new ProtocolError(code, { api: 'Metadata', topic: name }))
        continue
      }
      const t = metadata.topic(name)
      if (t === undefined) continue
      out.set(name, {
        name,
        topicId: t.topicId,
        isInternal: t.isInternal,
        partitions: t.partitions.map((p) => ({
          partition: p.partition,
          leader: p.leader,
          leaderEpoch: p.leaderEpoch,
          replicas: p.replicas,
          isr: p.isr,
          offlineReplicas: p.offlineReplicas,
        })),
      })
    }
    return out
  }, { timeoutMs: options.timeoutMs, retriable: retriableForTopicAdmin })
}
