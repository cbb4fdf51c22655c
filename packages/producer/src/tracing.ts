import { tracing, type SendTraceContext } from '@tidelog/client'
import type { HeaderInput } from '@tidelog/protocol'
import { SendError } from './errors.js'
import type { RecordMetadata } from './record.js'
import type { TypedRecord } from './serdes.js'

// A class, not an object literal with a closure: one allocation per traced record.
class SendContext implements SendTraceContext {
  // In the records' own array-of-headers form, so a record without headers takes this array as
  // its headers, uncopied (the usual case: only traceparent, tracestate added).
  added: { key: string; value: string }[] | undefined
  result?: SendTraceContext['result']
  error?: unknown
  constructor(
    readonly clientId: string,
    readonly topic: string,
    readonly partition: number | undefined,
    readonly key: unknown,
    readonly tombstone: boolean,
    readonly batchSize: number,
  ) {}

  setHeader(name: string, value: string): void {
    ;(this.added ??= []).push({ key: name, value })
  }
}

function withHeaders(h: HeaderInput | undefined, added: { key: string; value: string }[]): HeaderInput {
  if (h === undefined || h === null) return added
  if (Array.isArray(h)) return h.concat(added)
  const out: Record<string, unknown> = { ...(h as Record<string, unknown> | undefined) }
  for (const { key, value } of added) out[key] = value
  return out as HeaderInput
}

/**
 * send() with the `tidelog:producer:send` tracing events, one context per record (called only
 * while someone subscribes). Headers a subscriber sets go into a copy of the record.
 */
export function tracedSend<K, V>(
  clientId: string,
  input: TypedRecord<K, V> | readonly TypedRecord<K, V>[],
  send: (input: TypedRecord<K, V> | readonly TypedRecord<K, V>[]) => Promise<RecordMetadata | RecordMetadata[]>,
): Promise<RecordMetadata | RecordMetadata[]> {
  const tc = tracing.send
  const single = !Array.isArray(input)
  const records = single ? [input as TypedRecord<K, V>] : (input as readonly TypedRecord<K, V>[])
  // Not records: send() rejects them with its own typed error, untraced.
  if (records.some((r) => r === null || typeof r !== 'object')) return send(input)
  const contexts: SendContext[] = new Array(records.length)
  const out = new Array<TypedRecord<K, V>>(records.length)
  for (let i = 0; i < records.length; i++) {
    const r = records[i]!
    const ctx = new SendContext(clientId, r.topic, r.partition, r.key, r.value === null, records.length)
    contexts[i] = ctx
    tc.start.publish(ctx)
    // Spelled out rather than spread: one object shape for every traced record, which keeps the
    // producer's per-record paths (size, checks, encoding) as fast as for the caller's literals.
    out[i] = ctx.added === undefined ? r : { topic: r.topic, key: r.key, value: r.value, headers: withHeaders(r.headers, ctx.added), partition: r.partition, timestamp: r.timestamp }
  }
  let p: Promise<RecordMetadata | RecordMetadata[]>
  try {
    p = send(single ? out[0]! : out)
  } finally {
    for (const ctx of contexts) tc.end.publish(ctx)
  }
  const settle = (i: number, result: RecordMetadata | undefined, error: unknown): void => {
    const ctx = contexts[i]!
    if (error !== undefined) {
      ctx.error = error
      tc.error.publish(ctx)
    } else ctx.result = result
    tc.asyncStart.publish(ctx)
    tc.asyncEnd.publish(ctx)
  }
  return p.then(
    (meta) => {
      const list = single ? [meta as RecordMetadata] : (meta as RecordMetadata[])
      for (let i = 0; i < contexts.length; i++) settle(i, list[i], undefined)
      return meta
    },
    (err: unknown) => {
      for (let i = 0; i < contexts.length; i++) {
        if (err instanceof SendError && err.errors.length === contexts.length) settle(i, err.results[i], err.errors[i])
        else settle(i, undefined, err)
      }
      throw err
    },
  )
}
