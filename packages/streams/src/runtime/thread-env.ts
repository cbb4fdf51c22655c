import type { Admin, Logger } from '@tidelog/client'
import type { StreamsConfig } from '../config.js'
import type { StateStore } from '../store.js'
import type { Topology } from '../topology.js'
import type { AssignorLookups, TaskLayout } from './assignment/streams-assignor.js'
import type { StreamThreadState } from './state.js'
import type { TaskDirectory } from './task-directory.js'
import type { StreamThread } from './stream-thread.js'

export interface TopicPartition {
  topic: string
  partition: number
}

/** What every thread of one KafkaStreams instance shares. */
export interface ThreadEnv {
  topology: Topology
  config: StreamsConfig
  applicationId: string
  brokers: string[]
  /** `<applicationId>-<processId>` (Java's client id when client.id is not set). */
  clientId: string
  eos: boolean
  commitIntervalMs: number
  purgeIntervalMs: number
  transactionTimeoutMs: number
  topicToSub: ReadonlyMap<string, number>
  groups: ReadonlyMap<number, string[]>
  /** Decorated names of the repartition topics, purged after commit. */
  repartitionTopics: ReadonlySet<string>
  admin: Admin
  directory: TaskDirectory
  logger: Logger | undefined
  onThreadState(thread: StreamThread, next: StreamThreadState, old: StreamThreadState): void
  /** What the group assignor needs of the topology (Java's StreamsPartitionAssignor). */
  layout: TaskLayout
  /** The leader's look-ups while assigning (changelog end offsets for KIP-441 lags). */
  assignorLookups?: AssignorLookups
  /** client.tag.* (KIP-708), sent in every subscription. */
  clientTags?: Record<string, string>
  /** Java's processId: the leader groups threads into clients by it. */
  processId: string
  /** application.server, advertised for interactive queries ('' when unset). */
  endpoint: string
  /** The group told this thread SHUTDOWN_REQUESTED (KIP-671: some instance's handler answered SHUTDOWN_APPLICATION). */
  onShutdownRequested?: (thread: StreamThread) => void
  /** Partition counts of sink topics, for StreamPartitioners. */
  partitionsFor?: (topic: string) => number | undefined
  /** The GlobalKTables' stores, once the instance has them. */
  globalStores?: () => ReadonlyMap<string, StateStore> | undefined
  /** After this thread's tasks for a new assignment exist; and when it loses or gives up partitions. */
  onAssigned?: () => void
  onRevoked?: () => void
}

/** Java's ThreadMetadata, plus the transactional id under exactly_once_v2. */
export interface ThreadMetadata {
  threadName: string
  threadState: StreamThreadState
  activeTasks: string[]
  standbyTasks: string[]
  consumerClientId: string
  producerClientIds: string[]
  transactionalId: string | undefined
}
