import { spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { ConfigError, DEFAULT_CONFIG, OPTIONS, helpText, parseConfig, validateConfig } from '../src/config.js'

const MAIN = fileURLToPath(new URL('../src/main.ts', import.meta.url))
const ROOT = fileURLToPath(new URL('../../../', import.meta.url))

function parse(argv: string[], env: Record<string, string> = {}, files: Record<string, string> = {}) {
  const r = parseConfig({
    argv,
    env,
    readFile: (p) => {
      const f = files[p]
      if (f === undefined) throw new Error(`ENOENT: ${p}`)
      return f
    },
  })
  if (r.help) throw new Error('unexpected help')
  return r.config
}

describe('parseConfig', () => {
  it('uses the issue defaults', () => {
    const c = parse([])
    expect(c).toEqual({ ...DEFAULT_CONFIG })
    expect(c.host).toBe('127.0.0.1')
    expect(c.port).toBe(9092)
    expect(c.dataDir).toBe('./data')
    expect(c.numPartitions).toBe(1)
    expect(c.autoCreateTopics).toBe(true)
    expect(c.segmentBytes).toBe(2 ** 30)
    expect(c.segmentMs).toBe(604_800_000)
    expect(c.retentionMs).toBe(604_800_000)
    expect(c.retentionBytes).toBe(-1)
    // Kafka's log.retention.check.interval.ms default (librdkafka 0052 produces 1970 timestamps and reads them back).
    expect(c.retentionCheckIntervalMs).toBe(300_000)
    expect(c.flushMessages).toBe(Infinity)
    expect(c.flushMs).toBe(Infinity)
    expect(c.maxMessageBytes).toBe(1048588)
    expect(c.maxRequestBytes).toBe(100 * 2 ** 20)
  })

  it('reads every flag', () => {
    const c = parse([
      '--host', '0.0.0.0', '--port', '0', '--advertised-host', 'kafka.local', '--advertised-port', '19092',
      '--data-dir', '/tmp/x', '--node-id', '7', '--num-partitions', '6', '--auto-create-topics', 'false',
      '--segment-bytes', '1048576', '--segment-ms', '60000', '--retention-ms', '-1', '--retention-bytes', '5000000',
      '--retention-check-interval-ms', '2000', '--flush-messages', '1', '--flush-ms', '1000',
      '--producer-id-expiration-ms', '5000', '--producer-id-expiration-check-interval-ms', '100',
      '--transaction-max-timeout-ms', '120000', '--transactional-id-expiration-ms', '86400000',
      '--transaction-abort-timed-out-transaction-cleanup-interval-ms', '500',
      '--transaction-remove-expired-transaction-cleanup-interval-ms', '60000', '--transaction-partition-verification-enable', 'false',
      '--add-partitions-to-txn-retry-backoff-ms', '10', '--add-partitions-to-txn-retry-backoff-max-ms', '250',
      '--max-open-files', '64',
      '--group-share-record-lock-duration-ms', '15000', '--group-share-delivery-count-limit', '3',
      '--group-share-partition-max-record-locks', '500', '--group-share-session-timeout-ms', '30000',
      '--group-share-heartbeat-interval-ms', '2000',
      '--max-message-bytes', '2000000',
      '--fetch-max-bytes', '3000000', '--log-message-timestamp-before-max-ms', '3600000',
      '--log-message-timestamp-after-max-ms', '60000',
      '--max-request-bytes', '4000000', '--log-level', 'debug',
    ])
    expect(c).toEqual({
      host: '0.0.0.0', port: 0, advertisedHost: 'kafka.local', advertisedPort: 19092, dataDir: '/tmp/x', nodeId: 7,
      numPartitions: 6, autoCreateTopics: false, segmentBytes: 1048576, segmentMs: 60000, retentionMs: -1,
      retentionBytes: 5000000, retentionCheckIntervalMs: 2000, flushMessages: 1, flushMs: 1000,
      producerIdExpirationMs: 5000, producerIdExpirationCheckIntervalMs: 100,
      transactionMaxTimeoutMs: 120000, transactionalIdExpirationMs: 86400000, transactionAbortTimedOutTransactionCleanupIntervalMs: 500,
      transactionRemoveExpiredTransactionCleanupIntervalMs: 60000, transactionPartitionVerificationEnable: false,
      addPartitionsToTxnRetryBackoffMs: 10, addPartitionsToTxnRetryBackoffMaxMs: 250,
      maxOpenFiles: 64,
      groupShareRecordLockDurationMs: 15000, groupShareDeliveryCountLimit: 3, groupSharePartitionMaxRecordLocks: 500,
      groupShareSessionTimeoutMs: 30000, groupShareHeartbeatIntervalMs: 2000,
      logCleanerEnable: true,
      logCleanerBackoffMs: 15000,
      logCleanerDedupeBufferSize: 134217728,
      logCleanerIoMaxBytesPerSecond: Infinity,
      maxMessageBytes: 2000000, fetchMaxBytes: 3000000,
      messageTimestampBeforeMaxMs: 3600000, messageTimestampAfterMaxMs: 60000, maxRequestBytes: 4000000,
      maxConnections: 2147483647, maxConnectionsPerIp: 2147483647, connectionsMaxIdleMs: 600000,
      queuedMaxRequestBytes: 256 * 2 ** 20, maxPartitionsPerRequest: 10000, maxBrokerPartitions: 100000,
      logLevel: 'debug',
      // The security options (issue 16) at their defaults.
      listeners: undefined, advertisedListeners: undefined, listenerSecurityProtocolMap: undefined,
      sslKeystoreType: 'PEM', sslKeystoreLocation: undefined, sslKeystoreCertificateChain: undefined, sslKeystoreKey: undefined,
      sslKeyPassword: undefined, sslTruststoreType: 'PEM', sslTruststoreLocation: undefined, sslTruststoreCertificates: undefined,
      sslAllowDnChanges: false, sslAllowSanChanges: false, sslReloadIntervalMs: 30000,
      sslClientAuth: 'none', saslEnabledMechanisms: 'PLAIN,SCRAM-SHA-256,SCRAM-SHA-512', saslPlainUsersFile: undefined,
      connectionsMaxReauthMs: 0, connectionFailedAuthenticationDelayMs: 100, sslPrincipalMappingRules: 'DEFAULT',
      authorizerClassName: undefined, superUsers: '', allowEveryoneIfNoAclFound: false,
      quotaWindowNum: 11, quotaWindowSizeSeconds: 1, controllerQuotaWindowNum: 11, controllerQuotaWindowSizeSeconds: 1, listenerNameConfigs: {},
      saslOauthbearerJwksEndpointRefreshMs: 3600000, saslOauthbearerSubClaimName: 'sub', saslOauthbearerScopeClaimName: 'scope', saslOauthbearerClockSkewSeconds: 30,
    })
  })

  it('accepts --flag=value', () => {
    expect(parse(['--port=1234']).port).toBe(1234)
  })

  it('has an environment variable for every option', () => {
    const env: Record<string, string> = {}
    for (const o of OPTIONS) expect(o.env).toMatch(/^TIDELOG_[A-Z_]+$/)
    env.TIDELOG_PORT = '1111'
    env.TIDELOG_AUTO_CREATE_TOPICS = 'false'
    env.TIDELOG_LOG_LEVEL = 'warn'
    env.TIDELOG_FLUSH_MESSAGES = '-1'
    const c = parse([], env)
    expect(c.port).toBe(1111)
    expect(c.autoCreateTopics).toBe(false)
    expect(c.logLevel).toBe('warn')
    expect(c.flushMessages).toBe(Infinity)
  })

  it('applies flag > env > file > default', () => {
    const files = { '/c.json': JSON.stringify({ port: 3333, 'node-id': 3, segmentBytes: 4096, dataDir: '/file' }) }
    const env = { TIDELOG_PORT: '2222', TIDELOG_NODE_ID: '2' }
    const c = parse(['--port', '1111', '--config', '/c.json'], env, files)
    expect(c.port).toBe(1111) // flag beats env and file
    expect(c.nodeId).toBe(2) // env beats file
    expect(c.segmentBytes).toBe(4096) // file beats default
    expect(c.dataDir).toBe('/file')
    expect(c.host).toBe('127.0.0.1') // default
  })

  it('finds the config file through TIDELOG_CONFIG', () => {
    const c = parse([], { TIDELOG_CONFIG: '/e.json' }, { '/e.json': '{"numPartitions": 4}' })
    expect(c.numPartitions).toBe(4)
  })

  it('returns help', () => {
    expect(parseConfig({ argv: ['--help'], env: {} })).toEqual({ help: true })
    expect(parseConfig({ argv: ['-h'], env: {} })).toEqual({ help: true })
  })

  it.each([
    [['--bogus'], /bogus/],
    [['--port'], /port/],
    [['--port', 'abc'], /--port: expected an integer/],
    [['--port', '70000'], /--port: expected an integer from 0 to 65535/],
    [['--port', '1.5'], /--port/],
    [['--auto-create-topics', 'maybe'], /true or false/],
    [['--log-level', 'loud'], /error, warn, info, debug/],
    [['--retention-ms', '-2'], /retention-ms/],
    [['--num-partitions', '0'], /num-partitions/],
    [['--host', ''], /must not be empty/],
    [['positional'], /positional/i],
  ])('rejects %j', (argv, message) => {
    expect(() => parse(argv)).toThrow(ConfigError)
    expect(() => parse(argv)).toThrow(message)
  })

  it('rejects bad environment values, naming the variable', () => {
    expect(() => parse([], { TIDELOG_SEGMENT_BYTES: 'big' })).toThrow(/TIDELOG_SEGMENT_BYTES/)
  })

  it('rejects bad config files', () => {
    expect(() => parse(['--config', '/missing.json'])).toThrow(/cannot read config file/)
    expect(() => parse(['--config', '/a.json'], {}, { '/a.json': '{' })).toThrow(/not valid JSON/)
    expect(() => parse(['--config', '/a.json'], {}, { '/a.json': '[1]' })).toThrow(/JSON object/)
    expect(() => parse(['--config', '/a.json'], {}, { '/a.json': '{"nope": 1}' })).toThrow(/unknown option "nope"/)
    expect(() => parse(['--config', '/a.json'], {}, { '/a.json': '{"port": "x"}' })).toThrow(/"port": expected an integer/)
    expect(() => parse(['--config', '/a.json'], {}, { '/a.json': '{"port": 1, "port": 2}' })).not.toThrow()
    expect(() => parse(['--config', '/a.json'], {}, { '/a.json': '{"port": 1, "nodeId": 2, "node-id": 3}' })).toThrow(/set twice/)
  })

  it('documents every option in --help', () => {
    const text = helpText()
    for (const o of OPTIONS) {
      expect(text).toContain(`--${o.flag}`)
      expect(text).toContain(o.env)
    }
    expect(text).toContain('--config')
    expect(text).toContain('--help')
  })

  it('validates programmatic options the same way', () => {
    expect(validateConfig({ port: 0, flushMessages: Infinity }).port).toBe(0)
    expect(() => validateConfig({ port: -5 })).toThrow(ConfigError)
  })
})

describe('tidelog-broker CLI', () => {
  const run = (args: string[]) =>
    spawnSync(process.execPath, ['--import', 'tsx', MAIN, ...args], {
      cwd: ROOT,
      encoding: 'utf8',
      env: { ...process.env, TIDELOG_CONFIG: '' },
      timeout: 30_000,
    })

  it('exits 2 with a clear message on an unknown flag', () => {
    const r = run(['--bogus'])
    expect(r.status).toBe(2)
    expect(r.stderr).toMatch(/bogus/)
    expect(r.stderr).toMatch(/--help/)
    expect(r.stdout).toBe('')
  })

  it('exits 2 on a bad value', () => {
    const r = run(['--port', 'eighty'])
    expect(r.status).toBe(2)
    expect(r.stderr).toMatch(/--port: expected an integer/)
  })

  it('prints help and exits 0', () => {
    const r = run(['--help'])
    expect(r.status).toBe(0)
    expect(r.stdout).toContain('--max-request-bytes')
  })
})

describe('tidelog-broker process', () => {
  it('prints one ready line with the address, and shuts down cleanly on SIGTERM', async () => {
    const { spawn } = await import('node:child_process')
    const { mkdtempSync, existsSync, rmSync } = await import('node:fs')
    const { tmpdir } = await import('node:os')
    const { join } = await import('node:path')
    const dataDir = mkdtempSync(join(tmpdir(), 'tidelog-cli-'))
    try {
      const child = spawn(process.execPath, ['--import', 'tsx', MAIN, '--port', '0', '--data-dir', dataDir, '--log-level', 'error'], {
        cwd: ROOT,
        stdio: ['ignore', 'pipe', 'pipe'],
      })
      let out = ''
      const ready = await new Promise<string>((resolve, reject) => {
        child.stdout.on('data', (d: Buffer) => {
          out += d.toString()
          if (out.includes('\n')) resolve(out)
        })
        child.once('exit', (code) => reject(new Error(`exited ${code}`)))
      })
      expect(ready).toMatch(/^tidelog-broker listening on 127\.0\.0\.1:(\d+) /)
      const port = Number(/:(\d+) /.exec(ready)![1])
      expect(port).toBeGreaterThan(0)
      const second = spawnSync(process.execPath, ['--import', 'tsx', MAIN, '--port', '0', '--data-dir', dataDir], { cwd: ROOT, encoding: 'utf8', timeout: 30_000 })
      expect(second.status).toBe(1)
      expect(second.stderr).toMatch(/in use/)
      const exit = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)))
      child.kill('SIGTERM')
      expect(await exit).toBe(0)
      expect(existsSync(join(dataDir, '.clean-shutdown'))).toBe(true)
      expect(out.trim().split('\n')).toHaveLength(1)
    } finally {
      rmSync(dataDir, { recursive: true, force: true })
    }
  })
})

describe('README', () => {
  it('documents every option with its environment variable', async () => {
    const { readFileSync } = await import('node:fs')
    const readme = readFileSync(fileURLToPath(new URL('../README.md', import.meta.url)), 'utf8')
    for (const o of OPTIONS) {
      expect(readme).toContain(`\`--${o.flag}\``)
      expect(readme).toContain(`\`${o.env}\``)
    }
  })
})
