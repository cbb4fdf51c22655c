import { Admin as NativeAdmin, AdminError, DEFAULT_API_TIMEOUT_MS, type GroupOffset } from '@tidelog/client'
import { ProtocolError } from '@tidelog/protocol'
import {
  KafkaJSAggregateError,
  KafkaJSCreateTopicError,
  KafkaJSDeleteGroupsError,
  KafkaJSDeleteTopicRecordsError,
  KafkaJSNonRetriableError,
  KafkaJSProtocolError,
  toKafkaJSError,
  type KafkaJSError,
} from './errors.js'
import { adminEvents, Instrumentation } from './events.js'
import type { KafkaContext } from './kafka.js'
import type { Logger } from './logger.js'
import type { InstrumentationEvent, PartitionMetadata, RemoveInstrumentationEventListener, RetryOptions, SeekEntry } from './types.js'
import { createAcls, deleteAcls, describeAcls, type Acl, type AclFilter, type DeleteAclResponse, type DescribeAclResponse } from './admin-acls.js'
import { alterPartitionReassignments, listPartitionReassignments, type ListPartitionReassignmentsResponse, type PartitionReassignment } from './admin-reassignments.js'
import { describeConfigsAnswer, describeGroupsAnswer, type DescribeConfigResponse, type GroupDescriptions, type ResourceConfigQuery } from './admin-answers.js'

export interface AdminConfig {
  retry?: RetryOptions
}

export interface ITopicConfig {
  topic: string
  numPartitions?: number
  replicationFactor?: number
  replicaAssignment?: { partition: number; replicas: number[] }[]
  configEntries?: { name: string; value: string }[]
}

export interface ITopicPartitionConfig {
  topic: string
  count: number
  assignments?: number[][]
}

export interface IResourceConfig {
  type: number
  name: string
  configEntries: { name: string; value: string }[]
}

// kafkajs' default admin operation timeout for topic creation and deletion.
const DEFAULT_TOPIC_TIMEOUT = 5_000

/**
 * kafkajs' `timeout` is how long the broker may take; kafkajs then retries on its own. The
 * native operation's bound covers its retries and the wait for leaders too, so it gets at least
 * Java's default.api.timeout.ms: a loaded broker answering late is retried, not failed.
 */
function operationTimeout(timeout: number): number {
  return Math.max(timeout, DEFAULT_API_TIMEOUT_MS)
}

/**
 * Waits until the metadata shows the new partition counts: on KRaft clusters CreatePartitions
 * answers before every broker's metadata has them, and a program's next fetchTopicMetadata or
 * send to a new partition would otherwise miss them.
 */
async function untilPartitions(admin: NativeAdmin, wanted: ITopicPartitionConfig[], timeoutMs: number): Promise<void> {
  const end = Date.now() + timeoutMs
  for (;;) {
    const described = await admin.describeTopics(wanted.map((t) => t.topic))
    if (wanted.every((w) => (described.find((d) => d.name === w.topic)?.partitions.length ?? 0) >= w.count)) return
    if (Date.now() > end) return
    await new Promise((r) => setTimeout(r, 100))
  }
}

function invalidTopic(topic: unknown): void {
  if (!topic || typeof topic !== 'string') throw new KafkaJSNonRetriableError(`Invalid topic ${String(topic)}`)
}

function invalidGroup(groupId: unknown): void {
  if (!groupId) throw new KafkaJSNonRetriableError(`Invalid groupId ${String(groupId)}`)
}

/** The per-item failures of a native AdminError (or the error itself). */
function failures(e: unknown): Error[] {
  return e instanceof AdminError ? e.errors : [e as Error]
}

function protocolInfo(e: ProtocolError) {
  return { message: e.serverMessage ?? e.message, type: e.type, code: e.code, retriable: e.retriable }
}

/**
 * kafkajs' admin client on tidelog's Admin: the same methods, arguments and answers (offsets as
 * strings). Every kafkajs 2.2 admin method is served.
 */
export class KafkaAdmin {
  readonly events = adminEvents
  private readonly instrumentation: Instrumentation<typeof adminEvents>
  private readonly log: Logger
  private nativeAdmin: NativeAdmin | undefined
  private opening: Promise<NativeAdmin> | undefined

  constructor(private readonly ctx: KafkaContext, private readonly config: AdminConfig) {
    this.log = ctx.logger.namespace('Admin')
    this.instrumentation = new Instrumentation(adminEvents, 'admin', this.log)
  }

  logger(): Logger {
    return this.log
  }

  on(eventName: string, listener: (event: InstrumentationEvent<any>) => void): RemoveInstrumentationEventListener {
    return this.instrumentation.on(eventName, listener)
  }

  private native(): Promise<NativeAdmin> {
    if (this.nativeAdmin !== undefined) return Promise.resolve(this.nativeAdmin)
    this.opening ??= this.ctx.clientOptions(this.config.retry ?? this.ctx.retry, this.instrumentation.tag).then((o) => (this.nativeAdmin = new NativeAdmin(o)))
    return this.opening
  }

  private async call<T>(fn: (a: NativeAdmin) => Promise<T>): Promise<T> {
    const admin = await this.native()
    try {
      return await fn(admin)
    } catch (e) {
      throw toKafkaJSError(e)
    }
  }

  async connect(): Promise<void> {
    this.instrumentation.setConnected(true)
    await this.call((a) => a.connect()).catch((e) => {
      this.instrumentation.setConnected(false)
      throw e
    })
    this.instrumentation.emit(adminEvents.CONNECT, undefined)
  }

  async disconnect(): Promise<void> {
    const a = this.nativeAdmin
    this.nativeAdmin = undefined
    this.opening = undefined
    if (a === undefined) return
    await a.close()
    this.instrumentation.setConnected(false)
    this.instrumentation.emit(adminEvents.DISCONNECT, undefined)
  }

  /** Every topic, internal ones included, as kafkajs' (a Metadata request for all topics). */
  listTopics(): Promise<string[]> {
    return this.call((a) => a.listTopics({ includeInternal: true }))
  }

  /** true when every topic was created, false when the only failures were TOPIC_ALREADY_EXISTS. */
  async createTopics({ topics, validateOnly = false, timeout = DEFAULT_TOPIC_TIMEOUT }: { topics: ITopicConfig[]; validateOnly?: boolean; waitForLeaders?: boolean; timeout?: number }): Promise<boolean> {
    if (!topics || !Array.isArray(topics)) throw new KafkaJSNonRetriableError(`Invalid topics array ${String(topics)}`)
    if (topics.filter(({ topic }) => typeof topic !== 'string').length > 0) {
      throw new KafkaJSNonRetriableError('Invalid topics array, the topic names have to be a valid string')
    }
    if (new Set(topics.map(({ topic }) => topic)).size < topics.length) throw new KafkaJSNonRetriableError('Invalid topics array, it cannot have multiple entries for the same topic')
    const admin = await this.native()
    const requests = topics.map((t) => ({
      name: t.topic,
      partitions: t.numPartitions === undefined || t.numPartitions === -1 ? undefined : t.numPartitions,
      replicationFactor: t.replicationFactor === undefined || t.replicationFactor === -1 ? undefined : t.replicationFactor,
      assignments: t.replicaAssignment?.slice().sort((x, y) => x.partition - y.partition).map((r) => r.replicas),
      configs: t.configEntries?.map((c) => ({ name: c.name, value: c.value })),
    }))
    try {
      // The native admin waits until every broker knows each new topic's leaders, which is what
      // kafkajs' waitForLeaders (default true) promises.
      await admin.createTopics(requests, { validateOnly, timeoutMs: operationTimeout(timeout) })
      return true
    } catch (e) {
      const errors = failures(e)
      const typed = errors.map((err) => (err instanceof ProtocolError && err.topic !== undefined ? new KafkaJSCreateTopicError(protocolInfo(err), err.topic, { cause: err }) : toKafkaJSError(err)))
      if (typed.every((t) => (t as KafkaJSProtocolError).type === 'TOPIC_ALREADY_EXISTS')) return false
      throw new KafkaJSAggregateError('Topic creation errors', typed)
    }
  }

  async deleteTopics({ topics, timeout = DEFAULT_TOPIC_TIMEOUT }: { topics: string[]; timeout?: number }): Promise<void> {
    if (!topics || !Array.isArray(topics)) throw new KafkaJSNonRetriableError(`Invalid topics array ${String(topics)}`)
    if (topics.some((t) => typeof t !== 'string')) throw new KafkaJSNonRetriableError('Invalid topics array, the names must be a valid string')
    await this.call((a) => a.deleteTopics(topics, { timeoutMs: operationTimeout(timeout) }))
  }

  async createPartitions({ topicPartitions, validateOnly = false, timeout = DEFAULT_TOPIC_TIMEOUT }: { topicPartitions: ITopicPartitionConfig[]; validateOnly?: boolean; timeout?: number }): Promise<boolean> {
    if (!topicPartitions || !Array.isArray(topicPartitions)) throw new KafkaJSNonRetriableError(`Invalid topic partitions array ${String(topicPartitions)}`)
    if (topicPartitions.length === 0) throw new KafkaJSNonRetriableError('Empty topic partitions array')
    await this.call((a) => a.createPartitions(topicPartitions.map((t) => ({ topic: t.topic, count: t.count, assignments: t.assignments })), { validateOnly, timeoutMs: operationTimeout(timeout) }))
    if (!validateOnly) await this.call((a) => untilPartitions(a, topicPartitions, operationTimeout(timeout)))
    return true
  }

  /** All topics when `topics` is empty or absent, as kafkajs. */
  async fetchTopicMetadata({ topics = [] }: { topics?: string[] } = {}): Promise<{ topics: { name: string; partitions: PartitionMetadata[] }[] }> {
    topics.forEach(invalidTopic)
    return this.call(async (a) => {
      const names = topics.length > 0 ? topics : await a.listTopics({ includeInternal: true })
      const described = await a.describeTopics(names)
      return {
        topics: described.map((t) => ({
          name: t.name,
          partitions: t.partitions.map((p) => ({ partitionErrorCode: 0, partitionId: p.partition, leader: p.leader, replicas: p.replicas, isr: p.isr, offlineReplicas: p.offlineReplicas })),
        })),
      }
    })
  }

  async fetchTopicOffsets(topic: string): Promise<(SeekEntry & { high: string; low: string })[]> {
    invalidTopic(topic)
    return this.call(async (a) => {
      const [high, low] = await Promise.all([a.listOffsets(topic, 'latest'), a.listOffsets(topic, 'earliest')])
      return high
        .sort((x, y) => x.partition - y.partition)
        .map((h) => {
          const l = low.find((o) => o.partition === h.partition)!
          return { partition: h.partition, offset: String(h.offset), high: String(h.offset), low: String(l.offset) }
        })
    })
  }

  /** The first offset at or after `timestamp`; partitions with none answer their high watermark. */
  async fetchTopicOffsetsByTimestamp(topic: string, timestamp?: number): Promise<SeekEntry[]> {
    invalidTopic(topic)
    return this.call(async (a) => {
      const [high, at] = await Promise.all([a.listOffsets(topic, 'latest'), a.listOffsets(topic, timestamp === undefined ? 'latest' : timestamp)])
      return at
        .sort((x, y) => x.partition - y.partition)
        .map((o) => ({ partition: o.partition, offset: String(o.offset >= 0n ? o.offset : high.find((h) => h.partition === o.partition)!.offset) }))
    })
  }

  /**
   * A group's committed offsets ('-1' where none). Without topics: every topic the group has
   * offsets for, as kafkajs' documentation promises (kafkajs 2.2 itself then answers nothing).
   */
  async fetchOffsets({ groupId, topics, resolveOffsets = false }: { groupId: string; topics?: string[]; resolveOffsets?: boolean }): Promise<{ topic: string; partitions: (SeekEntry & { metadata: string | null })[] }[]> {
    invalidGroup(groupId)
    if (topics !== undefined && !Array.isArray(topics)) throw new KafkaJSNonRetriableError('Expected topics array to be set')
    const offsets = await this.call((a) => a.fetchOffsets(groupId, topics === undefined || topics.length === 0 ? undefined : topics))
    const byTopic = new Map<string, GroupOffset[]>()
    for (const t of topics ?? []) byTopic.set(t, [])
    for (const o of offsets) {
      const list = byTopic.get(o.topic) ?? []
      list.push(o)
      byTopic.set(o.topic, list)
    }
    const answer = [...byTopic].map(([topic, list]) => ({
      topic,
      partitions: list.sort((x, y) => x.partition - y.partition).map((o) => ({ partition: o.partition, offset: String(o.offset), metadata: o.metadata || null })),
    }))
    if (!resolveOffsets) return answer
    // resolveOffsets: partitions without a commit get the topic's earliest offset committed.
    for (const t of answer) {
      const unresolved = t.partitions.filter((p) => Number(p.offset) < 0)
      if (unresolved.length === 0) continue
      const low = await this.fetchTopicOffsets(t.topic)
      for (const p of unresolved) p.offset = low.find((l) => l.partition === p.partition)!.low
      await this.setOffsets({ groupId, topic: t.topic, partitions: unresolved })
    }
    return answer
  }

  /** Commits offsets for a group with no running members. */
  async setOffsets({ groupId, topic, partitions }: { groupId: string; topic: string; partitions: SeekEntry[] }): Promise<void> {
    invalidGroup(groupId)
    if (!topic) throw new KafkaJSNonRetriableError(`Invalid topic ${String(topic)}`)
    if (!partitions || partitions.length === 0) throw new KafkaJSNonRetriableError('Invalid partitions')
    await this.call(async (a) => {
      const [group] = await a.describeGroups([groupId])
      if (group !== undefined && group.state !== 'Empty' && group.state !== 'Dead') {
        throw new KafkaJSNonRetriableError(`The consumer group must have no running instances, current state: ${group.state}`)
      }
      await a.alterOffsets(groupId, partitions.map((p) => ({ topic, partition: p.partition, offset: BigInt(p.offset) })))
    })
  }

  /**
   * Moves the group to the topic's earliest or latest offsets. kafkajs commits the sentinels -2
   * / -1 instead, which only its own consumer resolves; the real offsets work with every client.
   */
  async resetOffsets({ groupId, topic, earliest = false }: { groupId: string; topic: string; earliest?: boolean }): Promise<void> {
    invalidGroup(groupId)
    if (!topic) throw new KafkaJSNonRetriableError(`Invalid topic ${String(topic)}`)
    const offsets = await this.fetchTopicOffsets(topic)
    await this.setOffsets({ groupId, topic, partitions: offsets.map((o) => ({ partition: o.partition, offset: earliest ? o.low : o.high })) })
  }

  async describeCluster(): Promise<{ brokers: { nodeId: number; host: string; port: number }[]; controller: number | null; clusterId: string }> {
    const c = await this.call((a) => a.describeCluster())
    return {
      brokers: c.brokers.map((b) => ({ nodeId: b.nodeId, host: b.host, port: b.port })),
      controller: c.controllerId < 0 ? null : c.controllerId,
      clusterId: c.clusterId ?? '',
    }
  }

  async describeConfigs({ resources, includeSynonyms = false }: { resources: ResourceConfigQuery[]; includeSynonyms?: boolean }): Promise<DescribeConfigResponse> {
    if (!resources || !Array.isArray(resources)) throw new KafkaJSNonRetriableError(`Invalid resources array ${String(resources)}`)
    if (resources.length === 0) throw new KafkaJSNonRetriableError('Resources array cannot be empty')
    const results = await this.call((a) => a.describeConfigs(resources.map((r) => ({ type: r.type, name: r.name, keys: r.configNames })), { includeSynonyms }))
    return describeConfigsAnswer(resources, results)
  }

  /**
   * Sets the listed configs. kafkajs sends the legacy AlterConfigs request, which also resets
   * every dynamic config of the resource it does not list; this sets only those listed
   * (IncrementalAlterConfigs, KIP-339), the result users mean and Kafka 4 requires.
   */
  async alterConfigs({ resources, validateOnly = false }: { resources: IResourceConfig[]; validateOnly?: boolean }): Promise<{ resources: { errorCode: number; errorMessage: string | null; resourceName: string; resourceType: number }[]; throttleTime: number }> {
    if (!resources || !Array.isArray(resources)) throw new KafkaJSNonRetriableError(`Invalid resources array ${String(resources)}`)
    if (resources.length === 0) throw new KafkaJSNonRetriableError('Resources array cannot be empty')
    await this.call((a) => a.alterConfigs(resources.map((r) => ({ type: r.type, name: r.name, configs: r.configEntries.map((c) => ({ name: c.name, value: c.value })) })), { validateOnly }))
    return { resources: resources.map((r) => ({ errorCode: 0, errorMessage: null, resourceName: r.name, resourceType: r.type })), throttleTime: 0 }
  }

  async listGroups(): Promise<{ groups: { groupId: string; protocolType: string }[] }> {
    const groups = await this.call((a) => a.listGroups())
    return { groups: groups.map((g) => ({ groupId: g.groupId, protocolType: g.protocolType })) }
  }

  async describeGroups(groupIds: string[]): Promise<GroupDescriptions> {
    const groups = await this.call((a) => a.describeGroups(groupIds))
    return describeGroupsAnswer(groups)
  }

  async deleteGroups(groupIds: string[]): Promise<{ groupId: string; errorCode: number }[]> {
    if (!groupIds || !Array.isArray(groupIds)) throw new KafkaJSNonRetriableError(`Invalid groupIds array ${String(groupIds)}`)
    if (groupIds.some((g) => typeof g !== 'string')) throw new KafkaJSNonRetriableError('Invalid groupId name: true')
    const admin = await this.native()
    try {
      await admin.deleteGroups(groupIds)
      return groupIds.map((groupId) => ({ groupId, errorCode: 0 }))
    } catch (e) {
      const groups = failures(e).map((err) => {
        const error = toKafkaJSError(err) as KafkaJSProtocolError
        return { groupId: err instanceof ProtocolError ? (err.groupId ?? '') : '', errorCode: error.code ?? -1, error }
      })
      throw new KafkaJSDeleteGroupsError('Error in DeleteGroups', groups)
    }
  }

  /** Deletes records before each offset ('-1': up to the high watermark). */
  async deleteTopicRecords({ topic, partitions }: { topic: string; partitions: SeekEntry[] }): Promise<void> {
    invalidTopic(topic)
    if (!partitions || partitions.length === 0) throw new KafkaJSNonRetriableError('Invalid partitions')
    const admin = await this.native()
    try {
      await admin.deleteRecords(partitions.map((p) => ({ topic, partition: p.partition, offset: BigInt(p.offset) })))
    } catch (e) {
      const errs = failures(e)
      const errorOf = (partition: number): KafkaJSError | null => {
        const err = errs.find((x) => x instanceof ProtocolError && x.partition === partition)
        return err === undefined ? null : (toKafkaJSError(err) as KafkaJSError)
      }
      throw new KafkaJSDeleteTopicRecordsError({ partitions: partitions.map((p) => ({ partition: p.partition, offset: p.offset, error: errorOf(p.partition) })) })
    }
  }

  /** CreateAcls; a broker without an authorizer answers SECURITY_DISABLED. */
  async createAcls({ acl }: { acl: Acl[] }): Promise<boolean> {
    return createAcls(await this.native(), acl)
  }

  async describeAcls(options: AclFilter): Promise<DescribeAclResponse> {
    return describeAcls(await this.native(), options)
  }

  async deleteAcls({ filters }: { filters: AclFilter[] }): Promise<DeleteAclResponse> {
    return deleteAcls(await this.native(), filters)
  }

  /** AlterPartitionReassignments (KIP-455). */
  async alterPartitionReassignments(request: { topics: PartitionReassignment[]; timeout?: number }): Promise<void> {
    return alterPartitionReassignments(await this.native(), request)
  }

  async listPartitionReassignments(request: { topics?: { topic: string; partitions: number[] }[] | null; timeout?: number } = {}): Promise<ListPartitionReassignmentsResponse> {
    return listPartitionReassignments(await this.native(), request)
  }
}

