/**
 * Per-listener SASL settings with Kafka's names (KIP-103): `listener.name.<l>.sasl.enabled.mechanisms`,
 * `listener.name.<l>.<mechanism>.sasl.jaas.config` (PLAIN users, OAUTHBEARER unsecured options)
 * and `listener.name.<l>.sasl.oauthbearer.*`, each winning over the broker-wide setting, which
 * still applies to listeners that set nothing. Typos in these keys stop the start.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Admin, SaslAuthenticationError } from '@tidelog/client'
import { ApiKeys, ErrorCodes } from '@tidelog/protocol'
import { type Broker, startBroker } from '../src/index.js'
import { ConfigError, parseConfig } from '../src/config.js'
import { RawClient } from './helpers/raw-client.js'
import { tempDir } from './helpers/tmp.js'
import { claims, initialResponse, unsecuredJws } from './oauthbearer-helpers.js'
import { login, upsertScramUser } from './security/helpers.js'

const PLAIN_MODULE = 'org.apache.kafka.common.security.plain.PlainLoginModule'
const OAUTH_MODULE = 'org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule'
let broker: Broker
let dir: string
const port = (name: string) => broker.listeners.find((l) => l.name === name)!.port
const open: RawClient[] = []
const connect = async (name: string) => {
  const c = await RawClient.connect(port(name))
  open.push(c)
  return c
}

beforeAll(async () => {
  // Not tempDir(): that one is removed after each test, and this broker lives for the file.
  dir = mkdtempSync(join(tmpdir(), 'tidelog-sasl-listener-'))
  const users = join(dir, 'plain.jaas')
  writeFileSync(users, `KafkaServer { ${PLAIN_MODULE} required user_everyone="everyone-pw"; };\n`)
  broker = await startBroker({
    dataDir: dir,
    listeners: 'INTERNAL://127.0.0.1:0,EXTERNAL://127.0.0.1:0,OTHER://127.0.0.1:0,ADMIN://127.0.0.1:0',
    listenerSecurityProtocolMap: 'INTERNAL:SASL_PLAINTEXT,EXTERNAL:SASL_PLAINTEXT,OTHER:SASL_PLAINTEXT,ADMIN:PLAINTEXT',
    saslEnabledMechanisms: 'PLAIN,SCRAM-SHA-256',
    saslPlainUsersFile: users,
    connectionFailedAuthenticationDelayMs: 0,
    logLevel: 'error',
    listenerNameConfigs: {
      'listener.name.internal.sasl.enabled.mechanisms': 'PLAIN',
      'listener.name.internal.plain.sasl.jaas.config': `${PLAIN_MODULE} required user_svc="svc-pw";`,
      'listener.name.external.sasl.enabled.mechanisms': 'SCRAM-SHA-512,OAUTHBEARER',
      'listener.name.external.oauthbearer.sasl.jaas.config': `${OAUTH_MODULE} required unsecuredValidatorRequiredScope="kafka";`,
    },
  })
  const admin = await connect('ADMIN')
  expect((await upsertScramUser(admin, 'carol', 'carol-pw', 'SCRAM-SHA-512'))[0]!.errorCode).toBe(0)
  expect((await upsertScramUser(admin, 'carol', 'carol-pw', 'SCRAM-SHA-256'))[0]!.errorCode).toBe(0)
})

afterAll(async () => {
  for (const c of open) c.close()
  await broker?.close()
  rmSync(dir, { recursive: true, force: true })
})

describe('listener.name.<listener>.* SASL settings', () => {
  it('offers each listener its own mechanisms; another listener\'s mechanism gets UNSUPPORTED_SASL_MECHANISM and the list', async () => {
    const internal = await connect('INTERNAL')
    expect(await internal.request(ApiKeys.SaslHandshake, 1, { mechanism: 'SCRAM-SHA-512' })).toMatchObject({ errorCode: ErrorCodes.UNSUPPORTED_SASL_MECHANISM, mechanisms: ['PLAIN'] })
    await internal.closed
    const external = await connect('EXTERNAL')
    expect(await external.request(ApiKeys.SaslHandshake, 1, { mechanism: 'PLAIN' })).toMatchObject({ errorCode: ErrorCodes.UNSUPPORTED_SASL_MECHANISM, mechanisms: ['SCRAM-SHA-512', 'OAUTHBEARER'] })
    // A listener that sets nothing keeps sasl.enabled.mechanisms.
    const other = await connect('OTHER')
    expect(await other.request(ApiKeys.SaslHandshake, 1, { mechanism: 'SCRAM-SHA-512' })).toMatchObject({ errorCode: ErrorCodes.UNSUPPORTED_SASL_MECHANISM, mechanisms: ['PLAIN', 'SCRAM-SHA-256'] })
  })

  it('a client of ours with the wrong listener\'s mechanism fails with UNSUPPORTED_SASL_MECHANISM; the right one is served', async () => {
    const wrong = new Admin({ brokers: [`127.0.0.1:${port('EXTERNAL')}`], sasl: { mechanism: 'PLAIN', username: 'svc', password: 'svc-pw' } })
    const err = await wrong.listTopics().then(() => undefined, (e: unknown) => e)
    await wrong.close()
    expect(err).toBeInstanceOf(SaslAuthenticationError)
    expect((err as SaslAuthenticationError).code).toBe(ErrorCodes.UNSUPPORTED_SASL_MECHANISM)
    const right = new Admin({ brokers: [`127.0.0.1:${port('EXTERNAL')}`], sasl: { mechanism: 'SCRAM-SHA-512', username: 'carol', password: 'carol-pw' } })
    expect(Array.isArray(await right.listTopics())).toBe(true)
    await right.close()
  })

  it('PLAIN users come from the listener\'s own JAAS config, which replaces the broker-wide users file there', async () => {
    expect((await login(await connect('INTERNAL'), 'PLAIN', 'svc', 'svc-pw')).errorCode).toBe(0)
    const refused = await login(await connect('INTERNAL'), 'PLAIN', 'everyone', 'everyone-pw')
    expect(refused).toMatchObject({ errorCode: ErrorCodes.SASL_AUTHENTICATION_FAILED, errorMessage: 'Authentication failed: Invalid username or password' })
    expect((await login(await connect('OTHER'), 'PLAIN', 'everyone', 'everyone-pw')).errorCode).toBe(0)
    expect((await login(await connect('OTHER'), 'PLAIN', 'svc', 'svc-pw')).errorCode).toBe(ErrorCodes.SASL_AUTHENTICATION_FAILED)
  })

  it('OAUTHBEARER takes the listener\'s unsecured validator options (a required scope)', async () => {
    const oauth = async (scope: string) => {
      const c = await connect('EXTERNAL')
      expect((await c.request(ApiKeys.SaslHandshake, 1, { mechanism: 'OAUTHBEARER' })).errorCode).toBe(0)
      const first = await c.request(ApiKeys.SaslAuthenticate, 2, { authBytes: initialResponse(unsecuredJws(claims('dev', 600, { scope }))) })
      if (first.authBytes.length === 0) return { errorCode: first.errorCode, document: '' }
      // KIP-255: a refused token is answered with an error document; the client acknowledges with ^A.
      const document = Buffer.from(first.authBytes).toString()
      const last = await c.request(ApiKeys.SaslAuthenticate, 2, { authBytes: Buffer.from([1]) })
      return { errorCode: last.errorCode, document }
    }
    expect(await oauth('kafka other')).toEqual({ errorCode: 0, document: '' })
    const refused = await oauth('other')
    expect(refused.errorCode).toBe(ErrorCodes.SASL_AUTHENTICATION_FAILED)
    expect(JSON.parse(refused.document)).toMatchObject({ status: 'insufficient_scope', scope: 'kafka' })
  })

  it('refuses, naming the key, an unknown listener, an unknown setting and a mechanism not served', () => {
    const file = (entries: Record<string, string>) =>
      parseConfig({ argv: ['--config', 'c.json', '--listeners', 'SASL_PLAINTEXT://127.0.0.1:0'], env: {}, readFile: () => JSON.stringify(entries) })
    const ok = file({ 'listener.name.sasl_plaintext.sasl.enabled.mechanisms': 'SCRAM-SHA-512' })
    expect(ok.help === false && ok.config.listenerNameConfigs).toEqual({ 'listener.name.sasl_plaintext.sasl.enabled.mechanisms': 'SCRAM-SHA-512' })
    expect(() => file({ 'listener.name.nope.sasl.enabled.mechanisms': 'PLAIN' })).toThrow(ConfigError)
    expect(() => file({ 'listener.name.nope.sasl.enabled.mechanisms': 'PLAIN' })).toThrow(/"nope" is not one of the listeners \(sasl_plaintext\)/)
    expect(() => file({ 'listener.name.sasl_plaintext.sasl.enabled.mechanisms': 'GSSAPI' })).toThrow(/GSSAPI is not served/)
    expect(() => file({ 'listener.name.sasl_plaintext.plain.sasl.login.class': 'x' })).toThrow(/listener.name.sasl_plaintext.plain.sasl.login.class: not a per-listener setting/)
    expect(() => file({ 'listener.name.sasl_plaintext.sasl.oauthbearer.clock.skew.seconds': 'soon' })).toThrow(/expected a non-negative integer/)
  })

  it('refuses a JAAS config with another mechanism\'s login module before anything opens', async () => {
    await expect(
      startBroker({
        dataDir: tempDir(),
        listeners: 'SASL_PLAINTEXT://127.0.0.1:0',
        logLevel: 'error',
        listenerNameConfigs: { 'listener.name.sasl_plaintext.plain.sasl.jaas.config': `${OAUTH_MODULE} required;` },
      }),
    ).rejects.toThrow(/plain.sasl.jaas.config: PLAIN needs org.apache.kafka.common.security.plain.PlainLoginModule, not/)
  })
})
