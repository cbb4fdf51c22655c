/**
 * librdkafka's integration tests against the tidelog broker (default) or Apache
 * Kafka, compared with test/librdkafka/expectations.txt.
 *
 *   npm run test:librdkafka                       build, run against tidelog-broker, compare
 *   node --import tsx test/librdkafka/run.ts --target kafka --write
 *                                                 same harness against Apache Kafka 4.4 (single
 *                                                 node); rewrites kafka-results.txt
 * Options: --tests 0001,0012 (TESTS substring filter; no comparison), --parallel N,
 *          --write (tidelog: also write tidelog-results.txt), --timeout-s S.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { KAFKA_VERSIONS, peerUnavailable, startKafka, type KafkaNode } from '../helpers/kafka.js'
import { compare, parseExpectations, parseKafkaResults, writeResults } from './expectations.js'
import { makeKafkaPath } from './kafka-path.js'
import { buildLibrdkafka, LibrdkafkaHarnessError, runSuite, type SuiteRun } from './suite.js'

const here = fileURLToPath(new URL('.', import.meta.url))
const repoRoot = join(here, '..', '..')

/**
 * The release tidelog-broker presents as (apps/broker/README.md, "Which Kafka the
 * broker presents as"; pinned by test/broker-release-coherence.test.ts). librdkafka's
 * tests skip or adapt by TEST_KAFKA_VERSION, so it must match what ApiVersions says.
 */
const TIDELOG_PRESENTS_AS = '4.0.0'

/** librdkafka's test clusters (tests/scenarios/default.json): auto-create on, 4 partitions. */
const NUM_PARTITIONS = 4

interface Target {
  bootstrap: string
  kafkaVersion: string
  stop(): Promise<void>
}

async function startTidelog(workDir: string): Promise<Target> {
  const main = join(repoRoot, 'apps/broker/dist/main.js')
  if (!existsSync(main)) throw new LibrdkafkaHarnessError(`${main} is missing: run npx turbo run build --filter=@tidelog/broker... first`)
  const proc: ChildProcess = spawn(
    process.execPath,
    [
      main, '--port', '0', '--data-dir', join(workDir, 'data'), '--num-partitions', String(NUM_PARTITIONS), '--auto-create-topics', 'true', '--log-level', 'warn',
      // The authorizer Apache Kafka runs with below, for 0109 / 0115 / 0119's deny ACLs.
      '--authorizer-class-name', 'org.apache.kafka.metadata.authorizer.StandardAuthorizer', '--allow-everyone-if-no-acl-found', 'true',
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

function fmt(s: number): string {
  return `${Math.round(s)}s`
}

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      target: { type: 'string', default: 'tidelog' },
      tests: { type: 'string' },
      parallel: { type: 'string', default: '2' },
      write: { type: 'boolean', default: false },
      'timeout-s': { type: 'string', default: '900' },
    },
  })
  const target = values.target
  if (target !== 'tidelog' && target !== 'kafka') throw new LibrdkafkaHarnessError(`--target must be tidelog or kafka, not ${target}`)
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
  let suite: SuiteRun
  const t1 = Date.now()
  try {
    const kafkaPath = await makeKafkaPath(join(workDir, 'kafka-path'), KAFKA_VERSIONS.latest)
    broker = target === 'tidelog' ? await startTidelog(workDir) : await startApacheKafka()
    console.log(`${target} on ${broker.bootstrap}, TEST_KAFKA_VERSION=${broker.kafkaVersion}, KAFKA_PATH=${kafkaPath}`)
    suite = await runSuite({
      testsDir,
      bootstrap: broker.bootstrap,
      kafkaVersion: broker.kafkaVersion,
      kafkaPath,
      workDir,
      parallel: Number(values.parallel),
      timeoutMs: Number(values['timeout-s']) * 1000,
      only: values.tests,
    })
  } finally {
    await broker?.stop()
  }
  const tStart = (Date.now() - t1) / 1000 - suite.seconds
  const counts = { PASSED: 0, FAILED: 0, SKIPPED: 0, other: 0 }
  for (const r of suite.results) {
    if (r.state === 'PASSED' || r.state === 'FAILED' || r.state === 'SKIPPED') counts[r.state]++
    else counts.other++
    if (r.state !== 'PASSED') console.log(`  ${r.name} ${r.state} ${r.reason}`)
  }
  console.log(
    `${target}: ${suite.results.length} broker tests: ${counts.PASSED} passed, ${counts.FAILED} failed, ${counts.SKIPPED} skipped` +
      `${counts.other ? `, ${counts.other} unfinished` : ''} (run-test.sh ${fmt(suite.seconds)}, broker start ${fmt(tStart)}; log ${suite.logFile})`,
  )

  const header = [
    `librdkafka tests against ${target === 'kafka' ? `Apache Kafka ${KAFKA_VERSIONS.latest}` : 'tidelog-broker'} (single node, num.partitions=${NUM_PARTITIONS}),`,
    `TEST_KAFKA_VERSION=${broker!.kafkaVersion}, run-test.sh -Q -E -L -p${values.parallel}, ${new Date().toISOString()}`,
    `${counts.PASSED} passed, ${counts.FAILED} failed, ${counts.SKIPPED} skipped in ${fmt(suite.seconds)}`,
  ]
  if (values.tests) {
    console.log('--tests given: no comparison with expectations.txt')
    return counts.FAILED ? 1 : 0
  }
  if (target === 'kafka') {
    if (values.write) writeResults(join(here, 'kafka-results.txt'), header, suite.results)
    return 0
  }
  if (values.write) writeResults(join(here, 'tidelog-results.txt'), header, suite.results)
  const cmp = compare(suite.results, parseExpectations(join(here, 'expectations.txt')), parseKafkaResults(join(here, 'kafka-results.txt')))
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
