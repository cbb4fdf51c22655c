import { isTraced, traceCall, tracing, type ProcessTraceContext, type ReceiveTraceContext } from '@tidelog/client'
import type { Message } from './types.js'

/**
 * Runs one run() handler call with the `tidelog:consumer:process` tracing events (eachMessage:
 * one message; eachBatch: the batch's). Without subscribers it is `fn()`.
 */
export function traceProcess<R>(
  clientId: string,
  groupId: string | undefined,
  topic: string,
  partition: number,
  messages: readonly Message<unknown, unknown>[],
  batch: boolean,
  fn: () => R,
): R | Promise<Awaited<R>> {
  if (!isTraced(tracing.process)) return fn()
  const ctx: ProcessTraceContext = { clientId, groupId, topic, partition, messages, batch }
  return traceCall(tracing.process, ctx, fn as () => Awaited<R>)
}

/**
 * The message iterator with the `tidelog:consumer:receive` tracing events, one per next() that
 * yields a message. Without subscribers next() is the inner iterator's, with no added promise.
 */
export class ReceiveTracingIterator<T extends Message<unknown, unknown>> implements AsyncIterableIterator<T> {
  constructor(
    private readonly inner: AsyncIterableIterator<T>,
    private readonly clientId: string,
    private readonly groupId: string | undefined,
  ) {}

  next(): Promise<IteratorResult<T>> {
    if (!isTraced(tracing.receive)) return this.inner.next()
    const ctx: ReceiveTraceContext = { clientId: this.clientId, groupId: this.groupId }
    return traceCall(tracing.receive, ctx, () => this.inner.next(), (c, r) => {
      if (r.done !== true) c.result = r.value
    })
  }

  return(value?: unknown): Promise<IteratorResult<T>> {
    return this.inner.return?.(value) ?? Promise.resolve({ done: true, value: undefined })
  }

  [Symbol.asyncIterator](): this {
    return this
  }
}
