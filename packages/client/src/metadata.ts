import { ErrorCodes, ZERO_UUID, type MetadataResponse } from '@tidelog/protocol'

export interface BrokerInfo {
  nodeId: number
  host: string
  port: number
  rack: string | null
}

export interface PartitionMetadata {
  partition: number
  /** -1 while no leader is elected. */
  leader: number
  /** -1 from brokers older than Metadata v7. */
  leaderEpoch: number
  replicas: number[]
  isr: number[]
  offlineReplicas: number[]
  /** The partition's error (e.g. LEADER_NOT_AVAILABLE); 0 when fine. */
  errorCode: number
}

export interface TopicMetadata {
  name: string
  /** ZERO_UUID from brokers older than Metadata v10. */
  topicId: string
  isInternal: boolean
  /** Indexed by partition id. */
  partitions: PartitionMetadata[]
}

/**
 * An immutable view of the cluster at one moment. Each refresh builds a new one, so code
 * holding a snapshot sees a consistent picture.
 */
export class ClusterMetadata {
  constructor(
    readonly clusterId: string | null,
    readonly controllerId: number,
    readonly brokers: ReadonlyMap<number, BrokerInfo>,
    readonly topics: ReadonlyMap<string, TopicMetadata>,
    /** performance.now() of the response this was built from (0: never refreshed). */
    readonly updatedAt: number,
  ) {}

  static empty(): ClusterMetadata {
    return new ClusterMetadata(null, -1, new Map(), new Map(), 0)
  }

  topic(name: string): TopicMetadata | undefined {
    return this.topics.get(name)
  }

  /** Partition count, or -1 when the topic is not in the cache. */
  partitionCount(topic: string): number {
    return this.topics.get(topic)?.partitions.length ?? -1
  }

  partition(topic: string, partition: number): PartitionMetadata | undefined {
    return this.topics.get(topic)?.partitions[partition]
  }

  /** The partition's leader, if it has one that is a known broker. */
  leader(topic: string, partition: number): BrokerInfo | undefined {
    const p = this.topics.get(topic)?.partitions[partition]
    return p === undefined || p.leader < 0 ? undefined : this.brokers.get(p.leader)
  }

  controller(): BrokerInfo | undefined {
    return this.brokers.get(this.controllerId)
  }
}

/** The snapshot without the given topics (same brokers, controller and age). */
export function withoutTopics(meta: ClusterMetadata, names: ReadonlySet<string>): ClusterMetadata {
  const topics = new Map(meta.topics)
  for (const name of names) topics.delete(name)
  return new ClusterMetadata(meta.clusterId, meta.controllerId, meta.brokers, topics, meta.updatedAt)
}

/** Per-topic errors a Metadata response carried, by topic name. */
export type TopicErrors = Map<string, number>

/**
 * Builds the next snapshot from a Metadata response. Topics in the response replace their
 * cached entries (all topics when `replaceAll`, i.e. the request asked for every topic);
 * topics answered with an error leave the cache. A partition whose leader epoch went
 * backwards keeps its cached entry: the answering broker has not seen the newer leader yet,
 * and Java ignores such stale metadata likewise (KIP-320).
 */
export function mergeMetadata(
  prev: ClusterMetadata,
  res: MetadataResponse,
  replaceAll: boolean,
  now: number,
): { metadata: ClusterMetadata; topicErrors: TopicErrors } {
  const brokers = new Map<number, BrokerInfo>()
  for (const b of res.brokers) brokers.set(b.nodeId, { nodeId: b.nodeId, host: b.host, port: b.port, rack: b.rack ?? null })
  const topics = replaceAll ? new Map<string, TopicMetadata>() : new Map(prev.topics)
  const topicErrors: TopicErrors = new Map()
  for (const t of res.topics) {
    if (t.name === null) continue
    if (t.errorCode !== ErrorCodes.NONE) {
      topicErrors.set(t.name, t.errorCode)
      topics.delete(t.name)
      continue
    }
    const old = prev.topics.get(t.name)
    const topicId = t.topicId ?? ZERO_UUID
    const sameTopic = old !== undefined && (old.topicId === topicId || old.topicId === ZERO_UUID || topicId === ZERO_UUID)
    const partitions: PartitionMetadata[] = []
    for (const p of t.partitions) {
      const cached = sameTopic ? old!.partitions[p.partitionIndex] : undefined
      const epoch = p.leaderEpoch ?? -1
      if (cached !== undefined && epoch >= 0 && cached.leaderEpoch > epoch) {
        partitions[p.partitionIndex] = cached
        continue
      }
      partitions[p.partitionIndex] = {
        partition: p.partitionIndex,
        leader: p.leaderId,
        leaderEpoch: epoch,
        replicas: p.replicaNodes,
        isr: p.isrNodes,
        offlineReplicas: p.offlineReplicas ?? [],
        errorCode: p.errorCode,
      }
    }
    // A response listing partitions 0..n-1 out of order is fine; one with gaps is not usable.
    let dense = true
    for (let i = 0; i < partitions.length; i++) if (partitions[i] === undefined) dense = false
    if (!dense) {
      topicErrors.set(t.name, ErrorCodes.LEADER_NOT_AVAILABLE)
      topics.delete(t.name)
      continue
    }
    topics.set(t.name, { name: t.name, topicId, isInternal: t.isInternal ?? false, partitions })
  }
  return {
    metadata: new ClusterMetadata(res.clusterId ?? null, res.controllerId ?? -1, brokers, topics, now),
    topicErrors,
  }
}
