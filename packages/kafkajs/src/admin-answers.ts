import type { ConfigResourceResult, GroupDescription as NativeGroup } from '@tidelog/client'

// kafkajs' shapes for admin answers that carry more than offsets: config descriptions and group
// descriptions, built from the native admin's results.

export enum ConfigResourceTypes {
  UNKNOWN = 0,
  TOPIC = 2,
  BROKER = 4,
  BROKER_LOGGER = 8,
}

export enum ConfigSource {
  UNKNOWN = 0,
  TOPIC_CONFIG = 1,
  DYNAMIC_BROKER_CONFIG = 2,
  DYNAMIC_DEFAULT_BROKER_CONFIG = 3,
  STATIC_BROKER_CONFIG = 4,
  DEFAULT_CONFIG = 5,
  DYNAMIC_BROKER_LOGGER_CONFIG = 6,
}

export enum AclResourceTypes {
  UNKNOWN = 0,
  ANY = 1,
  TOPIC = 2,
  GROUP = 3,
  CLUSTER = 4,
  TRANSACTIONAL_ID = 5,
  DELEGATION_TOKEN = 6,
}

export enum AclPermissionTypes {
  UNKNOWN = 0,
  ANY = 1,
  DENY = 2,
  ALLOW = 3,
}

export enum AclOperationTypes {
  UNKNOWN = 0,
  ANY = 1,
  ALL = 2,
  READ = 3,
  WRITE = 4,
  CREATE = 5,
  DELETE = 6,
  ALTER = 7,
  DESCRIBE = 8,
  CLUSTER_ACTION = 9,
  DESCRIBE_CONFIGS = 10,
  ALTER_CONFIGS = 11,
  IDEMPOTENT_WRITE = 12,
}

export enum ResourcePatternTypes {
  UNKNOWN = 0,
  ANY = 1,
  MATCH = 2,
  LITERAL = 3,
  PREFIXED = 4,
}

export interface ResourceConfigQuery {
  type: ConfigResourceTypes
  name: string
  configNames?: string[]
}

export interface ConfigEntries {
  configName: string
  configValue: string | null
  isDefault: boolean
  configSource: ConfigSource
  isSensitive: boolean
  readOnly: boolean
  configSynonyms: { configName: string; configValue: string | null; configSource: ConfigSource }[]
}

export interface DescribeConfigResponse {
  resources: {
    configEntries: ConfigEntries[]
    errorCode: number
    errorMessage: string | null
    resourceName: string
    resourceType: ConfigResourceTypes
  }[]
  throttleTime: number
}

export function describeConfigsAnswer(queries: ResourceConfigQuery[], results: ConfigResourceResult[]): DescribeConfigResponse {
  return {
    resources: results.map((r, i) => ({
      configEntries: r.configs.map((c) => ({
        configName: c.name,
        configValue: c.value,
        readOnly: c.readOnly,
        isDefault: c.isDefault,
        configSource: c.source,
        isSensitive: c.isSensitive,
        configSynonyms: c.synonyms.map((s) => ({ configName: s.name, configValue: s.value, configSource: s.source })),
      })),
      errorCode: 0,
      errorMessage: null,
      resourceName: queries[i]?.name ?? r.name,
      resourceType: r.type,
    })),
    throttleTime: 0,
  }
}

export type ConsumerGroupState = 'Unknown' | 'PreparingRebalance' | 'CompletingRebalance' | 'Stable' | 'Dead' | 'Empty'

export interface MemberDescription {
  clientHost: string
  clientId: string
  memberId: string
  memberAssignment: Buffer
  memberMetadata: Buffer
}

export interface GroupDescription {
  groupId: string
  members: MemberDescription[]
  protocol: string
  protocolType: string
  state: ConsumerGroupState
  errorCode: number
}

export interface GroupDescriptions {
  groups: GroupDescription[]
}

export function groupDescription(g: NativeGroup): GroupDescription {
  return {
    groupId: g.groupId,
    members: g.members.map((m) => ({ memberId: m.memberId, clientId: m.clientId, clientHost: m.clientHost, memberMetadata: m.metadata, memberAssignment: m.assignment })),
    protocol: g.protocol,
    protocolType: g.protocolType,
    state: g.state as ConsumerGroupState,
    errorCode: 0,
  }
}

export function describeGroupsAnswer(groups: NativeGroup[]): GroupDescriptions {
  return { groups: groups.map(groupDescription) }
}
