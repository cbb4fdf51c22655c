// Cost of the tracing events: records/s through an in-process broker with no subscriber, with
// TidelogInstrumentation on a non-recording tracer (the sampled-out case), and recording into
// an InMemorySpanExporter. Run: npx tsx packages/opentelemetry/test/overhead.ts (needs a build).
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { context, propagation } from '@opentelemetry/api'
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks'
import { W3CTraceContextPropagator } from '@opentelemetry/core'
import { AlwaysOffSampler, BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base'
import { startBroker } from '@tidelog/broker'
import { Consumer } from '@tidelog/consumer'
import { Producer } from '@tidelog/producer'
import { TidelogInstrumentation } from '../src/index.js'

const N = Number(process.env.N ?? 60_000)
context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable())
propagation.setGlobalPropagator(new W3CTraceContextPropagator())
const dataDir = mkdtempSync(join(tmpdir(), 'otel-overhead-'))
const broker = await startBroker({ port: 0, dataDir, numPartitions: 1 })
const brokers = [`127.0.0.1:${broker.port}`]
const value = 'x'.repeat(100)

async function run(topic: string): Promise<{ produce: number; consume: number }> {
  const producer = new Producer({ brokers, lingerMs: 5 })
  let t = performance.now()
  const pending: Promise<unknown>[] = []
  for (let i = 0; i < N; i += 500) pending.push(producer.send(Array.from({ length: 500 }, (_, j) => ({ topic, key: `k${i + j}`, value }))))
  await Promise.all(pending)
  const produce = N / ((performance.now() - t) / 1000)
  await producer.close()
  const consumer = new Consumer({ brokers, autoOffsetReset: 'earliest' })
  consumer.assign([{ topic, partition: 0 }])
  let n = 0
  t = performance.now()
  await new Promise<void>((resolve) => {
    void consumer.run({ eachMessage: async () => void (++n === N && resolve()) })
  })
  const consume = N / ((performance.now() - t) / 1000)
  await consumer.close()
  return { produce, consume }
}

const modes = {
  none: () => undefined,
  'sampled out': () => new TidelogInstrumentation({ tracerProvider: new BasicTracerProvider({ sampler: new AlwaysOffSampler() }) }),
  recording: () => new TidelogInstrumentation({ tracerProvider: new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(new InMemorySpanExporter())] }) }),
}
const results: Record<string, { produce: number[]; consume: number[] }> = {}
for (let round = 0; round < 3; round++) {
  for (const [name, make] of Object.entries(modes)) {
    const inst = make()
    const r = await run(`t-${name.replace(' ', '-')}-${round}`)
    inst?.disable()
    ;(results[name] ??= { produce: [], consume: [] }).produce.push(r.produce)
    results[name]!.consume.push(r.consume)
  }
}
const median = (a: number[]) => a.slice().sort((x, y) => x - y)[a.length >> 1]!
for (const [name, r] of Object.entries(results)) console.log(`${name.padEnd(12)} produce ${Math.round(median(r.produce))}/s  consume (eachMessage) ${Math.round(median(r.consume))}/s`)
await broker.close()
rmSync(dataDir, { recursive: true, force: true })
