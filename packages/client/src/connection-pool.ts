import { performance } from 'node:perf_hooks'
import { ExponentialBackoff, sleep } from './backoff.js'
import { Connection } from './connection.js'
import { ClientClosedError } from './errors.js'
import { silentLogger, type Logger } from './logger.js'

/** A broker to connect to: node id (negative for bootstrap addresses), host and port. */
export interface BrokerTarget {
  nodeId: number
  host: string
  port: number
}

/**
 * Connections are keyed by node id and a lane: the default lane carries most traffic, and a
 * separate lane lets slow requests (a long-polling Fetch) not hold up others to the same node
 * (Java's consumer talks to its group coordinator on a separate connection for this reason).
 */
export type Lane = string

export interface ConnectionPoolOptions {
  /** Makes an unconnected Connection for a target. */
  factory: (target: BrokerTarget) => Connection
  /** Java's reconnect.backoff.ms (50) and reconnect.backoff.max.ms (1000). */
  reconnectBackoffMs?: number
  reconnectBackoffMaxMs?: number
  /** Called when a ready connection closes without being asked to. */
  onDisconnect?: (target: BrokerTarget, error: Error | undefined) => void
  logger?: Logger
}

class Slot {
  conn: Connection | undefined
  opening: Promise<Connection> | undefined
  failedAttempts = 0
  /** performance.now() before which no new connection attempt is made. */
  notBefore = 0
  constructor(
    public host: string,
    public port: number,
  ) {}
}

/**
 * One connection per (node, lane). get() returns the ready connection, joins an attempt in
 * progress, or opens a new one once the node's reconnect backoff has passed. Backoff grows
 * exponentially with consecutive failures (with jitter) and resets when a connection becomes
 * ready, as in Java's ClusterConnectionStates.
 */
export class ConnectionPool {
  private readonly slots = new Map<Lane, Map<number, Slot>>()
  private readonly backoff: ExponentialBackoff
  private readonly options: ConnectionPoolOptions
  private readonly logger: Logger
  private readonly abort = new AbortController()
  private closed = false

  constructor(options: ConnectionPoolOptions) {
    this.options = options
    this.logger = options.logger ?? silentLogger
    this.backoff = new ExponentialBackoff(options.reconnectBackoffMs ?? 50, options.reconnectBackoffMaxMs ?? 1000)
  }

  /** The ready connection to a node, connecting (after any backoff) when there is none. */
  get(target: BrokerTarget, lane: Lane = 'default'): Promise<Connection> {
    const ready = this.ready(target, lane)
    if (ready !== undefined) return Promise.resolve(ready)
    if (this.closed) return Promise.reject(new ClientClosedError())
    const slot = this.slot(target, lane)
    if (slot.opening === undefined) {
      slot.opening = this.open(slot, target).finally(() => {
        slot.opening = undefined
      })
    }
    return slot.opening
  }

  /** The ready connection to a node, if there is one right now (no allocation, no promise). */
  ready(target: BrokerTarget, lane: Lane = 'default'): Connection | undefined {
    const slot = this.slots.get(lane)?.get(target.nodeId)
    if (slot === undefined || slot.host !== target.host || slot.port !== target.port) return undefined
    const conn = slot.conn
    return conn !== undefined && conn.isReady ? conn : undefined
  }

  /** Requests in flight to a node over all lanes (for least-loaded node selection). */
  inFlight(nodeId: number): number {
    let n = 0
    for (const lane of this.slots.values()) n += lane.get(nodeId)?.conn?.inFlightCount ?? 0
    return n
  }

  /** Whether a connection attempt to the node would have to wait out a backoff first. */
  isBackingOff(nodeId: number, lane: Lane = 'default'): boolean {
    const slot = this.slots.get(lane)?.get(nodeId)
    return slot !== undefined && slot.conn === undefined && slot.notBefore > performance.now()
  }

  /**
   * Moves a ready connection from one slot to another, e.g. a bootstrap connection (negative
   * id) to the node id the metadata revealed behind the same address, so it is not opened twice.
   */
  transfer(from: BrokerTarget, to: BrokerTarget, lane: Lane = 'default'): boolean {
    const byNode = this.slots.get(lane)
    const source = byNode?.get(from.nodeId)
    const conn = source?.conn
    if (this.closed || source === undefined || conn === undefined || !conn.isReady) return false
    const dest = this.slot(to, lane)
    if (dest.conn !== undefined && dest.conn.isReady) return false
    source.conn = undefined
    byNode!.delete(from.nodeId)
    dest.conn = conn
    dest.failedAttempts = 0
    this.watch(dest, to, conn)
    return true
  }

  /** Closes (gracefully) every connection to a node, e.g. when it left the cluster. */
  async closeNode(nodeId: number): Promise<void> {
    const closing: Promise<void>[] = []
    for (const lane of this.slots.values()) {
      const slot = lane.get(nodeId)
      if (slot === undefined) continue
      lane.delete(nodeId)
      const conn = slot.conn
      slot.conn = undefined
      if (conn !== undefined) closing.push(conn.close())
    }
    await Promise.all(closing)
  }

  /** Node ids with a slot, over all lanes. */
  nodeIds(): number[] {
    const ids = new Set<number>()
    for (const lane of this.slots.values()) for (const id of lane.keys()) ids.add(id)
    return [...ids]
  }

  /** Closes every connection gracefully; attempts waiting out a backoff fail with ClientClosedError. */
  async close(): Promise<void> {
    if (this.closed) return
    this.closed = true
    this.abort.abort(new ClientClosedError())
    const closing: Promise<void>[] = []
    for (const lane of this.slots.values()) {
      for (const slot of lane.values()) {
        const conn = slot.conn
        slot.conn = undefined
        if (conn !== undefined) closing.push(conn.close())
      }
    }
    this.slots.clear()
    await Promise.all(closing)
  }

  private slot(target: BrokerTarget, lane: Lane): Slot {
    let byNode = this.slots.get(lane)
    if (byNode === undefined) this.slots.set(lane, (byNode = new Map()))
    let slot = byNode.get(target.nodeId)
    if (slot === undefined) {
      byNode.set(target.nodeId, (slot = new Slot(target.host, target.port)))
    } else if (slot.host !== target.host || slot.port !== target.port) {
      // The node moved (new advertised listener): the old connection points elsewhere.
      this.logger.info({ nodeId: target.nodeId, from: `${slot.host}:${slot.port}`, to: `${target.host}:${target.port}` }, 'broker address changed')
      const old = slot.conn
      slot.conn = undefined
      void old?.close()
      slot.host = target.host
      slot.port = target.port
      slot.failedAttempts = 0
      slot.notBefore = 0
    }
    return slot
  }

  private async open(slot: Slot, target: BrokerTarget): Promise<Connection> {
    const wait = slot.notBefore - performance.now()
    if (wait > 0) await sleep(wait, this.abort.signal)
    if (this.closed) throw new ClientClosedError()
    const conn = this.options.factory(target)
    try {
      await conn.connect()
    } catch (e) {
      slot.notBefore = performance.now() + this.backoff.delay(slot.failedAttempts++)
      this.logger.debug({ nodeId: target.nodeId, broker: conn.broker, failedAttempts: slot.failedAttempts, err: e }, 'connect failed')
      throw e
    }
    if (this.closed) {
      await conn.close()
      throw new ClientClosedError()
    }
    slot.failedAttempts = 0
    slot.conn = conn
    this.watch(slot, target, conn)
    return conn
  }

  private watch(slot: Slot, target: BrokerTarget, conn: Connection): void {
    const forget = (): void => {
      if (slot.conn === conn) slot.conn = undefined
    }
    // A draining connection (SASL session ending) takes no new requests: replace it now.
    conn.once('expiring', forget)
    conn.once('close', (error: Error | undefined) => {
      const wasCurrent = slot.conn === conn
      forget()
      if (!wasCurrent || this.closed) return
      // Like Java after a disconnect: the next attempt waits backoff(failedAttempts), which
      // is the initial 50 ms after a connection that had been ready.
      slot.notBefore = performance.now() + this.backoff.delay(slot.failedAttempts++)
      this.options.onDisconnect?.(target, error)
    })
  }
}
