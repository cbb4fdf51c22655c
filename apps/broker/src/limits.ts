import type { Logger } from './logger.js'

/** How often refused connections are summed up in the log, instead of one line each. */
export const DEFAULT_REFUSAL_LOG_INTERVAL_MS = 60_000

/** "::ffff:127.0.0.1" and "127.0.0.1" are one client. */
export function normalizeAddress(address: string | undefined): string {
  if (address === undefined) return '?'
  return address.startsWith('::ffff:') && address.includes('.') ? address.slice(7) : address
}

export interface ConnectionQuotaOptions {
  maxConnections: number
  maxConnectionsPerIp: number
  logger: Logger
  refusalLogIntervalMs?: number
}

/**
 * Kafka's ConnectionQuotas for the one listener: connections open in total
 * (max.connections) and per client address (max.connections.per.ip). A
 * connection over either limit is closed as soon as it is accepted.
 *
 * A client retrying in a loop must not flood the log: the first refusal is
 * logged, later ones are counted and logged as one line per interval.
 */
export class ConnectionQuotas {
  private total = 0
  private readonly byAddress = new Map<string, number>()
  private readonly intervalMs: number
  private unlogged = 0
  private lastReason = ''
  private timer: NodeJS.Timeout | undefined
  /** Refusals since start, for operators and tests. */
  refused = 0

  constructor(private readonly opts: ConnectionQuotaOptions) {
    this.intervalMs = opts.refusalLogIntervalMs ?? DEFAULT_REFUSAL_LOG_INTERVAL_MS
  }

  get open(): number {
    return this.total
  }

  /** Counts a new connection from `address`, or says why it must be refused (and counts nothing). */
  tryAcquire(address: string): string | undefined {
    const fromAddress = this.byAddress.get(address) ?? 0
    let reason: string | undefined
    if (fromAddress >= this.opts.maxConnectionsPerIp) {
      reason = `${address} already has the configured maximum of ${this.opts.maxConnectionsPerIp} connections (max.connections.per.ip)`
    } else if (this.total >= this.opts.maxConnections) {
      reason = `the broker already has the configured maximum of ${this.opts.maxConnections} connections (max.connections)`
    }
    if (reason !== undefined) {
      this.noteRefusal(address, reason)
      return reason
    }
    this.total++
    this.byAddress.set(address, fromAddress + 1)
    return undefined
  }

  release(address: string): void {
    this.total--
    const n = (this.byAddress.get(address) ?? 1) - 1
    if (n <= 0) this.byAddress.delete(address)
    else this.byAddress.set(address, n)
  }

  close(): void {
    if (this.timer !== undefined) clearTimeout(this.timer)
    this.timer = undefined
    this.flushRefusals()
  }

  private noteRefusal(address: string, reason: string): void {
    this.refused++
    if (this.timer === undefined) {
      this.opts.logger.warn(`refused a connection from ${address}: ${reason}`)
      this.timer = setTimeout(() => {
        this.timer = undefined
        this.flushRefusals()
      }, this.intervalMs)
      this.timer.unref()
      return
    }
    this.unlogged++
    this.lastReason = reason
  }

  private flushRefusals(): void {
    if (this.unlogged === 0) return
    this.opts.logger.warn(`refused ${this.unlogged} more connection(s) in the last ${this.intervalMs} ms; the latest because ${this.lastReason}`)
    this.unlogged = 0
  }
}

/** What the pool needs from a connection to hold back its reading. */
export interface PoolMember {
  /** Bytes of the request frame it is in the middle of reading. */
  readonly partialBytes: number
  /** Stop reading from the socket. */
  mute(): void
  /** Reading may go on (if nothing else holds it back). */
  unmute(): void
}

/**
 * queued.max.request.bytes: the bytes that every connection's partial, queued
 * and unanswered requests hold together. Kafka's SimpleMemoryPool reserves a
 * request's announced size before reading its body and mutes the channels it
 * cannot serve; here bytes are counted as they arrive (so a peer announcing
 * 100 MiB and sending 5 bytes costs 5), and once the pool is used up every
 * connection stops reading (socket.pause, data waits in the kernel) until
 * answers free memory.
 *
 * Counting as bytes arrive could deadlock where Kafka's reservation cannot:
 * several clients each halfway through a large request, none able to finish. So
 * while the pool is used up, one connection (the one furthest into its frame)
 * may finish that frame regardless; the pool therefore never holds more than
 * its capacity plus one max-size request (plus the chunk each socket had
 * already read when reading stopped).
 */
export class RequestMemoryPool {
  private used = 0
  private readonly members = new Set<PoolMember>()
  private owner: PoolMember | undefined
  private muted = false
  private wakeScheduled = false

  /** Infinity when unbounded (-1). */
  readonly capacity: number
  private lastLogged = -Infinity
  /** Times reading was paused for want of memory, for operators and tests. */
  depletions = 0

  constructor(
    capacity: number,
    private readonly logger?: Logger,
    private readonly logIntervalMs = DEFAULT_REFUSAL_LOG_INTERVAL_MS,
  ) {
    this.capacity = capacity > 0 ? capacity : Infinity
  }

  get usedBytes(): number {
    return this.used
  }

  get bounded(): boolean {
    return this.capacity !== Infinity
  }

  join(m: PoolMember): void {
    this.members.add(m)
    if (this.muted && m !== this.owner) m.mute()
  }

  leave(m: PoolMember): void {
    this.members.delete(m)
    if (this.owner === m) {
      this.owner = undefined
      this.settle()
    }
  }

  /** Whether `m` may read now. */
  mayRead(m: PoolMember): boolean {
    return !this.muted || this.owner === m
  }

  /**
   * `m`'s holding changed by `delta` bytes (negative frees); `completedFrame`
   * when it has just read a whole frame, which ends an owner's privilege.
   */
  adjust(m: PoolMember | undefined, delta: number, completedFrame = false): void {
    if (!this.bounded) return
    this.used += delta
    if (completedFrame && m !== undefined && m === this.owner) {
      this.owner = undefined
      if (this.muted) m.mute()
    }
    if (delta !== 0 || completedFrame) this.settle()
  }

  private settle(): void {
    if (this.used >= this.capacity) {
      if (!this.muted) {
        this.muted = true
        this.depletions++
        for (const m of this.members) m.mute()
        // Under pressure this flips many times a second: say so once per interval.
        const now = Date.now()
        if (this.logger !== undefined && now - this.lastLogged >= this.logIntervalMs) {
          this.lastLogged = now
          this.logger.warn(
            `requests hold ${this.used} bytes, the queued.max.request.bytes limit of ${this.capacity}: ` +
              `reading paused on all ${this.members.size} connection(s) until answers free memory`,
          )
        }
      }
      if (this.owner === undefined) {
        let best: PoolMember | undefined
        for (const m of this.members) if (m.partialBytes > 0 && (best === undefined || m.partialBytes > best.partialBytes)) best = m
        if (best !== undefined) {
          this.owner = best
          this.scheduleWake()
        }
      }
    } else if (this.muted) {
      this.muted = false
      this.owner = undefined
      this.scheduleWake()
    }
  }

  // Unmuting resumes sockets and dispatches their backlogs, which adjusts the pool
  // again: done on a fresh tick rather than inside the caller's accounting.
  private scheduleWake(): void {
    if (this.wakeScheduled) return
    this.wakeScheduled = true
    setImmediate(() => {
      this.wakeScheduled = false
      if (!this.muted) {
        for (const m of this.members) m.unmute()
      } else if (this.owner !== undefined) {
        this.owner.unmute()
      }
    })
  }
}
