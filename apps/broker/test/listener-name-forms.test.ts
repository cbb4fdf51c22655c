/**
 * The flag and environment forms of Kafka's listener-prefixed keys (KIP-103):
 * `--listener-name-<l>-<setting>` and `TIDELOG_LISTENER_NAME_<L>_<SETTING>`, read back to
 * `listener.name.<l>.<setting>` by matching the configured listeners and mechanisms (whose
 * names hold `_` and `-`), flag over environment over config file, and typed errors that
 * name what the user typed. One broker is started from the environment form alone and
 * served over a real socket.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { Admin, SaslAuthenticationError } from '@tidelog/client'
import { ErrorCodes } from '@tidelog/protocol'
import { type Broker, startBroker } from '../src/index.js'
import { ConfigError, helpText, parseConfig } from '../src/config.js'

const PLAIN_MODULE = 'org.apache.kafka.common.security.plain.PlainLoginModule'
const SCRAM_MODULE = 'org.apache.kafka.common.security.scram.ScramLoginModule'
const LISTENERS = {
  TIDELOG_LISTENERS: 'INTERNAL://127.0.0.1:0,SASL_SSL://127.0.0.1:0,SASL://127.0.0.1:0,ADMIN://127.0.0.1:0',
  TIDELOG_LISTENER_SECURITY_PROTOCOL_MAP: 'INTERNAL:SASL_PLAINTEXT,SASL_SSL:SASL_SSL,SASL:SASL_PLAINTEXT,ADMIN:PLAINTEXT',
}

function parse(argv: string[], env: Record<string, string> = {}, file?: Record<string, unknown>) {
  const r = parseConfig({ argv: file ? ['--config', 'c.json', ...argv] : argv, env: { ...LISTENERS, ...env }, readFile: () => JSON.stringify(file) })
  if (r.help) throw new Error('unexpected --help')
  return r.config.listenerNameConfigs
}

describe('listener-prefixed keys as flags and environment variables', () => {
  it('reads both forms back to Kafka\'s keys, listener names with underscores and mechanisms with dashes included', () => {
    expect(
      parse(
        ['--listener-name-internal-sasl-enabled-mechanisms', 'PLAIN', `--listener-name-sasl_ssl-scram-sha-512-sasl-jaas-config=${SCRAM_MODULE} required;`],
        { TIDELOG_LISTENER_NAME_SASL_SSL_SASL_OAUTHBEARER_EXPECTED_AUDIENCE: 'kafka', TIDELOG_LISTENER_NAME_SASL_PLAIN_SASL_JAAS_CONFIG: `${PLAIN_MODULE} required user_a="b";` },
      ),
    ).toEqual({
      'listener.name.internal.sasl.enabled.mechanisms': 'PLAIN',
      'listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config': `${SCRAM_MODULE} required;`,
      // The longest listener name wins: SASL_SSL_... is the SASL_SSL listener, SASL_PLAIN_... the SASL one.
      'listener.name.sasl_ssl.sasl.oauthbearer.expected.audience': 'kafka',
      'listener.name.sasl.plain.sasl.jaas.config': `${PLAIN_MODULE} required user_a="b";`,
    })
    // The dashed spelling of a listener name's underscore is the same listener.
    expect(parse(['--listener-name-sasl-ssl-sasl-enabled-mechanisms', 'SCRAM-SHA-256'])).toEqual({ 'listener.name.sasl_ssl.sasl.enabled.mechanisms': 'SCRAM-SHA-256' })
  })

  it('flag over environment over config file, per key; other keys of each are kept', () => {
    const file = {
      'listener.name.internal.sasl.enabled.mechanisms': 'SCRAM-SHA-256',
      'listener.name.admin.sasl.enabled.mechanisms': 'PLAIN',
    }
    expect(parse([], { TIDELOG_LISTENER_NAME_INTERNAL_SASL_ENABLED_MECHANISMS: 'SCRAM-SHA-512' }, file)).toEqual({
      'listener.name.internal.sasl.enabled.mechanisms': 'SCRAM-SHA-512',
      'listener.name.admin.sasl.enabled.mechanisms': 'PLAIN',
    })
    expect(
      parse(['--listener-name-internal-sasl-enabled-mechanisms', 'PLAIN'], { TIDELOG_LISTENER_NAME_INTERNAL_SASL_ENABLED_MECHANISMS: 'SCRAM-SHA-512', TIDELOG_LISTENER_NAME_INTERNAL_SASL_OAUTHBEARER_SUB_CLAIM_NAME: 'uid' }, file),
    ).toEqual({
      'listener.name.internal.sasl.enabled.mechanisms': 'PLAIN',
      'listener.name.internal.sasl.oauthbearer.sub.claim.name': 'uid',
      'listener.name.admin.sasl.enabled.mechanisms': 'PLAIN',
    })
    // An empty variable is unset, as for every other option.
    expect(parse([], { TIDELOG_LISTENER_NAME_INTERNAL_SASL_ENABLED_MECHANISMS: '' })).toEqual({})
  })

  it('an unknown listener, setting, mechanism or value is a ConfigError naming the flag or variable', () => {
    const fails = (argv: string[], env: Record<string, string> = {}) => {
      try {
        parse(argv, env)
      } catch (err) {
        expect(err).toBeInstanceOf(ConfigError)
        return (err as Error).message
      }
      throw new Error('expected a ConfigError')
    }
    expect(fails(['--listener-name-external-sasl-enabled-mechanisms', 'PLAIN'])).toBe(
      '--listener-name-external-sasl-enabled-mechanisms: names none of the listeners (internal, sasl_ssl, sasl, admin); ' +
        'the form is --listener-name-<listener>-<setting> or TIDELOG_LISTENER_NAME_<LISTENER>_<SETTING>',
    )
    expect(fails([], { TIDELOG_LISTENER_NAME_INTERNAL_SSL_KEYSTORE_LOCATION: '/k.pem' })).toMatch(
      /^environment TIDELOG_LISTENER_NAME_INTERNAL_SSL_KEYSTORE_LOCATION: listener\.name\.internal\.ssl\.keystore\.location: not a per-listener setting this broker serves/,
    )
    expect(fails(['--listener-name-internal-sasl-enabled-mechanisms=GSSAPI'])).toMatch(/^--listener-name-internal-sasl-enabled-mechanisms: listener\.name\.internal\.sasl\.enabled\.mechanisms: GSSAPI is not served/)
    expect(fails(['--listener-name-internal-plain-sasl-jaas-config', `${SCRAM_MODULE} required;`])).toMatch(/PLAIN needs org\.apache\.kafka\.common\.security\.plain\.PlainLoginModule/)
    expect(fails(['--listener-name-internal-sasl-enabled-mechanisms'])).toBe('--listener-name-internal-sasl-enabled-mechanisms: needs a value')
    // Without --listeners there is one listener, PLAINTEXT.
    expect(() => parseConfig({ argv: ['--listener-name-internal-sasl-enabled-mechanisms', 'PLAIN'], env: {} })).toThrow(/names none of the listeners \(plaintext\)/)
  })

  it('--help names the form', () => {
    expect(helpText()).toContain('--listener-name-<l>-<setting> <value>')
    expect(helpText()).toContain('[TIDELOG_LISTENER_NAME_<L>_<SETTING>]')
  })
})

describe('a broker configured by the environment form alone', () => {
  let broker: Broker | undefined
  let dir: string | undefined
  afterAll(async () => {
    await broker?.close()
    if (dir) rmSync(dir, { recursive: true, force: true })
  })

  it('serves the listener\'s own PLAIN users and mechanisms over a real socket', async () => {
    dir = mkdtempSync(join(tmpdir(), 'tidelog-listener-env-'))
    const parsed = parseConfig({
      argv: [],
      env: {
        TIDELOG_DATA_DIR: dir,
        TIDELOG_LOG_LEVEL: 'error',
        TIDELOG_CONNECTION_FAILED_AUTHENTICATION_DELAY_MS: '0',
        TIDELOG_LISTENERS: 'INTERNAL://127.0.0.1:0',
        TIDELOG_LISTENER_SECURITY_PROTOCOL_MAP: 'INTERNAL:SASL_PLAINTEXT',
        TIDELOG_LISTENER_NAME_INTERNAL_SASL_ENABLED_MECHANISMS: 'PLAIN',
        TIDELOG_LISTENER_NAME_INTERNAL_PLAIN_SASL_JAAS_CONFIG: `${PLAIN_MODULE} required user_svc="svc-secret";`,
      },
    })
    if (parsed.help) throw new Error('unexpected --help')
    broker = await startBroker(parsed.config)
    const bootstrap = `127.0.0.1:${broker.listeners[0]!.port}`
    const svc = new Admin({ brokers: [bootstrap], sasl: { mechanism: 'PLAIN', username: 'svc', password: 'svc-secret' } })
    try {
      await svc.createTopics([{ name: 'env-form', partitions: 1 }])
      expect(await svc.listTopics()).toContain('env-form')
    } finally {
      await svc.close()
    }
    const attempt = async (sasl: ConstructorParameters<typeof Admin>[0]['sasl']) => {
      const a = new Admin({ brokers: [bootstrap], sasl })
      const err = await a.listTopics().then(() => undefined, (e: unknown) => e)
      await a.close()
      expect(err).toBeInstanceOf(SaslAuthenticationError)
      return (err as SaslAuthenticationError).code
    }
    // SCRAM is on broker-wide by default; the listener's own list leaves it out.
    expect(await attempt({ mechanism: 'SCRAM-SHA-512', username: 'svc', password: 'svc-secret' })).toBe(ErrorCodes.UNSUPPORTED_SASL_MECHANISM)
    expect(await attempt({ mechanism: 'PLAIN', username: 'svc', password: 'wrong' })).toBe(ErrorCodes.SASL_AUTHENTICATION_FAILED)
  })
})
