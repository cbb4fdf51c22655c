/**
 * librdkafka's integration tests against the tidelog broker (default) or Apache
 * Kafka, compared with test/librdkafka/expectations.txt.
 *
 *   npm run test:librdkafka                       build, run against tidelog-broker, compare
 *   node --import tsx test/librdkafka/run.ts --target kafka --write
 *                                                 same harness against Apache Kafka 4.4 (single
 *                                                 node); rewrites kafka-results.txt
 * Options: --tests 0001,0012 (TESTS substring filter, main pass only; no comparison), --parallel N,
 *          --pass all|main|sasl (tidelog: the PLAINTEXT pass, the SASL pass of sasl.ts, or both),
 *          --write (tidelog: also write tidelog-results.txt; needs --pass all), --timeout-s S.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { KAFKA_VERSIONS, peerUnavailable, startKafka, type KafkaNode } from '../helpers/kafka.js'
import { compare, mergeReruns, parseExpectations, parseKafkaResults, rerunCandidates, testLogLines, writeResults } from './expectations.js'
import { makeKafkaPath } from './kafka-path.js'
import { createScramUsers, isSaslResult, REAUTH_MS, runSaslPass, saslBrokerArgs } from './sasl.js'
import { buildLibrdkafka, LibrdkafkaHarnessError, runSuite, type SuiteRun, type TestResult } from './suite.js'

const here = fileURLToPath(new URL('.', import.meta.url))
const repoRoot = join(here, '..', '..')

/**
 * The release tidelog-broker presents as (apps/broker/README.md, "Which Kafka the
 * broker presents as"; pinned by test/broker-release-coherence.test.ts). librdkafka's
 * tests skip or adapt by TEST_KAFKA_VERSION, so it must match what ApiVersions says:
 * 4.0's APIs plus the KIP-932 share-group APIs, which librdkafka's share tests (0170-0185)
 * gate on 4.2. No other test of this librdkafka compares against anything above 4.0.
 */
const TIDELOG_PRESENTS_AS = '4.2.0'

/** librdkafka's test clusters (tests/scenarios/default.json): auto-create on, 4 partitions. */
const NUM_PARTITIONS = 4

interface Target {
  bootstrap: string
  kafkaVersion: string
  stop(): Promise<void>
}

async function startTidelog(workDir: string, extraArgs: string[] = []): Promise<Target> {
  const main = join(repoRoot, 'apps/broker/dist/main.js')
  if (!existsSync(main)) throw new LibrdkafkaHarnessError(`${main} is missing: run npx turbo run build --filter=@tidelog/broker... first`)
  const proc: ChildProcess = spawn(
    process.execPath,
    [
      main, '--port', '0', '--data-dir', join(workDir, 'data'), '--num-partitions', String(NUM_PARTITIONS), '--auto-create-topics', 'true', '--log-level', 'warn',
      // The authorizer Apache Kafka runs with below, for 0109 / 0115 / 0119's deny ACLs.
      '--authorizer-class-name', 'org.apache.kafka.metadata.authorizer.StandardAuthorizer', '--allow-everyone-if-no-acl-found', 'true',
      ...extraArgs,
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  )
  let stderr = ''
  proc.stderr!.on('data', (d: Buffer) => {
    stderr = (stderr + d.toString()).slice(-20_000)
  })
  const kill = () => proc.kill('SIGKILL')
  process.once('exit', kill)
  const port = await new Promise<number>((resolve, reject) => {
    let out = ''
    const timer = setTimeout(() => reject(new LibrdkafkaHarnessError(`tidelog-broker did not start in 30s:\n${stderr}`)), 30_000)
    proc.stdout!.on('data', (d: Buffer) => {
      out += d.toString()
      const m = /listening on [^\s]+:(\d+)/.exec(out)
      if (m) {
        clearTimeout(timer)
        resolve(Number(m[1]))
      }
    })
    proc.once('exit', (code) => {
      clearTimeout(timer)
      reject(new LibrdkafkaHarnessError(`tidelog-broker exited with ${code} before listening:\n${stderr}`))
    })
  })
  return {
    bootstrap: `127.0.0.1:${port}`,
    kafkaVersion: TIDELOG_PRESENTS_AS,
    async stop() {
      process.removeListener('exit', kill)
      if (proc.exitCode !== null || proc.signalCode !== null) return
      const exited = new Promise((r) => proc.once('exit', r))
      proc.kill('SIGTERM')
      const t = setTimeout(kill, 10_000)
      await exited
      clearTimeout(t)
      // Anything on stderr at warn level is worth seeing next to the results.
      if (stderr.trim()) console.log(`tidelog-broker stderr (last 3000 chars):\n${stderr.slice(-3000)}`)
    },
  }
}

async function startApacheKafka(): Promise<Target> {
  let node: KafkaNode
  try {
    node = await startKafka({
      version: KAFKA_VERSIONS.latest,
      properties: {
        'num.partitions': NUM_PARTITIONS,
        'auto.create.topics.enable': true,
        // What librdkafka's cluster_testing.py adds for single-broker clusters on 4.2+.
        'share.coordinator.state.topic.replication.factor': 1,
        'share.coordinator.state.topic.min.isr': 1,
        'group.share.min.record.lock.duration.ms': 1000,
        // 0109 / 0115 / 0119 add deny ACLs with kafka-acls.sh and expect authorization
        // errors; an authorizer that allows whatever no ACL denies keeps every other
        // test (and the controller link) unaffected.
        'authorizer.class.name': 'org.apache.kafka.metadata.authorizer.StandardAuthorizer',
        'allow.everyone.if.no.acl.found': true,
      },
    })
  } catch (err) {
    throw new LibrdkafkaHarnessError(peerUnavailable(`Apache Kafka ${KAFKA_VERSIONS.latest}`, err))
  }
  const kill = () => void node.stop()
  process.once('exit', kill)
  return {
    bootstrap: node.bootstrap,
    kafkaVersion: KAFKA_VERSIONS.latest,
    async stop() {
      process.removeListener('exit', kill)
      await node.stop()
    },
  }
}

/**
 * Tests expected to pass that failed in the full parallel run get one more run, alone,
 * on a fresh broker: a 2-core CI machine at the end of a long job has made a
 * consumer's 10 s poll (0052) time out once. A test that fails again is a failure;
 * one that passes is accepted and named in the output, never silently.
 */
const MAX_RERUNS = 3

async function rerunAlone(
  workDir: string,
  failed: TestResult[],
  o: { testsDir: string; kafkaPath: string; timeoutMs: number },
): Promise<SuiteRun> {
  const dir = join(workDir, 'rerun')
  mkdirSync(dir, { recursive: true })
  const only = failed.map((r) => r.name.slice(0, 4)).join(',')
  console.log(`\nrerunning alone on a fresh broker: ${failed.map((r) => r.name).join(', ')}`)
  const broker = await startTidelog(dir)
  try {
    const run = await runSuite({ testsDir: o.testsDir, bootstrap: broker.bootstrap, kafkaVersion: broker.kafkaVersion, kafkaPath: o.kafkaPath, workDir: dir, parallel: 1, timeoutMs: o.timeoutMs, only })
    for (const r of run.results) console.log(`  rerun ${r.name} ${r.state}${r.reason ? ` ${r.reason}` : ''}`)
    return run
  } finally {
    await broker.stop()
  }
}

function fmt(s: number): string {
  return `${Math.round(s)}s`
}

function tally(results: TestResult[]): Record<'PASSED' | 'FAILED' | 'SKIPPED' | 'other', number> {
  const counts = { PASSED: 0, FAILED: 0, SKIPPED: 0, other: 0 }
  for (const r of results) {
    if (r.state === 'PASSED' || r.state === 'FAILED' || r.state === 'SKIPPED') counts[r.state]++
    else counts.other++
  }
  return counts
}

function countLine(c: ReturnType<typeof tally>): string {
  return `${c.PASSED} passed, ${c.FAILED} failed, ${c.SKIPPED} skipped${c.other ? `, ${c.other} unfinished` : ''}`
}

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      target: { type: 'string', default: 'tidelog' },
      tests: { type: 'string' },
      pass: { type: 'string', default: 'all' },
      parallel: { type: 'string', default: '2' },
      write: { type: 'boolean', default: false },
      'timeout-s': { type: 'string', default: '900' },
    },
  })
  const target = values.target
  if (target !== 'tidelog' && target !== 'kafka') throw new LibrdkafkaHarnessError(`--target must be tidelog or kafka, not ${target}`)
  const pass = values.pass
  if (pass !== 'all' && pass !== 'main' && pass !== 'sasl') throw new LibrdkafkaHarnessError(`--pass must be all, main or sasl, not ${pass}`)
  // The SASL pass is tidelog's (Apache Kafka's harness node has no SASL listener); --tests picks main-pass tests.
  const runMain = pass !== 'sasl'
  const runSasl = target === 'tidelog' && pass !== 'main' && !values.tests
  if (!runMain && !runSasl) throw new LibrdkafkaHarnessError('--pass sasl runs against tidelog only, without --tests')
  if (values.write && pass !== 'all') throw new LibrdkafkaHarnessError('--write needs both passes (--pass all)')
  const t0 = Date.now()
  const testsDir = await buildLibrdkafka()
  const tBuild = (Date.now() - t0) / 1000
  console.log(`librdkafka tests: ${testsDir} (build/cache ${fmt(tBuild)})`)

  const workDir = mkdtempSync(join(tmpdir(), `tidelog-librdkafka-${target}-`))
  let broker: Target | undefined
  // Ctrl-C / SIGTERM: stop the broker (Kafka needs an async stop), then exit; the
  // 'exit' hooks kill run-test.sh's process group.
  for (const sig of ['SIGINT', 'SIGTERM'] as const) {
    process.once(sig, () => {
      void (broker?.stop() ?? Promise.resolve()).finally(() => process.exit(130))
    })
  }
  let suite: SuiteRun | undefined
  let sasl: Awaited<ReturnType<typeof runSaslPass>> | undefined
  let kafkaVersion = TIDELOG_PRESENTS_AS
  const timeoutMs = Number(values['timeout-s']) * 1000
  const parallel = Number(values.parallel)
  const t1 = Date.now()
  let kafkaPath = ''
  try {
    kafkaPath = await makeKafkaPath(join(workDir, 'kafka-path'), KAFKA_VERSIONS.latest)
    if (runMain) {
      broker = target === 'tidelog' ? await startTidelog(workDir) : await startApacheKafka()
      kafkaVersion = broker.kafkaVersion
      console.log(`${target} on ${broker.bootstrap}, TEST_KAFKA_VERSION=${broker.kafkaVersion}, KAFKA_PATH=${kafkaPath}`)
      suite = await runSuite({ testsDir, bootstrap: broker.bootstrap, kafkaVersion, kafkaPath, workDir, parallel, timeoutMs, only: values.tests })
      await broker.stop()
      broker = undefined
    }
    if (runSasl) {
      const dir = join(workDir, 'sasl')
      mkdirSync(dir, { recursive: true })
      broker = await startTidelog(dir, saslBrokerArgs(dir))
      await createScramUsers(broker.bootstrap, dir)
      console.log(`SASL pass: tidelog on SASL_SSL ${broker.bootstrap} (certificates: tidelog-broker certs), connections.max.reauth.ms=${REAUTH_MS}`)
      sasl = await runSaslPass({ testsDir, bootstrap: broker.bootstrap, kafkaVersion: broker.kafkaVersion, kafkaPath, workDir: dir, timeoutMs })
    }
  } finally {
    await broker?.stop()
  }
  const tStart = (Date.now() - t1) / 1000 - (suite?.seconds ?? 0) - (sasl?.seconds ?? 0)
  const results = [...(suite?.results ?? []), ...(sasl?.results ?? [])].sort((a, b) => a.name.localeCompare(b.name))
  for (const r of results) if (r.state !== 'PASSED') console.log(`  ${r.name} ${r.state} ${r.reason}`)
  const mainCounts = tally(suite?.results ?? [])
  const saslCounts = tally(sasl?.results ?? [])
  if (suite) {
    console.log(`${target}: ${suite.results.length} broker tests: ${countLine(mainCounts)} (run-test.sh ${fmt(suite.seconds)}; log ${suite.logFile})`)
  }
  if (sasl) console.log(`${target} SASL pass: ${sasl.results.length} runs: ${countLine(saslCounts)} (${fmt(sasl.seconds)}; logs ${sasl.logFiles.join(' ')})`)
  console.log(`broker starts and stops: ${fmt(tStart)}`)

  const header = [
    `librdkafka tests against ${target === 'kafka' ? `Apache Kafka ${KAFKA_VERSIONS.latest}` : 'tidelog-broker'} (single node, num.partitions=${NUM_PARTITIONS}),`,
    `TEST_KAFKA_VERSION=${kafkaVersion}, run-test.sh -Q -E -L -p${values.parallel}, ${new Date().toISOString()}`,
    `${mainCounts.PASSED} passed, ${mainCounts.FAILED} failed, ${mainCounts.SKIPPED} skipped in ${fmt(suite?.seconds ?? 0)}`,
    ...(sasl
      ? [`SASL pass (<test>@<job>: SASL_SSL, PLAIN / SCRAM-SHA-256/512 / OAUTHBEARER, connections.max.reauth.ms=${REAUTH_MS}; sasl.ts):`, `${countLine(saslCounts)} of ${sasl.results.length} runs in ${fmt(sasl.seconds)}`]
      : []),
  ]
  if (values.tests) {
    console.log('--tests given: no comparison with expectations.txt')
    return mainCounts.FAILED ? 1 : 0
  }
  if (target === 'kafka') {
    if (values.write) writeResults(join(here, 'kafka-results.txt'), header, results)
    return 0
  }
  if (values.write) writeResults(join(here, 'tidelog-results.txt'), header, results)
  // A single pass is compared with its own part of the file only.
  const expected = new Map([...parseExpectations(join(here, 'expectations.txt'))].filter(([name]) => (isSaslResult(name) ? runSasl : runMain)))
  const kafkaResults = parseKafkaResults(join(here, 'kafka-results.txt'))
  let cmp = compare(results, expected, kafkaResults)
  const failedPasses = rerunCandidates(suite?.results ?? [], expected)
  // More than a few failures is a broken broker, not load: no rerun.
  if (suite && failedPasses.length > 0 && failedPasses.length <= MAX_RERUNS) {
    const log = readFileSync(suite.logFile, 'utf8')
    for (const r of failedPasses) {
      const lines = testLogLines(log, r.name)
      console.log(`\n--- ${r.name}: its last ${Math.min(40, lines.length)} of ${lines.length} log lines (${suite.logFile}) ---`)
      for (const l of lines.slice(-40)) console.log(`  ${l}`)
    }
    const rerun = await rerunAlone(workDir, failedPasses, { testsDir, kafkaPath, timeoutMs })
    const { merged, notes } = mergeReruns(results, failedPasses, rerun.results)
    cmp = compare(merged, expected, kafkaResults)
    cmp.notes.push(...notes)
  }
  for (const n of cmp.notes) console.log(`note: ${n}`)
  if (cmp.problems.length) {
    console.log(`\nlibrdkafka expectations NOT met (${cmp.problems.length}):`)
    for (const p of cmp.problems) console.log(`  - ${p}`)
    return 1
  }
  console.log('librdkafka expectations met')
  rmSync(workDir, { recursive: true, force: true })
  return 0
}

main().then(
  (code) => process.exit(code),
  (err) => {
    console.error(err instanceof Error ? `${err.name}: ${err.message}` : err)
    process.exit(1)
  },
)
