/**
 * Apache Kafka for the interop tests: its jars come from Maven Central (through
 * `mvn dependency:copy-dependencies` on test/helpers/kafka/pom.xml) into a cache
 * folder outside the tracked tree, reused when present. A single-node KRaft broker
 * (combined broker + controller) is formatted and started on free loopback ports; releases
 * before 3.3 (where KRaft was not yet production-ready) run in ZooKeeper mode instead, with
 * the ZooKeeper server from the same jars.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { createServer, connect } from 'node:net'
import { homedir, tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { fileURLToPath } from 'node:url'
import { kafkaLibsVersion } from './peer-versions.js'
import { RawClient } from './raw-client.js'

const run = promisify(execFile)
const here = fileURLToPath(new URL('.', import.meta.url))

/**
 * Newest 4.x release served on Maven Central here, the last 3.x line, and the oldest release
 * the README claims (3.0; 2.x needs a Java older than the 17 these machines run).
 */
export const KAFKA_VERSIONS = { latest: '4.4.0', previous: '3.9.1', oldest: '3.0.2' } as const

/** KRaft became production-ready in 3.3; older releases ran with ZooKeeper, and so do they here. */
export function usesZooKeeper(version: string): boolean {
  const [major, minor] = version.split('.').map(Number)
  return major! < 3 || (major === 3 && minor! < 3)
}

export function cacheRoot(): string {
  return process.env.TIDELOG_CACHE ?? join(homedir(), '.cache', 'tidelog')
}

/** Downloads (once) Kafka's jars for `version` and returns the folder holding them. */
export async function fetchKafka(version: string = KAFKA_VERSIONS.latest): Promise<string> {
  const libs = join(cacheRoot(), `kafka-${version}`, 'libs')
  const done = join(cacheRoot(), `kafka-${version}`, '.complete')
  if (existsSync(done)) return libs
  mkdirSync(libs, { recursive: true })
  await run(
    'mvn',
    ['-q', '-B', '-f', join(here, 'kafka', 'pom.xml'), 'dependency:copy-dependencies',
      `-Dkafka.version=${version}`, `-DoutputDirectory=${libs}`],
    { maxBuffer: 16 * 1024 * 1024, timeout: 600_000 },
  )
  if (!readdirSync(libs).some((f) => f.startsWith('kafka_2.13-'))) {
    throw new Error(`Maven did not deliver kafka_2.13 ${version} into ${libs}`)
  }
  writeFileSync(done, new Date().toISOString())
  return libs
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer()
    s.once('error', reject)
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port
      s.close(() => resolve(port))
    })
  })
}

export interface KafkaNode {
  version: string
  /** The version the running JVM reports (from the jars it loaded), for the peer record. */
  runtimeVersion: string
  host: string
  port: number
  bootstrap: string
  dir: string
  /** Extra listeners by name, e.g. `SASL_PLAINTEXT`. */
  listeners: Record<string, number>
  stop(): Promise<void>
  /**
   * Run one of Kafka's Java main classes (tools) with the same classpath. `child`, where given,
   * is the running JVM: a test can watch its output live and stop it (SIGTERM runs the tool's
   * shutdown hook) instead of waiting out an idle timeout.
   */
  java(mainClass: string, args: string[], opts?: { timeoutMs?: number; input?: string }): Promise<{ stdout: string; stderr: string }> & { child?: ChildProcess }
}

export interface StartKafkaOptions {
  version?: string
  /** Heap and GC flags in place of the tests' small heap (the bench passes kafka-server-start.sh's). */
  jvmFlags?: string[]
  /** Extra server.properties lines. */
  properties?: Record<string, string | number | boolean>
  /** Extra listeners: name -> security protocol, e.g. { SASL: 'SASL_PLAINTEXT' }. */
  extraListeners?: Record<string, string>
  startTimeoutMs?: number
  /** Run with a ZooKeeper instead of KRaft; by default only releases before 3.3 do. */
  zookeeper?: boolean
}

const LOG4J = `rootLogger.level=WARN
rootLogger.appenderRef.stdout.ref=STDOUT
appender.stdout.type=Console
appender.stdout.name=STDOUT
appender.stdout.target=SYSTEM_ERR
appender.stdout.layout.type=PatternLayout
appender.stdout.layout.pattern=[%d] %p %m (%c)%n
`

function javaBin(): string {
  return process.env.JAVA_HOME ? join(process.env.JAVA_HOME, 'bin', 'java') : 'java'
}

async function waitForPort(port: number, deadline: number, proc: ChildProcess, log: () => string): Promise<void> {
  while (Date.now() < deadline) {
    if (proc.exitCode !== null) throw new Error(`Kafka exited with ${proc.exitCode} before listening:\n${log()}`)
    const ok = await new Promise<boolean>((resolve) => {
      const s = connect(port, '127.0.0.1')
      s.once('connect', () => {
        s.destroy()
        resolve(true)
      })
      s.once('error', () => resolve(false))
    })
    if (ok) return
    await new Promise((r) => setTimeout(r, 200))
  }
  throw new Error(`Kafka did not listen on ${port} in time:\n${log()}`)
}

/**
 * A listening port is not a ready broker: in ZooKeeper mode the broker answers Metadata with no
 * brokers until the controller has sent it its first UpdateMetadata (seen on CI: describeCluster
 * right after start returned []). Ready means Metadata lists this broker.
 */
async function waitForBrokerInMetadata(port: number, brokerId: number, deadline: number, proc: ChildProcess, log: () => string): Promise<void> {
  let last = 'no answer'
  while (Date.now() < deadline) {
    if (proc.exitCode !== null) throw new Error(`Kafka exited with ${proc.exitCode} before it was ready:\n${log()}`)
    let client: RawClient | undefined
    try {
      client = await RawClient.connect('127.0.0.1', port)
      const { body } = await client.request<{ brokers: { nodeId: number }[] }>(3, 1, { topics: [] })
      if (body.brokers.some((b) => b.nodeId === brokerId)) return
      last = `brokers ${JSON.stringify(body.brokers.map((b) => b.nodeId))}`
    } catch (e) {
      last = (e as Error).message
    } finally {
      client?.close()
    }
    await new Promise((r) => setTimeout(r, 200))
  }
  throw new Error(`Kafka on ${port} did not list broker ${brokerId} in its metadata in time (${last}):\n${log()}`)
}

function jvmArgs(cp: string, log4j: string, flags = ['-Xms256m', '-Xmx768m', '-XX:+UseG1GC']): string[] {
  return [...flags, '-Dfile.encoding=UTF-8', '-Dstdout.encoding=UTF-8', `-Dlog4j2.configurationFile=${log4j}`, '-cp', cp]
}

function writeProps(file: string, props: Record<string, string | number | boolean>): void {
  writeFileSync(file, Object.entries(props).map(([k, v]) => `${k}=${v}`).join('\n') + '\n')
}

/** A started `kafka.Kafka` (or other main class) process whose output is kept (the tail) for error messages. */
function spawnKafka(jvm: string[], propsFile: string, mainClass = 'kafka.Kafka'): { proc: ChildProcess; output: () => string } {
  let output = ''
  const proc = spawn(javaBin(), [...jvm, mainClass, propsFile], { stdio: ['ignore', 'pipe', 'pipe'] })
  const collect = (d: Buffer) => {
    output += d.toString()
    if (output.length > 200_000) output = output.slice(-100_000)
  }
  proc.stdout!.on('data', collect)
  proc.stderr!.on('data', collect)
  return { proc, output: () => output }
}

async function stopProcess(proc: ChildProcess, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
  if (proc.exitCode !== null || proc.signalCode !== null) return
  const exited = new Promise((r) => proc.once('exit', r))
  proc.kill(signal)
  const timer = setTimeout(() => proc.kill('SIGKILL'), 15_000)
  await exited
  clearTimeout(timer)
}

/** Formats storage and starts a single-node KRaft Apache Kafka on free loopback ports. */
export async function startKafka(options: StartKafkaOptions = {}): Promise<KafkaNode> {
  const version = options.version ?? KAFKA_VERSIONS.latest
  const libs = await fetchKafka(version)
  const cp = `${libs}/*`
  const dir = mkdtempSync(join(tmpdir(), `tidelog-kafka-${version}-`))
  const port = await freePort()
  const controllerPort = await freePort()
  const listeners: Record<string, number> = { PLAINTEXT: port }
  const protocolMap: string[] = ['PLAINTEXT:PLAINTEXT', 'CONTROLLER:PLAINTEXT']
  for (const [name, protocol] of Object.entries(options.extraListeners ?? {})) {
    listeners[name] = await freePort()
    protocolMap.push(`${name}:${protocol}`)
  }
  const listenerList = Object.entries(listeners).map(([n, p]) => `${n}://127.0.0.1:${p}`)
  const zookeeper = options.zookeeper ?? usesZooKeeper(version)
  const log4j = join(dir, 'log4j2.properties')
  writeFileSync(log4j, LOG4J)
  const jvm = jvmArgs(cp, log4j, options.jvmFlags)
  let zk: { proc: ChildProcess; output: () => string } | undefined
  const mode: Record<string, string | number | boolean> = {
    'process.roles': 'broker,controller',
    'node.id': 1,
    'controller.quorum.voters': `1@127.0.0.1:${controllerPort}`,
    listeners: [...listenerList, `CONTROLLER://127.0.0.1:${controllerPort}`].join(','),
    'controller.listener.names': 'CONTROLLER',
    'listener.security.protocol.map': protocolMap.join(','),
  }
  if (zookeeper) {
    const zkFile = join(dir, 'zookeeper.properties')
    writeProps(zkFile, { dataDir: join(dir, 'zookeeper'), clientPort: controllerPort, 'clientPortAddress': '127.0.0.1', maxClientCnxns: 0, 'admin.enableServer': false })
    zk = spawnKafka(jvm, zkFile, 'org.apache.zookeeper.server.quorum.QuorumPeerMain')
    try {
      await waitForPort(controllerPort, Date.now() + 60_000, zk.proc, zk.output)
    } catch (e) {
      await stopProcess(zk.proc)
      throw e
    }
    for (const k of Object.keys(mode)) delete mode[k]
    Object.assign(mode, {
      'broker.id': 1,
      'zookeeper.connect': `127.0.0.1:${controllerPort}`,
      listeners: listenerList.join(','),
      'listener.security.protocol.map': protocolMap.filter((m) => !m.startsWith('CONTROLLER:')).join(','),
    })
  }
  const props: Record<string, string | number | boolean> = {
    ...mode,
    'advertised.listeners': listenerList.join(','),
    'inter.broker.listener.name': 'PLAINTEXT',
    'log.dirs': join(dir, 'logs'),
    'offsets.topic.replication.factor': 1,
    'offsets.topic.num.partitions': 3,
    'transaction.state.log.replication.factor': 1,
    'transaction.state.log.min.isr': 1,
    'transaction.state.log.num.partitions': 3,
    'group.initial.rebalance.delay.ms': 0,
    'num.partitions': 1,
    ...options.properties,
  }
  const propsFile = join(dir, 'server.properties')
  writeProps(propsFile, props)

  if (!zookeeper) {
    const { stdout: clusterId } = await run(javaBin(), [...jvm, 'kafka.tools.StorageTool', 'random-uuid'])
    await run(javaBin(), [...jvm, 'kafka.tools.StorageTool', 'format', '-t', clusterId.trim(), '-c', propsFile], {
      maxBuffer: 16 * 1024 * 1024,
    })
  }

  const { proc, output } = spawnKafka(jvm, propsFile)
  try {
    const deadline = Date.now() + (options.startTimeoutMs ?? 90_000)
    await waitForPort(port, deadline, proc, output)
    await waitForBrokerInMetadata(port, 1, deadline, proc, output)
  } catch (e) {
    await stopProcess(proc)
    if (zk) await stopProcess(zk.proc)
    throw e
  }

  let stopped = false
  return {
    version,
    runtimeVersion: kafkaLibsVersion(libs),
    host: '127.0.0.1',
    port,
    bootstrap: `127.0.0.1:${port}`,
    dir,
    listeners,
    async stop() {
      if (stopped) return
      stopped = true
      await stopProcess(proc)
      if (zk) await stopProcess(zk.proc)
      rmSync(dir, { recursive: true, force: true })
    },
    // Not async: the promise execFile gives carries the running JVM as `child`.
    java(mainClass, args, opts) {
      const child = run(javaBin(), [...jvm, mainClass, ...args], {
        timeout: opts?.timeoutMs ?? 120_000,
        maxBuffer: 64 * 1024 * 1024,
      })
      if (opts?.input !== undefined) {
        child.child.stdin?.end(opts.input)
      }
      return child
    },
  }
}

export interface ClusterNode {
  nodeId: number
  port: number
  /** Whether the node's process is running. */
  readonly alive: boolean
  /** Kills the node (SIGKILL by default: no controlled shutdown, as in a crash). */
  kill(signal?: NodeJS.Signals): Promise<void>
  /** Starts a killed node again on the same ports and data. */
  restart(): Promise<void>
}

export interface KafkaCluster {
  version: string
  runtimeVersion: string
  bootstrap: string
  nodes: ClusterNode[]
  stop(): Promise<void>
}

/**
 * A KRaft cluster of `size` combined broker+controller nodes on loopback (for
 * failover tests): every node votes in the quorum, so a majority must stay up.
 */
export async function startKafkaCluster(options: StartKafkaOptions & { size?: number } = {}): Promise<KafkaCluster> {
  const version = options.version ?? KAFKA_VERSIONS.latest
  const size = options.size ?? 3
  const libs = await fetchKafka(version)
  const dir = mkdtempSync(join(tmpdir(), `tidelog-kafka-cluster-${version}-`))
  const log4j = join(dir, 'log4j2.properties')
  writeFileSync(log4j, LOG4J)
  const jvm = jvmArgs(`${libs}/*`, log4j)
  const ports = await Promise.all(Array.from({ length: size }, async () => ({ broker: await freePort(), controller: await freePort() })))
  const voters = ports.map((p, i) => `${i + 1}@127.0.0.1:${p.controller}`).join(',')
  const { stdout: clusterIdOut } = await run(javaBin(), [...jvm, 'kafka.tools.StorageTool', 'random-uuid'])
  const clusterId = clusterIdOut.trim()

  const nodes = await Promise.all(
    ports.map(async (p, i) => {
      const nodeId = i + 1
      const propsFile = join(dir, `server-${nodeId}.properties`)
      writeProps(propsFile, {
        'process.roles': 'broker,controller',
        'node.id': nodeId,
        'controller.quorum.voters': voters,
        listeners: `PLAINTEXT://127.0.0.1:${p.broker},CONTROLLER://127.0.0.1:${p.controller}`,
        'advertised.listeners': `PLAINTEXT://127.0.0.1:${p.broker}`,
        'controller.listener.names': 'CONTROLLER',
        'inter.broker.listener.name': 'PLAINTEXT',
        'listener.security.protocol.map': 'PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT',
        'log.dirs': join(dir, `logs-${nodeId}`),
        'offsets.topic.replication.factor': Math.min(3, size),
        'offsets.topic.num.partitions': 3,
        'transaction.state.log.replication.factor': Math.min(3, size),
        'transaction.state.log.min.isr': 1,
        'group.initial.rebalance.delay.ms': 0,
        'num.partitions': 1,
        ...options.properties,
      })
      await run(javaBin(), [...jvm, 'kafka.tools.StorageTool', 'format', '-t', clusterId, '-c', propsFile], { maxBuffer: 16 * 1024 * 1024 })
      let current = spawnKafka(jvm, propsFile)
      const node: ClusterNode = {
        nodeId,
        port: p.broker,
        get alive() {
          return current.proc.exitCode === null && current.proc.signalCode === null
        },
        async kill(signal = 'SIGKILL') {
          await stopProcess(current.proc, signal)
        },
        async restart() {
          if (node.alive) return
          current = spawnKafka(jvm, propsFile)
          const deadline = Date.now() + (options.startTimeoutMs ?? 90_000)
          await waitForPort(p.broker, deadline, current.proc, current.output)
          await waitForBrokerInMetadata(p.broker, nodeId, deadline, current.proc, current.output)
        },
      }
      const deadline = Date.now() + (options.startTimeoutMs ?? 120_000)
      await waitForPort(p.broker, deadline, current.proc, current.output)
      await waitForBrokerInMetadata(p.broker, nodeId, deadline, current.proc, current.output)
      return node
    }),
  )

  let stopped = false
  return {
    version,
    runtimeVersion: kafkaLibsVersion(libs),
    bootstrap: nodes.map((n) => `127.0.0.1:${n.port}`).join(','),
    nodes,
    async stop() {
      if (stopped) return
      stopped = true
      await Promise.all(nodes.map((n) => n.kill('SIGTERM')))
      rmSync(dir, { recursive: true, force: true })
    },
  }
}

/** The Java client version javaTool() runs for `version` (what its AppInfoParser reports). */
export async function javaClientVersion(version: string = KAFKA_VERSIONS.latest): Promise<string> {
  return kafkaLibsVersion(await fetchKafka(version))
}

const TOOL_LOG4J = join(tmpdir(), 'tidelog-tools-log4j2.properties')

/**
 * Runs one of Kafka's Java main classes (the console tools, ProducerPerformance,
 * TopicCommand, ...) from the jars of `version`, e.g. against the tidelog broker.
 */
export async function javaTool(
  mainClass: string,
  args: string[],
  opts: { version?: string; timeoutMs?: number; input?: string } = {},
): Promise<{ stdout: string; stderr: string }> {
  const libs = await fetchKafka(opts.version ?? KAFKA_VERSIONS.latest)
  if (!existsSync(TOOL_LOG4J)) writeFileSync(TOOL_LOG4J, LOG4J)
  const child = run(
    javaBin(),
    ['-Xms128m', '-Xmx512m', '-Dfile.encoding=UTF-8', '-Dstdout.encoding=UTF-8', `-Dlog4j2.configurationFile=${TOOL_LOG4J}`, '-cp', `${libs}/*`, mainClass, ...args],
    { timeout: opts.timeoutMs ?? 120_000, maxBuffer: 64 * 1024 * 1024 },
  )
  if (opts.input !== undefined) child.child.stdin?.end(opts.input)
  return child
}

/**
 * A peer that cannot be started: under CI=true this is a failure (the rule:
 * never silently skipped); elsewhere the caller may skip with the reason.
 */
export function peerUnavailable(peer: string, reason: unknown): never | string {
  const why = `${peer} unavailable: ${reason instanceof Error ? reason.message : String(reason)}`
  if (process.env.CI === 'true') throw new Error(why)
  return why
}

/**
 * Starts one of Kafka's Java main classes as a long-running child (a copier, a producer to be
 * killed mid-transaction), with the same JVM settings as javaTool(); the caller reads its
 * output and ends it.
 */
export async function spawnJavaTool(mainClass: string, args: string[], opts: { version?: string; classpath?: string[] } = {}): Promise<ChildProcess> {
  const libs = await fetchKafka(opts.version ?? KAFKA_VERSIONS.latest)
  const cp = [...(opts.classpath ?? []), `${libs}/*`].join(':')
  if (!existsSync(TOOL_LOG4J)) writeFileSync(TOOL_LOG4J, LOG4J)
  return spawn(
    javaBin(),
    ['-Xms64m', '-Xmx384m', '-XX:TieredStopAtLevel=1', '-Dfile.encoding=UTF-8', '-Dstdout.encoding=UTF-8', `-Dlog4j2.configurationFile=${TOOL_LOG4J}`, '-cp', cp, mainClass, ...args],
    { stdio: ['pipe', 'pipe', 'pipe'] },
  )
}

/** Compiles Java sources from the test tree against Kafka's jars (javac 17) into a fresh folder; returns it, for spawnJavaTool's classpath. */
export async function compileJava(sources: string[], opts: { version?: string } = {}): Promise<string> {
  const libs = await fetchKafka(opts.version ?? KAFKA_VERSIONS.latest)
  const out = mkdtempSync(join(tmpdir(), 'tidelog-javac-'))
  const javac = process.env.JAVA_HOME ? join(process.env.JAVA_HOME, 'bin', 'javac') : 'javac'
  await run(javac, ['-nowarn', '-cp', `${libs}/*`, '-d', out, ...sources], { maxBuffer: 16 * 1024 * 1024, timeout: 120_000 })
  return out
}
