/**
 * Apache Kafka for the interop tests: its jars come from Maven Central (through
 * `mvn dependency:copy-dependencies` on test/helpers/kafka/pom.xml) into a cache
 * folder outside the tracked tree, reused when present. A single-node KRaft broker
 * (combined broker + controller) is formatted and started on free loopback ports.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { createServer, connect } from 'node:net'
import { homedir, tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { fileURLToPath } from 'node:url'

const run = promisify(execFile)
const here = fileURLToPath(new URL('.', import.meta.url))

/** Newest 4.x release served on Maven Central here, and the older line the issue asks for. */
export const KAFKA_VERSIONS = { latest: '4.4.0', previous: '3.9.1' } as const

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
  host: string
  port: number
  bootstrap: string
  dir: string
  /** Extra listeners by name, e.g. `SASL_PLAINTEXT`. */
  listeners: Record<string, number>
  stop(): Promise<void>
  /** Run one of Kafka's Java main classes (tools) with the same classpath. */
  java(mainClass: string, args: string[], opts?: { timeoutMs?: number; input?: string }): Promise<{ stdout: string; stderr: string }>
}

export interface StartKafkaOptions {
  version?: string
  /** Extra server.properties lines. */
  properties?: Record<string, string | number | boolean>
  /** Extra listeners: name -> security protocol, e.g. { SASL: 'SASL_PLAINTEXT' }. */
  extraListeners?: Record<string, string>
  startTimeoutMs?: number
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
  const props: Record<string, string | number | boolean> = {
    'process.roles': 'broker,controller',
    'node.id': 1,
    'controller.quorum.voters': `1@127.0.0.1:${controllerPort}`,
    listeners: [...listenerList, `CONTROLLER://127.0.0.1:${controllerPort}`].join(','),
    'advertised.listeners': listenerList.join(','),
    'controller.listener.names': 'CONTROLLER',
    'inter.broker.listener.name': 'PLAINTEXT',
    'listener.security.protocol.map': protocolMap.join(','),
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
  writeFileSync(propsFile, Object.entries(props).map(([k, v]) => `${k}=${v}`).join('\n') + '\n')
  const log4j = join(dir, 'log4j2.properties')
  writeFileSync(log4j, LOG4J)
  const jvm = ['-Xms256m', '-Xmx768m', '-XX:+UseG1GC', '-Dfile.encoding=UTF-8', '-Dstdout.encoding=UTF-8', `-Dlog4j2.configurationFile=${log4j}`, '-cp', cp]

  const { stdout: clusterId } = await run(javaBin(), [...jvm, 'kafka.tools.StorageTool', 'random-uuid'])
  await run(javaBin(), [...jvm, 'kafka.tools.StorageTool', 'format', '-t', clusterId.trim(), '-c', propsFile], {
    maxBuffer: 16 * 1024 * 1024,
  })

  let output = ''
  const proc = spawn(javaBin(), [...jvm, 'kafka.Kafka', propsFile], { stdio: ['ignore', 'pipe', 'pipe'] })
  const collect = (d: Buffer) => {
    output += d.toString()
    if (output.length > 200_000) output = output.slice(-100_000)
  }
  proc.stdout!.on('data', collect)
  proc.stderr!.on('data', collect)
  await waitForPort(port, Date.now() + (options.startTimeoutMs ?? 90_000), proc, () => output)

  let stopped = false
  return {
    version,
    host: '127.0.0.1',
    port,
    bootstrap: `127.0.0.1:${port}`,
    dir,
    listeners,
    async stop() {
      if (stopped) return
      stopped = true
      if (proc.exitCode === null) {
        const exited = new Promise((r) => proc.once('exit', r))
        proc.kill('SIGTERM')
        const timer = setTimeout(() => proc.kill('SIGKILL'), 15_000)
        await exited
        clearTimeout(timer)
      }
      rmSync(dir, { recursive: true, force: true })
    },
    async java(mainClass, args, opts) {
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
