import type { Logger } from '@tidelog/client'
import { Consumer } from '@tidelog/consumer'
import type { StreamTask } from '../internal/task.js'
import type { ChangelogPartition } from './restore.js'

/** A store the runtime can restore into (InMemoryKeyValueStore, window and session stores, custom stores with restore()). */
interface Restorable {
  restore(key: Buffer, value: Buffer | null, timestamp: number): void
}

export interface StandbyOptions {
  brokers: string[]
  clientId: string
  /** exactly_once_v2: read_committed, so a standby never holds a write that was aborted. */
  eos: boolean
  logger: Logger | undefined
  /** Where each changelog partition resumes (the last offset the store holds), and told each offset applied. */
  positionOf(task: StreamTask, changelog: string): bigint | undefined
  onApplied(task: StreamTask, changelog: string, offset: bigint): void
}

interface Standby {
  task: StreamTask
  changelogs: readonly ChangelogPartition[]
}

/**
 * A stream thread's standby tasks (Java's StandbyTask and the standby side of its state
 * updater): each keeps its stores' copy by reading their changelog partitions continuously,
 * processes nothing and writes nothing. On promotion the task leaves here with its stores as
 * they are, so the new active restores only the tail beyond the standby's position.
 */
export class StandbyTasks {
  private readonly tasks = new Map<string, Standby>()
  private readonly byChangelog = new Map<string, Standby>()
  private readonly consumer: Consumer
  private ac: AbortController | undefined
  private loop: Promise<void> | undefined
  private closed = false
  /** Changelog records applied to standby stores (tests and metrics). */
  records = 0

  constructor(private readonly o: StandbyOptions) {
    this.consumer = new Consumer({
      brokers: o.brokers,
      clientId: `${o.clientId}-standby-consumer`,
      autoOffsetReset: 'earliest',
      isolationLevel: o.eos ? 'read_committed' : 'read_uncommitted',
      ...(o.logger ? { logger: o.logger } : {}),
    })
  }

  keys(): string[] {
    return [...this.tasks.keys()]
  }

  has(key: string): boolean {
    return this.tasks.has(key)
  }

  stores(): Iterable<StreamTask> {
    return [...this.tasks.values()].map((s) => s.task)
  }

  /** Stops reading while the thread changes its tasks (a rebalance); resume() starts again. */
  async pause(): Promise<void> {
    this.ac?.abort()
    await this.loop
    this.loop = undefined
    this.ac = undefined
  }

  add(key: string, task: StreamTask, changelogs: readonly ChangelogPartition[]): void {
    const s = { task, changelogs }
    this.tasks.set(key, s)
    for (const c of changelogs) this.byChangelog.set(`${c.topic}:${c.partition}`, s)
  }

  /** Removes a standby (promotion, or it moved elsewhere); the caller owns its task from now on. Only while paused. */
  take(key: string): StreamTask | undefined {
    const s = this.tasks.get(key)
    if (s === undefined) return undefined
    this.tasks.delete(key)
    for (const c of s.changelogs) this.byChangelog.delete(`${c.topic}:${c.partition}`)
    return s.task
  }

  resume(): void {
    if (this.closed || this.loop !== undefined || this.byChangelog.size === 0) return
    const ac = new AbortController()
    this.ac = ac
    this.loop = this.read(ac.signal).catch((e: unknown) => {
      if (!ac.signal.aborted) this.o.logger?.warn({ err: e, client: this.o.clientId }, 'standby tasks: reading changelogs failed; they catch up at the next rebalance')
    })
  }

  private async read(signal: AbortSignal): Promise<void> {
    const tps = [...this.byChangelog.keys()].map((k) => {
      const at = k.lastIndexOf(':')
      return { topic: k.slice(0, at), partition: Number(k.slice(at + 1)) }
    })
    this.consumer.assign(tps)
    try {
      for (const tp of tps) {
        const s = this.byChangelog.get(`${tp.topic}:${tp.partition}`)!
        const at = this.o.positionOf(s.task, `${tp.topic}:${tp.partition}`)
        if (at !== undefined && at >= 0n) this.consumer.seek({ ...tp, offset: at + 1n })
        else await this.consumer.seekToBeginning([tp])
      }
      for await (const batch of this.consumer.batches({ signal })) {
        const changelog = `${batch.topic}:${batch.partition}`
        const s = this.byChangelog.get(changelog)
        if (s === undefined) continue
        for (const m of batch.messages) {
          const c = s.changelogs.find((x) => x.topic === batch.topic)!
          ;(s.task.stores.get(c.store) as unknown as Restorable).restore(Buffer.from(m.key!), m.value === null ? null : Buffer.from(m.value), Number(m.timestamp))
          this.records++
          this.o.onApplied(s.task, changelog, m.offset)
        }
      }
    } finally {
      if (!this.closed) this.consumer.assign([])
    }
  }

  /** Stops reading and hands back the remaining standby tasks, for the thread to close. */
  async close(): Promise<StreamTask[]> {
    await this.pause()
    this.closed = true
    await this.consumer.close().catch(() => {})
    const left = [...this.tasks.values()].map((s) => s.task)
    this.tasks.clear()
    this.byChangelog.clear()
    return left
  }
}
