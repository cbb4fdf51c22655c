import { performance } from 'node:perf_hooks'
import type { Cluster } from '@tidelog/client'
import type { Accumulator } from './accumulator.js'

/** setTimeout's limit. */
const MAX_TIMER_MS = 0x7fffffff

/**
 * Java's metadata.max.idle.ms: forgets topics no send() used for `idleMs`, so that a producer
 * writing to ever new topic names keeps bounded state and its metadata requests do not ask
 * for every topic it ever wrote to. A forgotten topic loses its metadata (the cluster stops
 * tracking it) and its queues and partitioner state (the accumulator drops them once nothing
 * of it is unfinished); the next send() to it looks it up again.
 */
export class IdleTopics {
  /** Topics whose metadata a send() waited for, and when: they may never have reached the accumulator. */
  private readonly requested = new Map<string, number>()
  private readonly timer: NodeJS.Timeout

  constructor(
    private readonly acc: Accumulator,
    private readonly cluster: Cluster,
    private readonly idleMs: number,
  ) {
    // A quarter of the idle time: a topic is forgotten between 1 and 1.25 idleMs after its last use.
    this.timer = setInterval(() => this.sweep(), Math.min(MAX_TIMER_MS, Math.max(1, Math.ceil(idleMs / 4))))
    // Forgetting topics is no reason to keep the process alive.
    this.timer.unref()
  }

  /** A send() is waiting for this topic's metadata. */
  requesting(topic: string): void {
    this.requested.set(topic, performance.now())
  }

  /** Topics the producer holds metadata or queues for. */
  get count(): number {
    let n = this.acc.topicCount
    for (const t of this.requested.keys()) if (!this.acc.hasTopic(t)) n++
    return Math.max(n, this.cluster.trackedTopicCount)
  }

  sweep(now = performance.now()): void {
    const before = now - this.idleMs
    const gone = this.acc.expireIdle(before)
    for (const [topic, at] of this.requested) {
      if (this.acc.hasTopic(topic)) this.requested.delete(topic)
      else if (at <= before) {
        this.requested.delete(topic)
        gone.push(topic)
      }
    }
    if (gone.length > 0) this.cluster.untrackTopics(gone)
  }

  stop(): void {
    clearInterval(this.timer)
  }
}
