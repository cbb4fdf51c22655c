/**
 * @tidelog/client over SASL (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, with KIP-368 session expiry)
 * and TLS against real Apache Kafka. The broker's certificate is made here with the JDK's
 * keytool; SCRAM users are created with Kafka's own ConfigCommand.
 */
import { execFile } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, realpathSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startBroker } from '@tidelog/broker'
import { Admin, AdminError, KafkaConnectionError, SaslAuthenticationError, type SaslOptions, UserScramCredentialError } from '@tidelog/client'
import { KAFKA_VERSIONS, peerUnavailable, startKafka, type KafkaNode } from '../helpers/kafka.js'
import { kafkaUse, recordsPeers } from '../helpers/peers.js'

const run = promisify(execFile)

function keytool(): string {
  const home = process.env.JAVA_HOME
  if (home && existsSync(join(home, 'bin', 'keytool'))) return join(home, 'bin', 'keytool')
  // Next to the java binary the harness runs (Debian links /usr/bin/java into the JDK).
  if (existsSync('/usr/bin/java')) {
    const beside = join(dirname(realpathSync('/usr/bin/java')), 'keytool')
    if (existsSync(beside)) return beside
  }
  return 'keytool'
}

/** A self-signed broker certificate for 127.0.0.1 / localhost, as PKCS12 for Kafka and PEM for us. */
async function makeCertificate(dir: string): Promise<{ keystore: string; pem: string }> {
  const keystore = join(dir, 'broker.p12')
  const pemFile = join(dir, 'broker.pem')
  const common = ['-keystore', keystore, '-storetype', 'PKCS12', '-storepass', 'changeit']
  await run(keytool(), ['-genkeypair', '-alias', 'broker', '-keyalg', 'RSA', '-keysize', '2048', '-validity', '2',
    '-dname', 'CN=localhost', '-ext', 'SAN=ip:127.0.0.1,dns:localhost', '-keypass', 'changeit', ...common])
  await run(keytool(), ['-exportcert', '-rfc', '-alias', 'broker', '-file', pemFile, ...common])
  return { keystore, pem: readFileSync(pemFile, 'utf8') }
}

const JAAS_PLAIN =
  'org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" ' +
  'user_admin="admin-secret" user_alice="alice-secret";'
const JAAS_SCRAM = 'org.apache.kafka.common.security.scram.ScramLoginModule required;'
const REAUTH_MS = 4000

type Step = { step: string; result: unknown }

/** What a caller of our Admin sees, per step: sorted descriptions, or each user's error type and message. */
async function outcome(p: Promise<unknown>): Promise<unknown> {
  try {
    const r = await p
    // Kafka keeps a user's mechanisms in a hash map: their order is not part of the answer.
    for (const d of Array.isArray(r) ? r : []) (d as { credentialInfos?: { mechanism: string }[] }).credentialInfos?.sort((x, y) => x.mechanism.localeCompare(y.mechanism))
    return Array.isArray(r) ? [...r].sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b))) : r
  } catch (e) {
    if (!(e instanceof AdminError)) throw e
    const errors = e.errors.map((x) => (x instanceof UserScramCredentialError ? `${x.user}: ${x.type}: ${x.serverMessage ?? ''}` : String(x))).sort()
    return { errors, results: [...e.results].map((r) => JSON.stringify(r)).sort() }
  }
}

/**
 * One scripted session of SCRAM administration (KIP-554) through our Admin, run against Kafka
 * and against tidelog. Kafka's broker serves describes from its metadata image, a moment after
 * the controller commits an alteration, so each describe waits for the change it follows.
 */
async function scramAdminScript(a: Admin, login: (password: string) => Admin): Promise<Step[]> {
  const steps: Step[] = []
  const until = async (check: () => Promise<boolean>) => {
    for (const end = Date.now() + 15_000; !(await check()) && Date.now() < end; ) await new Promise((r) => setTimeout(r, 100))
  }
  const names = async () => (await a.describeUserScramCredentials()).map((d) => d.name)
  steps.push({
    step: 'alter',
    result: await outcome(
      a.alterUserScramCredentials([
        { user: 'carol', credentialInfo: { mechanism: 'SCRAM-SHA-512', iterations: 4096 }, password: 'carol-secret' },
        { user: 'dave', credentialInfo: { mechanism: 'SCRAM-SHA-256', iterations: 1000 }, password: 'dave-secret' },
        { user: 'erin', mechanism: 'SCRAM-SHA-256' },
        { user: 'frank', credentialInfo: { mechanism: 'SCRAM-SHA-256', iterations: 4096 }, password: 'f1' },
        { user: 'frank', credentialInfo: { mechanism: 'SCRAM-SHA-256', iterations: 4096 }, password: 'f2' },
        { user: 'gina', credentialInfo: { mechanism: 'SCRAM-SHA-256', iterations: 20000 }, password: 'gina-secret' },
      ]),
    ),
  })
  await until(async () => (await names()).includes('carol'))
  steps.push({ step: 'describe all', result: await outcome(a.describeUserScramCredentials()) })
  steps.push({ step: 'describe carol, nobody', result: await outcome(a.describeUserScramCredentials(['carol', 'nobody'])) })
  steps.push({ step: 'describe carol twice', result: await outcome(a.describeUserScramCredentials(['carol', 'carol'])) })
  const carol = login('carol-secret')
  let loggedIn = 'refused'
  await until(async () => {
    loggedIn = await carol.listTopics().then(() => 'ok', (e: unknown) => (e instanceof SaslAuthenticationError ? 'refused' : String(e)))
    return loggedIn === 'ok'
  })
  await carol.close()
  steps.push({ step: 'login carol', result: loggedIn })
  steps.push({ step: 'delete carol', result: await outcome(a.alterUserScramCredentials([{ user: 'carol', mechanism: 'SCRAM-SHA-512' }])) })
  await until(async () => !(await names()).includes('carol'))
  steps.push({ step: 'describe carol gone', result: await outcome(a.describeUserScramCredentials(['carol'])) })
  return steps
}

for (const version of [KAFKA_VERSIONS.latest, KAFKA_VERSIONS.previous]) {
  describe(`SASL and TLS against Apache Kafka ${version}`, () => {
    let kafka: KafkaNode | undefined
    recordsPeers(() => kafkaUse(kafka))
    let skip: string | undefined
    let pem = ''
    let dir = ''
    const admins: Admin[] = []
    const admin = (options: Omit<ConstructorParameters<typeof Admin>[0], 'brokers'> & { listener: string }): Admin => {
      const { listener, ...rest } = options
      const a = new Admin({ brokers: [`127.0.0.1:${kafka!.listeners[listener]}`], timeoutMs: 20_000, ...rest })
      admins.push(a)
      return a
    }

    beforeAll(async () => {
      dir = mkdtempSync(join(tmpdir(), 'tidelog-tls-'))
      try {
        const cert = await makeCertificate(dir)
        pem = cert.pem
        kafka = await startKafka({
          version,
          extraListeners: { SASL_PLAINTEXT: 'SASL_PLAINTEXT', SSL: 'SSL' },
          properties: {
            'sasl.enabled.mechanisms': 'PLAIN,SCRAM-SHA-256,SCRAM-SHA-512',
            'listener.name.sasl_plaintext.plain.sasl.jaas.config': JAAS_PLAIN,
            'listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config': JAAS_SCRAM,
            'listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config': JAAS_SCRAM,
            // KIP-368: the broker grants sessions this long and then closes the connection.
            'connections.max.reauth.ms': REAUTH_MS,
            'listener.name.ssl.ssl.keystore.location': cert.keystore,
            'listener.name.ssl.ssl.keystore.password': 'changeit',
            'listener.name.ssl.ssl.key.password': 'changeit',
            'listener.name.ssl.ssl.keystore.type': 'PKCS12',
          },
        })
        // SCRAM credentials live in the cluster metadata; Kafka's tool writes them
        // (AlterUserScramCredentials) over the plaintext listener.
        const configCommand = version.startsWith('3.') ? 'kafka.admin.ConfigCommand' : 'org.apache.kafka.tools.ConfigCommand'
        // One mechanism per call: Kafka refuses two changes to one user in a single request.
        for (const credential of ['SCRAM-SHA-256=[iterations=8192,password=alice-secret]', 'SCRAM-SHA-512=[password=alice-secret]']) {
          await kafka.java(configCommand, [
            '--bootstrap-server', kafka.bootstrap, '--alter', '--entity-type', 'users', '--entity-name', 'alice', '--add-config', credential,
          ])
        }
      } catch (e) {
        skip = peerUnavailable(`Apache Kafka ${version} with SASL/TLS listeners`, e)
      }
    })

    afterAll(async () => {
      await Promise.all(admins.map((a) => a.close()))
      await kafka?.stop()
      rmSync(dir, { recursive: true, force: true })
    })

    const mechanisms: [string, SaslOptions][] = [
      ['PLAIN', { mechanism: 'plain', username: 'alice', password: 'alice-secret' }],
      ['SCRAM-SHA-256', { mechanism: 'scram-sha-256', username: 'alice', password: 'alice-secret' }],
      ['SCRAM-SHA-512', { mechanism: 'scram-sha-512', username: 'alice', password: 'alice-secret' }],
    ]
    for (const [name, sasl] of mechanisms) {
      it(`SASL ${name}: authenticates, administers, and fails fast on a wrong password`, async (ctx) => {
        if (skip) return ctx.skip()
        const topic = `sasl-${name.toLowerCase()}-${Date.now()}`
        const a = admin({ listener: 'SASL_PLAINTEXT', sasl })
        const created = await a.createTopics([{ name: topic, partitions: 2, replicationFactor: 1 }])
        expect(created[0]!.partitions).toBe(2)
        const d = await a.describeCluster()
        // Metadata on this listener advertises this listener's port.
        expect(d.brokers[0]!.port).toBe(kafka!.listeners.SASL_PLAINTEXT)

        const wrong = admin({ listener: 'SASL_PLAINTEXT', sasl: { ...sasl, password: 'nope' } as SaslOptions })
        const started = Date.now()
        const err = await wrong.listTopics().catch((e) => e)
        expect(err).toBeInstanceOf(SaslAuthenticationError)
        expect(err.code).toBe(58)
        expect(err.mechanism).toBe(name)
        expect(Date.now() - started).toBeLessThan(10_000)
      })
    }

    it('replaces connections whose SASL session expires (connections.max.reauth.ms)', async (ctx) => {
      if (skip) return ctx.skip()
      const a = admin({ listener: 'SASL_PLAINTEXT', sasl: { mechanism: 'scram-sha-256', username: 'alice', password: 'alice-secret' } })
      await a.listTopics()
      const first = await a.cluster.anyConnection()
      const expiring = new Promise<number>((r) => first.once('expiring', () => r(Date.now())))
      const started = Date.now()
      // The client drains and replaces the connection at 85-95% of the granted lifetime.
      const at = (await expiring) - started
      expect(at).toBeGreaterThan(REAUTH_MS * 0.8)
      expect(at).toBeLessThan(REAUTH_MS)
      await new Promise((r) => setTimeout(r, 100))
      expect(first.isClosed).toBe(true)
      // No request failed on an expired session; the next one uses a fresh connection.
      const names = await a.listTopics()
      expect(Array.isArray(names)).toBe(true)
      expect(await a.cluster.anyConnection()).not.toBe(first)
    })

    it('Admin SCRAM users: the same describe and alter answers from Kafka and tidelog, and a user our Admin salted logs in on both', async (ctx) => {
      if (skip) return ctx.skip()
      const dataDir = join(dir, 'tidelog')
      const broker = await startBroker({ dataDir, listeners: 'PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0', connectionFailedAuthenticationDelayMs: 0, logLevel: 'error' })
      try {
        const ours = admin({ listener: 'PLAINTEXT' })
        const tidelog = new Admin({ brokers: [`127.0.0.1:${broker.listeners[0]!.port}`], timeoutMs: 20_000 })
        admins.push(tidelog)
        // Kafka's alice came from ConfigCommand; ours is made the same way by our Admin.
        await tidelog.alterUserScramCredentials([
          { user: 'alice', credentialInfo: { mechanism: 'SCRAM-SHA-256', iterations: 8192 }, password: 'alice-secret' },
          { user: 'alice', credentialInfo: { mechanism: 'SCRAM-SHA-512', iterations: 4096 }, password: 'alice-secret' },
        ])
        const sasl = (port: number) => (password: string) =>
          new Admin({ brokers: [`127.0.0.1:${port}`], timeoutMs: 20_000, sasl: { mechanism: 'scram-sha-512', username: 'carol', password } })
        const theirs = await scramAdminScript(ours, sasl(kafka!.listeners.SASL_PLAINTEXT!))
        const mine = await scramAdminScript(tidelog, sasl(broker.listeners[1]!.port))
        theirs.forEach((step, i) => expect(mine[i], `step ${i}`).toEqual(step))
        expect(mine).toHaveLength(theirs.length)
        // Worth comparing only if the answers say something.
        expect(JSON.stringify(mine)).toMatch(/RESOURCE_NOT_FOUND.*UNACCEPTABLE_CREDENTIAL|UNACCEPTABLE_CREDENTIAL.*RESOURCE_NOT_FOUND/)
        expect(mine).toContainEqual({ step: 'login carol', result: 'ok' })
      } finally {
        await broker.close()
      }
    }, 60_000)

    it('TLS: verifies the broker against the given CA and administers over it', async (ctx) => {
      if (skip) return ctx.skip()
      const a = admin({ listener: 'SSL', ssl: { ca: pem } })
      const topic = `tls-${Date.now()}`
      await a.createTopics([{ name: topic, partitions: 1, replicationFactor: 1 }])
      const d = await a.describeCluster()
      expect(d.brokers[0]!.port).toBe(kafka!.listeners.SSL)
      const [t] = await a.describeTopics([topic]).catch(async () => {
        await new Promise((r) => setTimeout(r, 500))
        return a.describeTopics([topic])
      })
      expect(t!.partitions).toHaveLength(1)

      // Without the CA the self-signed certificate is refused, at once and for good.
      const untrusted = admin({ listener: 'SSL', ssl: true })
      const err = await untrusted.listTopics().catch((e) => e)
      expect(err).toBeInstanceOf(KafkaConnectionError)
      expect(err.retriable).toBe(false)
      expect(err.message).toMatch(/TLS handshake/)
    })
  })
}
