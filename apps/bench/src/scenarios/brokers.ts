// S1 (cold start to the first ApiVersions answer) and M1 (resident memory, idle and
// under P1 load): the tidelog broker against Apache Kafka, each in its own process.
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { freePort } from '../../../../test/helpers/kafka.js'
import { producerPerformance } from '../clients/java.js'
import { waitForApiVersions } from '../env/api-versions.js'
import { createTopic, deleteTopic, tidelogBrokerMain, type BrokerHandle, type KafkaHandle } from '../env/brokers.js'
import { cmdline, rssMiB, sampleRss } from '../env/proc.js'
import { interleave, type Trial } from '../matrix.js'
import { entryOf, makeRow } from '../rows.js'
import type { RunContext, ScenarioResult, Suite } from '../types.js'

const alive = (p: ChildProcess) => p.exitCode === null && p.signalCode === null

async function kill(p: ChildProcess): Promise<void> {
  if (!alive(p)) return
  const exited = new Promise((r) => p.once('exit', r))
  p.kill('SIGKILL')
  await exited
}

/** Spawns the process and measures until it answers ApiVersions on `port`. */
async function coldStart(command: string, args: string[], port: number, cleanup: () => void): Promise<number> {
  const t0 = performance.now()
  const p = spawn(command, args, { stdio: 'ignore' })
  try {
    const answered = await waitForApiVersions(port, t0 + 180_000, () => alive(p))
    return answered - t0
  } finally {
    // The data is thrown away, so no clean shutdown is needed.
    await kill(p)
    cleanup()
  }
}

async function tidelogColdStart(): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), 'tidelog-bench-s1-'))
  const port = await freePort()
  return coldStart(process.execPath, [tidelogBrokerMain(), '--port', String(port), '--data-dir', dir, '--log-level', 'warn'], port, () =>
    rmSync(dir, { recursive: true, force: true }),
  )
}

/**
 * A second Kafka of the same configuration and JVM flags as the running one (read back from
 * its server.properties and /proc/<pid>/cmdline), on new ports and freshly formatted storage:
 * formatting is setup, not start-up, so it is not timed.
 */
async function kafkaColdStart(k: KafkaHandle): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), 'tidelog-bench-s1-kafka-'))
  try {
    const props = readFileSync(join(k.node.dir, 'server.properties'), 'utf8')
    const oldController = /controller\.quorum\.voters=\d+@[^:]+:(\d+)/.exec(props)?.[1]
    if (oldController === undefined) throw new Error('no controller.quorum.voters in the running Kafka\'s properties')
    const port = await freePort()
    const controller = await freePort()
    const file = join(dir, 'server.properties')
    writeFileSync(
      file,
      props
        .replaceAll(`:${k.port}`, `:${port}`)
        .replaceAll(`:${oldController}`, `:${controller}`)
        .replace(/^log\.dirs=.*$/m, `log.dirs=${join(dir, 'logs')}`),
    )
    const { stdout: id } = await k.node.java('kafka.tools.StorageTool', ['random-uuid'])
    await k.node.java('kafka.tools.StorageTool', ['format', '-t', id.trim(), '-c', file])
    const argv = cmdline(k.pid)
    const main = argv.indexOf('kafka.Kafka')
    if (main < 0) throw new Error('the running Kafka\'s command line has no kafka.Kafka')
    const args = [...argv.slice(1, main + 1), file]
    return await coldStart(argv[0]!, args, port, () => undefined)
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

function heapNote(k: BrokerHandle | string): string {
  if (typeof k === 'string') return ''
  const flags = cmdline(k.pid).filter((a) => /^-Xm[sx]|^-XX:\+Use.*GC$/.test(a))
  return `Kafka's JVM flags (kafka-server-start.sh's heap, kafka-run-class.sh's GC): ${flags.join(' ')}`
}

export const startup: Suite = {
  name: 'startup',
  description: 'S1: broker cold start to the first ApiVersions answer, tidelog broker vs Apache Kafka',
  ids: ['S1'],
  async run(ctx) {
    ctx.log('S1: cold start to the first ApiVersions answer')
    const kafka = await ctx.brokers.tryGet('kafka')
    const trials: Trial[] = [{ name: 'tidelog-broker', run: async () => ({ ms: await tidelogColdStart() }) }]
    if (typeof kafka !== 'string') trials.push({ name: 'kafka', run: async () => ({ ms: await kafkaColdStart(kafka as KafkaHandle) }) })
    const o = await interleave(trials, { rounds: ctx.rounds, onRun: (n, r, m) => ctx.log(`  S1 ${n} round ${r + 1}: ${m instanceof Error ? `FAILED ${m.message}` : `${Math.round(m.ms!)} ms`}`) })
    return [
      makeRow(
        { id: 'S1', title: 'broker cold start: process spawn to the first ApiVersions answer', unit: 'ms', higherIsBetter: false },
        [
          ['tidelog-broker', entryOf(o.get('tidelog-broker'), 'ms')],
          ['kafka', typeof kafka === 'string' ? kafka : entryOf(o.get('kafka'), 'ms')],
        ],
        undefined,
        [
          'empty data directory each time; Kafka\'s storage formatted beforehand (not timed); polled every 5 ms with a new connection',
          heapNote(kafka),
        ].filter((n) => n !== ''),
      ),
    ]
  },
}

export const memory: Suite = {
  name: 'memory',
  description: 'M1: broker RSS (VmRSS) idle and peak under P1 load (Java ProducerPerformance), tidelog broker vs Apache Kafka',
  ids: ['M1'],
  async run(ctx: RunContext): Promise<ScenarioResult[]> {
    ctx.log('M1: broker RSS')
    const brokers = { 'tidelog-broker': await ctx.brokers.tryGet('tidelog'), kafka: await ctx.brokers.tryGet('kafka') }
    const records = ctx.quick ? 20_000 : 300_000
    const warmup = ctx.quick ? 5_000 : 50_000
    const trials: Trial[] = []
    for (const [name, b] of Object.entries(brokers)) {
      if (typeof b === 'string') continue
      trials.push({
        name,
        run: async (round) => {
          // Idle first: settled, nothing connected (each round, so the idle figure has its spread too).
          await new Promise((r) => setTimeout(r, ctx.quick ? 500 : round === 0 ? 2000 : 1000))
          const idle = rssMiB(b.pid)
          const topic = `bench-m1-${process.pid}-${name}-${round}`
          await createTopic(b, topic)
          const sampler = sampleRss(b.pid, 50)
          let peak: number
          try {
            await producerPerformance(b.bootstrap, topic, records, warmup, { acks: 1, idempotent: false, compression: 'none', lingerMs: 5, batchBytes: 16384, maxInFlight: 5 })
          } finally {
            peak = sampler.stop()
            await deleteTopic(b, topic)
          }
          if (!Number.isFinite(peak)) throw new Error(`${name} exited`)
          return { idle, load: peak }
        },
      })
    }
    const o = await interleave(trials, {
      rounds: ctx.rounds,
      onRun: (n, r, m) => ctx.log(`  M1 ${n} round ${r + 1}: ${m instanceof Error ? `FAILED ${m.message}` : `idle ${m.idle!.toFixed(0)} MiB, load ${m.load!.toFixed(0)} MiB`}`),
    })
    const entry = (name: 'tidelog-broker' | 'kafka', metric: string) => {
      const b = brokers[name]
      return typeof b === 'string' ? b : entryOf(o.get(name), metric)
    }
    const notes = [`VmRSS from /proc/<pid>/status of the broker process; load: peak over a ProducerPerformance run of ${records.toLocaleString('en')} acks=1 records (sampled every 50 ms)`, heapNote(brokers.kafka)].filter((n) => n !== '')
    return [
      makeRow({ id: 'M1.idle', title: 'broker RSS, idle (before each load run)', unit: 'MiB', higherIsBetter: false }, [['tidelog-broker', entry('tidelog-broker', 'idle')], ['kafka', entry('kafka', 'idle')]], undefined, notes),
      makeRow({ id: 'M1.load', title: 'broker RSS, peak under P1 load (Java producer)', unit: 'MiB', higherIsBetter: false }, [['tidelog-broker', entry('tidelog-broker', 'load')], ['kafka', entry('kafka', 'load')]], undefined, notes),
    ]
  },
}
