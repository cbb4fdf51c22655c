import { readFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { randomUuid } from '@tidelog/protocol'
import { type BrokerConfig, validateConfig } from './config.js'
import { BrokerConsole, type ConsoleInfo } from './console/index.js'
import { AppendNotifier, type BrokerContext } from './context.js'
import { checkDataDirFormat } from './data-dir-format.js'
import { type CoordinatorOptions, GroupCoordinator } from './groups/coordinator.js'
import { OffsetsStore } from './groups/offsets-store.js'
import { createRegistry } from './handlers/index.js'
import { writeFileAtomicSync } from './log/checkpoint.js'
import { type LogFileSystem, LogManager } from './log/index.js'
import { type Logger, silentLogger } from './logger.js'
import { ProducerIdAllocator } from './producer-ids.js'
import { KafkaServer } from './server.js'
import { type SecurityProtocol, resolveListeners, usesTls } from './security/listeners.js'
import { parseListenerSaslSettings } from './security/sasl-listener/settings.js'
import { SecurityManager } from './security/manager.js'
import { AclStore } from './security/acl-store.js'
import { StandardAuthorizer } from './security/authorizer.js'
import { closePolicies, loadPolicies } from './policy/policy.js'
import { TlsContextProvider } from './security/tls.js'
import { QuotaStore } from './quotas/store.js'
import { QuotaManager, type SensorAccount } from './quotas/manager.js'
import { RequestThrottler } from './quotas/enforcer.js'
import { GuardedQuotaCallback, loadQuotaCallback } from './quotas/callback.js'
import { ConnectionRateQuota } from './quotas/connection-rate.js'
import { TopicRegistry, readTopicsFile } from './topics.js'
import { TransactionCoordinator } from './txn/coordinator.js'
import { TransactionStore } from './txn/store.js'

export interface BrokerOptions extends Partial<BrokerConfig> {
  /** Defaults to silence in-process; the CLI logs to stderr. */
  logger?: Logger
  /** How often checkpoints are written (default 60 s). */
  checkpointIntervalMs?: number
  /** Group coordinator timings (Kafka's group.* settings); tests shorten them. */
  groups?: CoordinatorOptions
  /** The log's file calls (default node:fs); tests pass one that fails or stalls to exercise storage faults. */
  fs?: LogFileSystem
  /** The client quotas' clock in ms (default performance.now); tests pass one they move, to check the accounting exactly. */
  quotaClock?: () => number
}

/** One open listener as `startBroker()` reports it. */
export interface ListenerInfo {
  readonly name: string
  readonly protocol: SecurityProtocol
  /** The address and port bound (the ephemeral one chosen for port 0). */
  readonly host: string
  readonly port: number
  /** What Metadata tells clients that connect on this listener. */
  readonly advertised: { readonly host: string; readonly port: number }
}

export interface Broker {
  /** The address bound. */
  readonly host: string
  /** The port bound (the ephemeral one chosen for port 0). */
  readonly port: number
  readonly dataDir: string
  readonly nodeId: number
  readonly clusterId: string
  /** What Metadata tells clients. */
  readonly advertised: { readonly host: string; readonly port: number }
  /** Every listener opened, in the order given (the first is `host`/`port`/`advertised`). */
  readonly listeners: readonly ListenerInfo[]
  /** The web console and /metrics, when started with consolePort. */
  readonly console: ConsoleInfo | undefined
  /** What the client quotas have counted, per sensor (bytes, request time, throttles). */
  quotaAccounts(): SensorAccount[]
  /**
   * Stops accepting connections, finishes the requests already read, flushes
   * and closes every log, writes the checkpoints and the clean-shutdown marker,
   * and releases the data directory.
   */
  close(): Promise<void>
}

export const META_FILE = 'meta.properties'

/**
 * The cluster id and node id this data directory belongs to, as Kafka keeps
 * them in meta.properties: created on first start, checked on every later one
 * so a data directory is never silently served under another node id.
 */
function loadMeta(dataDir: string, nodeId: number): string {
  const path = join(dataDir, META_FILE)
  let text: string | undefined
  try {
    text = readFileSync(path, 'utf8')
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err
  }
  if (text !== undefined) {
    const props = new Map<string, string>()
    for (const line of text.split('\n')) {
      const m = /^\s*([^#=\s][^=]*?)\s*=\s*(.*?)\s*$/.exec(line)
      if (m !== null) props.set(m[1]!, m[2]!)
    }
    const clusterId = props.get('cluster.id')
    const storedNode = props.get('node.id')
    if (clusterId !== undefined && clusterId !== '') {
      if (storedNode !== undefined && Number(storedNode) !== nodeId) {
        throw new Error(`${path} belongs to node ${storedNode}, not node ${nodeId}; start with --node-id ${storedNode} or another --data-dir`)
      }
      return clusterId
    }
  }
  const clusterId = randomUuid()
  writeFileAtomicSync(path, `version=1\ncluster.id=${clusterId}\nnode.id=${nodeId}\n`)
  return clusterId
}

/**
 * Starts a broker in this process: opens (and if needed recovers) the data
 * directory, then listens. `port: 0` picks a free port, reported as `port`.
 */
export async function startBroker(options: BrokerOptions = {}): Promise<Broker> {
  const { logger: givenLogger, checkpointIntervalMs, groups: groupOptions, fs, quotaClock, ...rest } = options
  const config = validateConfig(rest)
  const logger = givenLogger ?? silentLogger
  const dataDir = resolve(config.dataDir)
  // Before recovery or any store opens: a layout from a newer release is refused, not "repaired".
  checkDataDirFormat(dataDir, logger)
  // create.topic.policy / alter.config.policy: a module that cannot be used stops startup here.
  await loadPolicies(config)
  // client.quota.callback.class (KIP-257): likewise.
  let quotaCallback: GuardedQuotaCallback | undefined
  if (config.clientQuotaCallbackClass !== undefined) {
    try {
      quotaCallback = new GuardedQuotaCallback(await loadQuotaCallback(config.clientQuotaCallbackClass, config), logger, () => performance.now())
    } catch (err) {
      await closePolicies(config, logger)
      throw err
    }
  }
  const appends = new AppendNotifier()
  // Read before the logs open: a deletion that never committed is undone by what it still lists.
  const storedTopics = readTopicsFile(dataDir, logger)
  const listed = new Map((storedTopics ?? []).map((t) => [t.name, t.partitions]))
  const logs = LogManager.open({
    dataDir,
    config: {
      segmentBytes: config.segmentBytes,
      segmentMs: config.segmentMs,
      retentionMs: config.retentionMs,
      retentionBytes: config.retentionBytes,
      flushMessages: config.flushMessages,
      flushMs: config.flushMs,
    },
    logger,
    onAppend: (log) => appends.notify(log),
    retentionCheckIntervalMs: config.retentionCheckIntervalMs,
    ...(checkpointIntervalMs !== undefined ? { checkpointIntervalMs } : {}),
    ...(fs !== undefined ? { fs } : {}),
    isLive: (topic, partition) => partition < (listed.get(topic) ?? 0),
    producerIdExpirationMs: config.producerIdExpirationMs,
    producerIdExpirationCheckIntervalMs: config.producerIdExpirationCheckIntervalMs,
    maxOpenFiles: config.maxOpenFiles,
    cleanerEnable: config.logCleanerEnable,
    cleanerBackoffMs: config.logCleanerBackoffMs,
    cleanerDedupeBufferSize: config.logCleanerDedupeBufferSize,
    cleanerIoMaxBytesPerSecond: config.logCleanerIoMaxBytesPerSecond,
  })
  let server: KafkaServer | undefined
  let quotas: QuotaManager | undefined
  let web: BrokerConsole | undefined
  let closeSecurity = (): void => {}
  let offsets: OffsetsStore | undefined
  let txnStore: TransactionStore | undefined
  try {
    const clusterId = loadMeta(dataDir, config.nodeId)
    const topics = new TopicRegistry(dataDir, logs, config, logger)
    topics.load(storedTopics ?? [])
    offsets = OffsetsStore.open(dataDir, logger, { flushMessages: config.flushMessages, flushMs: config.flushMs })
    const groups = new GroupCoordinator(offsets, logger, groupOptions)
    const advertised = { host: '', port: 0 }
    const producerIds = new ProducerIdAllocator(dataDir, logs.fs, logs.dirState)
    txnStore = TransactionStore.open(dataDir, logger, { flushMessages: config.flushMessages, flushMs: config.flushMs })
    const txns = new TransactionCoordinator(txnStore, producerIds, topics, offsets, logger, {
      maxTimeoutMs: config.transactionMaxTimeoutMs,
      idExpirationMs: config.transactionalIdExpirationMs,
      abortIntervalMs: config.transactionAbortTimedOutTransactionCleanupIntervalMs,
      removeIntervalMs: config.transactionRemoveExpiredTransactionCleanupIntervalMs,
    })
    // Before the first request: transactions a crash left preparing complete now.
    txns.start()
    const context: BrokerContext = { config, logger, logs, topics, clusterId, nodeId: config.nodeId, advertised, appends, groups, producerIds, txns }
    // Counting costs a little on every request, so only a broker with its console on pays it.
    if (config.consolePort !== undefined) web = new BrokerConsole(context)
    const listenerSpecs = resolveListeners(config)
    const security = new SecurityManager({
      dataDir,
      logger,
      enabledMechanisms: config.saslEnabledMechanisms.split(',').map((m) => m.trim().toUpperCase()).filter((m) => m !== ''),
      plainUsersFile: config.saslPlainUsersFile,
      reauthMs: config.connectionsMaxReauthMs,
      failedAuthenticationDelayMs: config.connectionFailedAuthenticationDelayMs,
      plainCallbackHandler: config.saslServerCallbackHandlerClass,
      listeners: parseListenerSaslSettings(config.listenerNameConfigs, listenerSpecs),
      oauthbearer: {
        jaasConfig: config.oauthbearerSaslJaasConfig,
        jwksEndpointUrl: config.saslOauthbearerJwksEndpointUrl,
        jwksEndpointRefreshMs: config.saslOauthbearerJwksEndpointRefreshMs,
        expectedAudience: config.saslOauthbearerExpectedAudience,
        expectedIssuer: config.saslOauthbearerExpectedIssuer,
        subClaimName: config.saslOauthbearerSubClaimName,
        scopeClaimName: config.saslOauthbearerScopeClaimName,
        clockSkewSeconds: config.saslOauthbearerClockSkewSeconds,
      },
    })
    await security.start()
    closeSecurity = () => security.close()
    const tls: TlsContextProvider | undefined = listenerSpecs.some((l) => usesTls(l.protocol))
      ? new TlsContextProvider({
          keystoreLocation: config.sslKeystoreLocation,
          keystoreCertificateChain: config.sslKeystoreCertificateChain,
          keystoreKey: config.sslKeystoreKey,
          keyPassword: config.sslKeyPassword,
          truststoreLocation: config.sslTruststoreLocation,
          truststoreCertificates: config.sslTruststoreCertificates,
          clientAuth: config.sslClientAuth,
          principalMappingRules: config.sslPrincipalMappingRules,
          keystoreType: config.sslKeystoreType,
          keystorePassword: config.sslKeystorePassword,
          truststoreType: config.sslTruststoreType,
          truststorePassword: config.sslTruststorePassword,
        }, { logger, pollMs: config.sslReloadIntervalMs, allowDnChanges: config.sslAllowDnChanges, allowSanChanges: config.sslAllowSanChanges })
      : undefined
    closeSecurity = () => {
      security.close()
      tls?.close()
    }
    const authorizer = config.authorizerClassName === undefined ? undefined : new StandardAuthorizer(new AclStore(dataDir, logs), config)
    const quotaStore = new QuotaStore({ dataDir, logs })
    const quotaWindow = { samples: config.quotaWindowNum, windowMs: config.quotaWindowSizeSeconds * 1000 }
    const controllerWindow = { samples: config.controllerQuotaWindowNum, windowMs: config.controllerQuotaWindowSizeSeconds * 1000 }
    quotas = new QuotaManager(quotaStore, quotaWindow, quotaClock, controllerWindow, quotaCallback)
    if (web !== undefined) web.metrics.quotaAccounts = quotas.accounts.bind(quotas)
    if (web !== undefined && tls !== undefined) web.metrics.tlsStatus = () => tls.status()
    server = new KafkaServer({
      broker: context,
      registry: createRegistry({ quotas: quotaStore, ...(authorizer === undefined ? {} : { authorizer }) }),
      quotas: new RequestThrottler(quotas),
      connectionRate: new ConnectionRateQuota(quotaStore, quotaWindow),
      maxRequestBytes: config.maxRequestBytes,
      logger,
      listeners: listenerSpecs,
      security,
      ...(tls !== undefined ? { tls } : {}),
      ...(web !== undefined ? { metrics: web.metrics } : {}),
    })
    const bound = await server.listenAll()
    const listeners: ListenerInfo[] = bound.map((l) => ({ name: l.spec.name, protocol: l.spec.protocol, host: l.host, port: l.port, advertised: l.advertised }))
    const addr = { address: listeners[0]!.host, port: listeners[0]!.port }
    advertised.host = listeners[0]!.advertised.host
    advertised.port = listeners[0]!.advertised.port
    for (const l of listeners) {
      logger.info(`listener ${l.name} (${l.protocol}) on ${l.host}:${l.port}, advertised as ${l.advertised.host}:${l.advertised.port}`)
    }

    quotas.clusterMetadata({ clusterId, nodes: [{ id: config.nodeId, host: advertised.host, port: advertised.port }] })

    const consoleInfo = await web?.listen(config.consolePort!, { security, listeners: listenerSpecs, ...(authorizer !== undefined ? { authorizer } : {}) })

    let closing: Promise<void> | undefined
    const s = server
    const store = offsets
    const txnLog = txnStore
    const quotaManager = quotas
    return {
      host: addr.address,
      port: addr.port,
      dataDir,
      nodeId: config.nodeId,
      clusterId,
      advertised,
      listeners,
      console: consoleInfo,
      quotaAccounts: () => quotaManager.accounts(),
      close() {
        closing ??= (async () => {
          const stopped = s.close()
          closeSecurity()
          await web?.close()
          // Long-polling fetches and parked joins answer now instead of at their timeouts.
          appends.close()
          groups.close()
          txns.close()
          await stopped
          await txnLog.close()
          await store.close()
          await logs.close()
          await closePolicies(config, logger)
          await quotaCallback?.close()
          logger.info('shut down cleanly')
        })()
        return closing
      },
    }
  } catch (err) {
    closeSecurity()
    await web?.close().catch(() => {})
    if (server !== undefined) await server.close(0).catch(() => {})
    await txnStore?.close().catch(() => {})
    await offsets?.close().catch(() => {})
    await logs.close().catch(() => {})
    await closePolicies(config, logger)
    await quotaCallback?.close()
    throw err
  }
}
