import {
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  context,
  propagation,
  trace,
  type Context,
  type Link,
  type Span,
  type TextMapGetter,
  type TextMapSetter,
  type TextMapPropagator,
  type Tracer,
  type TracerProvider,
} from '@opentelemetry/api'
import { tracing, type ProcessTraceContext, type ReceiveTraceContext, type SendTraceContext, type TraceHeader, type TracedMessage } from '@tidelog/client'
import { ATTR, base, errorType, keyString, messageAttributes } from './attributes.js'

export const VERSION = '0.1.0'
const NAME = '@tidelog/opentelemetry'

export interface TidelogInstrumentationConfig {
  /** Default: the global tracer provider (trace.getTracerProvider()). */
  tracerProvider?: TracerProvider
  /** Writes and reads trace context in record headers. Default: the global propagator (W3C trace context with the Node SDK). */
  propagator?: TextMapPropagator
  /** Default true: subscribe at construction, as OpenTelemetry instrumentations do. */
  enabled?: boolean
}

const headerGetter: TextMapGetter<readonly TraceHeader[]> = {
  keys: (carrier) => carrier.map((h) => h.key),
  get: (carrier, key) => {
    // The last header of a name wins: a record re-sent with a new traceparent appended.
    for (let i = carrier.length - 1; i >= 0; i--) {
      const h = carrier[i]!
      if (h.key === key) return h.value === null ? undefined : Buffer.from(h.value.buffer, h.value.byteOffset, h.value.byteLength).toString('utf8')
    }
    return undefined
  },
}

// One setter for every record (not a closure per record sent).
const headerSetter: TextMapSetter<SendTraceContext> = { set: (carrier, key, value) => carrier.setHeader(key, value) }

type Handler = (message: unknown, name: string | symbol) => void
type Receiving = { parent: Context; startTime: number }
interface Subscribers {
  start?: Handler
  end?: Handler
  asyncStart?: Handler
  asyncEnd?: Handler
  error?: Handler
}

function fail(span: Span, err: unknown): void {
  span.setAttribute(ATTR.errorType, errorType(err))
  if (err instanceof Error) span.recordException(err)
  span.setStatus({ code: SpanStatusCode.ERROR, message: err instanceof Error ? err.message : String(err) })
}

/**
 * Maps the tidelog producer's and consumer's TracingChannel events (node:diagnostics_channel)
 * to OpenTelemetry spans after the messaging semantic conventions: `send <topic>` (PRODUCER)
 * per record sent, `process <topic>` (CONSUMER) per eachMessage / eachBatch call, `receive
 * <topic>` (CLIENT) per message taken from the consumer's iterator. The send span's context is
 * written to the record's headers (traceparent / tracestate); a process span of one message is
 * its child, batch process and receive spans link to it.
 *
 * Shaped as an OpenTelemetry Instrumentation (enable, disable, setTracerProvider, ...), so it
 * can go into the Node SDK's `instrumentations` list; no module patching is needed.
 */
export class TidelogInstrumentation {
  readonly instrumentationName = NAME
  readonly instrumentationVersion = VERSION
  private config: TidelogInstrumentationConfig
  private tracer: Tracer
  private subscribed: [typeof tracing.send | typeof tracing.process | typeof tracing.receive, Subscribers][] | undefined
  // The span of an event's context object is kept on the object under this instance's own
  // symbols: a WeakMap entry per record sent cost more than the rest of this code per record.
  private readonly spanKey: symbol = Symbol('span')
  private readonly receivingKey: symbol = Symbol('receiving')

  constructor(config: TidelogInstrumentationConfig = {}) {
    this.config = { ...config }
    this.tracer = (config.tracerProvider ?? trace.getTracerProvider()).getTracer(NAME, VERSION)
    if (config.enabled !== false) this.enable()
  }

  setTracerProvider(provider: TracerProvider): void {
    this.tracer = provider.getTracer(NAME, VERSION)
  }

  setMeterProvider(): void {
    // No metrics of ours: the broker and @tidelog/client expose them.
  }

  setLoggerProvider(): void {}

  getConfig(): TidelogInstrumentationConfig {
    return this.config
  }

  setConfig(config: TidelogInstrumentationConfig): void {
    this.config = { ...config }
    if (config.tracerProvider !== undefined) this.setTracerProvider(config.tracerProvider)
  }

  enable(): void {
    if (this.subscribed !== undefined) return
    this.subscribed = [
      [tracing.send, this.sendSubscribers()],
      [tracing.process, this.processSubscribers()],
      [tracing.receive, this.receiveSubscribers()],
    ]
    for (const [tc, subs] of this.subscribed) (tc as { subscribe(s: Subscribers): void }).subscribe(subs)
  }

  disable(): void {
    const subs = this.subscribed
    this.subscribed = undefined
    for (const [tc, s] of subs ?? []) (tc as { unsubscribe(s: Subscribers): void }).unsubscribe(s)
  }

  private get propagator(): Pick<TextMapPropagator, 'inject' | 'extract'> {
    return this.config.propagator ?? propagation
  }

  private producerContext(m: TracedMessage): Context {
    return this.propagator.extract(ROOT_CONTEXT, m.headers, headerGetter)
  }

  private links(messages: readonly TracedMessage[]): Link[] {
    const out: Link[] = []
    for (const m of messages) {
      const sc = trace.getSpanContext(this.producerContext(m))
      if (sc !== undefined && trace.isSpanContextValid(sc)) out.push({ context: sc })
    }
    return out
  }

  private finish(ctx: object, last?: (span: Span) => void): void {
    const c = ctx as Record<symbol, Span | undefined>
    const span = c[this.spanKey]
    if (span === undefined) return
    c[this.spanKey] = undefined
    last?.(span)
    span.end()
  }

  private onError: Handler = (message) => {
    const ctx = message as { error?: unknown }
    const span = (ctx as Record<symbol, Span | undefined>)[this.spanKey]
    if (span !== undefined) fail(span, ctx.error)
  }

  private sendSubscribers(): Subscribers {
    return {
      start: (message) => {
        const ctx = message as SendTraceContext
        const attributes = base('send', ctx.clientId, ctx.topic)
        if (ctx.partition !== undefined) attributes[ATTR.partition] = String(ctx.partition)
        const k = keyString(ctx.key)
        if (k !== undefined) attributes[ATTR.key] = k
        if (ctx.tombstone) attributes[ATTR.tombstone] = true
        if (ctx.batchSize > 1) attributes[ATTR.batchCount] = ctx.batchSize
        const parent = context.active()
        const span = this.tracer.startSpan(`send ${ctx.topic}`, { kind: SpanKind.PRODUCER, attributes }, parent)
        ;(ctx as unknown as Record<symbol, Span>)[this.spanKey] = span
        this.propagator.inject(trace.setSpan(parent, span), ctx, headerSetter)
      },
      error: this.onError,
      asyncEnd: (message) => {
        const ctx = message as SendTraceContext
        this.finish(ctx, (span) => {
          const r = ctx.result
          if (r === undefined) return
          span.setAttribute(ATTR.partition, String(r.partition))
          // acks=0 leaves the offset unknown (-1).
          if (r.offset >= 0n) span.setAttribute(ATTR.offset, Number(r.offset))
        })
      },
    }
  }

  private processSubscribers(): Subscribers {
    return {
      start: (message) => {
        const ctx = message as ProcessTraceContext
        const attributes = base('process', ctx.clientId, ctx.topic)
        if (ctx.groupId !== undefined) attributes[ATTR.group] = ctx.groupId
        let parent: Context
        let links: Link[] | undefined
        if (ctx.batch) {
          attributes[ATTR.partition] = String(ctx.partition)
          attributes[ATTR.batchCount] = ctx.messages.length
          parent = context.active()
          links = this.links(ctx.messages)
        } else {
          const m = ctx.messages[0]!
          messageAttributes(attributes, m)
          // One message: the producer's send span is the parent, as @opentelemetry/instrumentation-kafkajs does.
          const produced = this.producerContext(m)
          parent = trace.getSpanContext(produced) !== undefined ? produced : context.active()
        }
        const span = this.tracer.startSpan(`process ${ctx.topic}`, { kind: SpanKind.CONSUMER, attributes, links }, parent)
        ;(ctx as unknown as Record<symbol, Span>)[this.spanKey] = span
        const active = trace.setSpan(parent, span)
        ctx.runInContext = (fn) => context.with(active, fn)
      },
      error: this.onError,
      asyncEnd: (message) => this.finish(message as object),
    }
  }

  private receiveSubscribers(): Subscribers {
    return {
      // The topic is known only when next() returns: the span is made then, dated from here.
      start: (message) => {
        ;(message as Record<symbol, Receiving>)[this.receivingKey] = { parent: context.active(), startTime: performance.timeOrigin + performance.now() }
      },
      asyncEnd: (message) => {
        const ctx = message as ReceiveTraceContext
        const c = ctx as unknown as Record<symbol, Receiving | undefined>
        const at = c[this.receivingKey]
        c[this.receivingKey] = undefined
        if (at === undefined || (ctx.result === undefined && ctx.error === undefined)) return
        const m = ctx.result
        const attributes = base('receive', ctx.clientId, m?.topic)
        if (ctx.groupId !== undefined) attributes[ATTR.group] = ctx.groupId
        if (m !== undefined) messageAttributes(attributes, m)
        const span = this.tracer.startSpan(
          m === undefined ? 'receive' : `receive ${m.topic}`,
          { kind: SpanKind.CLIENT, attributes, startTime: at.startTime, links: m === undefined ? undefined : this.links([m]) },
          at.parent,
        )
        if (ctx.error !== undefined) fail(span, ctx.error)
        span.end()
      },
    }
  }
}
