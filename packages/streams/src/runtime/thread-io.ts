import type { Message } from '@tidelog/consumer'
import { SendError, type ProducerRecord } from '@tidelog/producer'
import { productionResponse, type ProductionExceptionHandler, type StreamsConfig } from '../config.js'
import { StreamsException } from '../errors.js'
import { TaskId } from '../processor.js'
import { ThreadCache } from '../state/cache.js'
import { isTaskMigrated } from './migrated.js'
import type { Headers } from '../record.js'
import type { RecordCollector, StreamTask } from '../internal/task.js'

/** Shared by every record fetched without headers (most of them): a Record's headers are read-only. */
const NO_HEADERS: Headers = Object.freeze([])

/**
 * A fetched batch of one partition into its task's queue as raw records. Keys and values are
 * copied out of the fetch response so a store that keeps one does not pin the whole response.
 */
export function addBatch(task: StreamTask, topic: string, partition: number, messages: readonly Message[]): void {
  const queue = task.queueOf(topic, partition)
  for (const m of messages) {
    queue.push({
      topic,
      partition,
      offset: Number(m.offset),
      key: m.key === null ? null : Buffer.from(m.key),
      value: m.value === null ? null : Buffer.from(m.value),
      timestamp: Number(m.timestamp),
      headers: m.headers.length === 0 ? NO_HEADERS : m.headers.map((h) => ({ key: h.key, value: h.value === null ? null : Buffer.from(h.value) })),
    })
  }
}

/**
 * The error a failed send(records) leaves for the next commit to throw, if any: each failed
 * record goes through the production exception handler, except that under EOS a fenced producer
 * migrates the tasks instead (as Java's RecordCollectorImpl).
 */
/** What a sink or a change-logging store wrote, as the producer takes it. */
export function producerRecordOf(r: Parameters<RecordCollector['send']>[0]): ProducerRecord {
  // The producer only reads a record's headers, so a record without any shares one empty list.
  const headers = r.headers.length === 0 ? NO_SEND_HEADERS : r.headers.map((h) => ({ key: h.key, value: h.value }))
  return r.partition === undefined
    ? { topic: r.topic, key: r.key, value: r.value, headers, timestamp: r.timestamp }
    : { topic: r.topic, key: r.key, value: r.value, headers, timestamp: r.timestamp, partition: r.partition }
}
const NO_SEND_HEADERS: { key: string; value: Buffer | null }[] = []

export function sendFailure(e: unknown, records: readonly ProducerRecord[], eos: boolean, handler: ProductionExceptionHandler | undefined): unknown {
  const errors: (Error | undefined)[] = e instanceof SendError ? e.errors : records.map(() => (e instanceof Error ? e : new Error(String(e))))
  for (const [i, err] of errors.entries()) {
    if (err === undefined) continue
    const topic = records[i]!.topic
    if (eos && isTaskMigrated(err)) return err
    if (productionResponse(handler, { topic }, err) === 'CONTINUE') continue
    return new StreamsException(`failed to send a record to ${topic}`, { cause: err })
  }
  return undefined
}

export function taskIdOf(key: string): TaskId {
  const [sub, partition] = key.split('_').map(Number) as [number, number]
  return new TaskId(sub, partition)
}

/** Java's ThreadCache: statestore.cache.max.bytes split evenly over the stream threads. */
export function recordCache(config: StreamsConfig): ThreadCache | undefined {
  const bytes = config['statestore.cache.max.bytes'] ?? 0
  if (!Number.isFinite(bytes) || bytes < 0) throw new StreamsException(`Invalid value ${bytes} for configuration statestore.cache.max.bytes: Value must be at least 0`)
  return bytes > 0 ? new ThreadCache(Math.floor(bytes / (config['num.stream.threads'] ?? 1))) : undefined
}
