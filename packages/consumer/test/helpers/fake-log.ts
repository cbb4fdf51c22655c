/**
 * Partition logs for consumer tests against the scripted broker (packages/client/test/fake-broker.ts):
 * real record batches with leader epochs, Fetch / ListOffsets / OffsetForLeaderEpoch answered from
 * them with Kafka's rules (KIP-320 fencing on currentLeaderEpoch, end offsets per epoch), so tests
 * can script leader changes, truncation and follower fetching (KIP-392) over a real socket.
 */
import { ErrorCodes, encodeRecordBatch, type FetchRequest, type FetchResponsePartitionData } from '@tidelog/protocol'
import type { FakeBroker, FakeRequest, FakeTopic } from '../../../client/test/fake-broker.js'

interface Batch {
  base: bigint
  count: number
  epoch: number
  bytes: Buffer
}

export class FakeLog {
  readonly batches: Batch[] = []
  /** The partition's current leader epoch (what the leader fences against). */
  leaderEpoch = 0

  get startOffset(): bigint {
    return this.batches[0]?.base ?? this.end
  }

  private end = 0n

  get endOffset(): bigint {
    return this.end
  }

  /** Appends one batch of string values written in `epoch` (default: the current leader epoch). */
  append(values: string[], epoch = this.leaderEpoch): bigint {
    const base = this.end
    const bytes = encodeRecordBatch({ baseOffset: base, partitionLeaderEpoch: epoch, records: values.map((v) => ({ value: v })), now: 1_700_000_000_000 })
    this.batches.push({ base, count: values.length, epoch, bytes })
    this.end = base + BigInt(values.length)
    return base
  }

  /** Drops everything at and after `offset` (batch boundaries only), as a replica truncating. */
  truncateTo(offset: bigint): void {
    while (this.batches.length > 0 && this.batches[this.batches.length - 1]!.base >= offset) this.batches.pop()
    this.end = offset
  }

  /** Whole batches holding offsets at and after `offset`, at least one, then up to maxBytes. */
  read(offset: bigint, maxBytes: number): Buffer {
    const out: Buffer[] = []
    let size = 0
    for (const b of this.batches) {
      if (b.base + BigInt(b.count) <= offset) continue
      if (out.length > 0 && size + b.bytes.length > maxBytes) break
      out.push(b.bytes)
      size += b.bytes.length
    }
    return Buffer.concat(out)
  }

  /**
   * Kafka's LeaderEpochFileCache.endOffsetFor: the current epoch ends at the log end; an older
   * one where the next epoch starts; an epoch below every known one is undefined (-1, -1).
   */
  endOffsetFor(epoch: number): { leaderEpoch: number; endOffset: bigint } {
    if (epoch === this.leaderEpoch) return { leaderEpoch: epoch, endOffset: this.end }
    let found = -1
    for (const b of this.batches) {
      if (b.epoch <= epoch) found = b.epoch
      else return found < 0 ? { leaderEpoch: -1, endOffset: -1n } : { leaderEpoch: found, endOffset: b.base }
    }
    return found < 0 ? { leaderEpoch: -1, endOffset: -1n } : { leaderEpoch: found, endOffset: this.end }
  }

  /** KIP-320 fencing of a request's currentLeaderEpoch against this replica's epoch. */
  fence(currentLeaderEpoch: number | undefined): number {
    if (currentLeaderEpoch === undefined || currentLeaderEpoch < 0 || currentLeaderEpoch === this.leaderEpoch) return ErrorCodes.NONE
    return currentLeaderEpoch < this.leaderEpoch ? ErrorCodes.FENCED_LEADER_EPOCH : ErrorCodes.UNKNOWN_LEADER_EPOCH
  }
}

/** What a test may change in one partition's fetch answer; return undefined to serve the log. */
export type FetchOverride = (p: { topic: string; partition: number; fetchOffset: bigint; currentLeaderEpoch: number; broker: FakeBroker; request: FetchRequest }) => Partial<FetchResponsePartitionData> | undefined

/**
 * A Fetch handler serving `logs` ("topic:partition"). With nothing to return and no error it
 * waits (up to maxWaitMs, at most `longPollMs`) before answering empty, as a broker's long poll
 * does, so an idle consumer is not a hot loop.
 */
export function serveFetch(logs: Map<string, FakeLog>, override?: FetchOverride, longPollMs = 50) {
  return async (req: FakeRequest): Promise<unknown> => {
    const body = req.body as FetchRequest
    let any = false
    const responses = body.topics.map((t) => ({
      topic: t.topic,
      partitions: t.partitions.map((p) => {
        const log = logs.get(`${t.topic}:${p.partition}`)
        const base: FetchResponsePartitionData = {
          partitionIndex: p.partition,
          errorCode: ErrorCodes.NONE,
          highWatermark: log?.endOffset ?? -1n,
          lastStableOffset: log?.endOffset ?? -1n,
          logStartOffset: log?.startOffset ?? -1n,
          abortedTransactions: null,
          preferredReadReplica: -1,
          records: null,
        }
        const o = override?.({ topic: t.topic!, partition: p.partition, fetchOffset: p.fetchOffset, currentLeaderEpoch: p.currentLeaderEpoch ?? -1, broker: req.broker, request: body })
        if (o !== undefined) {
          any = true
          return { ...base, ...o }
        }
        if (log === undefined) {
          any = true
          return { ...base, errorCode: ErrorCodes.UNKNOWN_TOPIC_OR_PARTITION }
        }
        const fenced = log.fence(p.currentLeaderEpoch)
        if (fenced !== ErrorCodes.NONE) {
          any = true
          return { ...base, errorCode: fenced }
        }
        if (p.fetchOffset > log.endOffset || p.fetchOffset < log.startOffset) {
          any = true
          return { ...base, errorCode: ErrorCodes.OFFSET_OUT_OF_RANGE }
        }
        const records = log.read(p.fetchOffset, p.partitionMaxBytes)
        if (records.length > 0) any = true
        return { ...base, records }
      }),
    }))
    if (!any) await new Promise((r) => setTimeout(r, Math.min(body.maxWaitMs, longPollMs)))
    return { throttleTimeMs: 0, errorCode: 0, sessionId: 0, responses }
  }
}

/** ListOffsets from the logs: earliest (-2) is the log start, anything else the log end. */
export function serveListOffsets(logs: Map<string, FakeLog>) {
  return (req: FakeRequest): unknown => ({
    throttleTimeMs: 0,
    topics: req.body.topics.map((t: { name: string; partitions: { partitionIndex: number; timestamp: bigint }[] }) => ({
      name: t.name,
      partitions: t.partitions.map((p) => {
        const log = logs.get(`${t.name}:${p.partitionIndex}`)
        if (log === undefined) return { partitionIndex: p.partitionIndex, errorCode: ErrorCodes.UNKNOWN_TOPIC_OR_PARTITION, timestamp: -1n, offset: -1n, leaderEpoch: -1 }
        return { partitionIndex: p.partitionIndex, errorCode: 0, timestamp: -1n, offset: p.timestamp === -2n ? log.startOffset : log.endOffset, leaderEpoch: log.leaderEpoch }
      }),
    })),
  })
}

/** OffsetForLeaderEpoch from the logs, fencing on currentLeaderEpoch (KIP-320). */
export function serveOffsetForLeaderEpoch(logs: Map<string, FakeLog>) {
  return (req: FakeRequest): unknown => ({
    throttleTimeMs: 0,
    topics: req.body.topics.map((t: { topic: string; partitions: { partition: number; currentLeaderEpoch: number; leaderEpoch: number }[] }) => ({
      topic: t.topic,
      partitions: t.partitions.map((p) => {
        const log = logs.get(`${t.topic}:${p.partition}`)
        if (log === undefined) return { errorCode: ErrorCodes.UNKNOWN_TOPIC_OR_PARTITION, partition: p.partition, leaderEpoch: -1, endOffset: -1n }
        const fenced = log.fence(p.currentLeaderEpoch)
        if (fenced !== ErrorCodes.NONE) return { errorCode: fenced, partition: p.partition, leaderEpoch: -1, endOffset: -1n }
        return { errorCode: 0, partition: p.partition, ...log.endOffsetFor(p.leaderEpoch) }
      }),
    })),
  })
}

/** A topic whose partitions all lead on `leader`, with one log per partition. */
export function fakeTopic(name: string, partitions: number, leader: number, extra: Partial<FakeTopic> = {}): { topic: FakeTopic; logs: Map<string, FakeLog> } {
  const logs = new Map<string, FakeLog>()
  for (let i = 0; i < partitions; i++) logs.set(`${name}:${i}`, new FakeLog())
  return { topic: { name, leaders: Array.from({ length: partitions }, () => leader), leaderEpochs: Array.from({ length: partitions }, () => 0), ...extra }, logs }
}
