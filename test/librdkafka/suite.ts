/**
 * Runs librdkafka's own integration tests (tests/run-test.sh, quick mode, no
 * sockem) against one broker and reads back the per-test results from the
 * summary table test-runner prints at the end.
 */
import { execFile, spawn } from 'node:child_process'
import { createWriteStream, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'

const run = promisify(execFile)
const repoRoot = fileURLToPath(new URL('../..', import.meta.url))

export type TestState = 'PASSED' | 'FAILED' | 'SKIPPED' | 'RUNNING' | 'DNS'

export interface TestResult {
  name: string
  state: TestState
  seconds: number
  /** Failure or skip reason as test-runner printed it (empty for a pass). */
  reason: string
}

export class LibrdkafkaHarnessError extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'LibrdkafkaHarnessError'
  }
}

/** Builds (or finds cached) librdkafka + tests/test-runner; returns the tests directory. */
export async function buildLibrdkafka(): Promise<string> {
  try {
    const { stdout } = await run('bash', [join(repoRoot, 'scripts/librdkafka/build.sh')], {
      maxBuffer: 64 * 1024 * 1024,
      timeout: 30 * 60_000,
    })
    const lines = stdout.trim().split('\n')
    return lines[lines.length - 1]!
  } catch (err) {
    const e = err as { stderr?: string; message: string }
    throw new LibrdkafkaHarnessError(`building librdkafka failed: ${e.message}\n${(e.stderr ?? '').slice(-4000)}`)
  }
}

/**
 * Tests flagged TEST_F_LOCAL in tests/test.c never contact a broker (unit tests,
 * mock-cluster tests); they are not part of the comparison.
 */
export function localTests(testsDir: string): Set<string> {
  const src = readFileSync(join(testsDir, 'test.c'), 'utf8')
  const local = new Set<string>()
  for (const m of src.matchAll(/_TEST\(\s*(\d{4}\w*)\s*,\s*([^,)]*)/g)) {
    if (m[2]!.includes('TEST_F_LOCAL')) local.add(m[1]!)
  }
  if (local.size < 10) throw new LibrdkafkaHarnessError(`found only ${local.size} local tests in test.c: has its _TEST() layout changed?`)
  return local
}

// eslint-disable-next-line no-control-regex
export const ANSI = /\x1b\[[0-9;]*m/g

/** Parses the last summary table in test-runner's output. */
export function parseSummary(output: string): Map<string, TestResult> {
  const results = new Map<string, TestResult>()
  for (const raw of output.split('\n')) {
    const line = raw.replace(ANSI, '')
    const m = /^\|\s*(\d{4}\w*)\s+\|\s*(PASSED|FAILED|SKIPPED|RUNNING|DNS)\s*\|\s*([\d.]+)s\s*\|\s?(.*)$/.exec(line)
    if (!m) continue
    // Later tables (the final summary) overwrite earlier ones.
    results.set(m[1]!, { name: m[1]!, state: m[2] as TestState, seconds: Number(m[3]), reason: m[4]!.trim() })
  }
  return results
}

/** Reasons test-runner gives for tests it never starts because of how we invoke it. */
const NOT_SELECTED = [/Filtered due to negative test flags/]

export interface SuiteRun {
  results: TestResult[]
  logFile: string
  seconds: number
  exitCode: number | null
}

export interface SuiteOptions {
  testsDir: string
  bootstrap: string
  /** The Apache Kafka release the broker presents as (librdkafka switches features on it). */
  kafkaVersion: string
  kafkaPath: string
  workDir: string
  parallel: number
  timeoutMs: number
  /** TESTS=... substring filter, for debugging one test. */
  only?: string
  extraConf?: Record<string, string>
  /** -Q (quick mode, the default): leaves out the subtests librdkafka marks as slow. */
  quick?: boolean
  /** SUBTESTS=...: only subtests whose "function:line: title" contains this. */
  subtests?: string
  /** More environment for run-test.sh (the SASL pass's SSL_* variables for 0097). */
  env?: Record<string, string>
}

/**
 * Runs `./run-test.sh [-Q] -E -L -p<N>` in its own process group, so the whole tree
 * (run-test.sh, test-runner, any kafka-*.sh it started) is killed on timeout or
 * when this process is interrupted.
 */
export async function runSuite(o: SuiteOptions): Promise<SuiteRun> {
  const conf = join(o.workDir, 'test.conf')
  writeFileSync(
    conf,
    [
      `metadata.broker.list=${o.bootstrap}`,
      // The shared 2-core machine is slower than librdkafka's CI boxes.
      'test.timeout.multiplier=2.5',
      ...Object.entries(o.extraConf ?? {}).map(([k, v]) => `${k}=${v}`),
      '',
    ].join('\n'),
  )
  const logFile = join(o.workDir, 'run-test.log')
  const log = createWriteStream(logFile)
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    RDKAFKA_TEST_CONF: conf,
    TEST_KAFKA_VERSION: o.kafkaVersion,
    KAFKA_PATH: o.kafkaPath,
    BROKERS: o.bootstrap,
    ...o.env,
  }
  // test-runner raises its concurrency to 3 and its timeouts when CI is set; the
  // harness fixes both itself so local and CI runs behave the same.
  delete env.CI
  delete env.TESTS
  delete env.SUBTESTS
  if (o.only) env.TESTS = o.only
  if (o.subtests) env.SUBTESTS = o.subtests
  const started = Date.now()
  // stdbuf: test-runner prints its summary to a pipe (fully buffered) and then
  // abort()s when a failed test leaked librdkafka threads; line buffering keeps
  // the summary from dying in the buffer.
  // -L: leave out the TEST_F_LOCAL tests (unit and mock-cluster tests). They never
  // contact a broker, are not compared, and take half the run's time.
  const args = [...(o.quick === false ? [] : ['-Q']), '-E', '-L', `-p${o.parallel}`]
  const child = spawn('stdbuf', ['-oL', '-eL', './run-test.sh', ...args], {
    cwd: o.testsDir,
    env,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let output = ''
  const collect = (d: Buffer) => {
    log.write(d)
    output += d.toString()
    // Keep memory bounded; the summary is at the end.
    if (output.length > 8_000_000) output = output.slice(-4_000_000)
  }
  child.stdout!.on('data', collect)
  child.stderr!.on('data', collect)
  const killGroup = () => {
    try {
      if (child.pid) process.kill(-child.pid, 'SIGKILL')
    } catch {
      /* already gone */
    }
  }
  process.once('exit', killGroup)
  let timedOut = false
  const timer = setTimeout(() => {
    timedOut = true
    killGroup()
  }, o.timeoutMs)
  const exitCode = await new Promise<number | null>((resolve, reject) => {
    child.once('error', reject)
    child.once('close', (code) => resolve(code))
  }).finally(() => {
    clearTimeout(timer)
    // Children of test-runner (kafka-*.sh) may outlive it; take the group down.
    killGroup()
    process.removeListener('exit', killGroup)
  })
  await new Promise((r) => log.end(r))
  const seconds = (Date.now() - started) / 1000
  if (timedOut) throw new LibrdkafkaHarnessError(`run-test.sh did not finish in ${o.timeoutMs / 1000}s (log: ${logFile})`)
  const summary = parseSummary(output)
  if (summary.size === 0) {
    throw new LibrdkafkaHarnessError(`run-test.sh exited ${exitCode} without a test summary (log: ${logFile}):\n${output.slice(-3000)}`)
  }
  const local = localTests(o.testsDir)
  const results = [...summary.values()]
    .filter((r) => !local.has(r.name))
    .filter((r) => !(r.state === 'SKIPPED' && NOT_SELECTED.some((re) => re.test(r.reason))))
    .sort((a, b) => a.name.localeCompare(b.name))
  return { results, logFile, seconds, exitCode }
}
