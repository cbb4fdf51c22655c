import {
  ErrorCodes,
  ListOffsets,
  TidelogError,
  decodeRecordBatchAsync,
  type ListOffsetsRequest,
  type ListOffsetsResponse,
  type ListOffsetsResponsePartitionResponse,
} from '@tidelog/protocol'
import type { BatchRead, PartitionLog } from '../log/index.js'
import { defineHandler } from './types.js'

// Special timestamps of ListOffsets (KIP-734 for MAX, KIP-405 for the local/tiered ones).
const LATEST = -1n
const EARLIEST = -2n
const MAX_TIMESTAMP = -3n
const EARLIEST_LOCAL = -4n
const LATEST_TIERED = -5n
const READ_COMMITTED = 1

const found = (partitionIndex: number, offset: number, timestamp: bigint): ListOffsetsResponsePartitionResponse => ({
  partitionIndex,
  errorCode: ErrorCodes.NONE,
  timestamp,
  offset: BigInt(offset),
  leaderEpoch: 0,
})

const notFound = (partitionIndex: number): ListOffsetsResponsePartitionResponse => ({
  partitionIndex,
  errorCode: ErrorCodes.NONE,
  timestamp: -1n,
  offset: -1n,
  leaderEpoch: -1,
})

/** The first record of `b` at or after `offset` whose timestamp satisfies `pick`. */
async function recordIn(
  b: BatchRead,
  floor: number,
  pick: (ts: bigint) => boolean,
): Promise<{ offset: number; timestamp: bigint } | undefined> {
  const batch = await decodeRecordBatchAsync(b.batch, 0, { verifyCrc: false })
  for (const r of batch) {
    if (Number(r.offset) >= floor && pick(r.timestamp)) return { offset: Number(r.offset), timestamp: r.timestamp }
  }
  return undefined
}

async function lookup(
  log: PartitionLog,
  partitionIndex: number,
  ts: bigint,
  version: number,
  readCommitted: boolean,
): Promise<ListOffsetsResponsePartitionResponse> {
  // As Kafka's Partition.fetchOffsetForTimestamp: read_committed sees up to the last
  // stable offset (KIP-98), read_uncommitted up to the high watermark; a lookup that
  // lands at or past that bound finds nothing.
  const bound = readCommitted ? log.lastStableOffset : log.highWatermark
  const r = await lookupUnbounded(log, partitionIndex, ts, version, bound)
  if (ts !== LATEST && ts !== EARLIEST && ts !== EARLIEST_LOCAL && r.errorCode === ErrorCodes.NONE && (r.offset ?? -1n) >= BigInt(bound)) return notFound(partitionIndex)
  return r
}

async function lookupUnbounded(
  log: PartitionLog,
  partitionIndex: number,
  ts: bigint,
  version: number,
  bound: number,
): Promise<ListOffsetsResponsePartitionResponse> {
  const start = log.logStartOffset
  switch (ts) {
    case LATEST:
      return found(partitionIndex, bound, -1n)
    case EARLIEST:
      return found(partitionIndex, start, -1n)
    case EARLIEST_LOCAL:
      if (version >= 8) return found(partitionIndex, start, -1n)
      break
    case LATEST_TIERED:
      // Nothing is tiered: there is no such offset.
      if (version >= 9) return notFound(partitionIndex)
      break
    case MAX_TIMESTAMP: {
      if (version < 7) break
      const b = await log.batchWithMaxTimestamp()
      if (b === undefined) return notFound(partitionIndex)
      const r = await recordIn(b, start, (t) => t === BigInt(b.maxTimestamp))
      return r === undefined ? found(partitionIndex, Math.max(b.baseOffset, start), BigInt(b.maxTimestamp)) : found(partitionIndex, r.offset, r.timestamp)
    }
  }
  if (ts < 0n) {
    return { partitionIndex, errorCode: ErrorCodes.UNSUPPORTED_VERSION, timestamp: -1n, offset: -1n, leaderEpoch: -1 }
  }
  // The first record whose timestamp is >= ts, at or after the log start.
  const target = Number(ts)
  let b = await log.findBatchByTimestamp(target)
  while (b !== undefined) {
    const r = await recordIn(b, start, (t) => t >= ts)
    if (r !== undefined) return found(partitionIndex, r.offset, r.timestamp)
    // Only records below the log start matched in this batch; look further on.
    const next = b.lastOffset + 1
    if (next >= log.logEndOffset) break
    const rest = await log.read(next, 1)
    if (rest.records.length === 0) break
    const h = await decodeRecordBatchAsync(rest.records, 0, { verifyCrc: false })
    b = { batch: rest.records, baseOffset: Number(h.baseOffset), lastOffset: Number(h.baseOffset) + h.lastOffsetDelta, maxTimestamp: Number(h.maxTimestamp) }
  }
  return notFound(partitionIndex)
}

/**
 * ListOffsets 1-10: earliest, latest, by timestamp (the first record at or after
 * it, found from the time index and then inside the batch), max timestamp
 * (v7+, KIP-734), earliest-local (v8+) and latest-tiered (v9+, never any).
 * With isolation level read_committed (v2+), latest is the last stable offset
 * and lookups find only offsets below it (KIP-98). v10's timeout (KIP-1075) bounds
 * remote-storage lookups; with no tiered storage every answer is immediate.
 */
export const listOffsetsHandler = defineHandler({
  api: ListOffsets,
  minVersion: 1,
  maxVersion: 10,
  async handle(ctx, req: ListOffsetsRequest): Promise<ListOffsetsResponse> {
    const broker = ctx.broker
    const readCommitted = (req.isolationLevel ?? 0) === READ_COMMITTED
    const topics = []
    for (const rt of req.topics) {
      const topic = broker.topics.get(rt.name)
      const partitions: ListOffsetsResponsePartitionResponse[] = []
      const seen = new Set<number>()
      for (const rp of rt.partitions) {
        const log = topic?.logs[rp.partitionIndex]
        if (seen.has(rp.partitionIndex)) {
          partitions.push({ partitionIndex: rp.partitionIndex, errorCode: ErrorCodes.INVALID_REQUEST, timestamp: -1n, offset: -1n, leaderEpoch: -1 })
          continue
        }
        seen.add(rp.partitionIndex)
        if (log === undefined) {
          partitions.push({ partitionIndex: rp.partitionIndex, errorCode: ErrorCodes.UNKNOWN_TOPIC_OR_PARTITION, timestamp: -1n, offset: -1n, leaderEpoch: -1 })
          continue
        }
        try {
          partitions.push(await lookup(log, rp.partitionIndex, rp.timestamp, ctx.version, readCommitted))
        } catch (err) {
          if (!(err instanceof TidelogError)) throw err
          broker.logger.warn(`ListOffsets ${rt.name}-${rp.partitionIndex}: ${err.message}`)
          partitions.push({ partitionIndex: rp.partitionIndex, errorCode: ErrorCodes.KAFKA_STORAGE_ERROR, timestamp: -1n, offset: -1n, leaderEpoch: -1 })
        }
      }
      // leaderEpoch exists from v4 on; older versions must leave it out.
      if (ctx.version < 4) for (const p of partitions) delete p.leaderEpoch
      topics.push({ name: rt.name, partitions })
    }
    return { throttleTimeMs: 0, topics }
  },
  errorResponse(req, errorCode) {
    return {
      throttleTimeMs: 0,
      topics: req.topics.map((t) => ({
        name: t.name,
        partitions: t.partitions.map((p) => ({ partitionIndex: p.partitionIndex, errorCode, timestamp: -1n, offset: -1n, leaderEpoch: -1 })),
      })),
    }
  },
})
