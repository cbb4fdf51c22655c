import diagnostics from 'node:diagnostics_channel'

/**
 * node:diagnostics_channel channels. Messages are only built when a channel has subscribers,
 * so an unobserved client pays one boolean check per request.
 */
export const channels = {
  connect: diagnostics.channel('tidelog:connection:connect'),
  close: diagnostics.channel('tidelog:connection:close'),
  requestStart: diagnostics.channel('tidelog:request:start'),
  requestEnd: diagnostics.channel('tidelog:request:end'),
  requestError: diagnostics.channel('tidelog:request:error'),
  queueSize: diagnostics.channel('tidelog:request:queue-size'),
} as const

/**
 * A connection's queue of requests waiting to be written changed length: requests held while
 * the broker throttles the connection (KIP-219), as kafkajs' REQUEST_QUEUE_SIZE reports.
 */
export interface QueueSizeEvent {
  broker: string
  nodeId: number | undefined
  clientId: string | null
  tag: unknown
  queueSize: number
}

export interface ConnectionEvent {
  /** "host:port" */
  broker: string
  nodeId: number | undefined
  /** Connect (TCP, TLS, ApiVersions, SASL) duration for connect events; lifetime for close events. */
  durationMs: number
  /** Why the connection closed, if it did not close on request. */
  error?: Error
}

export interface RequestEvent {
  broker: string
  nodeId: number | undefined
  clientId: string | null
  /** The client's ClientOptions.diagnosticsTag. */
  tag: unknown
  apiKey: number
  apiName: string
  apiVersion: number
  correlationId: number
  /** Time from writing the request to its response (end and error events). */
  durationMs?: number
  /** End events of answered requests: the response frame's bytes (correlation id and body) and the decoded body. */
  size?: number
  response?: unknown
  error?: Error
}

// --- produce and consume tracing (TracingChannel: start, end, asyncStart, asyncEnd, error) ---

/** A record header as the consumer hands it over. */
export interface TraceHeader {
  key: string
  value: Uint8Array | null
}

/**
 * One record of a producer's send() call, published before the record is serialized (so the
 * caller's async context is the current one) and settled when the call's acknowledgement or
 * error arrives. A subscriber may add headers with `setHeader` in its start handler (W3C
 * trace context); they are added to the record sent, never to the caller's object.
 */
export interface SendTraceContext {
  clientId: string
  topic: string
  /** The partition the caller asked for; the one written to is in `result`. */
  partition: number | undefined
  /** The record's key as given to send(), before the key serializer. */
  key: unknown
  /** true when the value is null (a tombstone). */
  tombstone: boolean
  /** Records in the same send() call (1 for a single record). */
  batchSize: number
  setHeader(name: string, value: string): void
  result?: { topic: string; partition: number; offset: bigint; timestamp: number }
  error?: unknown
}

/** What the consumer knows of one record it hands to the application. */
export interface TracedMessage {
  readonly topic: string
  readonly partition: number
  readonly offset: bigint
  readonly key: unknown
  readonly value: unknown
  readonly headers: readonly TraceHeader[]
}

/**
 * One eachMessage call (process, per record) or eachBatch call (process, per batch) of
 * consumer.run(). A subscriber may set `runInContext` in its start handler: the handler then
 * runs inside it, so work the handler does (a produce) belongs to the subscriber's context
 * (OpenTelemetry: `context.with(...)`).
 */
export interface ProcessTraceContext {
  clientId: string
  groupId: string | undefined
  topic: string
  partition: number
  /** One message for eachMessage, the batch's messages for eachBatch. */
  messages: readonly TracedMessage[]
  batch: boolean
  runInContext?: <T>(fn: () => T) => T
  error?: unknown
}

/**
 * One message taken from the consumer's iterator (`for await (const m of consumer)`): starts
 * when next() is called, ends when it returns; `result` is the message (undefined when the
 * iteration ended).
 */
export interface ReceiveTraceContext {
  clientId: string
  groupId: string | undefined
  result?: TracedMessage
  error?: unknown
}

export const tracing = {
  send: diagnostics.tracingChannel<unknown, SendTraceContext>('tidelog:producer:send'),
  process: diagnostics.tracingChannel<unknown, ProcessTraceContext>('tidelog:consumer:process'),
  receive: diagnostics.tracingChannel<unknown, ReceiveTraceContext>('tidelog:consumer:receive'),
} as const

/**
 * Whether anyone listens to a tracing channel. TracingChannel.hasSubscribers is Node >= 20.13
 * only; the start and asyncEnd channels are what every subscriber of ours needs.
 */
export function isTraced(tc: diagnostics.TracingChannel<unknown, object>): boolean {
  return tc.start.hasSubscribers || tc.asyncEnd.hasSubscribers || tc.error.hasSubscribers
}

/**
 * Publishes the events of one traced async call, as TracingChannel.tracePromise does, but
 * lets the start subscriber choose the async context the call runs in (`runInContext`).
 */
export async function traceCall<C extends { runInContext?: <T>(fn: () => T) => T; error?: unknown }, R>(
  tc: diagnostics.TracingChannel<unknown, C>,
  ctx: C,
  fn: () => R | Promise<R>,
  onResult?: (ctx: C, r: R) => void,
): Promise<R> {
  tc.start.publish(ctx)
  let out: R | Promise<R>
  try {
    out = ctx.runInContext === undefined ? fn() : ctx.runInContext(fn)
  } catch (err) {
    ctx.error = err
    tc.error.publish(ctx)
    tc.end.publish(ctx)
    throw err
  }
  tc.end.publish(ctx)
  try {
    const r = await out
    onResult?.(ctx, r)
    return r
  } catch (err) {
    ctx.error = err
    tc.error.publish(ctx)
    throw err
  } finally {
    tc.asyncStart.publish(ctx)
    tc.asyncEnd.publish(ctx)
  }
}
