import { tracing, type SendTraceContext } from '@tidelog/client'
import type { HeaderInput } from '@tidelog/protocol'
import { SendError } from './errors.js'
import type { RecordMetadata } from './record.js'
import type { TypedRecord } from './serdes.js'

function withHeaders(h: HeaderInput | undefined, added: [string, string][]): HeaderInput {
  if (Array.isArray(h)) return [...h, ...added.map(([key, value]) => ({ key, value }))]
  const out: Record<string, unknown> = { ...(h as Record<string, unknown> | undefined) }
  for (const [k, v] of added) out[k] = v
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
  const contexts: SendTraceContext[] = []
  const out = records.map((r) => {
    let added: [string, string][] | undefined
    const ctx: SendTraceContext = {
      clientId,
      topic: r.topic,
      partition: r.partition,
      key: r.key,
      tombstone: r.value === null,
      batchSize: records.length,
      setHeader: (name, value) => void (added ??= []).push([name, value]),
    }
    contexts.push(ctx)
    tc.start.publish(ctx)
    return added === undefined ? r : { ...r, headers: withHeaders(r.headers, added) }
  })
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
