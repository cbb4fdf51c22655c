/**
 * Certificates from `tidelog-broker certs` (issue 16) as clients no one here wrote check them:
 * the broker README's five-line secure setup runs as written (certificates, a SASL_SSL broker,
 * a SCRAM user from kafka-configs.sh, a Java producer to localhost), and the generated PEM and
 * PKCS12 files pass the Java client's and librdkafka's host name checks for localhost and
 * 127.0.0.1, not for another address. Split from security-broker.test.ts; neither starts Kafka.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type Broker, startBroker } from '@tidelog/broker'
import { Consumer } from '@tidelog/consumer'
import { RawClient } from '../../apps/broker/test/helpers/raw-client.js'
import { upsertScramUser } from '../../apps/broker/test/security/helpers.js'
import { type DevCertificateFiles, generateDevCertificates } from '../../apps/broker/src/security/certs/generate.js'
import { PASSWORD, TLS_PROBE, optional, run, runShell, shellBlock, version } from './security-devcerts.js'
import { fetchKafka, freePort, javaClientVersion, javaTool, peerUnavailable } from '../helpers/kafka.js'
import { kcatVersion, recordPeer } from '../helpers/peers.js'

// Certificates from `tidelog-broker certs`, checked by clients with their host name check on
// (Java's default ssl.endpoint.identification.algorithm=https, librdkafka's since 1.9).
describe('development certificates from tidelog-broker certs, with the host name checked', () => {
  const MAIN = fileURLToPath(new URL('../../apps/broker/src/main.ts', import.meta.url))
  const TSX = createRequire(import.meta.url).resolve('tsx')
  const kcat = optional('kcat', kcatVersion)

  async function javaOrSkip(ctx: { skip: (note?: string) => void }): Promise<{ libs: string; version: string } | undefined> {
    try {
      return { libs: await fetchKafka(version), version: await javaClientVersion(version) }
    } catch (e) {
      ctx.skip(peerUnavailable(`Apache Kafka ${version} jars`, e) as string)
      return undefined
    }
  }

  it("the broker README's five-line secure setup runs as written: certs, SASL_SSL broker, SCRAM user from kafka-configs.sh, a Java producer", async (ctx) => {
    const java = await javaOrSkip(ctx)
    if (java === undefined) return
    const lines = shellBlock(new URL('../../apps/broker/README.md', import.meta.url), '## Security')
    expect(lines, 'the first sh block of the broker README security section').toHaveLength(5)
    const [plainPort, securePort] = [await freePort(), await freePort()]
    const dir = mkdtempSync(join(tmpdir(), 'tidelog-readme-secure-'))
    // The README's commands as shell functions: npx runs the broker's source, Kafka's scripts their main classes.
    const shell = runShell([
      'set -e',
      `npx() { [ "$1" = tidelog-broker ] || exit 97; shift; node --import ${JSON.stringify(pathToFileURL(TSX).href)} ${JSON.stringify(MAIN)} "$@"; }`,
      `kafka_tool() { m=$1; shift; java -Xms64m -Xmx256m -XX:TieredStopAtLevel=1 -cp ${JSON.stringify(`${java.libs}/*`)} "$m" "$@"; }`,
      'kafka-configs.sh() { kafka_tool org.apache.kafka.tools.ConfigCommand "$@"; }',
      'kafka-console-producer.sh() { kafka_tool org.apache.kafka.tools.ConsoleProducer "$@"; }',
      ...lines.map((l) => l.replaceAll(':9092', `:${plainPort}`).replaceAll(':9093', `:${securePort}`)),
      // Harness: hold on until the test has read what the producer wrote; stop() then ends the process group.
      'echo SETUP-DONE',
      'read _',
    ].join('\n'), dir)
    try {
      const done = await shell.waitFor('SETUP-DONE', 150_000)
      const [out, err] = [shell.out(), shell.err()]
      expect(done, `stdout:\n${out}\nstderr:\n${err}`).toBe('done')
      expect(out).toContain('new CA certs/ca.pem; server certificate for DNS:localhost, IP:127.0.0.1, IP:::1')
      expect(out).toContain('Completed updating config for user alice.')
      expect(err, 'the Java producer logged no error').not.toMatch(/ERROR|Exception/)
      // What the Java producer sent, read back over SASL_SSL as alice, through localhost.
      const consumer = new Consumer({
        brokers: [`localhost:${securePort}`], ssl: { ca: readFileSync(join(dir, 'certs', 'ca.pem'), 'utf8') },
        sasl: { mechanism: 'scram-sha-512', username: 'alice', password: 'alice-secret' }, groupId: 'readme-check', autoOffsetReset: 'earliest',
      })
      await consumer.subscribe(['demo'])
      let value: string | undefined
      for await (const m of consumer) {
        value = m.value?.toString()
        break
      }
      await consumer.close()
      expect(value).toBe('hello')
      recordPeer('Java client', java.version)
    } finally {
      await shell.stop()
      rmSync(dir, { recursive: true, force: true })
    }
  })

  describe('one broker on the generated PEM files (SSL with mTLS, SASL_SSL, and an SSL listener on 127.0.0.2), one on server.p12', () => {
    let dir: string
    let files: DevCertificateFiles
    let pem: Broker
    let p12: Broker
    const port = (b: Broker, name: string) => b.listeners.find((l) => l.name === name)!.port

    beforeAll(async () => {
      dir = mkdtempSync(join(tmpdir(), 'tidelog-devcerts-'))
      files = generateDevCertificates({ dir: join(dir, 'certs') })
      pem = await startBroker({
        dataDir: join(dir, 'pem'),
        listeners: 'PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0,SASL_SSL://127.0.0.1:0,ELSEWHERE://127.0.0.2:0',
        listenerSecurityProtocolMap: 'PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_SSL:SASL_SSL,ELSEWHERE:SSL',
        sslKeystoreLocation: files.serverKeystore, sslTruststoreLocation: files.caCert, sslClientAuth: 'required',
        connectionFailedAuthenticationDelayMs: 0, logLevel: 'error',
      })
      const c = await RawClient.connect(port(pem, 'PLAINTEXT'))
      await upsertScramUser(c, 'alice', PASSWORD, 'SCRAM-SHA-512')
      c.close()
      p12 = await startBroker({
        dataDir: join(dir, 'p12'), listeners: 'SSL://127.0.0.1:0',
        sslKeystoreType: 'PKCS12', sslKeystoreLocation: files.serverP12, sslKeystorePassword: files.password, logLevel: 'error',
      })
    })
    afterAll(async () => {
      await pem?.close()
      await p12?.close()
      rmSync(dir, { recursive: true, force: true })
    })

    it("the Java client over SSL (client.p12 or client-keystore.pem; ca.pem or truststore.p12) and SASL_SSL to localhost and 127.0.0.1; 127.0.0.2, not in the certificate, is refused; a PKCS12 broker", async (ctx) => {
      const java = await javaOrSkip(ctx)
      if (java === undefined) return
      const props = (name: string, lines: Record<string, string>) => {
        const f = join(dir, `${name}.properties`)
        writeFileSync(f, Object.entries(lines).map(([k, v]) => `${k}=${v}`).join('\n') + '\n')
        return f
      }
      const pemTrust = { 'ssl.truststore.type': 'PEM', 'ssl.truststore.location': files.caCert }
      const p12Trust = { 'ssl.truststore.type': 'PKCS12', 'ssl.truststore.location': files.truststoreP12, 'ssl.truststore.password': files.password }
      const sasl = props('sasl', {
        'security.protocol': 'SASL_SSL', 'sasl.mechanism': 'SCRAM-SHA-512', ...pemTrust,
        'sasl.jaas.config': `org.apache.kafka.common.security.scram.ScramLoginModule required username="alice" password="${PASSWORD}";`,
      })
      const pemKeystore = props('pem-keystore', { 'security.protocol': 'SSL', ...p12Trust, 'ssl.keystore.type': 'PEM', 'ssl.keystore.location': files.clientKeystore })
      const plainTls = props('tls', { 'security.protocol': 'SSL', ...pemTrust })
      const cases: [string, string, string][] = [
        // client-ssl.properties is the file the command writes: PEM truststore, client.p12.
        ['ssl-localhost', `localhost:${port(pem, 'SSL')}`, files.clientProperties],
        ['ssl-ip', `127.0.0.1:${port(pem, 'SSL')}`, pemKeystore],
        // SASL_SSL through localhost is the README setup's producer, above.
        ['sasl-ip', `127.0.0.1:${port(pem, 'SASL_SSL')}`, sasl],
        ['elsewhere', `127.0.0.2:${port(pem, 'ELSEWHERE')}`, files.clientProperties],
        ['p12-broker', `localhost:${p12.listeners[0]!.port}`, plainTls],
      ]
      const source = join(dir, 'TlsProbe.java')
      writeFileSync(source, TLS_PROBE)
      const { stdout } = await javaTool(source, cases.map((c) => c.join('|')), { version, timeoutMs: 120_000 })
      const results = new Map(stdout.split('\n').filter((l) => l.startsWith('probe ')).map((l) => [l.split(' ')[1]!, l.split(' ').slice(2).join(' ')]))
      for (const name of ['ssl-localhost', 'ssl-ip', 'sasl-ip', 'p12-broker']) expect(results.get(name), `${name}\n${stdout}`).toMatch(/^OK nodes 127\.0\.0\.1:\d+ topic created$/)
      expect(results.get('elsewhere'), stdout).toMatch(/^FAIL SslAuthenticationException.*No subject alternative names matching IP address 127\.0\.0\.2 found/)
      recordPeer('Java client', java.version)
    })

    it.skipIf(!kcat)('kcat (librdkafka) over SSL with client.pem checks the host name: localhost and 127.0.0.1 pass, 127.0.0.2 is refused', async () => {
      const tls = ['-X', 'security.protocol=SSL', '-X', 'ssl.endpoint.identification.algorithm=https', '-X', `ssl.ca.location=${files.caCert}`,
        '-X', `ssl.key.location=${files.clientKey}`, '-X', `ssl.certificate.location=${files.clientCert}`]
      for (const host of ['localhost', '127.0.0.1']) {
        const r = await run('kcat', ['-b', `${host}:${port(pem, 'SSL')}`, ...tls, '-L', '-m', '15'])
        expect(r.status, `${host}: ${r.stderr}`).toBe(0)
        expect(r.stdout).toContain(`at 127.0.0.1:${port(pem, 'SSL')}`)
      }
      const wrong = await run('kcat', ['-b', `127.0.0.2:${port(pem, 'ELSEWHERE')}`, ...tls, '-L', '-m', '3'])
      expect(wrong.status).not.toBe(0)
      expect(wrong.stderr).toMatch(/certificate verify failed|Broker certificate could not be verified|IP address mismatch/i)
      recordPeer('kcat', kcat!)
    })
  })
})
