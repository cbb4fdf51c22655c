import diagnostics from 'node:diagnostics_channel'
import { RequestTimeoutError, type QueueSizeEvent, type RequestEvent } from '@tidelog/client'

// kafkajs names requests by its own table (protocol/requests/apiKeys.js), which predates two
// of Kafka's renames; every other key has Kafka's name there.
const KAFKAJS_API_NAMES: Readonly<Record<number, string>> = { 10: 'GroupCoordinator', 43: 'ElectPreferredLeaders' }

const start = diagnostics.channel('tidelog:request:start')
const end = diagnostics.channel('tidelog:request:end')
const failed = diagnostics.channel('tidelog:request:error')
const queueSize = diagnostics.channel('tidelog:request:queue-size')

/** What a component does with its own connections' requests (already filtered by its tag). */
export interface WireListener {
  start(e: RequestEvent): void
  end(e: RequestEvent): void
  error(e: RequestEvent): void
  queueSize?(e: QueueSizeEvent): void
}

export interface NetworkEventNames {
  REQUEST: string
  REQUEST_TIMEOUT: string
  REQUEST_QUEUE_SIZE: string
}

type Emit = (eventName: string, payload: () => unknown) => void

/**
 * kafkajs' network instrumentation (network/requestQueue/socketRequest.js): REQUEST when a
 * response is in, REQUEST_TIMEOUT when a request timed out. Our connections write a request
 * when it is issued, unless the broker throttles the connection (KIP-219), so pendingDuration
 * is 0 and createdAt = sentAt. REQUEST_QUEUE_SIZE: the number of requests a throttled connection
 * holds, on each change, as kafkajs' RequestQueue emits it for its pending requests (ours has no
 * maxInFlightRequests queue: a producer's in-flight limit is kept before a request is made).
 */
export function networkListener(names: NetworkEventNames, emit: Emit): WireListener {
  return {
    start: () => undefined,
    end: (e) =>
      emit(names.REQUEST, () => {
        const duration = Math.round(e.durationMs ?? 0)
        const sentAt = Date.now() - duration
        // size: the response's length as kafkajs reads it from the frame (correlation id included).
        return { ...requestInfo(e, sentAt), size: e.size ?? 0, duration }
      }),
    queueSize: (e) => emit(names.REQUEST_QUEUE_SIZE, () => ({ broker: e.broker, clientId: e.clientId, queueSize: e.queueSize })),
    error: (e) => {
      if (!(e.error instanceof RequestTimeoutError)) return
      emit(names.REQUEST_TIMEOUT, () => requestInfo(e, Date.now() - Math.round(e.durationMs ?? 0)))
    },
  }
}

function requestInfo(e: RequestEvent, sentAt: number) {
  return {
    broker: e.broker,
    clientId: e.clientId,
    correlationId: e.correlationId,
    createdAt: sentAt,
    sentAt,
    pendingDuration: 0,
    apiName: KAFKAJS_API_NAMES[e.apiKey] ?? e.apiName,
    apiKey: e.apiKey,
    apiVersion: e.apiVersion,
  }
}

/**
 * Subscribes to the process-wide request channels for one component, keeping only the
 * requests of connections carrying `tag` (ClientOptions.diagnosticsTag). Subscribed only while
 * wanted, so an unobserved client costs nothing and a dropped one is not kept alive.
 */
export class WireTap {
  readonly tag = {}
  private subscribed = false
  private readonly onStart = (m: unknown) => this.route(m, 'start')
  private readonly onEnd = (m: unknown) => this.route(m, 'end')
  private readonly onError = (m: unknown) => this.route(m, 'error')
  private readonly onQueueSize = (m: unknown) => this.route(m, 'queueSize')

  constructor(private readonly listeners: WireListener[]) {}

  add(listener: WireListener): void {
    this.listeners.push(listener)
  }

  set(wanted: boolean): void {
    if (wanted === this.subscribed) return
    this.subscribed = wanted
    const op = wanted ? 'subscribe' : 'unsubscribe'
    start[op](this.onStart)
    end[op](this.onEnd)
    failed[op](this.onError)
    queueSize[op](this.onQueueSize)
  }

  private route(m: unknown, kind: keyof WireListener): void {
    const e = m as RequestEvent & QueueSizeEvent
    if (e.tag !== this.tag) return
    for (const l of this.listeners) l[kind]?.(e)
  }
}
