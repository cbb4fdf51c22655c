import {
  ErrorCodes,
  Produce,
  type ProduceRequest,
  type ProduceResponse,
  type ProduceResponsePartitionProduceResponse,
} from '@tidelog/protocol'
import { KafkaStorageError, type PartitionLog, ProducerStateError } from '../log/index.js'
import { BatchRejectedError, type RecordError, validateProducedBatch } from '../log/validator.js'
import { recompressBatch } from '../log/recompress.js'
import type { Topic } from '../topics.js'
import { type TransactionalProduce, transactionalProduce } from '../txn/produce.js'
import { defineHandler, type RequestContext } from './types.js'

// The first version whose records must be a single magic-2 batch (KIP-98).
const MIN_SERVED_VERSION = 3

function partitionResult(
  index: number,
  errorCode: number,
  errorMessage: string | null = null,
  recordErrors: RecordError[] = [],
): ProduceResponsePartitionProduceResponse {
  return { index, errorCode, baseOffset: -1n, logAppendTimeMs: -1n, logStartOffset: -1n, recordErrors, errorMessage }
}

/**
 * Produce 3-12 (0-2 advertised, as Kafka 4 does, because older librdkafka
 * turns compression off for brokers that do not list them; they are answered
 * with UNSUPPORTED_VERSION). Every partition's batch is appended before the
 * first await, so requests on a connection append in the order they arrive;
 * the fsync of the flush.messages policy is awaited before acknowledging.
 * acks=0 gets no response; if any of its partitions fails, the connection is
 * closed instead, as Kafka does. A request with a transactional id is checked
 * against its transaction first (txn/produce.ts: KIP-890's verification up to
 * v11, the implicit add of v12).
 */
export const produceHandler = defineHandler({
  api: Produce,
  minVersion: MIN_SERVED_VERSION,
  maxVersion: 12,
  advertisedMinVersion: 0,
  handle(ctx, req: ProduceRequest) {
    const acks = req.acks
    if (acks !== 0 && acks !== 1 && acks !== -1) return errorAll(req, ErrorCodes.INVALID_REQUIRED_ACKS)
    // No transactional id: the idempotent/plain fast path, untouched.
    if (req.transactionalId === null || req.transactionalId === undefined) return produce(ctx, req, undefined)
    const txn = transactionalProduce(ctx.broker, req, ctx.version)
    return txn.shouldRetry() ? retryImplicitAdd(ctx, req, txn) : produce(ctx, req, txn)
  },
  errorResponse: errorAll,
})

/**
 * Produce v12 right after an EndTxn: the implicit add meets the last
 * transaction still writing its markers. Kafka 4's broker tries again every
 * add.partitions.to.txn.retry.backoff.ms for up to ...backoff.max.ms (never
 * past the request's timeout) before it answers, so the client is spared a
 * NOT_ENOUGH_REPLICAS and its retry.backoff.ms. The connection reads nothing
 * meanwhile, as Kafka's muted channel, so no later batch overtakes this one.
 */
function retryImplicitAdd(ctx: RequestContext, req: ProduceRequest, txn: TransactionalProduce): Promise<ProduceResponse | undefined> {
  const { addPartitionsToTxnRetryBackoffMs: backoff, addPartitionsToTxnRetryBackoffMaxMs: maxMs } = ctx.broker.config
  const budget = Math.min(maxMs, Math.max(0, req.timeoutMs))
  const start = performance.now()
  const answered = new Promise<ProduceResponse | undefined>((resolve, reject) => {
    const attempt = (): void => {
      if (txn.shouldRetry() && performance.now() - start < budget) {
        setTimeout(attempt, backoff)
        return
      }
      try {
        resolve(produce(ctx, req, txn))
      } catch (err) {
        reject(err)
      }
    }
    attempt()
  })
  ctx.holdConnection?.(answered)
  return answered
}

function produce(ctx: RequestContext, req: ProduceRequest, txn: TransactionalProduce | undefined): ProduceResponse | Promise<ProduceResponse> | undefined {
  const broker = ctx.broker
  const acks = req.acks
  const toFlush: PartitionLog[] = []
  let failed: string | undefined
  const responses = req.topicData.map((td) => {
    const topic = broker.topics.get(td.name)
    return {
      name: td.name,
      partitionResponses: td.partitionData.map((pd) => {
        const log = topic?.logs[pd.index]
        if (topic === undefined || log === undefined) {
          failed ??= `unknown topic or partition ${td.name}-${pd.index}`
          return partitionResult(pd.index, ErrorCodes.UNKNOWN_TOPIC_OR_PARTITION)
        }
        if (topic.isInternal) {
          failed ??= `produce to internal topic ${td.name}`
          return partitionResult(pd.index, ErrorCodes.INVALID_TOPIC_EXCEPTION, `cannot append to internal topic ${td.name}`)
        }
        const u8 = pd.records
        if (u8 === null || u8.length === 0) {
          failed ??= 'empty records'
          return partitionResult(pd.index, ErrorCodes.INVALID_RECORD, 'produce request carries no records')
        }
        const records = Buffer.isBuffer(u8) ? u8 : Buffer.from(u8.buffer, u8.byteOffset, u8.byteLength)
        let stored = records
        try {
          validateProducedBatch(records, {
            maxMessageBytes: topic.settings.maxMessageBytes,
            logAppendTime: topic.settings.logAppendTime,
            timestampBeforeMaxMs: topic.settings.messageTimestampBeforeMaxMs,
            timestampAfterMaxMs: topic.settings.messageTimestampAfterMaxMs,
            maxDecompressedBytes: topic.settings.maxDecompressedBytes,
            ...(topic.settings.log.cleanupCompact ? { compactedPartition: `${td.name}-${pd.index}` } : {}),
            now: Date.now(),
          })
          stored = recompressBatch(records, topic.settings.compression, topic.settings.maxMessageBytes)
        } catch (err) {
          if (!(err instanceof BatchRejectedError)) throw err
          // Only this partition fails; the others in the request are appended as usual.
          failed ??= err.message
          return partitionResult(pd.index, err.code, err.message, err.recordErrors)
        }
        const txnError = txn?.errorFor(td.name, pd.index, records)
        if (txnError !== undefined && txnError !== ErrorCodes.NONE) {
          failed ??= `transactional produce to ${td.name}-${pd.index} refused`
          return partitionResult(pd.index, txnError)
        }
        let r
        try {
          r = log.append(stored, { leaderEpoch: 0, logAppendTime: topic.settings.logAppendTime })
        } catch (err) {
          if (!(err instanceof ProducerStateError || err instanceof KafkaStorageError)) throw err
          failed ??= err.message
          return partitionResult(pd.index, err.code, err.message)
        }
        if (log.needsFlush && !toFlush.includes(log)) toFlush.push(log)
        return {
          index: pd.index,
          errorCode: ErrorCodes.NONE,
          baseOffset: BigInt(r.baseOffset),
          logAppendTimeMs: BigInt(r.logAppendTime),
          logStartOffset: BigInt(r.logStartOffset),
          recordErrors: [],
          errorMessage: null,
        }
      }),
    }
  })
  const response: ProduceResponse = { responses, throttleTimeMs: 0 }
  if (acks === 0) {
    for (const log of toFlush) log.flush().catch((err: unknown) => broker.logger.error(`flush failed: ${String(err)}`))
    if (failed !== undefined) ctx.closeConnection(`acks=0 produce failed: ${failed}`)
    return undefined
  }
  const txnDurable = txn?.durable()
  if (toFlush.length === 0 && txnDurable === undefined) return response
  return Promise.all([...toFlush.map((l) => l.flush()), txnDurable]).then(
    () => response,
    (err: unknown) => {
      // Appended but not durable as the policy demands: the client must not take it as acknowledged.
      broker.logger.error(`fsync before acknowledging failed: ${String(err)}`)
      return errorAll(req, ErrorCodes.KAFKA_STORAGE_ERROR)
    },
  )
}

function errorAll(req: ProduceRequest, errorCode: number): ProduceResponse {
  return {
    responses: req.topicData.map((td) => ({
      name: td.name,
      partitionResponses: td.partitionData.map((pd) => partitionResult(pd.index, errorCode)),
    })),
    throttleTimeMs: 0,
  }
}
