import type { ConsumerProtocolAssignment, ConsumerProtocolSubscription } from '@tidelog/protocol'

export interface NewTopic {
  name: string
  /** Default: the broker's num.partitions (needs CreateTopics v4+, Kafka 2.4+). */
  partitions?: number
  /** Default: the broker's default.replication.factor (v4+ as well). */
  replicationFactor?: number
  /** Explicit replicas per partition: assignments[p] lists partition p's broker ids. */
  assignments?: number[][]
  configs?: Record<string, string> | { name: string; value: string | null }[]
}

export interface CreatedTopic {
  name: string
  /** ZERO_UUID before CreateTopics v7. */
  topicId: string
  /** -1 when the broker did not say (before v5). */
  partitions: number
  replicationFactor: number
}

export interface NewPartitions {
  topic: string
  /** The new total partition count. */
  count: number
  /** Broker ids for each added partition. */
  assignments?: number[][]
}

export interface TopicDescription {
  name: string
  topicId: string
  isInternal: boolean
  partitions: {
    partition: number
    leader: number
    leaderEpoch: number
    replicas: number[]
    isr: number[]
    offlineReplicas: number[]
  }[]
}

/** Which offset ListOffsets should look up: a named position or a timestamp (ms). */
export type OffsetSpec = 'earliest' | 'latest' | 'max-timestamp' | bigint | number

export interface PartitionOffsetRequest {
  topic: string
  partition: number
  timestamp?: OffsetSpec
}

export interface PartitionOffset {
  topic: string
  partition: number
  /** -1n when there is no such offset (e.g. a timestamp after the last record). */
  offset: bigint
  /** The record's timestamp for timestamp and max-timestamp lookups, else -1n. */
  timestamp: bigint
  leaderEpoch: number
}

export interface DeleteRecordsRequest {
  topic: string
  partition: number
  /** Records before this offset are deleted; -1n means the high watermark. */
  offset: bigint
}

export interface DeletedRecords {
  topic: string
  partition: number
  lowWatermark: bigint
}

export type ConfigResourceType = 'topic' | 'broker' | 'broker-logger' | 'client-metrics' | 'group' | number

export interface ConfigResource {
  type: ConfigResourceType
  /** Topic name, broker id as a string ('' for the cluster-wide broker default), group id, ... */
  name: string
  /** Only these keys (default: all). */
  keys?: string[]
}

/** Kafka's ConfigSource enum. */
export const ConfigSource = {
  UNKNOWN: 0,
  DYNAMIC_TOPIC_CONFIG: 1,
  DYNAMIC_BROKER_CONFIG: 2,
  DYNAMIC_DEFAULT_BROKER_CONFIG: 3,
  STATIC_BROKER_CONFIG: 4,
  DEFAULT_CONFIG: 5,
  DYNAMIC_BROKER_LOGGER_CONFIG: 6,
  CLIENT_METRICS_CONFIG: 7,
  GROUP_CONFIG: 8,
} as const

export interface ConfigEntry {
  name: string
  /** null for sensitive values. */
  value: string | null
  readOnly: boolean
  isDefault: boolean
  isSensitive: boolean
  /** A ConfigSource value (-1 before DescribeConfigs v1). */
  source: number
  synonyms: { name: string; value: string | null; source: number }[]
  /** Kafka's ConfigType (0 unknown, 1 boolean, 2 string, 3 int, 4 short, 5 long, 6 double, 7 list, 8 class, 9 password). */
  type: number
  documentation: string | null
}

export interface ConfigResourceResult {
  type: number
  name: string
  configs: ConfigEntry[]
}

export type AlterConfigOp = 'set' | 'delete' | 'append' | 'subtract'

export interface AlterConfigResource {
  type: ConfigResourceType
  name: string
  configs: { name: string; value?: string | null; op?: AlterConfigOp }[]
}

/** A resource's complete new set of dynamic configs, for AlterConfigs. */
export interface ReplaceConfigResource {
  type: ConfigResourceType
  name: string
  configs: Record<string, string>
}

export interface LogDirPartition {
  topic: string
  partition: number
  /** Bytes on disk. */
  size: bigint
  /** How far a future replica (being moved between directories) is behind; 0 otherwise. */
  offsetLag: bigint
  isFuture: boolean
}

export interface LogDirDescription {
  path: string
  /** Set when the directory is offline (KAFKA_STORAGE_ERROR) or the broker refused. */
  error: Error | null
  /** -1 from brokers before DescribeLogDirs v4 (Kafka 3.3, KIP-827). */
  totalBytes: bigint
  usableBytes: bigint
  partitions: LogDirPartition[]
}

export interface BrokerLogDirs {
  nodeId: number
  logDirs: LogDirDescription[]
}

export interface GroupListing {
  groupId: string
  protocolType: string
  /** '' before ListGroups v4. */
  state: string
  /** '' before ListGroups v5 ('classic' groups only existed then). */
  type: string
}

export interface GroupMember {
  memberId: string
  groupInstanceId: string | null
  clientId: string
  clientHost: string
  /** Raw member metadata and assignment, as the group protocol encoded them. */
  metadata: Buffer
  assignment: Buffer
  /** Decoded when the group's protocol type is "consumer" and the bytes are readable. */
  subscription?: ConsumerProtocolSubscription & { version: number }
  memberAssignment?: ConsumerProtocolAssignment & { version: number }
}

export interface GroupDescription {
  groupId: string
  state: string
  protocolType: string
  /** The chosen assignor, for consumer groups. */
  protocol: string
  members: GroupMember[]
}

export interface GroupOffset {
  topic: string
  partition: number
  /** -1n when the group has no committed offset for the partition. */
  offset: bigint
  leaderEpoch: number
  metadata: string | null
}

export interface CommitOffset {
  topic: string
  partition: number
  offset: bigint
  leaderEpoch?: number
  metadata?: string | null
}

export interface ClusterDescription {
  clusterId: string | null
  controllerId: number
  brokers: { nodeId: number; host: string; port: number; rack: string | null }[]
}
