import type { RecordHeader } from '@tidelog/protocol'

export interface TopicPartition {
  topic: string
  partition: number
}

export interface TopicPartitionOffset extends TopicPartition {
  offset: bigint
  /** Optional metadata string stored with a commit (Java's OffsetAndMetadata.metadata). */
  metadata?: string | null
  /** The leader epoch of the last consumed record, when known (KIP-320). */
  leaderEpoch?: number
}

/**
 * One record as the application sees it. `key`, `value` and header values are views into the
 * fetched bytes, not copies: copy them (Buffer.from) to keep them beyond the message's life
 * without pinning the whole fetch response in memory.
 *
 * `timestamp` is a bigint of milliseconds since the epoch, like `offset`: both are int64 on the
 * wire, and one numeric type for both keeps arithmetic between them free of conversions.
 */
export interface Message<K = Buffer, V = Buffer> {
  readonly topic: string
  readonly partition: number
  readonly offset: bigint
  /** The key bytes, or what the keyDeserializer made of them; null stays null. */
  readonly key: K | null
  /** The value bytes, or what the valueDeserializer made of them; null (a tombstone) stays null. */
  readonly value: V | null
  /** In wire order; a key may repeat. */
  readonly headers: RecordHeader[]
  readonly timestamp: bigint
  /** 0 = CreateTime, 1 = LogAppendTime. */
  readonly timestampType: 0 | 1
  /** The partition leader epoch the record was written in (KIP-101), or -1 when unknown. */
  readonly leaderEpoch: number
}

/** What `consumer.batches()` yields: the next records of one partition, in offset order. */
export interface Batch<K = Buffer, V = Buffer> {
  readonly topic: string
  readonly partition: number
  readonly messages: Message<K, V>[]
  /** The partition's high watermark when it was fetched. */
  readonly highWatermark: bigint
  /** The last stable offset (read_committed reads stop there), or -1n from brokers that do not say. */
  readonly lastStableOffset: bigint
  readonly logStartOffset: bigint
  /** The offset the consumer will deliver next from this partition after this batch. */
  readonly nextOffset: bigint
}

/** The generation a rebalance callback belongs to. */
export interface GroupGeneration {
  generationId: number
  memberId: string
  /** The assignor the group uses in this generation. */
  protocolName: string | null
}

/**
 * Java's ConsumerRebalanceListener. Each callback may be async and is awaited: revocation
 * completes (and, with auto-commit, the revoked partitions' offsets are committed) before the
 * partitions move. `lost` is called instead of `revoked` when the member has already been
 * removed from the group (session timeout, fencing): the partitions may have a new owner, so
 * nothing is committed for them.
 */
export interface RebalanceListener {
  onPartitionsAssigned?(partitions: TopicPartition[], generation: GroupGeneration): void | Promise<void>
  onPartitionsRevoked?(partitions: TopicPartition[], generation: GroupGeneration): void | Promise<void>
  onPartitionsLost?(partitions: TopicPartition[], generation: GroupGeneration): void | Promise<void>
}

export function tpKey(topic: string, partition: number): string {
  // Kafka topic names are [a-zA-Z0-9._-]+, so ':' cannot be part of one.
  return `${topic}:${partition}`
}

/** Sorts by topic, then partition, in place. */
export function sortPartitions<T extends TopicPartition>(list: T[]): T[] {
  return list.sort((a, b) => (a.topic < b.topic ? -1 : a.topic > b.topic ? 1 : a.partition - b.partition))
}
