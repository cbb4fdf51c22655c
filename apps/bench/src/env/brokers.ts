// The two brokers every client scenario runs against, each in its own process so
// that neither shares a core's event loop with a client under test: the tidelog
// broker through its CLI, Apache Kafka through the interop harness. Both keep the
// same durability settings: one replica, fsync left to the page cache (Kafka's
// flush.messages/flush.ms defaults, the tidelog broker's too).
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { Admin } from '@tidelog/client'
import { KAFKA_VERSIONS, startKafka, type KafkaNode } from '../../../../test/helpers/kafka.js'
import { describeError } from '../matrix.js'
import { findProcesses } from './proc.js'

export type BrokerKind = 'tidelog' | 'kafka'

export interface BrokerHandle {
  kind: BrokerKind
  /** As shown in the results: "tidelog broker", "Apache Kafka 4.4.0". */
  label: string
  bootstrap: string
  port: number
  pid: number
  stop(): Promise<void>
}

export const PARTITIONS = 6

export function tidelogBrokerMain(): string {
  const pkg = createRequire(import.meta.url).resolve('@tidelog/broker/package.json')
  return join(dirname(pkg), 'dist', 'main.js')
}

/** Starts `node apps/broker/dist/main.js` and resolves once it printed its ready line. */
export function spawnTidelogBroker(args: string[], timeoutMs = 30_000, nodeArgs: string[] = []): Promise<{ proc: ChildProcess; port: number; readyAt: number }> {
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, [...nodeArgs, tidelogBrokerMain(), ...args], { stdio: ['ignore', 'pipe', 'pipe'] })
    let out = ''
    let err = ''
    const timer = setTimeout(() => {
      proc.kill('SIGKILL')
      reject(new Error(`tidelog broker not ready in ${timeoutMs} ms: ${err.slice(-300)}`))
    }, timeoutMs)
    proc.stderr!.on('data', (d: Buffer) => {
      err += d.toString()
      if (err.length > 50_000) err = err.slice(-20_000)
    })
    proc.stdout!.on('data', (d: Buffer) => {
      out += d.toString()
      const m = /listening on [^\s]*:(\d+)/.exec(out)
      if (m !== null) {
        clearTimeout(timer)
        resolve({ proc, port: Number(m[1]), readyAt: performance.now() })
      }
    })
    proc.once('exit', (code) => {
      clearTimeout(timer)
      reject(new Error(`tidelog broker exited with ${code}: ${err.trim().slice(-300)}`))
    })
  })
}

export async function stopProcess(proc: ChildProcess, graceMs = 15_000): Promise<void> {
  if (proc.exitCode !== null || proc.signalCode !== null) return
  const exited = new Promise((r) => proc.once('exit', r))
  proc.kill('SIGTERM')
  const t = setTimeout(() => proc.kill('SIGKILL'), graceMs)
  await exited
  clearTimeout(t)
}

async function startTidelog(): Promise<BrokerHandle> {
  const dir = mkdtempSync(join(tmpdir(), 'tidelog-bench-broker-'))
  // With BENCH_CPU_PROF the shared broker is profiled too (written when it stops).
  const prof = process.env.BENCH_CPU_PROF
  const nodeArgs = prof === undefined || prof === '' ? [] : ['--cpu-prof', `--cpu-prof-dir=${prof}`, `--cpu-prof-name=tidelog-broker-${process.pid}.cpuprofile`]
  const { proc, port } = await spawnTidelogBroker(['--port', '0', '--data-dir', dir, '--num-partitions', String(PARTITIONS), '--log-level', 'warn'], 30_000, nodeArgs)
  return {
    kind: 'tidelog',
    label: 'tidelog broker',
    bootstrap: `127.0.0.1:${port}`,
    port,
    pid: proc.pid!,
    async stop() {
      await stopProcess(proc)
      rmSync(dir, { recursive: true, force: true })
    },
  }
}

export interface KafkaHandle extends BrokerHandle {
  node: KafkaNode
}

/**
 * The JVM flags Kafka's own scripts start a broker with: kafka-server-start.sh's KAFKA_HEAP_OPTS
 * and kafka-run-class.sh's KAFKA_JVM_PERFORMANCE_OPTS defaults.
 */
export const KAFKA_SCRIPT_JVM_FLAGS = [
  '-Xmx1G', '-Xms1G',
  '-server', '-XX:+UseG1GC', '-XX:MaxGCPauseMillis=20', '-XX:InitiatingHeapOccupancyPercent=35', '-XX:+ExplicitGCInvokesConcurrent', '-Djava.awt.headless=true',
]

async function startApacheKafka(): Promise<KafkaHandle> {
  const node = await startKafka({ properties: { 'num.partitions': PARTITIONS }, jvmFlags: KAFKA_SCRIPT_JVM_FLAGS })
  const pids = findProcesses('kafka.Kafka', join(node.dir, 'server.properties'))
  if (pids.length !== 1) {
    await node.stop()
    throw new Error(`cannot tell Kafka's process (${pids.length} candidates)`)
  }
  return {
    kind: 'kafka',
    label: `Apache Kafka ${node.version}`,
    bootstrap: node.bootstrap,
    port: node.port,
    pid: pids[0]!,
    node,
    stop: () => node.stop(),
  }
}

/** Brokers started on first use and shared by every suite of one run. */
export class Brokers {
  private started = new Map<BrokerKind, Promise<BrokerHandle>>()

  get(kind: BrokerKind): Promise<BrokerHandle> {
    let p = this.started.get(kind)
    if (p === undefined) {
      p = kind === 'tidelog' ? startTidelog() : startApacheKafka()
      p.catch(() => undefined)
      this.started.set(kind, p)
    }
    return p
  }

  /** The broker, or why it cannot run here. */
  async tryGet(kind: BrokerKind): Promise<BrokerHandle | string> {
    try {
      return await this.get(kind)
    } catch (e) {
      return kind === 'kafka' ? `Apache Kafka ${KAFKA_VERSIONS.latest} could not start: ${describeError(e)}` : `tidelog broker could not start: ${describeError(e)}`
    }
  }

  async close(): Promise<void> {
    for (const p of this.started.values()) {
      const b = await p.catch(() => undefined)
      await b?.stop()
    }
    this.started.clear()
  }
}

/** Creates a topic of PARTITIONS partitions with the tidelog Admin (on either broker). */
/**
 * Apache Kafka's controller refuses one operation of more than 10,000 metadata records
 * (QuorumController's MAX_RECORDS_PER_USER_OP: "Unable to perform excessively large batch
 * operation"), and a topic counts one record plus one per partition. So a topic of more
 * partitions than this is created at this size and grown with CreatePartitions, on both brokers.
 */
const PARTITIONS_PER_OPERATION = 5000

export async function createTopic(b: BrokerHandle, name: string, partitions = PARTITIONS): Promise<void> {
  const admin = new Admin({ brokers: [b.bootstrap], clientId: 'tidelog-bench-admin' })
  try {
    await admin.createTopics([{ name, partitions: Math.min(partitions, PARTITIONS_PER_OPERATION), replicationFactor: 1 }])
    for (let n = PARTITIONS_PER_OPERATION; n < partitions; n += PARTITIONS_PER_OPERATION) {
      await admin.createPartitions([{ topic: name, count: Math.min(partitions, n + PARTITIONS_PER_OPERATION) }])
    }
  } finally {
    await admin.close()
  }
}

export async function deleteTopic(b: BrokerHandle, name: string): Promise<void> {
  const admin = new Admin({ brokers: [b.bootstrap], clientId: 'tidelog-bench-admin' })
  try {
    await admin.deleteTopics([name])
  } catch {
    // Best effort: the topic only frees disk space.
  } finally {
    await admin.close()
  }
}
