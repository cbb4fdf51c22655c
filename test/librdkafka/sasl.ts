/**
 * The SASL pass: librdkafka's tests that skip on a PLAINTEXT cluster (0135, 0142) run
 * again against a tidelog-broker whose only listener is SASL_PLAINTEXT, with PLAIN,
 * SCRAM-SHA-256/512 and OAUTHBEARER (unsecured development tokens) enabled and KIP-368
 * re-authentication on. The SCRAM users are created with @tidelog/client's Admin
 * (AlterUserScramCredentials, KIP-554) once the broker listens.
 *
 * Results are named `<test>@<job>` (e.g. `0142_reauthentication@plain:do_test_producer`)
 * so expectations.txt lists them beside the main pass.
 *
 * 0142 runs without -Q: all of its subtests are SUB_TEST (not quick), so in quick mode
 * it passes without doing anything. It is split by SUBTESTS (a substring of
 * "function:line: title") because some of its subtests cannot run on one node, on
 * Apache Kafka either: do_test_consumer creates a replication-factor-3 topic, and the
 * share-consumer ones need KIP-932 share groups (librdkafka asks for 4.2).
 * 0126 (OIDC) stays not-applicable: it needs trivup's OIDC token endpoint
 * (VALID_OIDC_URL) and replication-factor-3 topics.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { Admin } from '@tidelog/client'
import { ANSI, runSuite, type SuiteOptions, type TestResult } from './suite.js'

/** A result of the SASL pass (`<test>@<job>`), as opposed to one of the main pass. */
export function isSaslResult(name: string): boolean {
  return name.includes('@')
}

/** The user PLAIN authenticates (written into the broker's JAAS-style users file). */
export const SASL_USER = { name: 'rdktest', password: 'rdktest-secret' }

/**
 * connections.max.reauth.ms of the SASL broker: librdkafka's test clusters use 10 s
 * (tests/interactive_broker_version.py --max-reauth-ms). 0142 reads it back through
 * DescribeConfigs and produces for 1.2 x this long per subtest, so it sets the pass's length.
 */
export const REAUTH_MS = 10_000

/** The broker flags (besides port, data dir and topic defaults) for the SASL pass. */
export function saslBrokerArgs(dir: string): string[] {
  const users = join(dir, 'plain-users.jaas')
  writeFileSync(users, `KafkaServer {\n  org.apache.kafka.common.security.plain.PlainLoginModule required\n  user_${SASL_USER.name}="${SASL_USER.password}";\n};\n`)
  return [
    '--listeners', 'SASL_PLAINTEXT://127.0.0.1:0',
    '--sasl-enabled-mechanisms', 'PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER',
    '--sasl-plain-users-file', users,
    '--connections-max-reauth-ms', String(REAUTH_MS),
  ]
}

const PLAIN = {
  'security.protocol': 'SASL_PLAINTEXT',
  'sasl.mechanism': 'PLAIN',
  'sasl.username': SASL_USER.name,
  'sasl.password': SASL_USER.password,
}

/** The SCRAM user (the same name and password as PLAIN's) for both mechanisms, made through our Admin over PLAIN. */
export async function createScramUsers(bootstrap: string): Promise<void> {
  const admin = new Admin({ brokers: [bootstrap], clientId: 'rdk-scram-setup', sasl: { mechanism: 'PLAIN', username: SASL_USER.name, password: SASL_USER.password } })
  try {
    await admin.alterUserScramCredentials(
      (['SCRAM-SHA-256', 'SCRAM-SHA-512'] as const).map((mechanism) => ({ user: SASL_USER.name, credentialInfo: { mechanism, iterations: 4096 }, password: SASL_USER.password })),
    )
  } finally {
    await admin.close()
  }
}

const scram = (mechanism: 'SCRAM-SHA-256' | 'SCRAM-SHA-512') => ({ ...PLAIN, 'sasl.mechanism': mechanism })

const OAUTHBEARER = {
  'security.protocol': 'SASL_PLAINTEXT',
  'sasl.mechanism': 'OAUTHBEARER',
  // librdkafka's built-in unsecured token (sasl.oauthbearer.method=default), which the
  // broker accepts while no JWKS endpoint is configured.
  'enable.sasl.oauthbearer.unsecure.jwt': 'true',
  'sasl.oauthbearer.config': 'principal=admin',
}

export interface SaslJob {
  /** Suffix of the result name: `<test>@<label>`. */
  label: string
  test: string
  conf: Record<string, string>
  quick: boolean
  subtests?: string
  /**
   * Subtests that must report PASS in the log: a SUBTESTS filter that matches nothing
   * (a renamed function, a changed title) would otherwise pass an empty test.
   */
  subtestsPassed: number
}

/** do_test_oauthbearer's title (it has no use_sasl_queue part, so both of its calls with one lifetime match); "test share consumer reauthentication ..." does not contain it. */
const oauthSubtest = (tokenLifetimeMs: number) => `test reauthentication with oauthbearer, reauth_time = ${REAUTH_MS}, token_lifetime = ${tokenLifetimeMs}`

export const SASL_JOBS: readonly SaslJob[] = [
  // Longest first (two subtests of 1.2 x REAUTH_MS or more each), so the parallel run ends
  // together. Re-authentication in the middle of a transaction, committed and aborted.
  { label: 'plain:do_test_txn_producer', test: '0142_reauthentication', conf: PLAIN, quick: false, subtests: 'do_test_txn_producer:', subtestsPassed: 2 },
  // A token that outlives connections.max.reauth.ms: the session ends at it and the same
  // token re-authenticates. Its sibling with a token of REAUTH_MS / 2 is left out: its
  // token (5 s) is refreshed at 80% of its life on a 1 s timer while librdkafka
  // re-authenticates at 90% of the session, so now and then the client re-authenticates
  // with the old token until it expires (seen: "invalid_token", or a Produce after the
  // session's end closing the connection, as Kafka closes it), whatever the broker.
  { label: 'oauthbearer:token-longer-than-reauth', test: '0142_reauthentication', conf: OAUTHBEARER, quick: false, subtests: oauthSubtest(REAUTH_MS * 2), subtestsPassed: 2 },
  { label: 'plain:do_test_producer', test: '0142_reauthentication', conf: PLAIN, quick: false, subtests: 'do_test_producer:', subtestsPassed: 1 },
  // SCRAM re-authenticates with a full new exchange (new nonces) on the same connection.
  { label: 'scram-sha-512:do_test_producer', test: '0142_reauthentication', conf: scram('SCRAM-SHA-512'), quick: false, subtests: 'do_test_producer:', subtestsPassed: 1 },
  { label: 'scram-sha-256:do_test_reauth_failure', test: '0142_reauthentication', conf: scram('SCRAM-SHA-256'), quick: false, subtests: 'do_test_reauth_failure:', subtestsPassed: 1 },
  // Credentials changed to wrong ones: the next re-authentication must fail.
  { label: 'plain:do_test_reauth_failure', test: '0142_reauthentication', conf: PLAIN, quick: false, subtests: 'do_test_reauth_failure:', subtestsPassed: 1 },
  // Wrong credentials, then rd_kafka_sasl_set_credentials() (both orders). Its share
  // consumer subtests are not quick, so -Q leaves them out.
  { label: 'plain', test: '0135_sasl_credentials', conf: PLAIN, quick: true, subtestsPassed: 2 },
  { label: 'scram-sha-256', test: '0135_sasl_credentials', conf: scram('SCRAM-SHA-256'), quick: true, subtestsPassed: 2 },
  { label: 'scram-sha-512', test: '0135_sasl_credentials', conf: scram('SCRAM-SHA-512'), quick: true, subtestsPassed: 2 },
]

/**
 * The jobs mostly wait (0142 produces at 200 messages/s for 12 s per subtest), so more
 * of them run at once than the main pass's -p2 without loading the 2 cores.
 */
export const SASL_PARALLEL = 4

export type SaslPassOptions = Omit<SuiteOptions, 'only' | 'extraConf' | 'quick' | 'subtests' | 'parallel'>

/** Subtests test-runner reported as passed ("[ do_test:82: title: PASS (0.30s) ]"). */
export function countSubtestPasses(log: string): number {
  return [...log.replace(ANSI, '').matchAll(/\[ \w+:\d+(?::[^\n]*)?: PASS \([\d.]+s\) \]/g)].length
}

/** Runs every SASL job (each its own run-test.sh, SASL_PARALLEL at a time); results renamed `<test>@<label>`. */
export async function runSaslPass(o: SaslPassOptions): Promise<{ results: TestResult[]; seconds: number; logFiles: string[] }> {
  const started = Date.now()
  const queue = SASL_JOBS.map((job, i) => ({ job, i }))
  const out: TestResult[][] = []
  const logFiles: string[] = []
  const worker = async () => {
    for (let next = queue.shift(); next; next = queue.shift()) {
      const { job, i } = next
      const workDir = join(o.workDir, `sasl-${i}`)
      mkdirSync(workDir, { recursive: true })
      const run = await runSuite({ ...o, workDir, parallel: 1, only: job.test, extraConf: job.conf, quick: job.quick, subtests: job.subtests })
      logFiles[i] = run.logFile
      const name = `${job.test}@${job.label}`
      const r = run.results.find((x) => x.name === job.test)
      const passed = countSubtestPasses(readFileSync(run.logFile, 'utf8'))
      if (!r) out[i] = [{ name, state: 'FAILED', seconds: 0, reason: `test-runner did not report ${job.test} (log: ${run.logFile})` }]
      else if (r.state === 'PASSED' && passed < job.subtestsPassed) {
        out[i] = [{ ...r, name, state: 'FAILED', reason: `only ${passed} of ${job.subtestsPassed} subtests passed (SUBTESTS=${job.subtests ?? ''}; log: ${run.logFile})` }]
      } else out[i] = [{ ...r, name }]
    }
  }
  await Promise.all(Array.from({ length: SASL_PARALLEL }, worker))
  return { results: out.flat(), seconds: (Date.now() - started) / 1000, logFiles }
}
