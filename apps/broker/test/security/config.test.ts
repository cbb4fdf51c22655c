import { describe, expect, it } from 'vitest'
import { ConfigError, parseConfig } from '../../src/config.js'
import { resolveListeners } from '../../src/security/listeners.js'

const parse = (argv: string[], file?: Record<string, unknown>) => {
  const r = parseConfig({ argv: file ? ['--config', 'f.json', ...argv] : argv, env: {}, readFile: () => JSON.stringify(file) })
  if (r.help) throw new Error('help')
  return r.config
}

describe('security options', () => {
  it('reads the listener and TLS/SASL flags, and Kafka spellings in the config file', () => {
    const c = parse(['--listeners', 'PLAINTEXT://127.0.0.1:9092,SASL_SSL://:9093', '--ssl-client-auth', 'required'], {
      'ssl.keystore.location': '/k.pem',
      'sasl.enabled.mechanisms': 'SCRAM-SHA-512',
      'connections.max.reauth.ms': 60000,
    })
    expect(c).toMatchObject({ sslKeystoreLocation: '/k.pem', saslEnabledMechanisms: 'SCRAM-SHA-512', connectionsMaxReauthMs: 60000, sslClientAuth: 'required' })
    expect(resolveListeners(c)).toEqual([
      { name: 'PLAINTEXT', protocol: 'PLAINTEXT', host: '127.0.0.1', port: 9092 },
      { name: 'SASL_SSL', protocol: 'SASL_SSL', host: '', port: 9093 },
    ])
  })

  it('maps custom listener names and IPv6 hosts', () => {
    const c = parse(['--listeners', 'INTERNAL://[::1]:9092,EXTERNAL://0.0.0.0:9093', '--listener-security-protocol-map', 'INTERNAL:PLAINTEXT,EXTERNAL:SASL_SSL',
      '--advertised-listeners', 'EXTERNAL://kafka.example.com:443'])
    expect(resolveListeners(c)).toEqual([
      { name: 'INTERNAL', protocol: 'PLAINTEXT', host: '::1', port: 9092 },
      { name: 'EXTERNAL', protocol: 'SASL_SSL', host: '0.0.0.0', port: 9093, advertised: { host: 'kafka.example.com', port: 443 } },
    ])
  })

  it.each([
    [['--listeners', 'PLAINTEXT:/x:1'], /not NAME:\/\/host:port/],
    [['--listeners', 'FOO://h:1'], /FOO has no security protocol/],
    [['--listeners', 'PLAINTEXT://h:1,SSL://h:1'], /port 1 is used twice/],
    [['--listeners', 'PLAINTEXT://h:1,PLAINTEXT://h:2'], /named twice/],
    [['--listeners', 'PLAINTEXT://h:70000'], /out of range/],
    [['--listeners', 'A://h:1', '--listener-security-protocol-map', 'A:TLS'], /not NAME:/],
    [['--advertised-listeners', 'SSL://h:1', '--listeners', 'PLAINTEXT://h:2'], /SSL is not one of the listeners/],
    [['--sasl-enabled-mechanisms', 'GSSAPI'], /GSSAPI is not served/],
    [['--ssl-client-auth', 'maybe'], /expected one of none, requested, required/],
  ])('refuses %j', (argv, message) => {
    expect(() => parse(argv)).toThrow(ConfigError)
    expect(() => parse(argv)).toThrow(message)
  })
})

describe('startBroker with incomplete TLS settings', () => {
  it('names what is missing instead of listening without it', async () => {
    const { startBroker } = await import('../../src/index.js')
    const { tempDir } = await import('../helpers/tmp.js')
    await expect(startBroker({ dataDir: tempDir(), listeners: 'SSL://127.0.0.1:0' })).rejects.toThrow(/needs ssl-keystore-location/)
    await expect(startBroker({ dataDir: tempDir(), listeners: 'SSL://127.0.0.1:0', sslKeystoreLocation: '/nonexistent.pem' })).rejects.toThrow(/ENOENT/)
    await expect(startBroker({ dataDir: tempDir(), listeners: 'SSL://127.0.0.1:0', sslKeystoreLocation: '/x', sslClientAuth: 'required' })).rejects.toThrow(/needs ssl-truststore-location/)
  })
})
