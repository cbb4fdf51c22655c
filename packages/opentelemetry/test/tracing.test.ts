import { SpanKind, SpanStatusCode, context, propagation, trace } from '@opentelemetry/api'
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks'
import { W3CTraceContextPropagator } from '@opentelemetry/core'
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base'
import { Admin, tracing } from '@tidelog/client'
import { Consumer, type Message } from '@tidelog/consumer'
import { Producer, serdes } from '@tidelog/producer'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { startTestBroker } from '../../consumer/test/helpers/broker.js'
import { until } from '../../../test/kafkajs-compat/types.js'
import { Kafka, logLevel } from '../../kafkajs/src/index.js'
import { TidelogInstrumentation } from '../src/index.js'

const exporter = new InMemorySpanExporter()
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] })
const tracer = provider.getTracer('test')
let instrumentation: TidelogInstrumentation
const contextManager = new AsyncLocalStorageContextManager()

beforeAll(() => {
  context.setGlobalContextManager(contextManager.enable())
  propagation.setGlobalPropagator(new W3CTraceContextPropagator())
  instrumentation = new TidelogInstrumentation({ tracerProvider: provider })
})
afterAll(() => {
  instrumentation.disable()
  context.disable()
  propagation.disable()
})
beforeEach(() => exporter.reset())

const spans = (name: string): ReadableSpan[] => exporter.getFinishedSpans().filter((s) => s.name === name)
const parentOf = (s: ReadableSpan): string | undefined => s.parentSpanContext?.spanId
const header = (m: Message<unknown, unknown>, key: string): string | undefined => m.headers.find((h) => h.key === key)?.value?.toString('utf8')

async function setup(topics: { name: string; partitions?: number; configs?: Record<string, string> }[]) {
  const { brokers } = await startTestBroker(1)
  const admin = new Admin({ brokers })
  await admin.createTopics(topics)
  await admin.close()
  return brokers
}

describe('@tidelog/opentelemetry over a real socket', () => {
  it('a send span in the caller span, W3C context in headers, a process span its child, and sends in the handler children of that', async () => {
    const brokers = await setup([{ name: 'orders', partitions: 3 }, { name: 'audit' }])
    const producer = new Producer({ brokers, clientId: 'shop', lingerMs: 0 })
    const consumer = new Consumer<string, string>({ brokers, clientId: 'billing-1', groupId: 'billing', autoOffsetReset: 'earliest', keyDeserializer: serdes.string, valueDeserializer: serdes.string })
    try {
      const caller = tracer.startSpan('http request')
      const meta = await context.with(trace.setSpan(context.active(), caller), () => producer.send({ topic: 'orders', key: 'user-1', value: 'order 1', headers: { source: 'web' } }))
      caller.end()
      const [send] = spans('send orders')
      expect(send).toBeDefined()
      expect(send!.kind).toBe(SpanKind.PRODUCER)
      expect(parentOf(send!)).toBe(caller.spanContext().spanId)
      expect(send!.spanContext().traceId).toBe(caller.spanContext().traceId)
      expect(send!.attributes).toMatchObject({
        'messaging.system': 'kafka',
        'messaging.operation.type': 'send',
        'messaging.operation.name': 'send',
        'messaging.destination.name': 'orders',
        'messaging.destination.partition.id': String(meta.partition),
        'messaging.kafka.message.key': 'user-1',
        'messaging.kafka.offset': Number(meta.offset),
        'messaging.client.id': 'shop',
      })
      expect(send!.status.code).not.toBe(SpanStatusCode.ERROR)

      let seen: Message<string, string> | undefined
      await consumer.subscribe(['orders'])
      const running = consumer.run({
        eachMessage: async ({ message }) => {
          seen = message
          await producer.send({ topic: 'audit', value: `billed ${message.value}` })
        },
      })
      await until(() => spans('process orders').length === 1 && spans('send audit').length === 1, 'the process span and the send span inside it')
      await consumer.stop()
      await running
      // The caller's headers are kept; the send span's context is added.
      expect(header(seen!, 'source')).toBe('web')
      expect(header(seen!, 'traceparent')).toBe(`00-${send!.spanContext().traceId}-${send!.spanContext().spanId}-01`)
      const [processSpan] = spans('process orders')
      expect(processSpan!.kind).toBe(SpanKind.CONSUMER)
      expect(parentOf(processSpan!)).toBe(send!.spanContext().spanId)
      expect(processSpan!.spanContext().traceId).toBe(caller.spanContext().traceId)
      expect(processSpan!.attributes).toMatchObject({
        'messaging.system': 'kafka',
        'messaging.operation.type': 'process',
        'messaging.destination.name': 'orders',
        'messaging.destination.partition.id': String(meta.partition),
        'messaging.kafka.offset': Number(meta.offset),
        'messaging.kafka.message.key': 'user-1',
        'messaging.consumer.group.name': 'billing',
        'messaging.client.id': 'billing-1',
      })
      const [audit] = spans('send audit')
      expect(parentOf(audit!)).toBe(processSpan!.spanContext().spanId)
      expect(audit!.attributes['messaging.kafka.message.key']).toBeUndefined()
    } finally {
      await consumer.close()
      await producer.close()
    }
  })

  it('a failed send ends its span with ERROR and error.type (the broker refuses a record over max.message.bytes)', async () => {
    const brokers = await setup([{ name: 'small', partitions: 1, configs: { 'max.message.bytes': '1000' } }])
    const producer = new Producer({ brokers, lingerMs: 0 })
    try {
      const err = await producer.send({ topic: 'small', key: 'k', value: 'x'.repeat(5000) }).catch((e: unknown) => e)
      expect(err).toBeInstanceOf(Error)
      const [send] = spans('send small')
      expect(send!.status.code).toBe(SpanStatusCode.ERROR)
      expect(send!.attributes['error.type']).toBe('MESSAGE_TOO_LARGE')
      expect(send!.events.some((e) => e.name === 'exception')).toBe(true)
      expect(send!.attributes['messaging.kafka.offset']).toBeUndefined()
    } finally {
      await producer.close()
    }
  })

  it('eachBatch: one process span per batch, linked to each record\'s send span; a failing handler is an error span', async () => {
    const brokers = await setup([{ name: 'batched', partitions: 1 }])
    const producer = new Producer({ brokers, lingerMs: 0 })
    const consumer = new Consumer({ brokers, groupId: 'batcher', autoOffsetReset: 'earliest' })
    try {
      await producer.send([
        { topic: 'batched', key: 'a', value: '1' },
        { topic: 'batched', key: 'b', value: null },
      ])
      const sent = spans('send batched')
      expect(sent).toHaveLength(2)
      expect(sent.map((s) => s.attributes['messaging.batch.message_count'])).toEqual([2, 2])
      expect(sent.find((s) => s.attributes['messaging.kafka.message.key'] === 'b')!.attributes['messaging.kafka.message.tombstone']).toBe(true)
      let calls = 0
      await consumer.subscribe(['batched'])
      const running = consumer.run({
        retry: { retries: 0 },
        onHandlerError: 'skip',
        eachBatch: async ({ batch }) => {
          if (batch.messages.length < 2) return
          if (++calls === 1) throw new TypeError('first attempt fails')
        },
      })
      await until(() => spans('process batched').filter((s) => s.attributes['messaging.batch.message_count'] === 2).length >= 1, 'a batch process span')
      await consumer.stop()
      await running
      const [failed] = spans('process batched').filter((s) => s.attributes['messaging.batch.message_count'] === 2)
      expect(failed!.kind).toBe(SpanKind.CONSUMER)
      expect(failed!.status.code).toBe(SpanStatusCode.ERROR)
      expect(failed!.attributes['error.type']).toBe('TypeError')
      expect(failed!.attributes['messaging.consumer.group.name']).toBe('batcher')
      expect(failed!.links.map((l) => l.context.spanId).sort()).toEqual(sent.map((s) => s.spanContext().spanId).sort())
    } finally {
      await consumer.close()
      await producer.close()
    }
  })

  it('the iterator: a receive span (CLIENT) per message, linked to its send span', async () => {
    const brokers = await setup([{ name: 'pulled', partitions: 1 }])
    const producer = new Producer({ brokers, lingerMs: 0 })
    const consumer = new Consumer({ brokers, groupId: 'puller', autoOffsetReset: 'earliest' })
    try {
      const meta = await producer.send({ topic: 'pulled', key: 'k1', value: 'v1' })
      const [send] = spans('send pulled')
      await consumer.subscribe(['pulled'])
      for await (const m of consumer) {
        expect(m.offset).toBe(meta.offset)
        break
      }
      const [receive] = spans('receive pulled')
      expect(receive!.kind).toBe(SpanKind.CLIENT)
      expect(receive!.attributes).toMatchObject({
        'messaging.operation.type': 'receive',
        'messaging.destination.name': 'pulled',
        'messaging.destination.partition.id': '0',
        'messaging.kafka.offset': Number(meta.offset),
        'messaging.kafka.message.key': 'k1',
        'messaging.consumer.group.name': 'puller',
      })
      expect(receive!.links.map((l) => l.context.spanId)).toEqual([send!.spanContext().spanId])
    } finally {
      await consumer.close()
      await producer.close()
    }
  })

  // The facade runs kafkajs' eachMessage inside one native eachBatch call: a batch process span
  // linked to each record's send span, and in it one process span per message, the send span's child.
  it('the kafkajs API (@tidelog/kafkajs): send spans, a process span per message (child of its send), inside a batch span', async () => {
    const brokers = await setup([{ name: 'kjs', partitions: 1 }])
    const kafka = new Kafka({ clientId: 'kjs-app', brokers, logLevel: logLevel.NOTHING })
    const producer = kafka.producer()
    const consumer = kafka.consumer({ groupId: 'kjs-group' })
    try {
      await producer.connect()
      await producer.send({ topic: 'kjs', messages: [{ key: 'k', value: 'v' }] })
      const [send] = spans('send kjs')
      expect(send!.kind).toBe(SpanKind.PRODUCER)
      expect(send!.attributes).toMatchObject({ 'messaging.client.id': 'kjs-app', 'messaging.kafka.message.key': 'k', 'messaging.kafka.offset': 0 })
      await consumer.connect()
      await consumer.subscribe({ topic: 'kjs', fromBeginning: true })
      await consumer.run({ eachMessage: async () => undefined })
      await until(() => spans('process kjs').length === 2, 'the process spans')
      const batchSpan = spans('process kjs').find((s) => s.attributes['messaging.batch.message_count'] !== undefined)!
      const messageSpan = spans('process kjs').find((s) => s !== batchSpan)!
      expect(batchSpan.links.map((l) => l.context.spanId)).toEqual([send!.spanContext().spanId])
      expect(messageSpan.kind).toBe(SpanKind.CONSUMER)
      expect(parentOf(messageSpan)).toBe(send!.spanContext().spanId)
      expect(messageSpan.attributes).toMatchObject({ 'messaging.consumer.group.name': 'kjs-group', 'messaging.client.id': 'kjs-app', 'messaging.kafka.offset': 0, 'messaging.kafka.message.key': 'k' })
    } finally {
      await consumer.disconnect()
      await producer.disconnect()
    }
  })

  it('disabled: no spans, no subscribers, no headers added', async () => {
    const brokers = await setup([{ name: 'quiet', partitions: 1 }])
    instrumentation.disable()
    const producer = new Producer({ brokers, lingerMs: 0 })
    const consumer = new Consumer({ brokers, autoOffsetReset: 'earliest' })
    try {
      expect(tracing.send.start.hasSubscribers).toBe(false)
      await producer.send({ topic: 'quiet', value: 'v' })
      consumer.assign([{ topic: 'quiet', partition: 0 }])
      for await (const m of consumer) {
        expect(m.headers).toEqual([])
        break
      }
      expect(exporter.getFinishedSpans()).toEqual([])
    } finally {
      instrumentation.enable()
      await consumer.close()
      await producer.close()
    }
  })
})
