import type { BrokerConfig } from './config.js'
import type { GroupCoordinator } from './groups/coordinator.js'
import type { LogManager, PartitionLog } from './log/index.js'
import type { Logger } from './logger.js'
import type { ProducerIdAllocator } from './producer-ids.js'
import type { TopicRegistry } from './topics.js'
import type { TransactionCoordinator } from './txn/coordinator.js'

/** Everything request handlers share: configuration, storage, topics and wake-ups. */
export interface BrokerContext {
  readonly config: BrokerConfig
  readonly logger: Logger
  readonly logs: LogManager
  readonly topics: TopicRegistry
  readonly clusterId: string
  readonly nodeId: number
  /** What Metadata tells clients to connect to. */
  readonly advertised: { host: string; port: number }
  readonly appends: AppendNotifier
  readonly groups: GroupCoordinator
  readonly producerIds: ProducerIdAllocator
  readonly txns: TransactionCoordinator
}

interface Waiter {
  logs: readonly PartitionLog[]
  wake: (appended: boolean) => void
}

/**
 * Lets long-polling fetches sleep until one of their partitions gets an append
 * (or their max wait ends, or the broker shuts down).
 */
export class AppendNotifier {
  private readonly waiting = new Map<PartitionLog, Set<Waiter>>()
  private readonly all = new Set<Waiter>()
  private closed = false

  /** Call from PartitionLog.onAppend. */
  notify(log: PartitionLog): void {
    const set = this.waiting.get(log)
    if (set === undefined) return
    for (const w of [...set]) w.wake(true)
  }

  /**
   * Resolves true on the first append to any of `logs`, false after `timeoutMs`
   * or at shutdown.
   */
  wait(logs: readonly PartitionLog[], timeoutMs: number): Promise<boolean> {
    if (this.closed || timeoutMs <= 0 || logs.length === 0) return Promise.resolve(false)
    return new Promise<boolean>((resolve) => {
      const waiter: Waiter = {
        logs,
        wake: (appended) => {
          clearTimeout(timer)
          this.all.delete(waiter)
          for (const l of waiter.logs) {
            const s = this.waiting.get(l)
            if (s === undefined) continue
            s.delete(waiter)
            if (s.size === 0) this.waiting.delete(l)
          }
          resolve(appended)
        },
      }
      const timer = setTimeout(() => waiter.wake(false), timeoutMs)
      this.all.add(waiter)
      for (const l of logs) {
        let s = this.waiting.get(l)
        if (s === undefined) this.waiting.set(l, (s = new Set()))
        s.add(waiter)
      }
    })
  }

  /** Wakes every waiter now and from now on (shutdown). */
  close(): void {
    this.closed = true
    for (const w of [...this.all]) w.wake(false)
  }
}
