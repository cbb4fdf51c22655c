import { performance } from 'node:perf_hooks'
import {
  ErrorCodes,
  FindCoordinator,
  Metadata,
  ProtocolError,
  type ApiDefinition,
  type FindCoordinatorResponse,
  type MetadataRequest,
  type MetadataResponse,
} from '@tidelog/protocol'
import { ExponentialBackoff, sleep } from './backoff.js'
import { Connection, type RequestOptions } from './connection.js'
import { ConnectionPool, type BrokerTarget, type Lane } from './connection-pool.js'
import { ClientClosedError, KafkaConnectionError, isRetriable } from './errors.js'
import { silentLogger, type Logger } from './logger.js'
import { ClusterMetadata, mergeMetadata, withoutTopics, type BrokerInfo, type TopicErrors } from './metadata.js'
import { parseBrokerList, type ClientOptions } from './options.js'
import { DEFAULT_RETRY_BACKOFF_MAX_MS, DEFAULT_RETRY_BACKOFF_MS, Deadline, retry } from './retry.js'
import { createSaslMechanism } from './sasl/index.js'
import type { SaslMechanism } from './sasl/types.js'

/** Java's metadata.max.age.ms default. */
export const DEFAULT_METADATA_MAX_AGE_MS = 5 * 60_000

export type CoordinatorType = 'group' | 'transaction'
const KEY_TYPE: Record<CoordinatorType, number> = { group: 0, transaction: 1 }

/**
 * Errors after which the cached metadata is probably wrong (Java's InvalidMetadataException
 * family, plus NOT_CONTROLLER): the cluster refreshes when it sees them.
 */
const STALE_METADATA = new Set<number>([
  ErrorCodes.UNKNOWN_TOPIC_OR_PARTITION,
  ErrorCodes.LEADER_NOT_AVAILABLE,
  ErrorCodes.NOT_LEADER_OR_FOLLOWER,
  ErrorCodes.REPLICA_NOT_AVAILABLE,
  ErrorCodes.KAFKA_STORAGE_ERROR,
  ErrorCodes.FENCED_LEADER_EPOCH,
  ErrorCodes.UNKNOWN_LEADER_EPOCH,
  ErrorCodes.UNKNOWN_TOPIC_ID,
  ErrorCodes.INCONSISTENT_TOPIC_ID,
  ErrorCodes.NOT_CONTROLLER,
])

/** Coordinator errors that mean "ask FindCoordinator again, later". */
const COORDINATOR_RETRY = new Set<number>([
  ErrorCodes.COORDINATOR_NOT_AVAILABLE,
  ErrorCodes.COORDINATOR_LOAD_IN_PROGRESS,
  ErrorCodes.NOT_COORDINATOR,
])

/** Whether an error means the metadata cache should be refreshed. */
export function isStaleMetadataError(error: unknown): boolean {
  if (error instanceof ProtocolError) return STALE_METADATA.has(error.code)
  return error instanceof KafkaConnectionError
}

export interface MetadataFetch {
  metadata: ClusterMetadata
  response: MetadataResponse
  /** Topics the response answered with an error code. */
  topicErrors: TopicErrors
}

/**
 * The shared core of every client: bootstrap, the metadata cache, connections per node id,
 * and coordinator lookup. Producer, consumer and Admin each own one.
 */
export class Cluster {
  readonly clientId: string
  readonly logger: Logger
  readonly pool: ConnectionPool
  readonly retryBackoff: ExponentialBackoff
  readonly requestTimeoutMs: number
  readonly metadataMaxAgeMs: number
  readonly allowAutoTopicCreation: boolean

  private readonly bootstrap: BrokerTarget[]
  private readonly tracked = new Set<string>()
  private readonly coordinators = new Map<string, BrokerInfo>()
  private readonly sasl: SaslMechanism | undefined
  private readonly options: ClientOptions
  private meta = ClusterMetadata.empty()
  private refreshing: Promise<ClusterMetadata> | undefined
  private queued: Promise<ClusterMetadata> | undefined
  private ageTimer: NodeJS.Timeout | undefined
  private connecting: Promise<void> | undefined
  private closed = false

  constructor(options: ClientOptions) {
    this.options = options
    this.clientId = options.clientId ?? 'tidelog'
    this.logger = options.logger ?? silentLogger
    this.requestTimeoutMs = options.requestTimeoutMs ?? 30_000
    this.metadataMaxAgeMs = options.metadataMaxAgeMs ?? DEFAULT_METADATA_MAX_AGE_MS
    this.allowAutoTopicCreation = options.allowAutoTopicCreation ?? false
    this.retryBackoff = new ExponentialBackoff(
      options.retryBackoffMs ?? DEFAULT_RETRY_BACKOFF_MS,
      options.retryBackoffMaxMs ?? DEFAULT_RETRY_BACKOFF_MAX_MS,
    )
    // Bootstrap addresses get negative ids, as in Java, so they never collide with node ids.
    this.bootstrap = parseBrokerList(options.brokers).map((a, i) => ({ nodeId: -1 - i, host: a.host, port: a.port }))
    this.sasl = options.sasl === undefined ? undefined : createSaslMechanism(options.sasl)
    this.pool = new ConnectionPool({
      factory: (target) => this.createConnection(target),
      reconnectBackoffMs: options.reconnectBackoffMs,
      reconnectBackoffMaxMs: options.reconnectBackoffMaxMs,
      logger: this.logger,
      onDisconnect: (target, error) => {
        if (this.closed) return
        this.logger.debug({ nodeId: target.nodeId, err: error }, 'connection lost, refreshing metadata')
        if (target.nodeId >= 0) this.requestMetadataUpdate()
      },
    })
  }

  /** The current metadata snapshot (empty until connect() or a refresh). */
  get metadata(): ClusterMetadata {
    return this.meta
  }

  get isClosed(): boolean {
    return this.closed
  }

  /** Fetches the first metadata (brokers, controller, tracked topics). Idempotent. */
  connect(timeoutMs = this.requestTimeoutMs): Promise<void> {
    if (this.closed) return Promise.reject(new ClientClosedError())
    if (this.connecting === undefined) {
      const p = this.fetchMetadata(this.trackedList(), { timeoutMs, tracked: true }).then(() => undefined)
      this.connecting = p
      p.catch(() => {
        if (this.connecting === p) this.connecting = undefined
      })
    }
    return this.connecting
  }

  /** A new, unconnected Connection configured like the cluster's own. */
  createConnection(target: BrokerTarget): Connection {
    return new Connection({
      host: target.host,
      port: target.port,
      nodeId: target.nodeId,
      clientId: this.clientId,
      ssl: this.options.ssl,
      sasl: this.sasl,
      connectTimeoutMs: this.options.connectTimeoutMs,
      requestTimeoutMs: this.requestTimeoutMs,
      maxFrameBytes: this.options.maxFrameBytes,
      logger: this.logger,
      diagnosticsTag: this.options.diagnosticsTag,
    })
  }

  // --- metadata ----------------------------------------------------------------------------

  /**
   * Adds topics to the tracked set and refreshes. Concurrent calls share one request when it
   * already covers their topics; otherwise one more request follows the one in flight.
   */
  refreshMetadata(topics?: readonly string[]): Promise<ClusterMetadata> {
    if (this.closed) return Promise.reject(new ClientClosedError())
    let added = false
    if (topics !== undefined) {
      for (const t of topics) {
        if (!this.tracked.has(t)) {
          this.tracked.add(t)
          added = true
        }
      }
    }
    if (this.refreshing === undefined) return this.startRefresh()
    if (!added) return this.queued ?? this.refreshing
    return this.queueRefresh()
  }

  /** How many topics refreshes ask for (those tracked: asked for by refreshMetadata(topics)). */
  get trackedTopicCount(): number {
    return this.tracked.size
  }

  /**
   * Stops tracking topics, e.g. ones a producer has not used for metadata.max.idle.ms: later
   * refreshes no longer ask for them and the snapshot forgets them now. refreshMetadata([topic])
   * tracks one again.
   */
  untrackTopics(topics: readonly string[]): void {
    const gone = new Set<string>()
    for (const t of topics) if (this.tracked.delete(t)) gone.add(t)
    if (gone.size > 0) this.meta = withoutTopics(this.meta, gone)
  }

  /**
   * Refreshes in the background (errors are logged): after stale-metadata errors and
   * disconnects. A refresh already in flight may predate the news, so one more follows it
   * (only one, however many updates are requested meanwhile), as Java's requestUpdate does.
   */
  requestMetadataUpdate(): void {
    if (this.closed) return
    const p = this.refreshing === undefined ? this.startRefresh() : this.queueRefresh()
    p.catch((err) => this.logger.warn({ err }, 'metadata refresh failed'))
  }

  private queueRefresh(): Promise<ClusterMetadata> {
    if (this.queued === undefined) {
      this.queued = this.refreshing!.catch(() => undefined).then(() => {
        this.queued = undefined
        return this.startRefresh()
      })
    }
    return this.queued
  }

  /** Looks at an error and refreshes metadata if it says the cache is stale; returns whether it did. */
  handleError(error: unknown): boolean {
    if (!isStaleMetadataError(error)) return false
    this.requestMetadataUpdate()
    return true
  }

  /**
   * Metadata for the given topics (null: all topics) straight from a broker, merged into the
   * cache. Retries connection problems until timeoutMs; topic errors are returned, not thrown.
   * With `tracked`, the response replaces the whole topic cache (it asked for every tracked topic).
   */
  async fetchMetadata(
    topics: readonly string[] | null,
    options: { timeoutMs?: number; allowAutoTopicCreation?: boolean; tracked?: boolean } = {},
  ): Promise<MetadataFetch> {
    const allowAuto = options.allowAutoTopicCreation ?? this.allowAutoTopicCreation
    const body = (v: number): MetadataRequest => {
      const req: MetadataRequest = { topics: topics === null ? null : topics.map((name) => ({ name })) }
      // Older versions lack the field and must keep its default (true): such brokers decide by config.
      if (v >= 4) req.allowAutoTopicCreation = allowAuto
      return req
    }
    return retry(
      async () => {
        const conn = await this.anyConnection()
        // v0 reads an empty topic list as "all topics" and has no controller id.
        const response = await conn.request(Metadata, body, { minVersion: 1 })
        if (this.closed) throw new ClientClosedError()
        const { metadata, topicErrors } = mergeMetadata(this.meta, response, topics === null || options.tracked === true, performance.now())
        this.setMetadata(metadata)
        this.adoptBootstrap(conn)
        return { metadata, response, topicErrors }
      },
      {
        timeoutMs: options.timeoutMs ?? this.requestTimeoutMs,
        backoff: this.retryBackoff,
        onRetry: (err, attempt, delayMs) => this.logger.debug({ err, attempt, delayMs }, 'metadata request failed, retrying'),
      },
    )
  }

  private trackedList(): string[] {
    return [...this.tracked]
  }

  private startRefresh(): Promise<ClusterMetadata> {
    const p = this.fetchMetadata(this.trackedList(), { tracked: true }).then((r) => r.metadata)
    this.refreshing = p
    p.then(
      () => {
        if (this.refreshing === p) this.refreshing = undefined
      },
      () => {
        if (this.refreshing === p) this.refreshing = undefined
      },
    )
    return p
  }

  private setMetadata(next: ClusterMetadata): void {
    const prev = this.meta
    this.meta = next
    // Nodes that left the cluster: their connections would only ever fail.
    for (const id of prev.brokers.keys()) if (!next.brokers.has(id)) void this.pool.closeNode(id)
    if (this.ageTimer !== undefined) clearTimeout(this.ageTimer)
    this.ageTimer = setTimeout(() => {
      this.ageTimer = undefined
      this.requestMetadataUpdate()
    }, this.metadataMaxAgeMs)
    this.ageTimer.unref()
  }

  private adoptBootstrap(conn: Connection): void {
    if (conn.nodeId === undefined || conn.nodeId >= 0) return
    for (const b of this.meta.brokers.values()) {
      if (b.host === conn.host && b.port === conn.port) {
        this.pool.transfer({ nodeId: conn.nodeId, host: conn.host, port: conn.port }, b)
        return
      }
    }
  }

  // --- connections -------------------------------------------------------------------------

  /** A connection to a node id from the metadata. */
  async connectionTo(nodeId: number, lane?: Lane): Promise<Connection> {
    const broker = this.meta.brokers.get(nodeId)
    if (broker === undefined) {
      this.requestMetadataUpdate()
      throw new KafkaConnectionError(`node ${nodeId} is not in the cluster metadata`, `node ${nodeId}`, { nodeId })
    }
    return this.pool.get(broker, lane)
  }

  /** A connection to a broker's address directly (e.g. a coordinator not yet in the metadata). */
  connectionToBroker(broker: BrokerInfo | BrokerTarget, lane?: Lane): Promise<Connection> {
    if (this.closed) return Promise.reject(new ClientClosedError())
    return this.pool.get(broker, lane)
  }

  /**
   * A connection to the least loaded node (Java's leastLoadedNode): a ready connection with the
   * fewest requests in flight; else a new connection, trying nodes not backing off first, in a
   * random order so that many clients spread over the cluster. Bootstrap addresses are used
   * until the first metadata is known.
   */
  async anyConnection(): Promise<Connection> {
    if (this.closed) throw new ClientClosedError()
    const targets: BrokerTarget[] = this.meta.brokers.size > 0 ? [...this.meta.brokers.values()] : this.bootstrap
    let best: Connection | undefined
    for (const t of targets) {
      const c = this.pool.ready(t)
      if (c !== undefined && (best === undefined || c.inFlightCount < best.inFlightCount)) best = c
    }
    if (best !== undefined) return best
    const order = shuffle(targets.slice())
    order.sort((a, b) => Number(this.pool.isBackingOff(a.nodeId)) - Number(this.pool.isBackingOff(b.nodeId)))
    // When no known broker answers, the bootstrap addresses are tried again (KIP-899's
    // rebootstrap): the whole cluster may have moved behind the same bootstrap names.
    if (targets !== this.bootstrap) {
      for (const b of shuffle(this.bootstrap.slice())) {
        if (!targets.some((t) => t.host === b.host && t.port === b.port)) order.push(b)
      }
    }
    let last: unknown
    for (const t of order) {
      try {
        return await this.pool.get(t)
      } catch (e) {
        if (!isRetriable(e)) throw e
        last = e
      }
    }
    throw last ?? new KafkaConnectionError('no broker to connect to', 'cluster')
  }

  /** A connection to the controller as the metadata names it (any broker forwards under KRaft). */
  async controllerConnection(): Promise<Connection> {
    if (this.meta.updatedAt === 0) await this.connect()
    const controller = this.meta.controller()
    return controller === undefined ? this.anyConnection() : this.pool.get(controller)
  }

  /** One request to a node id, with the connection's version negotiation. */
  async send<Req, Res>(nodeId: number, api: ApiDefinition<Req, Res>, body: Req | ((version: number) => Req), options?: RequestOptions & { lane?: Lane }): Promise<Res> {
    const conn = await this.connectionTo(nodeId, options?.lane)
    return conn.request(api, body, options)
  }

  // --- coordinators ------------------------------------------------------------------------

  /** The coordinator of a group (or transactional id), cached until invalidated. */
  async findCoordinator(key: string, type: CoordinatorType = 'group', timeoutMs = this.requestTimeoutMs): Promise<BrokerInfo> {
    const found = (await this.findCoordinators([key], type, timeoutMs)).get(key)
    if (found === undefined) throw new ProtocolError(ErrorCodes.COORDINATOR_NOT_AVAILABLE, { api: 'FindCoordinator', groupId: key })
    if (found instanceof Error) throw found
    return found
  }

  /** Forget a cached coordinator, after NOT_COORDINATOR or COORDINATOR_NOT_AVAILABLE from it. */
  invalidateCoordinator(key: string, type: CoordinatorType = 'group'): void {
    this.coordinators.delete(`${type}:${key}`)
  }

  /**
   * Coordinators for many keys: one FindCoordinator v4+ request for all of them (KIP-699) when
   * the broker supports it, else one request per key. Keys answered COORDINATOR_NOT_AVAILABLE,
   * COORDINATOR_LOAD_IN_PROGRESS or NOT_COORDINATOR are asked again with backoff until
   * timeoutMs; other errors are returned per key as ProtocolError.
   */
  async findCoordinators(keys: readonly string[], type: CoordinatorType = 'group', timeoutMs = this.requestTimeoutMs): Promise<Map<string, BrokerInfo | Error>> {
    const out = new Map<string, BrokerInfo | Error>()
    let pending: string[] = []
    for (const key of new Set(keys)) {
      const cached = this.coordinators.get(`${type}:${key}`)
      if (cached !== undefined) out.set(key, cached)
      else pending.push(key)
    }
    if (pending.length === 0) return out
    const deadline = new Deadline(timeoutMs)
    const lastError = new Map<string, ProtocolError>()
    for (let attempt = 0; pending.length > 0; attempt++) {
      const delay = this.retryBackoff.delay(attempt)
      let answers: Awaited<ReturnType<Cluster['askCoordinators']>>
      try {
        answers = await this.askCoordinators(await this.anyConnection(), pending, type)
      } catch (e) {
        if (!isRetriable(e) || deadline.passedAfter(delay)) throw e
        await sleep(delay)
        continue
      }
      const again: string[] = []
      for (const a of answers) {
        if (!pending.includes(a.key)) continue
        if (a.errorCode === ErrorCodes.NONE) {
          const broker: BrokerInfo = { nodeId: a.nodeId, host: a.host, port: a.port, rack: this.meta.brokers.get(a.nodeId)?.rack ?? null }
          this.coordinators.set(`${type}:${a.key}`, broker)
          out.set(a.key, broker)
          continue
        }
        const error = new ProtocolError(a.errorCode, { api: 'FindCoordinator', apiKey: FindCoordinator.apiKey, groupId: a.key, message: a.errorMessage })
        if (COORDINATOR_RETRY.has(a.errorCode)) {
          lastError.set(a.key, error)
          again.push(a.key)
        } else {
          out.set(a.key, error)
        }
      }
      // A key the broker left out of its answer is asked again too.
      for (const key of pending) if (!out.has(key) && !again.includes(key)) again.push(key)
      pending = again
      if (pending.length === 0) break
      if (deadline.passedAfter(delay)) {
        for (const key of pending) {
          out.set(key, lastError.get(key) ?? new ProtocolError(ErrorCodes.COORDINATOR_NOT_AVAILABLE, { api: 'FindCoordinator', groupId: key }))
        }
        break
      }
      await sleep(delay)
    }
    return out
  }

  private async askCoordinators(
    conn: Connection,
    keys: readonly string[],
    type: CoordinatorType,
  ): Promise<{ key: string; errorCode: number; errorMessage: string | null; nodeId: number; host: string; port: number }[]> {
    const keyType = KEY_TYPE[type]
    if (conn.versions.supports(FindCoordinator, 4)) {
      const res = await conn.request(FindCoordinator, { keyType, coordinatorKeys: [...keys] }, { minVersion: 4 })
      return res.coordinators ?? []
    }
    // Before v4 one key per request; v0 has no key type and only finds group coordinators.
    const minVersion = keyType === 0 ? 0 : 1
    return Promise.all(
      keys.map(async (key) => {
        const res: FindCoordinatorResponse = await conn.request(
          FindCoordinator,
          (v) => (v >= 1 ? { key, keyType } : { key }),
          { minVersion, maxVersion: 3 },
        )
        return {
          key,
          errorCode: res.errorCode ?? 0,
          errorMessage: res.errorMessage ?? null,
          nodeId: res.nodeId ?? -1,
          host: res.host ?? '',
          port: res.port ?? -1,
        }
      }),
    )
  }

  // --- lifecycle ---------------------------------------------------------------------------

  /** Closes every connection (waiting for requests in flight) and stops the metadata timer. */
  async close(): Promise<void> {
    if (this.closed) return
    this.closed = true
    if (this.ageTimer !== undefined) clearTimeout(this.ageTimer)
    this.ageTimer = undefined
    await this.pool.close()
  }
}

function shuffle<T>(a: T[]): T[] {
  for (let i = a.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1))
    const t = a[i]!
    a[i] = a[j]!
    a[j] = t
  }
  return a
}
