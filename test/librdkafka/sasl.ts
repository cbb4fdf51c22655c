/**
 * The SASL pass: librdkafka's tests that skip on a PLAINTEXT cluster (0097, 0135, 0142)
 * run again against a tidelog-broker whose only listener is SASL_SSL, as issue 19 asks,
 * with PLAIN, SCRAM-SHA-256/512 and OAUTHBEARER (unsecured development tokens) enabled
 * and KIP-368 re-authentication on. The certificates are the broker's own development
 * ones (`tidelog-broker certs`, a CA and a server certificate for 127.0.0.1), and every
 * job's test.conf carries the client SSL settings trivup writes for its SSL clusters
 * (ssl.ca.location, ssl.certificate.location, ssl.key.location, ssl.key.password). The
 * SCRAM users are created with @tidelog/client's Admin (AlterUserScramCredentials,
 * KIP-554) once the broker listens.
 *
 * Results are named `<test>@<job>` (e.g. `0142_reauthentication@plain:do_test_producer`)
 * so expectations.txt lists them beside the main pass.
 *
 * 0142 runs without -Q: all of its subtests are SUB_TEST (not quick), so in quick mode
 * it passes without doing anything. It is split by SUBTESTS (a substring of
 * "function:line: title") because some of its subtests cannot run on one node, on
 * Apache Kafka either: do_test_consumer creates a replication-factor-3 topic, and the
 * share-consumer ones need KIP-932 share groups (librdkafka asks for 4.2).
 * 0097 (certificate verification callbacks and every way of loading keys and CAs) also
 * reads the SSL_* variables trivup exports, pointing at the same certificates in PEM,
 * DER and PKCS#12 (sslEnv).
 * 0126 (OIDC) stays not-applicable: it needs trivup's OIDC token endpoint
 * (VALID_OIDC_URL) and replication-factor-3 topics.
 */
import { execFileSync } from 'node:child_process'
import { createPrivateKey, X509Certificate } from 'node:crypto'
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Admin } from '@tidelog/client'
import { ANSI, LibrdkafkaHarnessError, runSuite, type SuiteOptions, type TestResult } from './suite.js'

const brokerMain = fileURLToPath(new URL('../../apps/broker/dist/main.js', import.meta.url))

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

/** Password of the PKCS#12 stores `tidelog-broker certs` writes (0097 reads client.p12 with it). */
const STORE_PASSWORD = 'rdktest-store'

/** Where the pass's certificates live: `tidelog-broker certs --dir <dir>/certs`. */
export function saslCertsDir(dir: string): string {
  return join(dir, 'certs')
}

/**
 * Makes the development certificates with the broker's own command, plus the DER copies
 * 0097 loads through set_ssl_cert() (trivup writes those with openssl; node's crypto
 * gives the same encodings: the certificate's DER, the key as PKCS#8 DER).
 */
export function makeSaslCerts(dir: string): string {
  const certs = saslCertsDir(dir)
  if (!existsSync(brokerMain)) throw new LibrdkafkaHarnessError(`${brokerMain} is missing: run npx turbo run build --filter=@tidelog/broker... first`)
  try {
    execFileSync(process.execPath, [brokerMain, 'certs', '--dir', certs, '--password', STORE_PASSWORD], { stdio: ['ignore', 'ignore', 'pipe'] })
  } catch (err) {
    throw new LibrdkafkaHarnessError(`tidelog-broker certs failed: ${(err as { stderr?: Buffer }).stderr?.toString() ?? String(err)}`)
  }
  for (const name of ['client', 'ca']) writeFileSync(join(certs, `${name}.der`), new X509Certificate(readFileSync(join(certs, `${name}.pem`))).raw)
  writeFileSync(join(certs, 'client.key.der'), createPrivateKey(readFileSync(join(certs, 'client.key'))).export({ format: 'der', type: 'pkcs8' }))
  return certs
}

/**
 * The client side of SSL in each job's test.conf, as trivup writes it for an SSL cluster.
 * The broker does not ask SASL_SSL clients for a certificate (as Kafka), so only 0097 uses
 * the client key; with a CA and the server certificate's IP:127.0.0.1, librdkafka's default
 * ssl.endpoint.identification.algorithm=https holds.
 */
export function sslClientConf(certs: string): Record<string, string> {
  return {
    'ssl.ca.location': join(certs, 'ca.pem'),
    'ssl.certificate.location': join(certs, 'client.pem'),
    'ssl.key.location': join(certs, 'client.key'),
    'ssl.key.password': STORE_PASSWORD,
  }
}

/** The SSL_* variables 0097 reads (trivup's names) for the same certificates in each encoding. */
export function sslEnv(certs: string): Record<string, string> {
  return {
    SSL_pkcs: join(certs, 'client.p12'),
    SSL_password: STORE_PASSWORD,
    SSL_pub_pem: join(certs, 'client.pem'),
    SSL_pub_der: join(certs, 'client.der'),
    SSL_priv_pem: join(certs, 'client.key'),
    SSL_priv_der: join(certs, 'client.key.der'),
    SSL_all_cas_pem: join(certs, 'ca.pem'),
    SSL_ca_der: join(certs, 'ca.der'),
    // The listener is SASL_SSL, which never asks for a client certificate.
    SSL_client_auth: 'none',
  }
}

/** The broker flags (besides port, data dir and topic defaults) for the SASL pass; makes the certificates and the PLAIN users file in dir. */
export function saslBrokerArgs(dir: string): string[] {
  const certs = makeSaslCerts(dir)
  const users = join(dir, 'plain-users.jaas')
  writeFileSync(users, `KafkaServer {\n  org.apache.kafka.common.security.plain.PlainLoginModule required\n  user_${SASL_USER.name}="${SASL_USER.password}";\n};\n`)
  return [
    '--listeners', 'SASL_SSL://127.0.0.1:0',
    '--ssl-keystore-location', join(certs, 'server-keystore.pem'),
    '--sasl-enabled-mechanisms', 'PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER',
    '--sasl-plain-users-file', users,
    '--connections-max-reauth-ms', String(REAUTH_MS),
  ]
}

const PLAIN = {
  'security.protocol': 'SASL_SSL',
  'sasl.mechanism': 'PLAIN',
  'sasl.username': SASL_USER.name,
  'sasl.password': SASL_USER.password,
}

/** The SCRAM user (the same name and password as PLAIN's) for both mechanisms, made through our Admin over PLAIN on the SASL_SSL listener. */
export async function createScramUsers(bootstrap: string, dir: string): Promise<void> {
  const ssl = { ca: readFileSync(join(saslCertsDir(dir), 'ca.pem')) }
  const admin = new Admin({ brokers: [bootstrap], clientId: 'rdk-scram-setup', ssl, sasl: { mechanism: 'PLAIN', username: SASL_USER.name, password: SASL_USER.password } })
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
  'security.protocol': 'SASL_SSL',
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
  /** Exports sslEnv's SSL_* variables to run-test.sh (0097 reads them). */
  sslEnv?: boolean
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
  // Certificate verification callbacks (accepting and refusing), and the client key,
  // certificate and CA loaded from files, PEM strings, and set_ssl_cert() in PEM, DER and
  // PKCS#12; also with librdkafka's own untrusted client2 certificates, which a SASL_SSL
  // listener never checks. 19 cases: 5 for each of 3 key setups, 3 DER / root-CA-only, 1 PKCS#12.
  { label: 'plain', test: '0097_ssl_verify', conf: PLAIN, quick: true, sslEnv: true, subtestsPassed: 19 },
]

/**
 * The jobs mostly wait (0142 produces at 200 messages/s for 12 s per subtest), so more
 * of them run at once than the main pass's -p2 without loading the 2 cores.
 */
export const SASL_PARALLEL = 4

export type SaslPassOptions = Omit<SuiteOptions, 'only' | 'extraConf' | 'quick' | 'subtests' | 'parallel' | 'env'>

/**
 * Subtests test-runner reported as passed: SUB_TEST_PASS's "[ do_test:82: title: PASS (0.30s) ]",
 * and 0097's own "[ PASSED: 358: SSL cert verify: ... ]" (it has no SUB_TEST).
 */
export function countSubtestPasses(log: string): number {
  const text = log.replace(ANSI, '')
  return [...text.matchAll(/\[ \w+:\d+(?::[^\n]*)?: PASS \([\d.]+s\) \]/g)].length + [...text.matchAll(/\[ PASSED: \d+: [^\n]*\]/g)].length
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
      const certs = saslCertsDir(o.workDir)
      const run = await runSuite({
        ...o, workDir, parallel: 1, only: job.test, extraConf: { ...sslClientConf(certs), ...job.conf }, quick: job.quick, subtests: job.subtests,
        env: job.sslEnv ? sslEnv(certs) : undefined,
      })
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
