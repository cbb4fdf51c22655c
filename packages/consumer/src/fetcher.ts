import { performance } from 'node:perf_hooks'
import { isRetriable, sleep, type Cluster } from '@tidelog/client'
import {
  ErrorCodes,
  Fetch,
  ProtocolError,
  ZERO_UUID,
  type FetchRequest,
  type FetchRequestTopic,
  type FetchResponse,
  type FetchResponsePartitionData,
} from '@tidelog/protocol'
import { Chunk, nextOffsetAfter } from './chunk.js'
import type { ResolvedConsumerOptions } from './options.js'
import type { Assignment, PartitionState } from './positions.js'
import { adoptPreferredReplica, clearPreferredReplica, readReplica } from './read-replica.js'
import { Signal } from './signal.js'
import { PositionValidator } from './validator.js'

/** Fetch errors after which the partition's leader must be looked up again (Java's refresh set). */
const LEADER_MOVED = new Set<number>([
  ErrorCodes.NOT_LEADER_OR_FOLLOWER,
  ErrorCodes.LEADER_NOT_AVAILABLE,
  ErrorCodes.FENCED_LEADER_EPOCH,
  ErrorCodes.UNKNOWN_LEADER_EPOCH,
  ErrorCodes.UNKNOWN_TOPIC_OR_PARTITION,
  ErrorCodes.UNKNOWN_TOPIC_ID,
  ErrorCodes.INCONSISTENT_TOPIC_ID,
  ErrorCodes.KAFKA_STORAGE_ERROR,
  ErrorCodes.REPLICA_NOT_AVAILABLE,
  ErrorCodes.OFFSET_NOT_AVAILABLE,
])

export interface FetcherHooks {
  /** The fetch offset is outside the log: reset the position (or raise, per autoOffsetReset). */
  onOffsetOutOfRange(state: PartitionState, offset: bigint): void
  /** An error the application must see (it stops the partition until a seek). */
  onPartitionError(state: PartitionState, error: Error): void
}

/** The chunks of one response, which share its frame. */
export interface ResponseShare {
  chunks: number
  bytes: number
}

interface Sent {
  state: PartitionState
  fetchEpoch: number
  fetchOffset: bigint
}

/**
 * Fetches for the assigned partitions: one loop per leader broker, each sending one Fetch at a
 * time for all of that broker's fetchable partitions. Responses become Chunks in a delivery
 * queue; the queue's bytes are bounded by maxBufferedBytes (no fetch goes out while it is full,
 * and a fetch asks for at most the room left). Partitions keep being fetched while their earlier
 * data waits in the queue (prefetch), from fetchOffset, the end of what is buffered.
 */
export class Fetcher {
  /**
   * Bytes of fetch responses not yet fully delivered. A response's records are views into its
   * frame, so the frame lives until its last chunk is delivered: it counts whole until then.
   */
  bufferedBytes = 0
  /** The largest bufferedBytes seen (for tests and diagnostics). */
  peakBufferedBytes = 0
  /** Notified when a chunk is queued. */
  readonly data = new Signal()
  /** KIP-320: checks positions for log truncation after leader changes. */
  readonly validator: PositionValidator

  private readonly queue: Chunk[] = []
  private readonly loops = new Map<number, FetchLoop>()
  private metadataWanted = false
  private metadataRunning = false
  private stopped = false
  /** Set while handling a response when some partition moved to another node (KIP-392). */
  private replicaMoved = false

  constructor(
    readonly cluster: Cluster,
    readonly options: ResolvedConsumerOptions,
    readonly assignment: Assignment,
    readonly hooks: FetcherHooks,
  ) {
    this.validator = new PositionValidator(cluster, options, assignment, {
      onOffsetOutOfRange: (s, offset) => hooks.onOffsetOutOfRange(s, offset),
      onPartitionError: (s, error) => hooks.onPartitionError(s, error),
      wake: () => this.wake(),
      purge: () => this.purge(),
    })
  }

  /** Starts loops for leaders that have none and wakes the others: call after any change. */
  wake(): void {
    if (this.stopped) return
    if (this.spawnLoops()) this.refreshMetadata()
  }

  /** Returns whether some fetchable partition has no known leader. */
  private spawnLoops(): boolean {
    const metadata = this.cluster.metadata
    const now = performance.now()
    let leaderless = false
    for (const s of this.assignment.all()) {
      if (!s.fetchable || (!s.inFlight && this.validator.check(s, metadata))) continue
      const node = readReplica(s, metadata, this.cluster, now)
      if (node < 0) {
        s.awaitingMetadata = true
        leaderless = true
        continue
      }
      if (!this.loops.has(node)) {
        const loop = new FetchLoop(this, node)
        this.loops.set(node, loop)
        void loop.run()
      }
    }
    for (const loop of this.loops.values()) loop.signal.notify()
    return leaderless
  }

  /** The next chunk to deliver, dropping stale ones. */
  poll(): Chunk | undefined {
    for (;;) {
      const c = this.queue.shift()
      if (c === undefined) return undefined
      if (!c.isStale && this.assignment.isCurrent(c.state)) return c
      this.release(c)
    }
  }

  /** Puts a chunk back at the head (delivery stopped inside it and will go on from there). */
  unshift(c: Chunk): void {
    this.queue.unshift(c)
  }

  /** Returns a chunk's bytes to the budget once it is delivered or dropped. */
  release(c: Chunk): void {
    const share = c.share
    if (--share.chunks > 0) return
    this.bufferedBytes -= share.bytes
    if (this.bufferedBytes < this.options.maxBufferedBytes) for (const loop of this.loops.values()) loop.room.notify()
  }

  /**
   * A not-yet-read chunk that will wait long (its partition's handler is behind): copied out of
   * its response, whose bytes are freed once the other partitions' chunks are delivered.
   */
  detach(c: Chunk): Chunk {
    const copy = c.copy()
    this.bufferedBytes += copy.bytes
    if (this.bufferedBytes > this.peakBufferedBytes) this.peakBufferedBytes = this.bufferedBytes
    this.release(c)
    return copy
  }

  /** Drops queued chunks whose partition moved on (seek, pause, revoke), freeing their room. */
  purge(): void {
    let kept = 0
    const q = this.queue
    for (let i = 0; i < q.length; i++) {
      const c = q[i]!
      if (c.isStale || !this.assignment.isCurrent(c.state)) this.release(c)
      else q[kept++] = c
    }
    q.length = kept
  }

  get queuedChunks(): number {
    return this.queue.length
  }

  async stop(): Promise<void> {
    this.stopped = true
    this.validator.stopped = true
    for (const loop of this.loops.values()) {
      loop.signal.notify()
      loop.room.notify()
    }
    await Promise.all([...this.loops.values()].map((l) => l.done))
    this.loops.clear()
    for (const c of this.queue.splice(0)) this.release(c)
    this.data.notify()
  }

  get isStopped(): boolean {
    return this.stopped
  }

  /**
   * One metadata refresh at a time; partitions waiting for it become fetchable again after.
   * While some partition still has no leader (a topic being created, an election), refreshes
   * repeat with backoff rather than back to back.
   */
  refreshMetadata(): void {
    this.metadataWanted = true
    if (this.metadataRunning || this.stopped) return
    this.metadataRunning = true
    void (async () => {
      try {
        for (let attempt = 0; this.metadataWanted && !this.stopped; ) {
          this.metadataWanted = false
          try {
            await this.cluster.refreshMetadata()
          } catch (err) {
            this.cluster.logger.warn({ err }, 'metadata refresh for fetching failed')
            this.metadataWanted = true
            await sleep(this.cluster.retryBackoff.delay(attempt++))
            continue
          }
          if (this.stopped) return
          for (const s of this.assignment.all()) s.awaitingMetadata = false
          if (this.spawnLoops()) {
            this.metadataWanted = true
            await sleep(this.cluster.retryBackoff.delay(attempt++))
          } else {
            attempt = 0
          }
        }
      } finally {
        this.metadataRunning = false
      }
    })()
  }

  /** Called by a loop with a response: queues data, handles per-partition errors. */
  handleResponse(res: FetchResponse, sent: Map<string, Sent>, names: Map<string, string>, nodeId: number): void {
    const share: ResponseShare = { chunks: 0, bytes: 0 }
    for (const t of res.responses) {
      const topic = t.topicId !== undefined && t.topicId !== ZERO_UUID ? names.get(t.topicId) : t.topic
      if (topic === undefined) continue
      for (const p of t.partitions) {
        const entry = sent.get(`${topic}:${p.partitionIndex}`)
        if (entry === undefined) continue
        this.handlePartition(entry, p, share, nodeId)
      }
    }
    if (this.replicaMoved) {
      this.replicaMoved = false
      this.wake()
    }
    if (share.chunks > 0) {
      this.bufferedBytes += share.bytes
      if (this.bufferedBytes > this.peakBufferedBytes) this.peakBufferedBytes = this.bufferedBytes
      this.data.notify()
    }
  }

  private handlePartition(entry: Sent, p: FetchResponsePartitionData, share: ResponseShare, nodeId: number): void {
    const s = entry.state
    if (!this.assignment.isCurrent(s) || s.fetchEpoch !== entry.fetchEpoch || s.fetchOffset !== entry.fetchOffset) return
    const code = p.errorCode
    if (code === ErrorCodes.NONE) {
      if (s.fetchFailures !== 0) s.fetchFailures = 0
      s.highWatermark = p.highWatermark
      s.lastStableOffset = p.lastStableOffset ?? -1n
      s.logStartOffset = p.logStartOffset ?? -1n
      const replica = p.preferredReadReplica
      if (replica !== undefined && replica >= 0) {
        const leader = this.cluster.metadata.partition(s.topic, s.partition)?.leader ?? -1
        if (adoptPreferredReplica(s, replica, leader, this.cluster, performance.now())) this.replicaMoved = true
      }
      const records = p.records
      if (records === null || records.length === 0) return
      const buf = Buffer.isBuffer(records) ? records : Buffer.from(records.buffer, records.byteOffset, records.byteLength)
      let next: bigint
      try {
        next = nextOffsetAfter(buf)
      } catch (err) {
        this.hooks.onPartitionError(s, err as Error)
        return
      }
      // Only a partial batch: a broker older than KIP-74 with a batch above the partition limit.
      if (next <= entry.fetchOffset) return
      s.fetchOffset = next
      const o = this.options
      const chunk = new Chunk(s, s.fetchEpoch, next, buf, p.highWatermark, s.lastStableOffset, s.logStartOffset, p.abortedTransactions, o.isolationLevel === 1, o.checkCrcs, o.maxDecompressedBytes, share)
      share.chunks++
      share.bytes += chunk.bytes
      this.queue.push(chunk)
      return
    }
    const error = new ProtocolError(code, { api: 'Fetch', apiKey: Fetch.apiKey, topic: s.topic, partition: s.partition })
    const leaderMoved = LEADER_MOVED.has(code)
    // KIP-392: an error from the preferred read replica (even OFFSET_OUT_OF_RANGE: a follower
    // may lag behind the leader's log) sends the partition back to the leader at once, as Java's.
    if (nodeId === s.preferredReplica && (code === ErrorCodes.OFFSET_OUT_OF_RANGE || leaderMoved || error.retriable)) {
      clearPreferredReplica(s)
      this.cluster.logger.debug({ err: error, nodeId }, 'preferred read replica failed, fetching from the leader')
      if (leaderMoved) this.cluster.requestMetadataUpdate()
      this.replicaMoved = true
      return
    }
    if (code === ErrorCodes.OFFSET_OUT_OF_RANGE) {
      this.hooks.onOffsetOutOfRange(s, entry.fetchOffset)
      return
    }
    if (!leaderMoved && !error.retriable) {
      this.hooks.onPartitionError(s, error)
      return
    }
    // Backed off per partition either way: a broker that keeps answering an error at once (or
    // metadata that keeps naming the same leader) must not be asked again straight away.
    const delay = this.cluster.retryBackoff.delay(s.fetchFailures++)
    s.retryAt = performance.now() + delay
    if (leaderMoved) {
      s.awaitingMetadata = true
      this.refreshMetadata()
      return
    }
    this.cluster.logger.warn({ err: error, delayMs: delay }, 'retriable fetch error, backing off')
  }
}

/** The fetch loop for one leader broker. */
class FetchLoop {
  readonly signal = new Signal()
  readonly room = new Signal()
  done: Promise<void> = Promise.resolve()
  private rotation = 0

  constructor(
    private readonly fetcher: Fetcher,
    readonly nodeId: number,
  ) {}

  run(): Promise<void> {
    this.done = this.loop()
    return this.done
  }

  /** performance.now() at which a partition backing off may be fetched again (Infinity: none). */
  private wakeAt = Infinity

  private partitions(): PartitionState[] {
    const metadata = this.fetcher.cluster.metadata
    const out: PartitionState[] = []
    const now = performance.now()
    this.wakeAt = Infinity
    let expired = false
    for (const s of this.fetcher.assignment.all()) {
      if (!s.fetchable || s.inFlight || this.fetcher.validator.check(s, metadata)) continue
      const preferred = s.preferredReplica
      const node = readReplica(s, metadata, this.fetcher.cluster, now)
      if (preferred >= 0 && s.preferredReplica < 0) expired = true
      if (node !== this.nodeId) continue
      if (s.retryAt > now) {
        if (s.retryAt < this.wakeAt) this.wakeAt = s.retryAt
        continue
      }
      out.push(s)
    }
    // A preferred replica that expired here hands its partitions back to the leader's loop.
    if (expired) this.fetcher.wake()
    // Rotate the order so that no partition always comes last when responses fill up.
    if (out.length > 1) {
      const k = this.rotation++ % out.length
      if (k > 0) out.push(...out.splice(0, k))
    }
    return out
  }

  private async loop(): Promise<void> {
    const f = this.fetcher
    const o = f.options
    let failures = 0
    while (!f.isStopped) {
      if (f.bufferedBytes >= o.maxBufferedBytes) {
        await this.room.wait()
        continue
      }
      const parts = this.partitions()
      if (parts.length === 0) {
        await this.signal.wait(this.wakeAt === Infinity ? undefined : Math.max(1, Math.ceil(this.wakeAt - performance.now())))
        continue
      }
      const sent = new Map<string, Sent>()
      const names = new Map<string, string>()
      for (const s of parts) {
        s.inFlight = true
        sent.set(s.key, { state: s, fetchEpoch: s.fetchEpoch, fetchOffset: s.fetchOffset })
      }
      try {
        const res = await this.send(parts, names, Math.max(1, Math.min(o.fetchMaxBytes, o.maxBufferedBytes - f.bufferedBytes)))
        for (const s of parts) s.inFlight = false
        if (f.isStopped) return
        if ((res.errorCode ?? 0) !== 0) throw new ProtocolError(res.errorCode!, { api: 'Fetch', apiKey: Fetch.apiKey })
        f.handleResponse(res, sent, names, this.nodeId)
        failures = 0
      } catch (err) {
        for (const s of parts) s.inFlight = false
        if (f.isStopped) return
        // KIP-392: partitions this node served as preferred read replica go back to their leader.
        let moved = false
        for (const s of parts) if (s.preferredReplica === this.nodeId) moved = clearPreferredReplica(s) || moved
        if (moved) f.wake()
        f.cluster.handleError(err)
        f.cluster.logger.debug({ err, nodeId: this.nodeId }, 'fetch failed')
        if (!isRetriable(err)) {
          for (const s of parts) f.hooks.onPartitionError(s, err as Error)
        }
        // Leaders may have moved with the broker: look again before the next attempt.
        f.refreshMetadata()
        await sleep(f.cluster.retryBackoff.delay(failures++))
      }
    }
  }

  private async send(parts: PartitionState[], names: Map<string, string>, maxBytes: number): Promise<FetchResponse> {
    const f = this.fetcher
    const o = f.options
    const metadata = f.cluster.metadata
    const byTopic = new Map<string, PartitionState[]>()
    let ids = true
    for (const s of parts) {
      let list = byTopic.get(s.topic)
      if (list === undefined) {
        byTopic.set(s.topic, (list = []))
        const id = metadata.topic(s.topic)?.topicId ?? ZERO_UUID
        if (id === ZERO_UUID) ids = false
        else names.set(id, s.topic)
      }
      list.push(s)
    }
    const body = (version: number): FetchRequest => {
      const topics: FetchRequestTopic[] = []
      for (const [topic, list] of byTopic) {
        topics.push({
          ...(version >= 13 ? { topicId: metadata.topic(topic)!.topicId } : { topic }),
          partitions: list.map((s) => ({
            partition: s.partition,
            // KIP-320: the leader refuses a fetch based on older metadata with FENCED_LEADER_EPOCH.
            currentLeaderEpoch: metadata.partition(s.topic, s.partition)?.leaderEpoch ?? -1,
            fetchOffset: s.fetchOffset,
            logStartOffset: -1n,
            partitionMaxBytes: o.maxPartitionFetchBytes,
          })),
        })
      }
      const req: FetchRequest = {
        replicaId: -1,
        maxWaitMs: o.fetchMaxWaitMs,
        minBytes: o.fetchMinBytes,
        maxBytes,
        isolationLevel: o.isolationLevel,
        // Full fetches without a session (KIP-227's sessionless mode: id 0, epoch -1).
        sessionId: 0,
        sessionEpoch: -1,
        topics,
      }
      if (version >= 11 && o.clientRack !== null) req.rackId = o.clientRack
      return req
    }
    const conn = await f.cluster.connectionTo(this.nodeId)
    return conn.request(Fetch, body, {
      // Topic ids (v13+) only when the metadata gave every topic one; isolation needs v4.
      maxVersion: ids ? undefined : 12,
      minVersion: o.isolationLevel === 1 ? 4 : undefined,
      timeoutMs: f.cluster.requestTimeoutMs + o.fetchMaxWaitMs,
    })
  }
}
