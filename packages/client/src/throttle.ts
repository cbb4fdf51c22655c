import { performance } from 'node:perf_hooks'

/**
 * KIP-219: from these versions on, a broker over a quota answers at once with throttle_time_ms
 * and then mutes the connection; the client must hold further requests on that connection
 * until the time has passed (Java's AbstractResponse.shouldClientThrottle). Before them the
 * broker delayed the response itself, so waiting again would double the penalty. APIs absent
 * here (OffsetForLeaderEpoch, SASL, DescribeCluster, ConsumerGroupHeartbeat) are never
 * throttled by the client, as in Java. Indexed by api key; -1: never.
 */
const CLIENT_THROTTLES_FROM: readonly number[] = (() => {
  const from: Record<number, number> = {
    0: 6, // Produce
    1: 8, // Fetch
    2: 3, // ListOffsets
    3: 6, // Metadata
    8: 4, // OffsetCommit
    9: 4, // OffsetFetch
    10: 2, // FindCoordinator
    11: 3, // JoinGroup
    12: 2, // Heartbeat
    13: 2, // LeaveGroup
    14: 2, // SyncGroup
    15: 2, // DescribeGroups
    16: 2, // ListGroups
    18: 2, // ApiVersions
    19: 3, // CreateTopics
    20: 2, // DeleteTopics
    21: 1, // DeleteRecords
    22: 1, // InitProducerId
    24: 1, // AddPartitionsToTxn
    25: 1, // AddOffsetsToTxn
    26: 1, // EndTxn
    28: 1, // TxnOffsetCommit
    32: 2, // DescribeConfigs
    33: 1, // AlterConfigs
    37: 1, // CreatePartitions
    42: 1, // DeleteGroups
    44: 0, // IncrementalAlterConfigs
    47: 0, // OffsetDelete
  }
  const out: number[] = new Array(128).fill(-1)
  for (const [key, version] of Object.entries(from)) out[Number(key)] = version
  return out
})()

/** The throttle a response asks the client to observe (0: none). */
export function clientThrottleMs(apiKey: number, version: number, body: unknown): number {
  const from = CLIENT_THROTTLES_FROM[apiKey]
  if (from === undefined || from < 0 || version < from) return 0
  const ms = (body as { throttleTimeMs?: unknown } | null)?.throttleTimeMs
  return typeof ms === 'number' && ms > 0 ? ms : 0
}

interface Held {
  run(): void
  fail(error: Error): void
}

/**
 * Holds a connection's requests while the broker throttles it. Requests keep their order: while
 * any are held, new ones queue behind them. A request's timeout starts when it is written.
 */
export class ThrottleGate {
  /** performance.now() until which nothing is written; 0 when not throttled. */
  private until = 0
  private readonly held: Held[] = []
  private timer: NodeJS.Timeout | undefined

  /** `onQueueSize` hears each change of the number of held requests (diagnostics). */
  constructor(private readonly onQueueSize?: (size: number) => void) {}

  /** Cheap enough for every request: one comparison. */
  get active(): boolean {
    return this.until !== 0
  }

  /** How much longer the connection is throttled, in ms. */
  get remainingMs(): number {
    return this.until === 0 ? 0 : Math.max(0, this.until - performance.now())
  }

  get heldCount(): number {
    return this.held.length
  }

  /** Starts (or extends) a throttle of `ms` from now; returns whether none was running. */
  throttle(ms: number): boolean {
    const fresh = this.until === 0
    const until = performance.now() + ms
    if (until <= this.until) return false
    this.until = until
    if (this.timer !== undefined) clearTimeout(this.timer)
    this.timer = this.arm(Math.ceil(ms))
    return fresh
  }

  /** Queues `send` until the throttle ends; the promise settles with what `send` returns. */
  defer<T>(send: () => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.held.push({ run: () => void send().then(resolve, reject), fail: reject })
      this.onQueueSize?.(this.held.length)
      // Callers now wait on the timer: it must keep the process alive.
      this.timer?.ref()
    })
  }

  /** Fails every held request (the connection is closing) and stops the timer. */
  abort(error: Error): void {
    if (this.timer !== undefined) clearTimeout(this.timer)
    this.timer = undefined
    this.until = 0
    const held = this.held.splice(0)
    for (const h of held) h.fail(error)
    if (held.length > 0) this.onQueueSize?.(0)
  }

  // An idle throttled connection must not hold the process open; one with held requests must.
  private arm(ms: number): NodeJS.Timeout {
    const t = setTimeout(this.onTimer, ms)
    if (this.held.length === 0) t.unref()
    return t
  }

  private readonly onTimer = (): void => {
    this.timer = undefined
    const left = this.until - performance.now()
    if (left > 0) {
      this.timer = this.arm(Math.ceil(left))
      return
    }
    this.until = 0
    // As kafkajs' RequestQueue: the size after each request leaves the queue.
    const held = this.held.splice(0)
    for (let i = 0; i < held.length; i++) {
      held[i]!.run()
      this.onQueueSize?.(held.length - i - 1)
    }
  }
}
