import {
  ErrorCodes,
  Fetch,
  type FetchRequest,
  type FetchResponse,
  type FetchResponseFetchableTopicResponse,
  type FetchResponsePartitionData,
} from '@tidelog/protocol'
import type { BrokerContext } from '../context.js'
import { type AbortedTxn, KafkaStorageError, LogClosedError, OffsetOutOfRangeError, type PartitionLog, type ReadResult } from '../log/index.js'
import { defineHandler } from './types.js'

const EMPTY = Buffer.alloc(0)
const READ_COMMITTED = 1

interface Wanted {
  topic: number
  partition: number
  log: PartitionLog | undefined
  errorCode: number
  fetchOffset: number
  maxBytes: number
}

function resolve(broker: BrokerContext, req: FetchRequest, version: number): { wanted: Wanted[]; topics: FetchResponseFetchableTopicResponse[] } {
  const wanted: Wanted[] = []
  const topics: FetchResponseFetchableTopicResponse[] = []
  for (const rt of req.topics) {
    const byId = version >= 13
    const topic = byId ? broker.topics.getById(rt.topicId ?? '') : broker.topics.get(rt.topic ?? '')
    const ti = topics.length
    topics.push(byId ? { topicId: rt.topicId ?? '', partitions: [] } : { topic: rt.topic ?? '', partitions: [] })
    for (const rp of rt.partitions) {
      const log = topic?.logs[rp.partition]
      wanted.push({
        topic: ti,
        partition: rp.partition,
        log,
        errorCode: log !== undefined ? ErrorCodes.NONE : topic === undefined && byId ? ErrorCodes.UNKNOWN_TOPIC_ID : ErrorCodes.UNKNOWN_TOPIC_OR_PARTITION,
        fetchOffset: Number(rp.fetchOffset),
        maxBytes: rp.partitionMaxBytes,
      })
    }
  }
  return { wanted, topics }
}

/**
 * Reads every wanted partition once, within the response's max_bytes: the first
 * partition that has data returns at least one whole batch even if it is larger
 * than the limits (KIP-74); later ones only what still fits.
 */
async function readAll(wanted: Wanted[], maxBytes: number, readCommitted: boolean) {
  let budget = maxBytes
  let minOne = true
  let bytes = 0
  let errors = 0
  const out: FetchResponsePartitionData[] = []
  for (const w of wanted) {
    const base: FetchResponsePartitionData = {
      partitionIndex: w.partition,
      errorCode: w.errorCode,
      highWatermark: -1n,
      lastStableOffset: -1n,
      logStartOffset: -1n,
      // A list for a read_committed read that succeeded, null otherwise (errors too), as Kafka answers.
      abortedTransactions: null,
      preferredReadReplica: -1,
      records: EMPTY,
    }
    out.push(base)
    if (w.log === undefined) {
      errors++
      continue
    }
    try {
      const limit = Math.max(0, Math.min(w.maxBytes, budget))
      // read_committed stops at the last stable offset and names the aborted transactions
      // in what it returns, so the consumer can drop their records (KIP-98).
      const r: ReadResult & { abortedTransactions?: AbortedTxn[] } = readCommitted
        ? await w.log.readCommitted(w.fetchOffset, limit, minOne)
        : await w.log.read(w.fetchOffset, limit, minOne)
      base.highWatermark = BigInt(r.highWatermark)
      base.lastStableOffset = BigInt(r.lastStableOffset)
      base.logStartOffset = BigInt(r.logStartOffset)
      if (r.abortedTransactions !== undefined) {
        base.abortedTransactions = r.abortedTransactions.map((a) => ({ producerId: BigInt(a.producerId), firstOffset: BigInt(a.firstOffset) }))
      }
      base.records = r.records
      if (r.records.length > 0) {
        minOne = false
        bytes += r.records.length
        budget -= r.records.length
      }
    } catch (err) {
      if (err instanceof LogClosedError) {
        // Deleted (or shutting down) while the fetch waited.
        base.errorCode = ErrorCodes.UNKNOWN_TOPIC_OR_PARTITION
        errors++
        continue
      }
      if (err instanceof KafkaStorageError) {
        base.errorCode = err.code
        errors++
        continue
      }
      if (!(err instanceof OffsetOutOfRangeError)) throw err
      base.errorCode = ErrorCodes.OFFSET_OUT_OF_RANGE
      base.highWatermark = BigInt(err.logEndOffset)
      base.lastStableOffset = BigInt(Math.min(w.log.lastStableOffset, err.logEndOffset))
      base.logStartOffset = BigInt(err.logStartOffset)
      errors++
    }
  }
  return { out, bytes, errors }
}

/**
 * Fetch 4-17 for consumers. The response carries at most min(max_bytes,
 * fetch.max.bytes) of record bytes and each partition at most its
 * partition_max_bytes, in whole batches; the first batch of the first
 * partition with data is returned even when it is larger (KIP-74). Every
 * partition carries its last stable offset; read_committed (isolation level 1)
 * reads only below it, with the aborted transactions of what it returns.
 * Long poll: when less than min_bytes is ready and
 * nothing failed, the request sleeps until an append to one of its partitions
 * (a transaction marker too, which moves the last stable offset) or
 * max_wait_ms, then reads again. Fetch sessions (KIP-227) are declined by
 * answering session id 0, which clients treat as "keep sending full fetches";
 * a request for an existing session gets FETCH_SESSION_ID_NOT_FOUND.
 */
export const fetchHandler = defineHandler({
  api: Fetch,
  minVersion: 4,
  maxVersion: 17,
  async handle(ctx, req): Promise<FetchResponse> {
    const broker = ctx.broker
    const v = ctx.version
    if (v >= 7 && (req.sessionId ?? 0) !== 0) {
      return { throttleTimeMs: 0, errorCode: ErrorCodes.FETCH_SESSION_ID_NOT_FOUND, sessionId: 0, responses: [] }
    }
    const { wanted, topics } = resolve(broker, req, v)
    // As Kafka's KafkaApis: the request's max_bytes is capped by the broker's fetch.max.bytes,
    // and min_bytes by the result, so a long poll never waits for more than it may return.
    const maxBytes = Math.max(0, Math.min(req.maxBytes ?? 0x7fffffff, broker.config.fetchMaxBytes))
    const minBytes = Math.min(req.minBytes, maxBytes)
    const readCommitted = (req.isolationLevel ?? 0) === READ_COMMITTED
    const deadline = Date.now() + Math.max(0, req.maxWaitMs)
    const logs = wanted.flatMap((w) => (w.log !== undefined ? [w.log] : []))
    let result = await readAll(wanted, maxBytes, readCommitted)
    while (result.bytes < minBytes && result.errors === 0 && wanted.length > 0) {
      const left = deadline - Date.now()
      if (left <= 0) break
      const appended = await broker.appends.wait(logs, left)
      result = await readAll(wanted, maxBytes, readCommitted)
      if (!appended) break
    }
    for (let i = 0; i < wanted.length; i++) topics[wanted[i]!.topic]!.partitions.push(result.out[i]!)
    return { throttleTimeMs: 0, errorCode: ErrorCodes.NONE, sessionId: 0, responses: topics }
  },
  errorResponse(req, errorCode) {
    return {
      throttleTimeMs: 0,
      errorCode,
      sessionId: 0,
      responses: req.topics.map((t) => ({
        topic: t.topic,
        topicId: t.topicId,
        partitions: t.partitions.map((p) => ({
          partitionIndex: p.partition,
          errorCode,
          highWatermark: -1n,
          lastStableOffset: -1n,
          logStartOffset: -1n,
          abortedTransactions: null,
          preferredReadReplica: -1,
          records: EMPTY,
        })),
      })),
    }
  },
})
