import type { Admin } from '@tidelog/client'
import { Consumer, type Batch } from '@tidelog/consumer'
import type { InternalTopologyBuilder } from '../internal/builder.js'
import { StreamTask, type TaskConfig } from '../internal/task.js'
import { TaskId } from '../processor.js'
import type { StateStore } from '../store.js'

/**
 * Java's GlobalStreamThread: one consumer (no group) assigned every partition of the global
 * tables' topics feeds their stores through the global sub-topology. start() resolves once every
 * partition has been read to the end offset it had at start (the restore that Java finishes
 * before any stream thread runs); then updates keep flowing in the background.
 */
export class GlobalStateThread {
  private readonly task: StreamTask
  private readonly consumer: Consumer
  private readonly abort = new AbortController()
  private loop: Promise<void> | undefined
  /** Set when the background loop fails: the instance treats it as fatal. */
  error: unknown
  restored = false

  constructor(builder: InternalTopologyBuilder, nodes: string[], config: TaskConfig, private readonly brokers: string[], applicationId: string, private readonly onError: (e: unknown) => void) {
    this.task = new StreamTask(new TaskId(-1, 0), builder, nodes, config, { send: () => {} })
    this.consumer = new Consumer({ brokers: this.brokers, clientId: `${applicationId}-global-consumer`, autoOffsetReset: 'earliest' })
  }

  get stores(): ReadonlyMap<string, StateStore> {
    return this.task.stores
  }

  async start(admin: Admin): Promise<void> {
    const topics = this.task.sourceTopics()
    const tps = (await admin.describeTopics(topics)).flatMap((d) => d.partitions.map((p) => ({ topic: d.name, partition: p.partition })))
    this.consumer.assign(tps)
    const ends = new Map((await this.consumer.endOffsets(tps)).map((e) => [`${e.topic}:${e.partition}`, e.offset]))
    const behind = new Set([...ends].filter(([, end]) => end > 0n).map(([k]) => k))
    const it = this.consumer.batches({ signal: this.abort.signal })[Symbol.asyncIterator]()
    while (behind.size > 0) {
      const next = await it.next()
      if (next.done) break
      this.apply(next.value)
      const k = `${next.value.topic}:${next.value.partition}`
      if (next.value.nextOffset >= (ends.get(k) ?? 0n)) behind.delete(k)
    }
    this.restored = true
    this.loop = (async () => {
      try {
        for (;;) {
          const next = await it.next()
          if (next.done) return
          this.apply(next.value)
        }
      } catch (e) {
        if (this.abort.signal.aborted) return
        this.error = e
        this.onError(e)
      }
    })()
  }

  async close(): Promise<void> {
    this.abort.abort()
    await this.loop?.catch(() => {})
    await this.consumer.close().catch(() => {})
    this.task.close()
  }

  private apply(batch: Batch): void {
    for (const m of batch.messages) {
      this.task.addRecord({
        topic: batch.topic,
        partition: batch.partition,
        offset: Number(m.offset),
        key: m.key === null ? null : Buffer.from(m.key),
        value: m.value === null ? null : Buffer.from(m.value),
        timestamp: Number(m.timestamp),
        headers: m.headers.map((h) => ({ key: h.key, value: h.value === null ? null : Buffer.from(h.value) })),
      })
    }
    while (this.task.process());
  }
}
