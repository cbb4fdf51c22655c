/**
 * A scriptable Kafka peer for unit tests, built only from @tidelog/protocol: it decodes real
 * request frames and answers with real response frames over a real socket. Handlers per api
 * key decide the answer; defaults cover ApiVersions and Metadata.
 */
import { createServer, type Server, type Socket } from 'node:net'
import {
  FrameDecoder,
  Reader,
  apis,
  decodeRequestHeader,
  encodeResponseFrame,
  getApi,
  type RequestHeader,
} from '@tidelog/protocol'

export const NO_RESPONSE = Symbol('no response')

export interface FakeRequest {
  header: RequestHeader
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  body: any
  conn: FakeConnection
  broker: FakeBroker
  receivedAt: number
}

/** Returns a response body, a raw frame (Buffer, size prefix included), or NO_RESPONSE. */
export type Handler = (req: FakeRequest) => unknown

export interface FakeTopic {
  name: string
  topicId?: string
  /** Leader node id per partition; -1 for none. */
  leaders: number[]
  leaderEpochs?: number[]
  /** Replica node ids per partition (default: just the leader), e.g. for KIP-392 followers. */
  replicas?: number[][]
  errorCode?: number
}

/** State several fake brokers share, so they describe one cluster. */
export class FakeClusterState {
  brokers: FakeBroker[] = []
  topics: FakeTopic[] = []
  controllerId = -1
  clusterId = 'fake-cluster'
}

export class FakeConnection {
  readonly requests: FakeRequest[] = []
  private chain: Promise<void> = Promise.resolve()
  constructor(
    readonly socket: Socket,
    readonly openedAt: number,
  ) {}

  write(frame: Buffer): void {
    if (!this.socket.destroyed) this.socket.write(frame)
  }

  /** Runs handlers one after another, so answers leave in request order unless a test says otherwise. */
  enqueue(fn: () => Promise<void>): void {
    this.chain = this.chain.then(fn, fn)
  }
}

export class FakeBroker {
  readonly requests: FakeRequest[] = []
  readonly connections: FakeConnection[] = []
  readonly handlers = new Map<number, Handler>()
  /** The ApiVersions answer's ranges; default: every API and version the codec knows. */
  apiVersions: { apiKey: number; minVersion: number; maxVersion: number }[] = [...apis.values()].map((a) => ({
    apiKey: a.apiKey,
    minVersion: a.minVersion,
    maxVersion: a.maxVersion,
  }))
  port = 0
  /** Called for each new socket before any request; return false to destroy it at once. */
  onConnection: ((socket: Socket) => boolean) | undefined

  private constructor(
    private readonly server: Server,
    readonly nodeId: number,
    readonly state: FakeClusterState,
  ) {}

  static async start(options: { nodeId?: number; state?: FakeClusterState } = {}): Promise<FakeBroker> {
    const server = createServer()
    const state = options.state ?? new FakeClusterState()
    const broker = new FakeBroker(server, options.nodeId ?? 0, state)
    state.brokers.push(broker)
    if (state.controllerId < 0) state.controllerId = broker.nodeId
    server.on('connection', (socket) => broker.accept(socket))
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    broker.port = (server.address() as { port: number }).port
    return broker
  }

  get address(): string {
    return `127.0.0.1:${this.port}`
  }

  on(apiKey: number, handler: Handler): this {
    this.handlers.set(apiKey, handler)
    return this
  }

  /** Requests received for one api key. */
  received(apiKey: number): FakeRequest[] {
    return this.requests.filter((r) => r.header.apiKey === apiKey)
  }

  /** Sends a response frame for `req` (for handlers that answer later or out of order). */
  respond(req: FakeRequest, body: unknown, version = req.header.apiVersion): void {
    req.conn.write(encodeResponseFrame(req.header.apiKey, version, req.header.correlationId, body))
  }

  dropConnections(): void {
    for (const c of this.connections) c.socket.destroy()
  }

  async close(): Promise<void> {
    this.dropConnections()
    await new Promise<void>((resolve) => this.server.close(() => resolve()))
  }

  private accept(socket: Socket): void {
    if (this.onConnection !== undefined && !this.onConnection(socket)) {
      socket.destroy()
      return
    }
    const conn = new FakeConnection(socket, performance.now())
    this.connections.push(conn)
    const frames = new FrameDecoder()
    socket.on('error', () => {})
    socket.on('data', (chunk) => {
      let list: Buffer[]
      try {
        list = frames.push(chunk)
      } catch {
        socket.destroy()
        return
      }
      for (const frame of list) {
        const r = new Reader(frame)
        const header = decodeRequestHeader(r)
        const api = getApi(header.apiKey)
        let body: unknown
        try {
          body = api?.decodeRequest(r, header.apiVersion)
        } catch {
          body = undefined
        }
        const req: FakeRequest = { header, body, conn, broker: this, receivedAt: performance.now() }
        this.requests.push(req)
        conn.requests.push(req)
        conn.enqueue(async () => {
          const handler = this.handlers.get(header.apiKey) ?? this.defaultHandler(header.apiKey)
          if (handler === undefined) return
          const out = await handler(req)
          if (out === NO_RESPONSE || out === undefined) return
          if (Buffer.isBuffer(out)) conn.write(out)
          else this.respond(req, out)
        })
      }
    })
  }

  private defaultHandler(apiKey: number): Handler | undefined {
    if (apiKey === 18) return () => ({ errorCode: 0, apiKeys: this.apiVersions, throttleTimeMs: 0 })
    if (apiKey === 3) return (req) => this.metadataResponse(req)
    return undefined
  }

  /** Metadata from the shared state; topics not in it answer UNKNOWN_TOPIC_OR_PARTITION. */
  metadataResponse(req: FakeRequest): unknown {
    const s = this.state
    const asked: (string | null)[] | null = req.body.topics === null ? null : req.body.topics.map((t: { name: string | null }) => t.name)
    const list = asked === null ? s.topics : asked.map((n) => s.topics.find((t) => t.name === n) ?? { name: n!, leaders: [], errorCode: 3 })
    return {
      throttleTimeMs: 0,
      brokers: s.brokers.map((b) => ({ nodeId: b.nodeId, host: '127.0.0.1', port: b.port, rack: null })),
      clusterId: s.clusterId,
      controllerId: s.controllerId,
      topics: list.map((t) => ({
        errorCode: t.errorCode ?? 0,
        name: t.name,
        topicId: t.topicId,
        isInternal: false,
        partitions:
          (t.errorCode ?? 0) !== 0
            ? []
            : t.leaders.map((leader, i) => ({
                errorCode: leader < 0 ? 5 : 0,
                partitionIndex: i,
                leaderId: leader,
                leaderEpoch: t.leaderEpochs?.[i] ?? 0,
                replicaNodes: leader < 0 ? [] : (t.replicas?.[i] ?? [leader]),
                isrNodes: leader < 0 ? [] : (t.replicas?.[i] ?? [leader]),
                offlineReplicas: [],
              })),
      })),
    }
  }
}

/** Starts `n` fake brokers (node ids 0..n-1) sharing one cluster state. */
export async function fakeCluster(n: number): Promise<{ state: FakeClusterState; brokers: FakeBroker[]; close(): Promise<void> }> {
  const state = new FakeClusterState()
  const brokers: FakeBroker[] = []
  for (let i = 0; i < n; i++) brokers.push(await FakeBroker.start({ nodeId: i, state }))
  return { state, brokers, close: () => Promise.all(brokers.map((b) => b.close())).then(() => undefined) }
}
