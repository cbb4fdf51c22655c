import { Cluster } from './cluster.js'
import { ClientClosedError } from './errors.js'
import { describeCluster } from './admin/describe-cluster.js'
import { type AclBinding, type AclBindingFilter, createAcls, deleteAcls, describeAcls } from './admin/acls.js'
import type { AdminContext } from './admin/engine.js'
import { type ClientQuotaAlteration, type ClientQuotaEntry, type ClientQuotaFilter, alterClientQuotas, describeClientQuotas } from './admin/quotas.js'
import { alterConfigs, describeConfigs } from './admin/configs.js'
import { type UserScramCredentialAlteration, type UserScramCredentialsDescription, alterUserScramCredentials, describeUserScramCredentials } from './admin/scram.js'
import { incrementalAlterConfigs, replaceConfigs } from './admin/config-changes.js'
import { describeLogDirs } from './admin/log-dirs.js'
import { type ListedConfigResource, listConfigResources } from './admin/config-resources.js'
import { type PartitionReassignment, type PartitionReassignmentTarget, alterPartitionReassignments, listPartitionReassignments } from './admin/reassignments.js'
import { alterOffsets, deleteGroups, describeGroups, fetchOffsets, listGroups } from './admin/groups.js'
import { deleteRecords, listOffsets, topicPartitions } from './admin/offsets.js'
import { type QuotaRetryOption, createPartitions, createTopics, deleteTopics, describeTopics, listTopics } from './admin/topics.js'
import type {
  BrokerLogDirs,
  ReplaceConfigResource,
  AlterConfigResource,
  ClusterDescription,
  CommitOffset,
  ConfigResource,
  ConfigResourceResult,
  ConfigResourceType,
  CreatedTopic,
  DeletedRecords,
  DeleteRecordsRequest,
  GroupDescription,
  GroupListing,
  GroupOffset,
  NewPartitions,
  NewTopic,
  OffsetSpec,
  PartitionOffset,
  PartitionOffsetRequest,
  TopicDescription,
} from './admin/types.js'
import type { ClientOptions } from './options.js'

/** Java's default.api.timeout.ms. */
export const DEFAULT_API_TIMEOUT_MS = 60_000

export interface AdminOptions extends ClientOptions {
  /** Default bound on each operation, retries included (Java's default.api.timeout.ms, 60 s). */
  timeoutMs?: number
}

interface TimeoutOption {
  timeoutMs?: number
}

/**
 * Kafka administration: topics, partitions, configs, offsets, consumer groups, the cluster.
 * Connecting is lazy (the first operation bootstraps) or explicit with connect().
 *
 * Operations over several items (topics, partitions, groups) retry each item's retriable errors
 * until the timeout, like Java's AdminClient, and either resolve with every result in input
 * order or reject with an AdminError listing each failure (a ProtocolError naming its topic,
 * partition or group) next to the partial results.
 */
export class Admin {
  readonly cluster: Cluster
  private readonly ctx: AdminContext
  private closed = false

  constructor(options: AdminOptions) {
    this.cluster = new Cluster(options)
    this.ctx = { cluster: this.cluster, timeoutMs: options.timeoutMs ?? DEFAULT_API_TIMEOUT_MS }
  }

  /** Optional: fetches the cluster's metadata now instead of on the first operation. */
  async connect(): Promise<void> {
    this.ensureOpen()
    await this.cluster.connect()
  }

  async close(): Promise<void> {
    this.closed = true
    await this.cluster.close()
  }

  createTopics(topics: NewTopic[], options?: { validateOnly?: boolean } & QuotaRetryOption & TimeoutOption): Promise<CreatedTopic[]> {
    this.ensureOpen()
    return createTopics(this.ctx, topics, options)
  }

  deleteTopics(names: string[], options?: QuotaRetryOption & TimeoutOption): Promise<void> {
    this.ensureOpen()
    return deleteTopics(this.ctx, names, options)
  }

  createPartitions(requests: NewPartitions[], options?: { validateOnly?: boolean } & QuotaRetryOption & TimeoutOption): Promise<void> {
    this.ensureOpen()
    return createPartitions(this.ctx, requests, options)
  }

  /** Topic names, sorted; internal topics (__consumer_offsets, ...) only when asked. */
  listTopics(options?: { includeInternal?: boolean } & TimeoutOption): Promise<string[]> {
    this.ensureOpen()
    return listTopics(this.ctx, options)
  }

  describeTopics(names: string[], options?: TimeoutOption): Promise<TopicDescription[]> {
    this.ensureOpen()
    return describeTopics(this.ctx, names, options)
  }

  /**
   * Offsets by position or timestamp: every partition of `topic` (spec 'latest' by default),
   * or the listed partitions, each with its own spec.
   */
  listOffsets(topic: string, spec?: OffsetSpec, options?: { isolationLevel?: 'read_uncommitted' | 'read_committed' } & TimeoutOption): Promise<PartitionOffset[]>
  listOffsets(requests: PartitionOffsetRequest[], options?: { isolationLevel?: 'read_uncommitted' | 'read_committed' } & TimeoutOption): Promise<PartitionOffset[]>
  async listOffsets(
    what: string | PartitionOffsetRequest[],
    specOrOptions?: OffsetSpec | ({ isolationLevel?: 'read_uncommitted' | 'read_committed' } & TimeoutOption),
    maybeOptions?: { isolationLevel?: 'read_uncommitted' | 'read_committed' } & TimeoutOption,
  ): Promise<PartitionOffset[]> {
    this.ensureOpen()
    if (typeof what === 'string') {
      const spec = specOrOptions as OffsetSpec | undefined
      const partitions = await topicPartitions(this.ctx, what, maybeOptions?.timeoutMs)
      return listOffsets(this.ctx, partitions.map((partition) => ({ topic: what, partition, timestamp: spec })), maybeOptions)
    }
    return listOffsets(this.ctx, what, specOrOptions as ({ isolationLevel?: 'read_uncommitted' | 'read_committed' } & TimeoutOption) | undefined)
  }

  /** Deletes records before the given offsets (-1n: the high watermark); returns the new low watermarks. */
  deleteRecords(requests: DeleteRecordsRequest[], options?: TimeoutOption): Promise<DeletedRecords[]> {
    this.ensureOpen()
    return deleteRecords(this.ctx, requests, options)
  }

  describeConfigs(resources: ConfigResource[], options?: { includeSynonyms?: boolean; includeDocumentation?: boolean } & TimeoutOption): Promise<ConfigResourceResult[]> {
    this.ensureOpen()
    return describeConfigs(this.ctx, resources, options)
  }

  /** Sets, deletes, appends to or subtracts from the named configs only (op defaults to 'set'). */
  alterConfigs(resources: AlterConfigResource[], options?: { validateOnly?: boolean } & TimeoutOption): Promise<void> {
    this.ensureOpen()
    return alterConfigs(this.ctx, resources, options)
  }

  /** IncrementalAlterConfigs only (Kafka 2.3+): as alterConfigs, without the AlterConfigs fallback for older brokers. */
  incrementalAlterConfigs(resources: AlterConfigResource[], options?: { validateOnly?: boolean } & TimeoutOption): Promise<void> {
    this.ensureOpen()
    return incrementalAlterConfigs(this.ctx, resources, options)
  }

  /** AlterConfigs: each resource's dynamic configs become exactly the given set (keys not named are removed). */
  replaceConfigs(resources: ReplaceConfigResource[], options?: { validateOnly?: boolean } & TimeoutOption): Promise<void> {
    this.ensureOpen()
    return replaceConfigs(this.ctx, resources, options)
  }

  /** Log directories of the given brokers (default: all), with their partitions' sizes and the disks' total and usable bytes. */
  describeLogDirs(brokerIds?: number[], options?: { topics?: { topic: string; partitions: number[] }[] } & TimeoutOption): Promise<BrokerLogDirs[]> {
    this.ensureOpen()
    return describeLogDirs(this.ctx, brokerIds, options)
  }

  listGroups(options?: { states?: string[]; types?: string[] } & TimeoutOption): Promise<GroupListing[]> {
    this.ensureOpen()
    return listGroups(this.ctx, options)
  }

  describeGroups(groupIds: string[], options?: TimeoutOption): Promise<GroupDescription[]> {
    this.ensureOpen()
    return describeGroups(this.ctx, groupIds, options)
  }

  deleteGroups(groupIds: string[], options?: TimeoutOption): Promise<void> {
    this.ensureOpen()
    return deleteGroups(this.ctx, groupIds, options)
  }

  fetchOffsets(groupId: string, topics?: string[], options?: TimeoutOption): Promise<GroupOffset[]> {
    this.ensureOpen()
    return fetchOffsets(this.ctx, groupId, topics, options)
  }

  /** Commits offsets for a group with no active members. */
  alterOffsets(groupId: string, offsets: CommitOffset[], options?: TimeoutOption): Promise<void> {
    this.ensureOpen()
    return alterOffsets(this.ctx, groupId, offsets, options)
  }

  /** Moves a group's offsets for every partition of a topic to its earliest or latest offset. */
  async resetOffsets(groupId: string, topic: string, to: 'earliest' | 'latest', options?: TimeoutOption): Promise<GroupOffset[]> {
    this.ensureOpen()
    const offsets = await this.listOffsets(topic, to, options)
    const commits = offsets.map((o) => ({ topic: o.topic, partition: o.partition, offset: o.offset, leaderEpoch: o.leaderEpoch }))
    await alterOffsets(this.ctx, groupId, commits, options)
    return commits.map((c) => ({ ...c, metadata: '' }))
  }

  describeCluster(options?: TimeoutOption): Promise<ClusterDescription> {
    this.ensureOpen()
    return describeCluster(this.ctx, options)
  }

  /** CreateAcls: needs a broker with an authorizer (else SECURITY_DISABLED) and ALTER on the cluster. */
  createAcls(bindings: AclBinding[], options?: TimeoutOption): Promise<void> {
    this.ensureOpen()
    return createAcls(this.ctx, bindings, options)
  }

  describeAcls(filter?: AclBindingFilter, options?: TimeoutOption): Promise<AclBinding[]> {
    this.ensureOpen()
    return describeAcls(this.ctx, filter, options)
  }

  /** Per filter, the bindings it removed. */
  deleteAcls(filters: AclBindingFilter[], options?: TimeoutOption): Promise<AclBinding[][]> {
    this.ensureOpen()
    return deleteAcls(this.ctx, filters, options)
  }

  /** DescribeClientQuotas: the quota entities the filter matches (default: all); needs DESCRIBE_CONFIGS on the cluster. */
  describeClientQuotas(filter?: ClientQuotaFilter, options?: TimeoutOption): Promise<ClientQuotaEntry[]> {
    this.ensureOpen()
    return describeClientQuotas(this.ctx, filter, options)
  }

  /** AlterClientQuotas: sets (or, with value null, removes) quota values per entity; needs ALTER_CONFIGS on the cluster. */
  alterClientQuotas(alterations: ClientQuotaAlteration[], options?: TimeoutOption & { validateOnly?: boolean }): Promise<void> {
    this.ensureOpen()
    return alterClientQuotas(this.ctx, alterations, options)
  }

  /**
   * DescribeUserScramCredentials: the SCRAM mechanisms and iterations of the named users (default:
   * every user with a credential); an unknown user fails with RESOURCE_NOT_FOUND in an AdminError.
   */
  describeUserScramCredentials(users?: string[], options?: TimeoutOption): Promise<UserScramCredentialsDescription[]> {
    this.ensureOpen()
    return describeUserScramCredentials(this.ctx, users, options)
  }

  /** AlterUserScramCredentials: upserts (password salted here) and deletes SCRAM credentials; resolves with the users changed. */
  alterUserScramCredentials(alterations: UserScramCredentialAlteration[], options?: TimeoutOption): Promise<string[]> {
    this.ensureOpen()
    return alterUserScramCredentials(this.ctx, alterations, options)
  }

  /** AlterPartitionReassignments (KIP-455): moves each partition to `targetReplicas`, or cancels its move (null); needs ALTER on the cluster. */
  alterPartitionReassignments(targets: PartitionReassignmentTarget[], options?: TimeoutOption): Promise<void> {
    this.ensureOpen()
    return alterPartitionReassignments(this.ctx, targets, options)
  }

  /** ListPartitionReassignments: the moves in progress, of `partitions` or of every partition; needs DESCRIBE on the cluster. */
  listPartitionReassignments(partitions?: { topic: string; partition: number }[], options?: TimeoutOption): Promise<PartitionReassignment[]> {
    this.ensureOpen()
    return listPartitionReassignments(this.ctx, partitions, options)
  }

  /**
   * ListConfigResources (KIP-1142, Kafka 4.1+): the config resources of `types` (default: every
   * type the broker lists: groups with configs, client-metrics resources, brokers, broker loggers,
   * topics); needs DESCRIBE_CONFIGS on the cluster.
   */
  listConfigResources(types?: ConfigResourceType[], options?: TimeoutOption): Promise<ListedConfigResource[]> {
    this.ensureOpen()
    return listConfigResources(this.ctx, types, options)
  }

  private ensureOpen(): void {
    if (this.closed) throw new ClientClosedError('admin client')
  }
}
