/**
 * The tidelog broker's security (issue 16) as clients no one here wrote see it: Kafka's own
 * ConfigCommand creates a SCRAM user over the PLAINTEXT listener, then our client, the Java
 * client, kcat (librdkafka), kafka-python and kafkajs produce and consume over SASL_SSL with
 * SCRAM-SHA-512 and over SSL with a client certificate (mTLS); a wrong password and a missing
 * or stranger certificate are refused with the error each client reports. OAUTHBEARER with
 * unsecured and JWKS-signed tokens, and KIP-368 re-authentication of a Java producer.
 * The development certificates of `tidelog-broker certs` and the README's secure setup are in
 * security-broker-devcerts.test.ts.
 */
import { spawn } from 'node:child_process'
import { createServer } from 'node:http'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Kafka, logLevel } from 'kafkajs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type Broker, startBroker } from '@tidelog/broker'
import { Admin, SaslAuthenticationError } from '@tidelog/client'
import { Consumer } from '@tidelog/consumer'
import { Producer } from '@tidelog/producer'
import { ApiKeys } from '@tidelog/protocol'
import { RawClient } from '../../apps/broker/test/helpers/raw-client.js'
import { type TestCertificates, makeCertificates } from '../../apps/broker/test/security/certs.js'
import { upsertScramUser } from '../../apps/broker/test/security/helpers.js'
import { claims, jwks, signedJwt, signingKey } from '../../apps/broker/test/oauthbearer-helpers.js'
import { PASSWORD, PYTHON, optional, run, version } from './security-devcerts.js'
import { fetchKafka, javaClientVersion, javaTool, peerUnavailable } from '../helpers/kafka.js'
import { type PeerUse, kafkajsVersion, kcatVersion, pythonVersion, recordPeer, recordsPeers } from '../helpers/peers.js'

describe('security on the tidelog broker, seen by real clients', () => {
  let broker: Broker
  let dir: string
  let certs: TestCertificates
  let plain = ''
  let saslSsl = ''
  let ssl = ''
  let javaSkip: string | undefined
  let javaVersion: string | undefined
  const kcat = optional('kcat', kcatVersion)
  const kafkaPython = optional(`${PYTHON} module kafka`, () => pythonVersion(PYTHON, 'kafka.__version__', 'kafka'))
  const confluentKafka = optional(`${PYTHON} module confluent_kafka`, () =>
    pythonVersion(PYTHON, "confluent_kafka.version()[0] + ' (librdkafka ' + confluent_kafka.libversion()[0] + ')'", 'confluent_kafka'),
  )
  const used: PeerUse[] = []
  recordsPeers(() => (used.length > 0 ? used.splice(0) : undefined))

  const java = (main: string, args: string[], input?: string) => javaTool(main, args, { version, timeoutMs: 120_000, ...(input !== undefined ? { input } : {}) })
  const props = (name: string, lines: Record<string, string>): string => {
    const f = join(dir, name)
    writeFileSync(f, Object.entries(lines).map(([k, v]) => `${k}=${v}`).join('\n') + '\n')
    return f
  }
  const scramProps = (password: string) =>
    props(`scram-${password}.properties`, {
      'security.protocol': 'SASL_SSL',
      'sasl.mechanism': 'SCRAM-SHA-512',
      'sasl.jaas.config': `org.apache.kafka.common.security.scram.ScramLoginModule required username="alice" password="${password}";`,
      'ssl.truststore.type': 'PEM',
      'ssl.truststore.location': certs.caFile,
    })

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tidelog-security-'))
    certs = makeCertificates(dir)
    writeFileSync(join(dir, 'client-keystore.pem'), certs.client.key + certs.client.cert)
    try {
      await fetchKafka(version)
      javaVersion = await javaClientVersion(version)
    } catch (e) {
      javaSkip = peerUnavailable(`Apache Kafka ${version} jars`, e) as string
    }
    broker = await startBroker({
      dataDir: join(dir, 'data'),
      listeners: 'PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0,SSL://127.0.0.1:0',
      sslKeystoreLocation: certs.brokerKeystore,
      sslTruststoreLocation: certs.caFile,
      sslClientAuth: 'required',
      // OAUTHBEARER with Kafka's default, the unsecured validator: what the Java client's and librdkafka's
      // built-in development tokens (alg none) are made for.
      saslEnabledMechanisms: 'SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER',
      connectionFailedAuthenticationDelayMs: 0,
      logLevel: 'warn',
    })
    const [p, s, t] = broker.listeners
    plain = `127.0.0.1:${p!.port}`
    saslSsl = `127.0.0.1:${s!.port}`
    ssl = `127.0.0.1:${t!.port}`
  })

  afterAll(async () => {
    await broker?.close()
    rmSync(dir, { recursive: true, force: true })
  })

  it("Kafka's ConfigCommand creates a SCRAM-SHA-512 user on our broker (AlterUserScramCredentials), read back with DescribeUserScramCredentials", async (ctx) => {
    if (javaSkip) return ctx.skip()
    used.push({ peer: 'Java client', version: javaVersion! })
    await java('org.apache.kafka.tools.ConfigCommand', [
      '--bootstrap-server', plain, '--alter', '--add-config', `SCRAM-SHA-512=[iterations=8192,password=${PASSWORD}]`, '--entity-type', 'users', '--entity-name', 'alice',
    ])
    // ConfigCommand --describe for users also asks DescribeClientQuotas (quotas come with a later part
    // of issue 16), so the stored credential is read back with DescribeUserScramCredentials directly.
    const c = await RawClient.connect(broker.listeners[0]!.port)
    const d = await c.request(ApiKeys.DescribeUserScramCredentials, 0, { users: [{ name: 'alice' }] })
    c.close()
    expect(d.results).toEqual([{ user: 'alice', errorCode: 0, errorMessage: null, credentialInfos: [{ mechanism: 2, iterations: 8192 }] }])
  })

  it('our client produces and consumes over SASL_SSL with SCRAM-SHA-512; a wrong password is SASL_AUTHENTICATION_FAILED', async () => {
    await ensureUser()
    const tls = { ca: certs.ca }
    const sasl = { mechanism: 'scram-sha-512' as const, username: 'alice', password: PASSWORD }
    const admin = new Admin({ brokers: [saslSsl], ssl: tls, sasl })
    await admin.createTopics([{ name: 'secure-ours', partitions: 2 }])
    await admin.close()
    const producer = new Producer({ brokers: [saslSsl], ssl: tls, sasl, acks: 'all' })
    for (let i = 0; i < 50; i++) await producer.send({ topic: 'secure-ours', key: `k${i}`, value: `v${i}` })
    await producer.close()
    const consumer = new Consumer({ brokers: [saslSsl], ssl: tls, sasl, groupId: 'secure-ours', autoOffsetReset: 'earliest' })
    await consumer.subscribe(['secure-ours'])
    const seen = new Set<string>()
    for await (const m of consumer) {
      seen.add(m.value!.toString())
      if (seen.size === 50) break
    }
    await consumer.close()
    expect(seen.size).toBe(50)

    const wrong = new Admin({ brokers: [saslSsl], ssl: tls, sasl: { ...sasl, password: 'nope' }, timeoutMs: 10_000 })
    const err = await wrong.listTopics().catch((e: unknown) => e)
    await wrong.close()
    expect(err).toBeInstanceOf(SaslAuthenticationError)
    expect((err as SaslAuthenticationError).code).toBe(58)
    expect((err as Error).message).toContain('Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512')
  })

  it('the Java producer and consumer over SASL_SSL (SCRAM-SHA-512); a wrong password is SaslAuthenticationException', async (ctx) => {
    if (javaSkip) return ctx.skip()
    used.push({ peer: 'Java client', version: javaVersion! })
    const good = scramProps(PASSWORD)
    const input = Array.from({ length: 200 }, (_, i) => `java-${i}`).join('\n') + '\n'
    await java('org.apache.kafka.tools.ConsoleProducer', ['--bootstrap-server', saslSsl, '--topic', 'secure-java', '--producer.config', good], input)
    const { stdout } = await java('org.apache.kafka.tools.consumer.ConsoleConsumer', [
      '--bootstrap-server', saslSsl, '--topic', 'secure-java', '--group', 'secure-java', '--from-beginning', '--max-messages', '200',
      '--timeout-ms', '20000', '--consumer.config', good, '--consumer-property', 'group.protocol=classic',
    ])
    expect(new Set(stdout.split('\n').filter((l) => l.startsWith('java-'))).size).toBe(200)
    const bad = await java('org.apache.kafka.tools.TopicCommand', ['--bootstrap-server', saslSsl, '--list', '--command-config', scramProps('wrong')]).then(
      () => 'succeeded',
      (e: Error) => e.message,
    )
    expect(bad).toMatch(/SaslAuthenticationException: Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512/)
  })

  it('the Java client over SSL with a client certificate (mTLS, PEM keystore); without one it is refused', async (ctx) => {
    if (javaSkip) return ctx.skip()
    used.push({ peer: 'Java client', version: javaVersion! })
    const base = { 'security.protocol': 'SSL', 'ssl.truststore.type': 'PEM', 'ssl.truststore.location': certs.caFile }
    const withCert = props('mtls.properties', { ...base, 'ssl.keystore.type': 'PEM', 'ssl.keystore.location': join(dir, 'client-keystore.pem') })
    await java('org.apache.kafka.tools.ConsoleProducer', ['--bootstrap-server', ssl, '--topic', 'secure-mtls', '--producer.config', withCert], 'a\nb\nc\n')
    const { stdout } = await java('org.apache.kafka.tools.consumer.ConsoleConsumer', [
      '--bootstrap-server', ssl, '--topic', 'secure-mtls', '--from-beginning', '--max-messages', '3', '--timeout-ms', '20000', '--consumer.config', withCert,
    ])
    expect(stdout.split('\n').filter((l) => /^[a-c]$/.test(l)).sort(), stdout).toEqual(['a', 'b', 'c'])
    const without = props('no-cert.properties', base)
    const bad = await java('org.apache.kafka.tools.TopicCommand', ['--bootstrap-server', ssl, '--list', '--command-config', without]).then(
      () => 'succeeded',
      (e: Error) => e.message,
    )
    expect(bad).toMatch(/SslAuthenticationException|SSL handshake failed/)
  })

  it.skipIf(!kcat)('kcat (librdkafka) over SASL_SSL with SCRAM-SHA-512 and over SSL with mTLS; wrong password and stranger certificate refused', async () => {
    used.push({ peer: 'kcat', version: kcat! })
    const scram = (password: string) => ['-X', 'security.protocol=SASL_SSL', '-X', 'sasl.mechanisms=SCRAM-SHA-512', '-X', 'sasl.username=alice', '-X', `sasl.password=${password}`, '-X', `ssl.ca.location=${certs.caFile}`]
    const mtls = (key: string, cert: string) => ['-X', 'security.protocol=SSL', '-X', `ssl.ca.location=${certs.caFile}`, '-X', `ssl.key.location=${key}`, '-X', `ssl.certificate.location=${cert}`]
    await ensureUser()
    const p = await run('kcat', ['-b', saslSsl, ...scram(PASSWORD), '-P', '-t', 'secure-kcat'], 'one\ntwo\nthree\n')
    expect(p.status, p.stderr).toBe(0)
    const c = await run('kcat', ['-b', saslSsl, ...scram(PASSWORD), '-C', '-t', 'secure-kcat', '-o', 'beginning', '-e', '-q'])
    expect(c.stdout.split('\n').filter((l) => l !== '')).toEqual(['one', 'two', 'three'])
    const wrong = await run('kcat', ['-b', saslSsl, ...scram('wrong'), '-L', '-m', '10'])
    expect(wrong.status).not.toBe(0)
    expect(wrong.stderr).toMatch(/Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512/)
    const m = await run('kcat', ['-b', ssl, ...mtls(certs.client.keyFile, certs.client.certFile), '-L', '-t', 'secure-kcat'])
    expect(m.status, m.stderr).toBe(0)
    expect(m.stdout).toContain(`at ${ssl}`)
    writeFileSync(join(dir, 'rogue.key'), certs.rogue.key)
    writeFileSync(join(dir, 'rogue.pem'), certs.rogue.cert)
    const rogue = await run('kcat', ['-b', ssl, ...mtls(join(dir, 'rogue.key'), join(dir, 'rogue.pem')), '-L', '-m', '10'])
    expect(rogue.status).not.toBe(0)
  })

  it.skipIf(!kafkaPython)('kafka-python over SASL_SSL with SCRAM-SHA-512; a wrong password fails', async () => {
    used.push({ peer: 'kafka-python', version: kafkaPython! })
    await ensureUser()
    const script = `
import sys
from kafka import KafkaProducer, KafkaConsumer
bootstrap, ca, password = sys.argv[1], sys.argv[2], sys.argv[3]
conf = dict(bootstrap_servers=bootstrap, security_protocol='SASL_SSL', sasl_mechanism='SCRAM-SHA-512',
            sasl_plain_username='alice', sasl_plain_password=password, ssl_cafile=ca)
try:
    p = KafkaProducer(**conf)
except Exception as e:
    print('ERROR', type(e).__name__, e)
    sys.exit(0)
for i in range(20):
    p.send('secure-python', ('py-%d' % i).encode())
p.flush()
p.close()
c = KafkaConsumer('secure-python', auto_offset_reset='earliest', consumer_timeout_ms=8000, **conf)
print('READ', len(set(m.value for m in c)))
c.close()
`
    const ok = await run(PYTHON, ['-c', script, saslSsl, certs.caFile, PASSWORD])
    expect(ok.stdout, ok.stderr).toContain('READ 20')
    const bad = await run(PYTHON, ['-c', script, saslSsl, certs.caFile, 'wrong'])
    expect(bad.stdout, bad.stderr).toMatch(/ERROR .*(Authentication|NoBrokersAvailable)/)
  })

  it('kafkajs over SASL_SSL with SCRAM-SHA-512; a wrong password is KafkaJSSASLAuthenticationError', async () => {
    used.push({ peer: 'kafkajs', version: kafkajsVersion() })
    await ensureUser()
    const kafka = (password: string) =>
      new Kafka({ clientId: 'kjs', brokers: [saslSsl], ssl: { ca: [certs.ca] }, sasl: { mechanism: 'scram-sha-512', username: 'alice', password }, logLevel: logLevel.NOTHING, retry: { retries: 0 } })
    const producer = kafka(PASSWORD).producer()
    await producer.connect()
    await producer.send({ topic: 'secure-kafkajs', messages: Array.from({ length: 10 }, (_, i) => ({ value: `kjs-${i}` })) })
    await producer.disconnect()
    const admin = kafka(PASSWORD).admin()
    await admin.connect()
    const offsets = await admin.fetchTopicOffsets('secure-kafkajs')
    await admin.disconnect()
    expect(offsets.reduce((n, o) => n + Number(o.high), 0)).toBe(10)
    const bad = kafka('wrong').admin()
    const err = await bad.connect().catch((e: Error) => e)
    expect(err).toBeInstanceOf(Error)
    expect((err as Error).name).toBe('KafkaJSSASLAuthenticationError')
    expect((err as Error).message).toContain('Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512')
  })

  // A token whose principal sits in "email" rather than "sub": well formed, but the validator
  // requires sub, so the broker answers {"status":"invalid_token"} (RFC 6750) and then fails.
  const oauthJavaProps = (claim: 'sub' | 'email') =>
    props(`oauth-${claim}.properties`, {
      'security.protocol': 'SASL_SSL',
      'sasl.mechanism': 'OAUTHBEARER',
      'sasl.jaas.config': `org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required unsecuredLoginPrincipalClaimName="${claim}" unsecuredLoginStringClaim_${claim}="oauth-java";`,
      'ssl.truststore.type': 'PEM',
      'ssl.truststore.location': certs.caFile,
    })

  it('the Java client over SASL_SSL with OAUTHBEARER (its unsecured login callback handler); a token without sub is SaslAuthenticationException', async (ctx) => {
    if (javaSkip) return ctx.skip()
    used.push({ peer: 'Java client', version: javaVersion! })
    const input = Array.from({ length: 20 }, (_, i) => `oauth-java-${i}`).join('\n') + '\n'
    await java('org.apache.kafka.tools.ConsoleProducer', ['--bootstrap-server', saslSsl, '--topic', 'secure-oauth-java', '--producer.config', oauthJavaProps('sub')], input)
    const c = await RawClient.connect(broker.listeners[0]!.port)
    const offsets = await c.request(ApiKeys.ListOffsets, 7, {
      replicaId: -1, isolationLevel: 0, topics: [{ name: 'secure-oauth-java', partitions: [{ partitionIndex: 0, currentLeaderEpoch: -1, timestamp: -1n }] }],
    })
    c.close()
    expect(offsets.topics[0].partitions[0].offset).toBe(20n)
    const bad = await java('org.apache.kafka.tools.TopicCommand', ['--bootstrap-server', saslSsl, '--list', '--command-config', oauthJavaProps('email')]).then(
      () => 'succeeded',
      (e: Error) => e.message,
    )
    expect(bad).toMatch(/SaslAuthenticationException: \{"status":"invalid_token"\}/)
  })

  it.skipIf(!kcat)("kcat (librdkafka) over SASL_SSL with OAUTHBEARER (librdkafka's unsecured JWT); a token without sub is refused", async () => {
    used.push({ peer: 'kcat', version: kcat! })
    const oauth = (config: string) => ['-X', 'security.protocol=SASL_SSL', '-X', 'sasl.mechanisms=OAUTHBEARER', '-X', 'enable.sasl.oauthbearer.unsecure.jwt=true', '-X', `sasl.oauthbearer.config=${config}`, '-X', `ssl.ca.location=${certs.caFile}`]
    const p = await run('kcat', ['-b', saslSsl, ...oauth('principal=oauth-kcat'), '-P', '-t', 'secure-oauth-kcat'], 'one\ntwo\nthree\n')
    expect(p.status, p.stderr).toBe(0)
    const c = await run('kcat', ['-b', saslSsl, ...oauth('principal=oauth-kcat scope=kafka'), '-C', '-t', 'secure-oauth-kcat', '-o', 'beginning', '-e', '-q'])
    expect(c.stdout.split('\n').filter((l) => l !== ''), c.stderr).toEqual(['one', 'two', 'three'])
    const bad = await run('kcat', ['-b', saslSsl, ...oauth('principalClaimName=email principal=oauth-kcat'), '-L', '-m', '4'])
    expect(bad.status).not.toBe(0)
    expect(bad.stderr).toContain('{"status":"invalid_token"}')
  })

  it.skipIf(!confluentKafka)('confluent-kafka (librdkafka, python) over SASL_SSL with OAUTHBEARER; a token without sub is refused', async () => {
    used.push({ peer: 'confluent-kafka', version: confluentKafka! })
    const script = `
import sys
from confluent_kafka import Producer, Consumer
bootstrap, ca, config = sys.argv[1], sys.argv[2], sys.argv[3]
errors = []
conf = {'bootstrap.servers': bootstrap, 'security.protocol': 'SASL_SSL', 'sasl.mechanisms': 'OAUTHBEARER',
        'enable.sasl.oauthbearer.unsecure.jwt': True, 'sasl.oauthbearer.config': config, 'ssl.ca.location': ca,
        'error_cb': lambda e: errors.append(str(e))}
p = Producer(conf)
for i in range(10):
    p.produce('secure-oauth-python', ('py-%d' % i).encode())
left = p.flush(15)
if left:
    print('ERROR', left, 'unsent;', ' | '.join(errors))
    sys.exit(0)
c = Consumer(dict(conf, **{'group.id': 'secure-oauth-python', 'auto.offset.reset': 'earliest'}))
c.subscribe(['secure-oauth-python'])
seen = set()
for _ in range(60):
    m = c.poll(0.5)
    if m is not None and m.error() is None:
        seen.add(m.value())
    if len(seen) == 10:
        break
c.close()
print('READ', len(seen))
`
    const ok = await run(PYTHON, ['-c', script, saslSsl, certs.caFile, 'principal=oauth-python'])
    expect(ok.stdout, ok.stderr).toContain('READ 10')
    const bad = await run(PYTHON, ['-c', script.replace('p.flush(15)', 'p.flush(3)'), saslSsl, certs.caFile, 'principalClaimName=email principal=oauth-python'])
    expect(bad.stdout, bad.stderr).toMatch(/ERROR 10 unsent;.*\{"status":"invalid_token"\}/)
  })

  it('our client over SASL_SSL with OAUTHBEARER (an unsecured token from oauthBearerProvider); a token without sub is SASL_AUTHENTICATION_FAILED', async () => {
    const tls = { ca: certs.ca }
    const now = Math.floor(Date.now() / 1000)
    const jws = (claims: Record<string, unknown>) => `${Buffer.from('{"alg":"none"}').toString('base64url')}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}.`
    const sasl = (claims: Record<string, unknown>) => ({ mechanism: 'OAUTHBEARER' as const, oauthBearerProvider: () => ({ value: jws(claims) }) })
    const admin = new Admin({ brokers: [saslSsl], ssl: tls, sasl: sasl({ sub: 'oauth-ours', iat: now, exp: now + 600 }) })
    await admin.createTopics([{ name: 'secure-oauth-ours', partitions: 1 }])
    expect(await admin.listTopics()).toContain('secure-oauth-ours')
    await admin.close()
    const wrong = new Admin({ brokers: [saslSsl], ssl: tls, sasl: sasl({ email: 'oauth-ours', iat: now, exp: now + 600 }), timeoutMs: 10_000 })
    const err = await wrong.listTopics().catch((e: unknown) => e)
    await wrong.close()
    expect(err).toBeInstanceOf(SaslAuthenticationError)
    expect((err as SaslAuthenticationError).code).toBe(58)
    expect((err as Error).message).toContain('{"status":"invalid_token"}')
  })

  /** The SCRAM user, made through AlterUserScramCredentials when ConfigCommand has not run (Java missing). */
  async function ensureUser(): Promise<void> {
    const c = await RawClient.connect(broker.listeners[0]!.port)
    try {
      const d = await c.request(ApiKeys.DescribeUserScramCredentials, 0, { users: [{ name: 'alice' }] })
      if (d.results[0].errorCode !== 0) await upsertScramUser(c, 'alice', PASSWORD, 'SCRAM-SHA-512', 8192)
    } finally {
      c.close()
    }
  }
})

describe('OAUTHBEARER with JWKS-verified tokens (KIP-768) from confluent-kafka', () => {
  const confluentKafka = optional(`${PYTHON} module confluent_kafka`, () =>
    pythonVersion(PYTHON, "confluent_kafka.version()[0] + ' (librdkafka ' + confluent_kafka.libversion()[0] + ')'", 'confluent_kafka'),
  )
  // Debian's librdkafka is built without libcurl, so its OIDC token fetch is absent; oauth_cb hands
  // librdkafka the provider's token instead, as an application with its own OAuth library does.
  it.skipIf(!confluentKafka)("confluent-kafka's oauth_cb supplies a signed JWT; the broker checks it against the JWKS, and one signed by a stranger key is refused", async () => {
    const key = signingKey('jwks-1', 'ES256')
    const idp = createServer((req, res) => void res.writeHead(req.url === '/jwks' ? 200 : 404, { 'content-type': 'application/json' }).end(jwks(key)))
    await new Promise<void>((resolve) => idp.listen(0, '127.0.0.1', resolve))
    const dir = mkdtempSync(join(tmpdir(), 'tidelog-jwks-'))
    const b = await startBroker({
      dataDir: dir,
      listeners: 'SASL_PLAINTEXT://127.0.0.1:0',
      saslEnabledMechanisms: 'OAUTHBEARER',
      saslOauthbearerJwksEndpointUrl: `http://127.0.0.1:${(idp.address() as { port: number }).port}/jwks`,
      saslOauthbearerExpectedAudience: 'kafka',
      saslOauthbearerExpectedIssuer: 'tidelog-test-idp',
      connectionFailedAuthenticationDelayMs: 0,
      logLevel: 'error',
    })
    const script = `
import sys, time
from confluent_kafka import Producer, Consumer
bootstrap, token = sys.argv[1], sys.argv[2]
errors = []
conf = {'bootstrap.servers': bootstrap, 'security.protocol': 'SASL_PLAINTEXT', 'sasl.mechanisms': 'OAUTHBEARER',
        'oauth_cb': lambda _config: (token, time.time() + 600), 'error_cb': lambda e: errors.append(str(e))}
p = Producer(conf)
for i in range(5):
    p.produce('jwks-python', ('signed-%d' % i).encode())
left = p.flush(float(sys.argv[3]))
if left:
    print('ERROR', left, 'unsent;', ' | '.join(errors))
    sys.exit(0)
c = Consumer(dict(conf, **{'group.id': 'jwks-python', 'auto.offset.reset': 'earliest'}))
c.subscribe(['jwks-python'])
seen = set()
for _ in range(60):
    m = c.poll(0.5)
    if m is not None and m.error() is None:
        seen.add(m.value())
    if len(seen) == 5:
        break
c.close()
print('READ', len(seen))
`
    try {
      const token = (k: typeof key) => signedJwt(k, claims('py-app', 600, { aud: 'kafka', iss: 'tidelog-test-idp' }))
      const ok = await run(PYTHON, ['-c', script, `127.0.0.1:${b.port}`, token(key), '15'])
      expect(ok.stdout, ok.stderr).toContain('READ 5')
      const bad = await run(PYTHON, ['-c', script, `127.0.0.1:${b.port}`, token(signingKey('jwks-1', 'ES256')), '3'])
      expect(bad.stdout, bad.stderr).toMatch(/ERROR 5 unsent;.*\{"status":"invalid_token"\}/)
      recordPeer('confluent-kafka', confluentKafka!)
    } finally {
      await b.close()
      await new Promise((resolve) => idp.close(resolve))
      rmSync(dir, { recursive: true, force: true })
    }
  })
})

describe('KIP-368 re-authentication with the Java client', () => {
  it('a Java producer outliving connections.max.reauth.ms re-authenticates and loses nothing', async (ctx) => {
    let javaVersion: string
    try {
      await fetchKafka(version)
      javaVersion = await javaClientVersion(version)
    } catch (e) {
      return ctx.skip(peerUnavailable(`Apache Kafka ${version} jars`, e) as string)
    }
    const dir = mkdtempSync(join(tmpdir(), 'tidelog-reauth-'))
    const lines: string[] = []
    const logger = { level: 'debug' as const, enabled: () => true, error: (m: string) => lines.push(m), warn: (m: string) => lines.push(m), info: (m: string) => lines.push(m), debug: (m: string) => lines.push(m) }
    const broker = await startBroker({
      dataDir: dir,
      listeners: 'PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0',
      connectionsMaxReauthMs: 2000,
      logger,
    })
    try {
      const c = await RawClient.connect(broker.listeners[0]!.port)
      await upsertScramUser(c, 'alice', PASSWORD, 'SCRAM-SHA-512')
      c.close()
      const config = join(dir, 'client.properties')
      writeFileSync(config, [
        'security.protocol=SASL_PLAINTEXT',
        'sasl.mechanism=SCRAM-SHA-512',
        `sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="alice" password="${PASSWORD}";`,
      ].join('\n') + '\n')
      const authentications = () => lines.filter((l) => l.includes('authenticated as User:alice (SCRAM-SHA-512)')).length
      // ConsoleProducer fed one record at a time until the broker has seen four logins of alice,
      // so the producer outlives the 2 s session several times however slowly a loaded machine
      // starts the JVM (ProducerPerformance at a fixed rate bursts to catch up after a slow start
      // and could finish inside one session).
      // Spawned here rather than through javaTool, whose input is written all at once.
      const producer = spawn(process.env.JAVA_HOME ? join(process.env.JAVA_HOME, 'bin', 'java') : 'java', [
        '-Xms64m', '-Xmx256m', '-cp', `${await fetchKafka(version)}/*`, 'org.apache.kafka.tools.ConsoleProducer',
        '--bootstrap-server', `127.0.0.1:${broker.listeners[1]!.port}`, '--topic', 'reauth', '--producer.config', config, '--producer-property', 'acks=all',
      ], { stdio: ['pipe', 'ignore', 'pipe'] })
      let stderr = ''
      producer.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d))
      const exited = new Promise<number | null>((resolve) => producer.once('close', resolve))
      const deadline = Date.now() + 180_000
      let sent = 0
      try {
        while (authentications() < 4 && Date.now() < deadline && producer.exitCode === null) {
          producer.stdin.write(`reauth-${sent++}\n`)
          await new Promise((r) => setTimeout(r, 200))
        }
        producer.stdin.end()
        const killer = setTimeout(() => producer.kill('SIGKILL'), 60_000)
        expect(await exited, stderr).toBe(0)
        clearTimeout(killer)
      } finally {
        producer.kill('SIGKILL')
      }
      const expiries = lines.filter((l) => l.includes('session expired')).length
      // The session was renewed on the producer's connections rather than the broker cutting them.
      expect(authentications()).toBeGreaterThanOrEqual(4)
      expect(expiries).toBe(0)
      // acks=all, and ConsoleProducer flushes at the end of its input: every line is in the log.
      const admin = await RawClient.connect(broker.listeners[0]!.port)
      const offsets = await admin.request(ApiKeys.ListOffsets, 7, {
        replicaId: -1, isolationLevel: 0, topics: [{ name: 'reauth', partitions: [{ partitionIndex: 0, currentLeaderEpoch: -1, timestamp: -1n }] }],
      })
      admin.close()
      expect(offsets.topics[0].partitions[0].offset).toBe(BigInt(sent))
      recordPeer('Java client', javaVersion)
    } finally {
      await broker.close()
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
