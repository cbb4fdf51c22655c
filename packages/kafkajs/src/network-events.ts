import diagnostics from 'node:diagnostics_channel'
import { RequestTimeoutError, type RequestEvent } from '@tidelog/client'

// kafkajs names requests by its own table (protocol/requests/apiKeys.js), which predates two
// of Kafka's renames; every other key has Kafka's name there.
const KAFKAJS_API_NAMES: Readonly<Record<number, string>> = { 10: 'GroupCoordinator', 43: 'ElectPreferredLeaders' }

const start = diagnostics.channel('tidelog:request:start')
const end = diagnostics.channel('tidelog:request:end')
const failed = diagnostics.channel('tidelog:request:error')

/** What a component does with its own connections' requests (already filtered by its tag). */
export interface WireListener {
  start(e: RequestEvent): void
  end(e: RequestEvent): void
  error(e: RequestEvent): void
}

export interface NetworkEventNames {
  REQUEST: string
  REQUEST_TIMEOUT: string
}

type Emit = (eventName: string, payload: () => unknown) => void

/**
 * kafkajs' network instrumentation (network/requestQueue/socketRequest.js): REQUEST when a
 * response is in, REQUEST_TIMEOUT when a request timed out. Our connections write a request
 * when it is issued (kafkajs queues one only past maxInFlightRequests or while throttled, and
 * emits REQUEST_QUEUE_SIZE then), so pendingDuration is 0 and createdAt = sentAt.
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
  }

  private route(m: unknown, kind: keyof WireListener): void {
    const e = m as RequestEvent
    if (e.tag !== this.tag) return
    for (const l of this.listeners) l[kind](e)
  }
}
