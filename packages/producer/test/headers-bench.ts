// The producer's cost of headers and of tracing (issue 13): records/s and this process's CPU
// time per record against a tidelog broker in a process of its own (apps/broker/dist: needs a
// build), each mode in turn within a round (then in reverse), so load falls on all alike.
// Run: npx tsx packages/producer/test/headers-bench.ts [records] [rounds]; MODES=a,b picks modes.
// BASELINE=<a copy's packages/ directory> adds each mode again as `<mode>@base` on that copy
// of the producer and of @tidelog/opentelemetry (before/after in one run): e.g.
// `git archive HEAD packages/producer/src packages/opentelemetry/src | tar -x -C /somewhere`
// inside the repository (so its imports resolve), BASELINE=/somewhere/packages.
// Modes: none; h1 / h3 (1 or 3 small string headers, the caller's own); h3buf (Buffer
// values); otel-off (@tidelog/opentelemetry with a sampled-out tracer), otel (recording, each
// span exported as it ends into memory) and otel-batch (recording, a BatchSpanProcessor as
// production setups have, into an exporter that drops them).
import { mkdtempSync, rmSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { context, propagation } from '@opentelemetry/api'
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks'
import { W3CTraceContextPropagator } from '@opentelemetry/core'
import { AlwaysOffSampler, BasicTracerProvider, BatchSpanProcessor, InMemorySpanExporter, SimpleSpanProcessor, type SpanExporter } from '@opentelemetry/sdk-trace-base'
import { spawnTidelogBroker } from '../../../apps/bench/src/env/brokers.js'
import { Producer, type ProducerRecord } from '../src/index.js'

type Copy = { Producer: typeof Producer; TidelogInstrumentation: typeof TidelogInstrumentation }
const baseline: Copy | undefined =
  process.env.BASELINE === undefined
    ? undefined
    : {
        Producer: ((await import(join(process.env.BASELINE, 'producer/src/index.ts'))) as Copy).Producer,
        TidelogInstrumentation: ((await import(join(process.env.BASELINE, 'opentelemetry/src/index.ts'))) as Copy).TidelogInstrumentation,
      }
const current: Copy = { Producer, TidelogInstrumentation }
const dropping: SpanExporter = { export: (_spans, done) => done({ code: 0 }), shutdown: async () => {} }
import { TidelogInstrumentation } from '../../opentelemetry/src/index.js'

const N = Number(process.argv[2] ?? 100_000)
const ROUNDS = Number(process.argv[3] ?? 3)
const CHUNK = 816
const WINDOW = 5
context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable())
propagation.setGlobalPropagator(new W3CTraceContextPropagator())
const dataDir = mkdtempSync(join(tmpdir(), 'headers-bench-'))
// The broker in a process of its own, so that only the producer's cost is in this one's profile.
const broker = await spawnTidelogBroker(['--port', '0', '--data-dir', dataDir, '--num-partitions', '6', '--log-level', 'warn'])
const brokers = [`127.0.0.1:${broker.port}`]
// A run that fails must not leave the broker behind.
process.once('exit', () => broker.proc.kill())
const value = Buffer.alloc(100, 'v')

type Headers = ProducerRecord['headers']
const h1: Headers = { 'content-type': 'application/json' }
const h3: Headers = { 'content-type': 'application/json', source: 'web', 'request-id': '4bf92f3577b34da6' }
const h3buf: Headers = { 'content-type': Buffer.from('application/json'), source: Buffer.from('web'), 'request-id': Buffer.from('4bf92f3577b34da6') }

interface Mode {
  headers?: Headers
  instrument?: (I: typeof TidelogInstrumentation) => TidelogInstrumentation
}
const ALL: Record<string, Mode> = {
  none: {},
  h1: { headers: h1 },
  h3: { headers: h3 },
  h3buf: { headers: h3buf },
  'otel-off': { instrument: (I) => new I({ tracerProvider: new BasicTracerProvider({ sampler: new AlwaysOffSampler() }) }) },
  otel: { instrument: (I) => new I({ tracerProvider: new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(new InMemorySpanExporter())] }) }) },
  'otel-batch': { instrument: (I) => new I({ tracerProvider: new BasicTracerProvider({ spanProcessors: [new BatchSpanProcessor(dropping, { maxQueueSize: 100_000, maxExportBatchSize: 1000 })] }) }) },
}
const names = process.env.MODES?.split(',') ?? Object.keys(ALL)
const picked = baseline === undefined ? names : names.flatMap((n) => [n, `${n}@base`])
let seq = 0

/** Records/s, and this process's CPU time per record in µs (steadier than rates on a loaded machine). */
async function run(name: string): Promise<[number, number]> {
  const [modeName, copy] = name.split('@')
  const mode = ALL[modeName!]!
  const impl = copy === 'base' ? baseline! : current
  const P = impl.Producer
  const topic = `h-${++seq}`
  const producer = new P({ brokers, lingerMs: 5, clientId: 'headers-bench' })
  await producer.connect()
  const chunks: ProducerRecord[][] = []
  for (let i = 0; i < N; i += CHUNK) {
    chunks.push(Array.from({ length: Math.min(CHUNK, N - i) }, (_, j) => ({ topic, key: `key-${(i + j) % 10_000}`, value, headers: mode.headers })))
  }
  // Metadata and connections first, untimed.
  await producer.send({ topic, value })
  const inst = mode.instrument?.(impl.TidelogInstrumentation)
  const cpu0 = process.cpuUsage()
  const t0 = performance.now()
  await new Promise<void>((resolve, reject) => {
    let next = 0
    let done = 0
    const launch = () => {
      while (next < chunks.length && next - done < WINDOW) {
        producer.send(chunks[next++]!).then(() => (++done === chunks.length ? resolve() : launch()), reject)
      }
    }
    launch()
  })
  const rate = N / ((performance.now() - t0) / 1000)
  const cpu = process.cpuUsage(cpu0)
  inst?.disable()
  await producer.close()
  return [rate, (cpu.user + cpu.system) / N]
}

const rates: Record<string, number[]> = {}
const cpus: Record<string, number[]> = {}
const load0 = loadavg()[0]!
for (let round = 0; round < ROUNDS; round++) {
  const order = round % 2 === 0 ? picked : [...picked].reverse()
  for (const name of order) {
    const [rate, cpu] = await run(name)
    ;(rates[name] ??= []).push(rate)
    ;(cpus[name] ??= []).push(cpu)
  }
}
const median = (a: number[]) => a.slice().sort((x, y) => x - y)[a.length >> 1]!
const base = median(rates[picked[0]!]!)
const baseCpu = median(cpus[picked[0]!]!)
console.log(`${N} records x ${ROUNDS} rounds, load average ${load0.toFixed(1)} -> ${loadavg()[0]!.toFixed(1)}; medians, ratios to ${picked[0]}`)
for (const name of picked) {
  const m = median(rates[name]!)
  const c = median(cpus[name]!)
  console.log(
    `${name.padEnd(14)} ${Math.round(m).toString().padStart(8)}/s ${(m / base).toFixed(2)}x  cpu ${c.toFixed(2)} µs/record ${(c / baseCpu).toFixed(2)}x  (rates ${rates[name]!.map((r) => Math.round(r / 1000)).join(', ')} k)`,
  )
}
broker.proc.kill()
await new Promise((resolve) => broker.proc.once('exit', resolve))
rmSync(dataDir, { recursive: true, force: true })
