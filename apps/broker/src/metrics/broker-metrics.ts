import { type IntervalHistogram, monitorEventLoopDelay } from 'node:perf_hooks'
import type { TlsStatus } from '../security/tls.js'
import { ApiKeys, LOG_OVERHEAD, RECORD_BATCH_OVERHEAD } from '@tidelog/protocol'
import type { BrokerContext } from '../context.js'
import type { SensorAccount } from '../quotas/manager.js'
import { BATCH_LENGTH_AT } from '../log/format.js'
import { Histogram } from './exposition.js'

/** What the server knows of one answered request; its Slot carries these fields. */
export interface RequestObservation {
  readonly apiKey: number
  readonly version: number
  /** performance.now() when the request was decoded. */
  readonly started: number
  readonly request: unknown
  readonly requestBytes: number
  /** The response frame's chunks, null when none was sent (acks=0). */
  readonly out: readonly Buffer[] | null
}

export interface TopicCounters {
  bytesIn: number
  bytesOut: number
  messagesIn: number
  produceRequests: number
  fetchRequests: number
  failedProduceRequests: number
}

export interface RequestStats {
  readonly name: string
  /** Requests by version, as Kafka's RequestsPerSec carries a version tag. */
  readonly byVersion: Map<number, number>
  /** Error codes the responses carried, NONE (0) included, as Kafka's ErrorsPerSec counts them. */
  readonly errors: Map<number, number>
  readonly totalTimeMs: Histogram
  requestBytes: number
  responseBytes: number
}

/** What the network side reports at scrape time (KafkaServer.socketStats). */
export interface SocketStats {
  /** Open connections per listener name. */
  connections: ReadonlyMap<string, number>
  /** Requests read and not answered yet, over all connections. */
  pendingRequests: number
  /** Failed SASL authentications per listener name, since start. */
  failedAuthentications: ReadonlyMap<string, number>
}

export interface SocketSource {
  socketStats(): SocketStats
}

/** Connections accepted and closed per listener, since start (Kafka's connection-creation-total / connection-close-total). */
export interface ListenerCounters {
  created: number
  closed: number
}

/**
 * Every errorCode field of a response, as Kafka's AbstractResponse.errorCounts() adds them up:
 * the top-level one and each topic's and partition's. Record bytes are not walked into.
 */
export function countErrorCodes(value: unknown, into: Map<number, number>): void {
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const v: unknown = value[i]
      if (v !== null && typeof v === 'object') countErrorCodes(v, into)
    }
    return
  }
  if (value === null || typeof value !== 'object' || ArrayBuffer.isView(value)) return
  // for-in over the decoded response's own fields: no entry arrays allocated per object.
  const o = value as Record<string, unknown>
  for (const k in o) {
    const v = o[k]
    if (typeof v === 'number') {
      if (k === 'errorCode') into.set(v, (into.get(v) ?? 0) + 1)
    } else if (v !== null && typeof v === 'object') countErrorCodes(v, into)
  }
}

/** One sample of the throughput history: per-second rates over the interval that ended at `t`. */
export interface ThroughputSample {
  t: number
  topics: Record<string, { bytesIn: number; bytesOut: number; messagesIn: number }>
}

export interface EventLoopDelay {
  /** Seconds, over the last sampling interval. */
  min: number
  max: number
  mean: number
  p50: number
  p90: number
  p99: number
}

// Kafka's request metrics are milliseconds; these bounds span a cached metadata answer to
// a fetch parked for its full max wait.
export const LATENCY_BUCKETS_MS = [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000]

// The v2 batch header's record count (after the base sequence).
const RECORDS_COUNT_AT = 57

const newCounters = (): TopicCounters => ({ bytesIn: 0, bytesOut: 0, messagesIn: 0, produceRequests: 0, fetchRequests: 0, failedProduceRequests: 0 })

/** Records in a partition's batches: the count field of each batch header, no decoding. */
function int32(b: Uint8Array, o: number): number {
  return (b[o]! << 24) | (b[o + 1]! << 16) | (b[o + 2]! << 8) | b[o + 3]!
}

function recordCount(b: Uint8Array): number {
  let n = 0
  for (let p = 0; p + RECORD_BATCH_OVERHEAD <= b.length; ) {
    n += int32(b, p + RECORDS_COUNT_AT)
    const size = LOG_OVERHEAD + int32(b, p + BATCH_LENGTH_AT)
    if (size <= LOG_OVERHEAD) break
    p += size
  }
  return n
}

interface ProduceShape {
  topicData: { name: string; partitionData: { index: number; records: Uint8Array | null }[] }[]
}
interface ProduceResponseShape {
  responses: { name: string; partitionResponses: { index: number; errorCode: number }[] }[]
}
interface FetchResponseShape {
  responses: { topic?: string; topicId?: string; partitions: { records: Uint8Array | null }[] }[]
}

/**
 * The broker's counters, fed once per answered request by the server and read by
 * /metrics and the console. Counting follows Kafka's BrokerTopicMetrics: bytes and
 * messages in count partitions whose append succeeded, bytes out the record bytes
 * fetch responses carry. Everything else (partitions, sizes, lag) is read from the
 * broker's state at scrape time, so nothing here can drift from what the broker holds.
 */
export class BrokerMetrics {
  readonly total: TopicCounters = newCounters()
  readonly topics = new Map<string, TopicCounters>()
  readonly requests = new Map<number, RequestStats>()
  readonly listeners = new Map<string, ListenerCounters>()
  /** Console logins refused (wrong or unknown user), since start. */
  consoleLoginFailures = 0
  /** The client quota sensors, read at scrape time (set by startBroker). */
  quotaAccounts: () => readonly SensorAccount[] = () => []
  /** Certificate reloads and the certificate in use, when a listener uses TLS (set by startBroker). */
  tlsStatus: () => TlsStatus | undefined = () => undefined
  readonly startedAt = Date.now()
  private server: SocketSource | undefined
  private readonly history: ThroughputSample[] = []
  private lastSnapshot = new Map<string, TopicCounters>()
  private lastSampleAt = Date.now()
  private readonly loop: IntervalHistogram
  private loopDelay: EventLoopDelay = { min: 0, max: 0, mean: 0, p50: 0, p90: 0, p99: 0 }
  private timer: NodeJS.Timeout | undefined

  constructor(
    private readonly broker: BrokerContext,
    private readonly opts: { sampleIntervalMs?: number; historySize?: number } = {},
  ) {
    this.loop = monitorEventLoopDelay({ resolution: 10 })
    this.loop.enable()
    this.timer = setInterval(() => this.sample(), opts.sampleIntervalMs ?? 1000)
    this.timer.unref()
  }

  get context(): BrokerContext {
    return this.broker
  }

  close(): void {
    if (this.timer !== undefined) clearInterval(this.timer)
    this.timer = undefined
    this.loop.disable()
  }

  /** The server reports its connections and queue through this at scrape time. */
  attachServer(server: SocketSource): void {
    this.server = server
  }

  get socket(): SocketStats {
    return this.server?.socketStats() ?? { connections: new Map(), pendingRequests: 0, failedAuthentications: new Map() }
  }

  private listenerCounters(name: string): ListenerCounters {
    let c = this.listeners.get(name)
    if (c === undefined) this.listeners.set(name, (c = { created: 0, closed: 0 }))
    return c
  }

  connectionOpened(listener: string): void {
    this.listenerCounters(listener).created++
  }

  connectionClosed(listener: string): void {
    this.listenerCounters(listener).closed++
  }

  private countersFor(topic: string): TopicCounters {
    let c = this.topics.get(topic)
    if (c === undefined) this.topics.set(topic, (c = newCounters()))
    return c
  }

  /** Called by the server as each response is encoded (or dropped, for acks=0). */
  observe(o: RequestObservation, apiName: string, response: unknown): void {
    try {
      this.count(o, apiName, response)
    } catch (err) {
      // Counting must never cost a client its answer: a surprise is logged, the response goes out.
      this.broker.logger.error(`metrics: cannot count ${apiName} v${o.version}: ${(err as Error)?.stack ?? String(err)}`)
    }
  }

  private count(o: RequestObservation, apiName: string, response: unknown): void {
    let stats = this.requests.get(o.apiKey)
    if (stats === undefined) {
      stats = { name: apiName, byVersion: new Map(), errors: new Map(), totalTimeMs: new Histogram(LATENCY_BUCKETS_MS), requestBytes: 0, responseBytes: 0 }
      this.requests.set(o.apiKey, stats)
    }
    stats.byVersion.set(o.version, (stats.byVersion.get(o.version) ?? 0) + 1)
    stats.totalTimeMs.observe(performance.now() - o.started)
    stats.requestBytes += o.requestBytes
    let responseBytes = 0
    if (o.out !== null) for (const c of o.out) responseBytes += c.length
    stats.responseBytes += responseBytes
    // acks=0 produce has no response to count errors in, as in Kafka.
    if (response !== undefined) countErrorCodes(response, stats.errors)
    if (o.apiKey === ApiKeys.Produce) this.observeProduce(o.request as ProduceShape, response as ProduceResponseShape | undefined)
    else if (o.apiKey === ApiKeys.Fetch && response !== undefined) this.observeFetch(response as FetchResponseShape)
  }

  private observeProduce(req: ProduceShape, res: ProduceResponseShape | undefined): void {
    const noResponse = res === undefined
    for (let ti = 0; ti < req.topicData.length; ti++) {
      const t = req.topicData[ti]!
      const c = this.countersFor(t.name)
      c.produceRequests++
      this.total.produceRequests++
      // Responses list topics and partitions in request order; look up by name only when they do not.
      let rt = res?.responses[ti]
      if (res !== undefined && rt?.name !== t.name) rt = res.responses.find((r) => r.name === t.name)
      let failed = false
      for (let pi = 0; pi < t.partitionData.length; pi++) {
        const p = t.partitionData[pi]!
        let pr = rt?.partitionResponses[pi]
        if (rt !== undefined && pr?.index !== p.index) pr = rt.partitionResponses.find((x) => x.index === p.index)
        // acks=0 has no answer to consult: the append is counted as made, as the client assumes.
        if ((pr !== undefined && pr.errorCode !== 0) || (pr === undefined && !noResponse) || p.records === null) {
          failed = true
          continue
        }
        const bytes = p.records.byteLength
        const n = recordCount(p.records)
        c.bytesIn += bytes
        c.messagesIn += n
        this.total.bytesIn += bytes
        this.total.messagesIn += n
      }
      if (failed) {
        c.failedProduceRequests++
        this.total.failedProduceRequests++
      }
    }
  }

  private observeFetch(res: FetchResponseShape): void {
    for (const t of res.responses) {
      const name = t.topic !== undefined && t.topic !== '' ? t.topic : t.topicId !== undefined ? this.broker.topics.getById(t.topicId)?.name : undefined
      if (name === undefined) continue
      let bytes = 0
      for (const p of t.partitions) bytes += p.records?.byteLength ?? 0
      const c = this.countersFor(name)
      c.fetchRequests++
      c.bytesOut += bytes
      this.total.fetchRequests++
      this.total.bytesOut += bytes
    }
  }

  /** Per-second rates since the previous sample, appended to the throughput history. */
  sample(now = Date.now()): void {
    const seconds = Math.max(0.001, (now - this.lastSampleAt) / 1000)
    const topics: ThroughputSample['topics'] = {}
    const snapshot = new Map<string, TopicCounters>()
    for (const [name, c] of this.topics) {
      // A deleted topic's counters go with it, as Kafka removes its BrokerTopicMetrics.
      if (this.broker.topics.get(name) === undefined) {
        this.topics.delete(name)
        continue
      }
      const prev = this.lastSnapshot.get(name) ?? newCounters()
      topics[name] = {
        bytesIn: (c.bytesIn - prev.bytesIn) / seconds,
        bytesOut: (c.bytesOut - prev.bytesOut) / seconds,
        messagesIn: (c.messagesIn - prev.messagesIn) / seconds,
      }
      snapshot.set(name, { ...c })
    }
    this.lastSnapshot = snapshot
    this.lastSampleAt = now
    this.history.push({ t: now, topics })
    const keep = this.opts.historySize ?? 300
    if (this.history.length > keep) this.history.splice(0, this.history.length - keep)
    const h = this.loop
    if (h.count > 0) {
      const s = (ns: number): number => ns / 1e9
      this.loopDelay = { min: s(h.min), max: s(h.max), mean: s(h.mean), p50: s(h.percentile(50)), p90: s(h.percentile(90)), p99: s(h.percentile(99)) }
    }
    h.reset()
  }

  throughput(): readonly ThroughputSample[] {
    return this.history
  }

  get eventLoopDelay(): EventLoopDelay {
    return this.loopDelay
  }
}
