// Broker scale under load (issue 17), tidelog broker against Apache Kafka, part two:
//   B2 1,000 idle connections (each past its ApiVersions answer) plus a producer at full speed:
//      the producer's rate and the broker's RSS, against the same producer without them;
//   B5 end-to-end latency at a fixed rate (10,000 and 100,000 records/s, acks=all, tidelog
//      client): p50 / p99 / p99.9 and, on the tidelog broker, its event-loop delay during the run
//      (its /metrics, nodejs_eventloop_lag_*; Kafka's JVM has no event loop);
//   B6 broker RSS under a consumer that pipelines fetches and never reads them.
import { mkdtempSync, rmSync } from 'node:fs'
import { connect, type Socket } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { freePort } from '../../../../test/helpers/kafka.js'
import { ApiKeys, encodeRequestFrame } from '@tidelog/protocol'
import { KEY_BYTES, VALUE_BYTES, type LatencyResult, type ProduceResult, type ProducerSettings } from '../clients/jobs.js'
import { runChild } from '../clients/run-child.js'
import { API_VERSIONS_REQUEST } from '../env/api-versions.js'
import { createTopic, deleteTopic, spawnTidelogBroker, stopProcess, type BrokerHandle } from '../env/brokers.js'
import { rssMiB, sampleRss } from '../env/proc.js'
import { interleave, type Metrics } from '../matrix.js'
import { entryOf, makeRow } from '../rows.js'
import type { RunContext, ScenarioResult } from '../types.js'
import { BASE, CHUNK, WINDOW, matrix, rowsOf, topicName } from './clients.js'

// --- B2 idle connections --------------------------------------------------------------------

/** Opens `n` connections, each answered once (ApiVersions), and keeps them open and idle. */
async function openIdle(port: number, n: number): Promise<Socket[]> {
  const sockets: Socket[] = []
  const one = () =>
    new Promise<Socket>((resolve, reject) => {
      const s = connect(port, '127.0.0.1')
      const timer = setTimeout(() => {
        s.destroy()
        reject(new Error(`idle connection ${sockets.length + 1}: no ApiVersions answer in 60 s`))
      }, 60_000)
      s.once('error', (e) => {
        clearTimeout(timer)
        reject(e)
      })
      s.once('connect', () => s.write(API_VERSIONS_REQUEST))
      s.once('data', () => {
        clearTimeout(timer)
        resolve(s)
      })
    })
  try {
    // 50 at a time: a burst of 1,000 SYNs overflows the listen backlog on some machines.
    for (let i = 0; i < n; i += 50) sockets.push(...(await Promise.all(Array.from({ length: Math.min(50, n - i) }, one))))
  } catch (e) {
    for (const s of sockets) s.destroy()
    throw e
  }
  return sockets
}

async function produceOnce(b: BrokerHandle, records: number, warmup: number): Promise<ProduceResult> {
  const topic = topicName('b2')
  await createTopic(b, topic)
  try {
    return await runChild<ProduceResult>({ kind: 'produce', client: 'tidelog', bootstrap: b.bootstrap, topic, records, warmupRecords: warmup, chunk: CHUNK, window: WINDOW, settings: BASE }, 600_000)
  } finally {
    await deleteTopic(b, topic)
  }
}

async function b2(ctx: RunContext): Promise<ScenarioResult[]> {
  const idle = ctx.quick ? 200 : 1_000
  const records = ctx.quick ? 20_000 : 300_000
  const warmup = Math.min(records / 5, 50_000)
  ctx.log(`B2: ${idle.toLocaleString('en')} idle connections plus a producer`)
  const m = await matrix(ctx, 'B2', ['tidelog'], async (b): Promise<Metrics> => {
    const alone = await produceOnce(b, records, warmup)
    const before = rssMiB(b.pid)
    const sockets = await openIdle(b.port, idle)
    try {
      const withIdle = rssMiB(b.pid)
      const sampler = sampleRss(b.pid, 50)
      const loaded = await produceOnce(b, records, warmup)
      const peak = sampler.stop()
      if (sockets.some((s) => s.destroyed)) throw new Error('the broker closed an idle connection during the run')
      return {
        alone: alone.records / (alone.ms / 1000),
        withIdle: loaded.records / (loaded.ms / 1000),
        rssPerConnectionKiB: ((withIdle - before) * 1024) / idle,
        peakRss: peak,
      }
    } finally {
      for (const s of sockets) s.destroy()
    }
  })
  const notes = [
    `each idle connection got one ApiVersions answer, then stays open without a request; the producer: tidelog client, ${records.toLocaleString('en')} records, acks=1, linger 5 ms, batch 16384 B`,
    'RSS per connection: the broker\'s RSS with the connections open minus before, divided by their number',
  ]
  const row = (metric: string, title: string, unit: string, higherIsBetter: boolean) =>
    rowsOf(m, { id: `B2.${metric}`, title, unit, higherIsBetter }, metric, ['tidelog'], ['tidelog'], notes).filter((r) => r.id.includes('.brokers('))
  return [
    ...row('alone', 'producer rate, no idle connections (the baseline)', 'records/s', true),
    ...row('withIdle', `producer rate with ${idle.toLocaleString('en')} idle connections open`, 'records/s', true),
    ...row('peakRss', `broker RSS, peak with ${idle.toLocaleString('en')} idle connections and the producer`, 'MiB', false),
    ...row('rssPerConnectionKiB', 'broker RSS per idle connection', 'KiB', false),
  ]
}

// --- B5 latency at a fixed rate, the broker's event-loop delay -------------------------------

const B5_SETTINGS: ProducerSettings = { ...BASE, acks: -1, lingerMs: 0 }

/** The largest value of a gauge over the scrapes of a tidelog broker's /metrics. */
function scrapeLoop(consolePort: number, everyMs = 1000): { stop(): Promise<{ p99: number; max: number }> } {
  let p99 = 0
  let max = 0
  let stopped = false
  const read = (text: string, name: string) => Number(new RegExp(`^${name} ([\\d.e+-]+)$`, 'm').exec(text)?.[1] ?? NaN)
  const loop = (async () => {
    while (!stopped) {
      try {
        const text = await (await fetch(`http://127.0.0.1:${consolePort}/metrics`)).text()
        p99 = Math.max(p99, read(text, 'nodejs_eventloop_lag_p99_seconds') * 1000 || 0)
        max = Math.max(max, read(text, 'nodejs_eventloop_lag_max_seconds') * 1000 || 0)
      } catch {
        // a scrape that fails is skipped; the next one reads the next interval
      }
      await new Promise((r) => setTimeout(r, everyMs))
    }
  })()
  return {
    async stop() {
      stopped = true
      await loop
      return { p99, max }
    },
  }
}

async function b5(ctx: RunContext): Promise<ScenarioResult[]> {
  const rates = [10_000, 100_000]
  const seconds = ctx.quick ? 2 : 10
  const warmupSeconds = ctx.quick ? 0.5 : 2
  const rows: ScenarioResult[] = []
  // A broker of its own with the console on, for /metrics (counting costs it a little; broker.ts).
  const dir = mkdtempSync(join(tmpdir(), 'tidelog-bench-b5-'))
  const consolePort = await freePort()
  const own = await spawnTidelogBroker(['--port', '0', '--data-dir', dir, '--num-partitions', '6', '--log-level', 'warn', '--console-port', String(consolePort)], 60_000)
  const kafka = ctx.brokerKinds === undefined || ctx.brokerKinds.has('kafka') ? await ctx.brokers.tryGet('kafka') : 'not asked for (--brokers)'
  try {
    for (const rate of rates) {
      const id = `B5.${rate / 1000}k`
      ctx.log(`${id}: latency at ${rate.toLocaleString('en')} records/s, acks=all`)
      const run = async (bootstrap: string, b: { pid: number } | undefined): Promise<Metrics> => {
        const topic = topicName('b5')
        const handle = { bootstrap } as BrokerHandle
        await createTopic(handle, topic)
        try {
          const scrape = b === undefined ? undefined : scrapeLoop(consolePort)
          const r = await runChild<LatencyResult>(
            { kind: 'latency', client: 'tidelog', bootstrap, topic, rate, seconds, warmupSeconds, groupId: `bench-${topic}`, settings: B5_SETTINGS },
            300_000,
          )
          const loop = await scrape?.stop()
          if (r.lost > 0) throw new Error(`${r.lost} records never arrived`)
          return { p50: r.p50, p99: r.p99, p999: r.p999, ...(loop === undefined ? {} : { loopP99: loop.p99, loopMax: loop.max }) }
        } finally {
          await deleteTopic(handle, topic)
        }
      }
      const trials = [{ name: 'tidelog-broker', run: () => run(`127.0.0.1:${own.port}`, { pid: own.proc.pid! }) }]
      if (typeof kafka !== 'string') trials.push({ name: 'kafka', run: () => run(kafka.bootstrap, undefined) })
      const o = await interleave(trials, {
        rounds: ctx.rounds,
        onRun: (n, r, x) => ctx.log(`  ${id} ${n} round ${r + 1}: ${x instanceof Error ? `FAILED ${x.message}` : Object.entries(x).map(([k, v]) => `${k}=${v.toFixed(2)}`).join(' ')}`),
      })
      const notes = [
        `tidelog client producing at ${rate.toLocaleString('en')} records/s and consuming in one process, ${seconds} s after ${warmupSeconds} s uncounted; each record timed from when it was due; acks=all, linger 0, batch 16384 B, 5 in flight`,
        'the tidelog broker runs with --console-port for its /metrics (the event-loop delay: the largest per-second p99 and max seen); the same broker build as the others',
      ]
      for (const [metric, label] of [['p50', 'p50'], ['p99', 'p99'], ['p999', 'p99.9']] as const) {
        rows.push(
          makeRow({ id: `${id}.${label}`, title: `end-to-end latency ${label} at ${rate.toLocaleString('en')} records/s, acks=all`, unit: 'ms', higherIsBetter: false }, [
            ['tidelog-broker', entryOf(o.get('tidelog-broker'), metric)],
            ['kafka', typeof kafka === 'string' ? kafka : entryOf(o.get('kafka'), metric)],
          ], undefined, notes),
        )
      }
      rows.push(
        makeRow({ id: `${id}.loop`, title: `tidelog broker event-loop delay during the ${rate.toLocaleString('en')} records/s run (largest per-second p99)`, unit: 'ms', higherIsBetter: false }, [
          ['tidelog-broker', entryOf(o.get('tidelog-broker'), 'loopP99')],
        ], undefined, notes),
        makeRow({ id: `${id}.loopmax`, title: `tidelog broker event-loop delay during the ${rate.toLocaleString('en')} records/s run (max)`, unit: 'ms', higherIsBetter: false }, [
          ['tidelog-broker', entryOf(o.get('tidelog-broker'), 'loopMax')],
        ], undefined, notes),
      )
    }
  } finally {
    await stopProcess(own.proc)
    rmSync(dir, { recursive: true, force: true })
  }
  return rows
}

// --- B6 a consumer that does not read ---------------------------------------------------------

/** Fetch requests the stalled consumer sends before it stops reading. */
const STALLED_FETCHES = 200

/**
 * A raw connection that pipelines STALLED_FETCHES Fetch v12 requests for the whole topic from
 * offset 0 and never reads an answer: the broker must stop reading (or writing) it rather than
 * hold every answer in memory (Kafka mutes a channel with a response in flight).
 */
function stalledConsumer(port: number, topic: string, partitions: number): Socket {
  const s = connect(port, '127.0.0.1')
  s.pause()
  s.once('connect', () => {
    for (let i = 0; i < STALLED_FETCHES; i++) {
      s.write(
        encodeRequestFrame(
          { apiKey: ApiKeys.Fetch, apiVersion: 12, correlationId: i + 1, clientId: 'tidelog-bench-stalled' },
          {
            maxWaitMs: 500,
            minBytes: 1,
            maxBytes: 50 * 1024 * 1024,
            topics: [{ topic, partitions: Array.from({ length: partitions }, (_, p) => ({ partition: p, fetchOffset: 0n, partitionMaxBytes: 1024 * 1024 })) }],
          },
        ),
      )
    }
  })
  s.on('error', () => undefined)
  return s
}

async function b6(ctx: RunContext): Promise<ScenarioResult[]> {
  const records = ctx.quick ? 50_000 : 1_000_000
  const holdMs = ctx.quick ? 3_000 : 10_000
  ctx.log(`B6: broker RSS under a consumer that does not read (${STALLED_FETCHES} fetches of a ${records.toLocaleString('en')}-record topic)`)
  const m = await matrix(ctx, 'B6', ['tidelog'], async (b): Promise<Metrics> => {
    const topic = topicName('b6')
    await createTopic(b, topic)
    try {
      await runChild<ProduceResult>({ kind: 'produce', client: 'tidelog', bootstrap: b.bootstrap, topic, records, warmupRecords: 0, chunk: CHUNK, window: WINDOW, settings: BASE }, 600_000)
      await new Promise((r) => setTimeout(r, 1000))
      const before = rssMiB(b.pid)
      const sampler = sampleRss(b.pid, 50)
      const s = stalledConsumer(b.port, topic, 6)
      await new Promise((r) => setTimeout(r, holdMs))
      const peak = sampler.stop()
      s.destroy()
      if (!Number.isFinite(peak)) throw new Error('the broker exited')
      return { growth: peak - before, peak }
    } finally {
      await deleteTopic(b, topic)
    }
  })
  const requested = (STALLED_FETCHES * records * (KEY_BYTES + VALUE_BYTES)) / 2 ** 20
  const notes = [
    `one connection sends ${STALLED_FETCHES} Fetch v12 requests (the whole topic from offset 0, 1 MiB per partition, 6 partitions) and never reads: up to ${Math.round(requested).toLocaleString('en')} MiB of answers asked for; RSS sampled every 50 ms for ${holdMs / 1000} s`,
  ]
  const row = (metric: string, title: string) => rowsOf(m, { id: `B6.${metric}`, title, unit: 'MiB', higherIsBetter: false }, metric, ['tidelog'], ['tidelog'], notes).filter((r) => r.id.includes('.brokers('))
  return [...row('growth', 'broker RSS growth under a consumer that does not read'), ...row('peak', 'broker RSS peak under a consumer that does not read')]
}

export { b2, b5, b6 }
