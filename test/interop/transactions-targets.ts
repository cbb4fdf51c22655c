/**
 * The broker under test for the transaction peer proofs (test/interop/transactions-*.test.ts):
 * each proof runs first against Apache Kafka (so the test itself is known right) and then,
 * unchanged, against tidelog-broker. Both can be restarted cleanly and killed with SIGKILL
 * on the same port and data, which is what the proofs do to them mid-transaction.
 *
 * tidelog runs as a child process (the CLI from source through tsx, as
 * apps/broker/test/e2e/crash.test.ts does), so a kill -9 is a real crash.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { ApiKeys } from '@tidelog/protocol'
import { advertisedVersions, createRegistry } from '../../apps/broker/src/handlers/index.js'
import { KAFKA_VERSIONS, freePort, javaClientVersion, javaTool, startKafkaCluster, type KafkaCluster } from '../helpers/kafka.js'
import type { PeerUse } from '../helpers/peers.js'

const MAIN = fileURLToPath(new URL('../../apps/broker/src/main.ts', import.meta.url))
const ROOT = fileURLToPath(new URL('../../', import.meta.url))

export type TargetName = 'Apache Kafka' | 'tidelog'

export interface TxnTarget {
  name: TargetName
  bootstrap: string
  /** The peers a passing test on this target ran against (the broker, when it is Kafka). */
  peers(): PeerUse[]
  /** SIGTERM (controlled shutdown) or SIGKILL, then start again on the same port and data. */
  restart(mode: 'clean' | 'kill'): Promise<void>
  stop(): Promise<void>
}

/**
 * Whether tidelog-broker serves transactions at all (EndTxn is in its registry). Until it
 * does, its runs of the proofs are expected to fail (vitest `it.fails`, named so in the
 * test title), and they turn into ordinary tests, which must pass, by themselves once
 * the coordinator lands: nothing here needs editing then.
 */
export const TIDELOG_SERVES_TRANSACTIONS = advertisedVersions(createRegistry()).some((a) => a.apiKey === ApiKeys.EndTxn)

/** The title suffix and test function for a target: known-fail on tidelog while it serves no transactions. */
export function knownFail(target: TargetName): boolean {
  return target === 'tidelog' && !TIDELOG_SERVES_TRANSACTIONS
}

/** Transaction settings both brokers get (Kafka's names; tidelog reads the same ones when it has them). */
const KAFKA_TXN_PROPS = {
  'transaction.state.log.num.partitions': 3,
  'transaction.max.timeout.ms': 900_000,
  // The default (10 s) is how often expired transactions are aborted; the proofs wait for it.
  'transaction.abort.timed.out.transaction.cleanup.interval.ms': 2_000,
}

export interface TargetOptions {
  /**
   * Kafka's transaction.partition.verification.enable (KIP-890 part 1, default true). Off,
   * a transactional Produce v11 to a partition never added to the transaction is appended
   * anyway, which is how a hanging transaction (open on a partition, unknown to its
   * coordinator) is made on purpose for kafka-transactions.sh find-hanging.
   */
  partitionVerification?: boolean
  /**
   * The port Metadata and FindCoordinator name (a fault proxy's, test/helpers/fault-proxy.ts). On
   * Kafka it is the PLAINTEXT listener's advertised.listeners, so the coordinator's own
   * WriteTxnMarkers to itself pass the proxy too (with a client id the faults leave alone).
   */
  advertisedPort?: number
}

export async function startTarget(name: TargetName, opts: TargetOptions = {}): Promise<TxnTarget> {
  return name === 'Apache Kafka' ? startKafkaTarget(opts) : startTidelogTarget(opts)
}

async function startKafkaTarget(opts: TargetOptions): Promise<TxnTarget> {
  const properties = {
    ...KAFKA_TXN_PROPS,
    'transaction.partition.verification.enable': opts.partitionVerification ?? true,
    ...(opts.advertisedPort === undefined ? {} : { 'advertised.listeners': `PLAINTEXT://127.0.0.1:${opts.advertisedPort}` }),
  }
  const cluster: KafkaCluster = await startKafkaCluster({ version: KAFKA_VERSIONS.latest, size: 1, properties })
  const node = cluster.nodes[0]!
  return {
    name: 'Apache Kafka',
    bootstrap: cluster.bootstrap,
    peers: () => [{ peer: 'Apache Kafka', version: cluster.runtimeVersion }],
    async restart(mode) {
      await node.kill(mode === 'clean' ? 'SIGTERM' : 'SIGKILL')
      await node.restart()
    },
    stop: () => cluster.stop(),
  }
}

async function startTidelogTarget(opts: TargetOptions): Promise<TxnTarget> {
  const dataDir = mkdtempSync(join(tmpdir(), 'tidelog-txn-peers-'))
  const port = await freePort()
  let child: ChildProcess | undefined
  let log = ''
  const launch = async () => {
    log = ''
    const c = spawn(process.execPath, ['--import', 'tsx', MAIN, '--port', String(port), '--data-dir', dataDir, '--log-level', 'warn',
      '--transaction-partition-verification-enable', String(opts.partitionVerification ?? true),
      ...(opts.advertisedPort === undefined ? [] : ['--advertised-port', String(opts.advertisedPort)])], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    child = c
    c.stderr!.on('data', (d: Buffer) => {
      log = (log + d.toString()).slice(-20_000)
    })
    await new Promise<void>((resolve, reject) => {
      let out = ''
      const timer = setTimeout(() => reject(new Error(`tidelog-broker did not listen in 60 s:\n${log}`)), 60_000)
      c.stdout!.on('data', (d: Buffer) => {
        out += d.toString()
        if (/listening on /.test(out)) {
          clearTimeout(timer)
          resolve()
        }
      })
      c.once('exit', (code, signal) => {
        clearTimeout(timer)
        reject(new Error(`tidelog-broker exited (${code ?? signal}) before listening:\n${log}`))
      })
    })
  }
  const halt = async (signal: NodeJS.Signals) => {
    const c = child
    if (!c || c.exitCode !== null || c.signalCode !== null) return
    const exited = new Promise((r) => c.once('exit', r))
    c.kill(signal)
    const timer = setTimeout(() => c.kill('SIGKILL'), 30_000)
    await exited
    clearTimeout(timer)
  }
  await launch()
  return {
    name: 'tidelog',
    bootstrap: `127.0.0.1:${port}`,
    peers: () => [],
    async restart(mode) {
      await halt(mode === 'clean' ? 'SIGTERM' : 'SIGKILL')
      await launch()
    },
    async stop() {
      await halt('SIGTERM')
      rmSync(dataDir, { recursive: true, force: true })
    },
  }
}

/** Creates a topic with Kafka's own TopicCommand (kafka-topics.sh), on either broker. */
export async function createTopic(bootstrap: string, topic: string, partitions: number): Promise<void> {
  await javaTool('org.apache.kafka.tools.TopicCommand', [
    '--bootstrap-server', bootstrap, '--create', '--topic', topic, '--partitions', String(partitions), '--replication-factor', '1',
  ])
}

/** The Java tools' own version, as the peer record wants it. */
export async function javaToolsUse(): Promise<PeerUse> {
  return { peer: 'Java client', version: await javaClientVersion(KAFKA_VERSIONS.latest) }
}
