/**
 * The clients' security options from the command line, a profile and TIDELOG_* variables,
 * against a broker whose only listener is SASL_PLAINTEXT (PLAIN users from a JAAS file).
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type Broker, startBroker } from '@tidelog/broker'
import { RawClient } from '../../../apps/broker/test/helpers/raw-client.js'
import { makeCertificates } from '../../../apps/broker/test/security/certs.js'
import { login, upsertScramUser } from '../../../apps/broker/test/security/helpers.js'
import { ensureBuilt, tidelog } from './helpers.js'

let broker: Broker
let dir: string
let bootstrap: string
let ssl: string
let saslSsl: string
let caFile: string

beforeAll(async () => {
  ensureBuilt()
  dir = mkdtempSync(join(tmpdir(), 'tidelog-cli-sasl-'))
  const users = join(dir, 'plain.jaas')
  writeFileSync(users, 'KafkaServer { org.apache.kafka.common.security.plain.PlainLoginModule required\n  user_alice="alice-secret";\n};\n')
  // The broker suite's certificates: a CA, and a broker certificate for localhost and 127.0.0.1.
  const certs = makeCertificates(dir)
  caFile = certs.caFile
  broker = await startBroker({
    dataDir: join(dir, 'data'),
    listeners: 'SASL_PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0,SASL_SSL://127.0.0.1:0',
    saslPlainUsersFile: users,
    sslKeystoreLocation: certs.brokerKeystore,
    sslTruststoreLocation: certs.caFile,
    connectionFailedAuthenticationDelayMs: 0,
    logLevel: 'error',
  })
  bootstrap = `127.0.0.1:${broker.listeners[0]!.port}`
  ssl = `127.0.0.1:${broker.listeners[1]!.port}`
  saslSsl = `127.0.0.1:${broker.listeners[2]!.port}`
})

afterAll(async () => {
  await broker?.close()
  rmSync(dir, { recursive: true, force: true })
})

describe.concurrent('security options from the command line', () => {
  it('PLAIN with flags, with TIDELOG_SASL_PASSWORD, and from a profile; a wrong password is one clear line, exit 3', async () => {
    const sasl = ['--security-protocol', 'SASL_PLAINTEXT', '--sasl-mechanism', 'PLAIN', '--sasl-username', 'alice']
    const created = await tidelog(['topics', 'create', 'secured', '-b', bootstrap, ...sasl, '--sasl-password', 'alice-secret'])
    expect(created).toMatchObject({ code: 0, stdout: 'Created topic secured.\n' })
    const produced = await tidelog(['produce', 'secured', '-b', bootstrap, ...sasl], { input: 'hello\n', env: { TIDELOG_SASL_PASSWORD: 'alice-secret' } })
    expect(produced.code).toBe(0)

    const home = join(dir, 'xdg')
    mkdirSync(join(home, 'tidelog'), { recursive: true })
    writeFileSync(join(home, 'tidelog', 'config.json'), JSON.stringify({ profiles: { secure: { 'bootstrap-server': bootstrap, 'sasl-mechanism': 'PLAIN', 'sasl-username': 'alice', 'sasl-password': 'alice-secret' } } }))
    // A mechanism alone implies SASL_PLAINTEXT, as the profile relies on.
    const read = await tidelog(['consume', 'secured', '--profile', 'secure', '--from-beginning', '-e'], { configHome: home })
    expect(read).toMatchObject({ code: 0, stdout: 'hello\n' })

    const wrong = await tidelog(['topics', 'list', '-b', bootstrap, ...sasl, '--sasl-password', 'nope', '--timeout', '3000'])
    expect(wrong.code).toBe(3)
    expect(wrong.stderr.split('\n')).toHaveLength(2)
    expect(wrong.stderr).toMatch(/^tidelog: SASL_AUTHENTICATION_FAILED: .*check --sasl-username \/ --sasl-password and --sasl-mechanism\n$/)

    const plain = await tidelog(['topics', 'list', '-b', bootstrap, '--timeout', '2000'])
    expect(plain.code).not.toBe(0)
    expect(plain.stderr.split('\n')).toHaveLength(2)
  })

  it('TLS with --ssl-ca, SASL_SSL, and a certificate nobody vouches for refused with exit 3 unless --ssl-no-verify', async () => {
    expect((await tidelog(['topics', 'create', 'tls-topic', '-b', ssl, '--security-protocol', 'SSL', '--ssl-ca', caFile])).code).toBe(0)
    const viaSaslSsl = await tidelog(['topics', 'list', '-b', saslSsl, '--security-protocol', 'SASL_SSL', '--ssl-ca', caFile, '--sasl-username', 'alice'], { env: { TIDELOG_SASL_PASSWORD: 'alice-secret' } })
    expect(viaSaslSsl.code).toBe(0)
    expect(viaSaslSsl.stdout.split('\n')).toContain('tls-topic')

    const untrusted = await tidelog(['topics', 'list', '-b', ssl, '--security-protocol', 'SSL', '--timeout', '2000'])
    expect(untrusted.code).toBe(3)
    expect(untrusted.stderr).toMatch(/^tidelog: cannot reach a broker at .*certificate.*\n$/i)
    expect((await tidelog(['topics', 'list', '-b', ssl, '--security-protocol', 'SSL', '--ssl-no-verify'])).stdout.split('\n')).toContain('tls-topic')
    const missing = await tidelog(['topics', 'list', '-b', ssl, '--security-protocol', 'SSL', '--ssl-ca', join(dir, 'nope.pem')])
    expect(missing.code).toBe(2)
    expect(missing.stderr).toMatch(/^tidelog: --ssl-ca: cannot read .*nope\.pem/)
  })

  it('SCRAM-SHA-256 and SCRAM-SHA-512 users (made through AlterUserScramCredentials, as alice)', async () => {
    const c = await RawClient.connect(broker.listeners[0]!.port)
    try {
      expect((await login(c, 'PLAIN', 'alice', 'alice-secret')).errorCode).toBe(0)
      for (const m of ['SCRAM-SHA-256', 'SCRAM-SHA-512'] as const) expect(await upsertScramUser(c, `svc-${m}`, 'pä55', m)).toEqual([{ user: `svc-${m}`, errorCode: 0, errorMessage: null }])
    } finally {
      c.close()
    }
    for (const m of ['SCRAM-SHA-256', 'scram-sha-512']) {
      const r = await tidelog(['cluster', '-b', bootstrap, '--sasl-mechanism', m, '--sasl-username', `svc-${m.toUpperCase()}`], { env: { TIDELOG_SASL_PASSWORD: 'pä55' } })
      expect(r, m).toMatchObject({ code: 0, stderr: '' })
      expect(r.stdout).toMatch(/^Cluster ID: /)
    }
    const wrong = await tidelog(['cluster', '-b', bootstrap, '--sasl-mechanism', 'SCRAM-SHA-512', '--sasl-username', 'svc-SCRAM-SHA-512', '--sasl-password', 'x', '--timeout', '3000'])
    expect(wrong.code).toBe(3)
    expect(wrong.stderr).toMatch(/^tidelog: SASL_AUTHENTICATION_FAILED: /)
    expect((await tidelog(['cluster', '-b', bootstrap, '--sasl-mechanism', 'GSSAPI', '--sasl-username', 'u', '--sasl-password', 'p'])).code).toBe(2)
  })
})
