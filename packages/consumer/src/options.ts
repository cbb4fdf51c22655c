import type { ClientOptions, Deserializer } from '@tidelog/client'
import type { Assignor } from './group/assignors/types.js'

export type AutoOffsetReset = 'earliest' | 'latest' | 'none'
export type IsolationLevel = 'read_uncommitted' | 'read_committed'
/**
 * at-least-once (default): a message counts as processed when the application asks for the
 * next one, and only processed positions are auto-committed, so a crash redelivers at most
 * the uncommitted window. at-most-once: each fetched chunk's end offset is committed before
 * its first message is handed out, so a crash loses the rest of that chunk instead.
 */
export type DeliverySemantics = 'at-least-once' | 'at-most-once'

export interface ConsumerOptions<K = Buffer, V = Buffer> extends ClientOptions {
  /** Turns key bytes into K (serdes.string, serdes.json(), or your own; may be async). Default: the bytes. */
  keyDeserializer?: Deserializer<K>
  /** Turns value bytes into V (serdes.string, serdes.json(), or your own; may be async). Default: the bytes. */
  valueDeserializer?: Deserializer<V>
  /**
   * A record whose key or value cannot be deserialized: 'stop' (default) raises
   * RecordDeserializationError with its topic, partition and offset (the position stays at the
   * record: seek past it to go on, as Java's RecordDeserializationException); 'skip' logs it
   * and goes on, the record counting as processed.
   */
  onDeserializationError?: 'stop' | 'skip'
  /** The consumer group; needed by subscribe() and by commits. */
  groupId?: string
  /** Static membership (KIP-345): a restart within the session timeout keeps the assignment. */
  groupInstanceId?: string
  /** Java's auto.offset.reset (default 'latest'): where to start without a committed offset. */
  autoOffsetReset?: AutoOffsetReset
  /** Java's enable.auto.commit (default true). */
  autoCommit?: boolean
  /** Java's auto.commit.interval.ms (5 s). */
  autoCommitIntervalMs?: number
  delivery?: DeliverySemantics
  /** Java's session.timeout.ms (45 s). */
  sessionTimeoutMs?: number
  /** Java's heartbeat.interval.ms (3 s). */
  heartbeatIntervalMs?: number
  /** Java's max.poll.interval.ms (5 min): the longest a message may be held before the member leaves. */
  maxPollIntervalMs?: number
  /** How long the group waits for members to rejoin; Java uses max.poll.interval.ms. */
  rebalanceTimeoutMs?: number
  /**
   * Assignors by preference; names or objects (custom ones implement Assignor). Java's default,
   * ['range', 'cooperative-sticky']: the group agrees on range, rebalancing eagerly, and can move
   * to cooperative rebalancing by dropping 'range' from every member (KIP-429's upgrade path).
   */
  assignors?: (Assignor | 'range' | 'roundrobin' | 'cooperative-sticky')[]
  /** Java's fetch.min.bytes (1). */
  fetchMinBytes?: number
  /** Java's fetch.max.wait.ms (500). */
  fetchMaxWaitMs?: number
  /** Java's fetch.max.bytes (50 MiB): the most one fetch response may carry. */
  fetchMaxBytes?: number
  /** Java's max.partition.fetch.bytes (1 MiB). */
  maxPartitionFetchBytes?: number
  /**
   * The most fetched-but-not-yet-delivered record bytes held in memory. No fetch is sent while
   * the buffer is at this size, and a fetch asks for at most the room left, so the buffer
   * exceeds it by at most one response (a broker always returns a first batch whole, KIP-74).
   * Default: fetchMaxBytes.
   */
  maxBufferedBytes?: number
  /** Java's isolation.level (default read_uncommitted). */
  isolationLevel?: IsolationLevel
  /** Java's check.crcs (true). */
  checkCrcs?: boolean
  /** Java's client.rack: sent in Fetch (v11+) and in the group subscription (v3). */
  clientRack?: string
  /** Java's default.api.timeout.ms (60 s): bound on commit(), seeks and offset lookups. */
  defaultApiTimeoutMs?: number
  /** Cap on one batch's decompressed size (default 64 MiB). */
  maxDecompressedBytes?: number
}

export interface ResolvedConsumerOptions {
  groupId: string | undefined
  groupInstanceId: string | null
  autoOffsetReset: AutoOffsetReset
  autoCommit: boolean
  autoCommitIntervalMs: number
  delivery: DeliverySemantics
  sessionTimeoutMs: number
  heartbeatIntervalMs: number
  maxPollIntervalMs: number
  rebalanceTimeoutMs: number
  fetchMinBytes: number
  fetchMaxWaitMs: number
  fetchMaxBytes: number
  maxPartitionFetchBytes: number
  maxBufferedBytes: number
  isolationLevel: 0 | 1
  checkCrcs: boolean
  clientRack: string | null
  defaultApiTimeoutMs: number
  requestTimeoutMs: number
  maxDecompressedBytes: number | undefined
}

function positiveInt(name: string, value: number | undefined, fallback: number, min = 1): number {
  if (value === undefined) return fallback
  if (!Number.isSafeInteger(value) || value < min) throw new TypeError(`${name} must be an integer >= ${min}, got ${value}`)
  return value
}

export function resolveOptions(o: ConsumerOptions<unknown, unknown>): ResolvedConsumerOptions {
  const reset = o.autoOffsetReset ?? 'latest'
  if (reset !== 'earliest' && reset !== 'latest' && reset !== 'none') throw new TypeError(`autoOffsetReset must be earliest, latest or none, got ${String(reset)}`)
  const isolation = o.isolationLevel ?? 'read_uncommitted'
  if (isolation !== 'read_uncommitted' && isolation !== 'read_committed') throw new TypeError(`isolationLevel must be read_uncommitted or read_committed`)
  const delivery = o.delivery ?? 'at-least-once'
  if (delivery !== 'at-least-once' && delivery !== 'at-most-once') throw new TypeError(`delivery must be at-least-once or at-most-once`)
  if (o.groupId !== undefined && o.groupId === '') throw new TypeError('groupId must not be empty')
  if (o.groupInstanceId !== undefined && o.groupId === undefined) throw new TypeError('groupInstanceId needs a groupId')
  const sessionTimeoutMs = positiveInt('sessionTimeoutMs', o.sessionTimeoutMs, 45_000)
  const heartbeatIntervalMs = positiveInt('heartbeatIntervalMs', o.heartbeatIntervalMs, 3_000)
  // Java refuses the same: a heartbeat interval at or above the session timeout expires sessions.
  if (heartbeatIntervalMs >= sessionTimeoutMs) throw new TypeError('heartbeatIntervalMs must be lower than sessionTimeoutMs')
  const maxPollIntervalMs = positiveInt('maxPollIntervalMs', o.maxPollIntervalMs, 300_000)
  const fetchMaxBytes = positiveInt('fetchMaxBytes', o.fetchMaxBytes, 52_428_800)
  return {
    groupId: o.groupId,
    groupInstanceId: o.groupInstanceId ?? null,
    autoOffsetReset: reset,
    autoCommit: o.autoCommit ?? true,
    autoCommitIntervalMs: positiveInt('autoCommitIntervalMs', o.autoCommitIntervalMs, 5_000),
    delivery,
    sessionTimeoutMs,
    heartbeatIntervalMs,
    maxPollIntervalMs,
    rebalanceTimeoutMs: positiveInt('rebalanceTimeoutMs', o.rebalanceTimeoutMs, maxPollIntervalMs),
    fetchMinBytes: positiveInt('fetchMinBytes', o.fetchMinBytes, 1, 0),
    fetchMaxWaitMs: positiveInt('fetchMaxWaitMs', o.fetchMaxWaitMs, 500, 0),
    fetchMaxBytes,
    maxPartitionFetchBytes: positiveInt('maxPartitionFetchBytes', o.maxPartitionFetchBytes, 1_048_576),
    maxBufferedBytes: positiveInt('maxBufferedBytes', o.maxBufferedBytes, fetchMaxBytes),
    isolationLevel: isolation === 'read_committed' ? 1 : 0,
    checkCrcs: o.checkCrcs ?? true,
    clientRack: o.clientRack ?? null,
    defaultApiTimeoutMs: positiveInt('defaultApiTimeoutMs', o.defaultApiTimeoutMs, 60_000),
    requestTimeoutMs: positiveInt('requestTimeoutMs', o.requestTimeoutMs, 30_000),
    maxDecompressedBytes: o.maxDecompressedBytes,
  }
}
