import type { Message } from '@tidelog/consumer'
import type { Headers } from '../record.js'
import type { StreamTask } from '../internal/task.js'

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
