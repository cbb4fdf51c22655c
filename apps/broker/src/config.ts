import { readFileSync } from 'node:fs'
import { parseArgs } from 'node:util'
import { ACCEPTED_AUTHORIZERS, STANDARD_AUTHORIZER } from './security/authorizer.js'
import { resolveListeners } from './security/listeners.js'
import { jksUnsupported } from './security/keystore.js'
import { applyListenerNameForms, listenerNameEnv, takeListenerNameFlags } from './security/sasl-listener/cli-forms.js'
import { isListenerNameKey, parseListenerSaslSettings } from './security/sasl-listener/settings.js'
import { ConfigError, type OptionSpec, joinNegativeValues, parseValue, readConfigFile } from './config-input.js'

export { ConfigError } from './config-input.js'

export type LogLevel = 'error' | 'warn' | 'info' | 'debug'

/** Everything the broker can be told. Durations are milliseconds, sizes bytes. */
export interface BrokerConfig {
  host: string
  /** 0 picks an ephemeral port; the chosen one is reported once listening. */
  port: number
  /** What Metadata tells clients to connect to; defaults to host (or 127.0.0.1 for a wildcard host). */
  advertisedHost: string | undefined
  /** Defaults to the port actually bound. */
  advertisedPort: number | undefined
  dataDir: string
  nodeId: number
  /** Partition count of auto-created topics (Kafka's num.partitions). */
  numPartitions: number
  autoCreateTopics: boolean
  segmentBytes: number
  segmentMs: number
  /** -1 keeps segments forever. */
  retentionMs: number
  /** -1 keeps segments regardless of size. */
  retentionBytes: number
  /** Kafka's log.retention.check.interval.ms: how often retention.ms / retention.bytes are applied. */
  retentionCheckIntervalMs: number
  /**
   * fsync after this many appended messages; Infinity (the default, as Kafka's
   * flush.messages) leaves durability to the page cache and replication. 1 fsyncs
   * before every acknowledgement.
   */
  flushMessages: number
  /** fsync at least this often (ms); Infinity leaves it to the page cache. */
  flushMs: number
  /** Kafka's producer.id.expiration.ms: idempotent producers idle this long are forgotten. */
  producerIdExpirationMs: number
  /** Kafka's producer.id.expiration.check.interval.ms: how often that is checked. */
  producerIdExpirationCheckIntervalMs: number
  /** Kafka's group.share.record.lock.duration.ms: how long a share consumer holds the records it acquired (KIP-932). */
  groupShareRecordLockDurationMs: number
  /** Kafka's group.share.delivery.count.limit: deliveries of a record before it is archived. */
  groupShareDeliveryCountLimit: number
  /** Kafka's group.share.partition.max.record.locks: in-flight records per share-partition. */
  groupSharePartitionMaxRecordLocks: number
  /** Kafka's group.share.session.timeout.ms: a share-group member silent this long is removed. */
  groupShareSessionTimeoutMs: number
  /** Kafka's group.share.heartbeat.interval.ms: the heartbeat interval given to share-group members. */
  groupShareHeartbeatIntervalMs: number
  /** Kafka's transaction.max.timeout.ms: a longer transaction.timeout.ms gets INVALID_TRANSACTION_TIMEOUT. */
  transactionMaxTimeoutMs: number
  /** Kafka's transactional.id.expiration.ms: a transactional id idle this long (no transaction open) is forgotten. */
  transactionalIdExpirationMs: number
  /** Kafka's transaction.abort.timed.out.transaction.cleanup.interval.ms: how often timed-out transactions are looked for. */
  transactionAbortTimedOutTransactionCleanupIntervalMs: number
  /** Kafka's transaction.remove.expired.transaction.cleanup.interval.ms: how often expired transactional ids are looked for. */
  transactionRemoveExpiredTransactionCleanupIntervalMs: number
  /** Kafka's transaction.partition.verification.enable (KIP-890 part 1): Produce must name a partition already in the transaction. */
  transactionPartitionVerificationEnable: boolean
  /** Kafka's add.partitions.to.txn.retry.backoff.ms: how often a Produce v12 whose implicit add met a completing transaction tries again. */
  addPartitionsToTxnRetryBackoffMs: number
  /** Kafka's add.partitions.to.txn.retry.backoff.max.ms: how long it keeps trying before the client is answered (never past the request's timeout). */
  addPartitionsToTxnRetryBackoffMaxMs: number
  /**
   * Not a Kafka setting: the most segment files held open at once. Segments
   * used least recently are closed and reopened on demand, so thousands of
   * partitions do not exhaust the descriptor limit.
   */
  maxOpenFiles: number
  /** Kafka's log.cleaner.enable: compacted topics are cleaned in the background. */
  logCleanerEnable: boolean
  /** Kafka's log.cleaner.backoff.ms: the cleaner's pause when no log needs cleaning. */
  logCleanerBackoffMs: number
  /** Kafka's log.cleaner.dedupe.buffer.size: memory for the key-to-offset map of one cleaning (24 bytes a key). */
  logCleanerDedupeBufferSize: number
  /** Kafka's log.cleaner.io.max.bytes.per.second: the cleaner's read and write rate cap (Infinity: none). */
  logCleanerIoMaxBytesPerSecond: number
  maxMessageBytes: number
  /** Kafka's fetch.max.bytes: record bytes in one Fetch response (at least one batch, KIP-74). */
  fetchMaxBytes: number
  /**
   * log.message.timestamp.before.max.ms / after.max.ms (KIP-937): how far a CreateTime
   * record's timestamp may lie behind or ahead of the broker clock; Infinity (Kafka's
   * Long.MAX_VALUE default) accepts any.
   */
  messageTimestampBeforeMaxMs: number
  messageTimestampAfterMaxMs: number
  maxRequestBytes: number
  /** Connections open at once (Kafka's max.connections); one more is closed at accept. */
  maxConnections: number
  /** Connections open at once from one address (Kafka's max.connections.per.ip). */
  maxConnectionsPerIp: number
  /** Close a connection that has had no request in flight for this long (connections.max.idle.ms); -1 never. */
  connectionsMaxIdleMs: number
  /**
   * Bytes all partial, queued and unanswered requests may hold together
   * (queued.max.request.bytes); reading from every socket pauses while it is used up. -1 unbounded.
   */
  queuedMaxRequestBytes: number
  /** Partitions one CreateTopics or CreatePartitions request may create (KRaft's MAX_PARTITIONS_PER_BATCH). */
  maxPartitionsPerRequest: number
  /** Partitions this broker hosts in total (KIP-578's max.broker.partitions). */
  maxBrokerPartitions: number
  logLevel: LogLevel
  /** Kafka's listeners: NAME://host:port,...; unset, one PLAINTEXT listener on host:port. */
  listeners: string | undefined
  /** Kafka's advertised.listeners: what Metadata returns to a client that came in on each listener. */
  advertisedListeners: string | undefined
  /** Kafka's listener.security.protocol.map: NAME:PROTOCOL,... */
  listenerSecurityProtocolMap: string | undefined
  /** Kafka's ssl.keystore.type: PEM or PKCS12 (JKS is refused with the keytool command that converts it). */
  sslKeystoreType: 'PEM' | 'PKCS12' | 'JKS'
  /** Kafka's ssl.keystore.password: the PKCS12 store's password. */
  sslKeystorePassword: string | undefined
  sslKeystoreLocation: string | undefined
  sslKeystoreCertificateChain: string | undefined
  sslKeystoreKey: string | undefined
  sslKeyPassword: string | undefined
  sslTruststoreType: 'PEM' | 'PKCS12' | 'JKS'
  /** Kafka's ssl.truststore.password: checks a PKCS12 truststore's integrity and decrypts its entries. */
  sslTruststorePassword: string | undefined
  sslTruststoreLocation: string | undefined
  sslTruststoreCertificates: string | undefined
  sslClientAuth: 'none' | 'requested' | 'required'
  /** Kafka's ssl.allow.dn.changes: a reloaded keystore may change the certificate's subject. */
  sslAllowDnChanges: boolean
  /** Kafka's ssl.allow.san.changes: a reloaded keystore may drop subject alternative names. */
  sslAllowSanChanges: boolean
  /** How often the keystore and truststore files are compared, besides file-change events (which some mounts lack); 0: events only. */
  sslReloadIntervalMs: number
  /** Kafka's sasl.enabled.mechanisms, comma separated. */
  saslEnabledMechanisms: string
  /** A JAAS-style file: its user_NAME="password" options are the PLAIN users (as Kafka's PlainLoginModule). */
  saslPlainUsersFile: string | undefined
  /** Kafka's <listener>.oauthbearer.sasl.jaas.config, for every SASL listener: OAuthBearerLoginModule and its unsecuredValidator* options. */
  oauthbearerSaslJaasConfig: string | undefined
  /** Kafka's sasl.oauthbearer.jwks.endpoint.url (KIP-768): set, OAUTHBEARER tokens must be signed by a key from it; unset, unsecured tokens are accepted. */
  saslOauthbearerJwksEndpointUrl: string | undefined
  saslOauthbearerJwksEndpointRefreshMs: number
  /** Kafka's sasl.oauthbearer.expected.audience, comma separated. */
  saslOauthbearerExpectedAudience: string | undefined
  saslOauthbearerExpectedIssuer: string | undefined
  saslOauthbearerSubClaimName: string
  saslOauthbearerScopeClaimName: string
  saslOauthbearerClockSkewSeconds: number
  /** KIP-368: authenticated sessions last this long, then must re-authenticate; 0 never expires. */
  connectionsMaxReauthMs: number
  /** Kafka's connection.failed.authentication.delay.ms: a failed authentication is answered this late. */
  connectionFailedAuthenticationDelayMs: number
  /** Kafka's ssl.principal.mapping.rules (KIP-371): how a client certificate's subject becomes the user name. */
  sslPrincipalMappingRules: string
  /** Kafka's authorizer.class.name: StandardAuthorizer (or AclAuthorizer) turns ACLs on; unset, everyone may do anything. */
  authorizerClassName: string | undefined
  /** Kafka's create.topic.policy.class.name: a module whose policy checks every CreateTopics (policy/policy.ts). */
  createTopicPolicyClassName: string | undefined
  /** Kafka's alter.config.policy.class.name: a module whose policy checks every config change (policy/policy.ts). */
  alterConfigPolicyClassName: string | undefined
  /** Kafka's super.users: `User:a;User:b`, allowed everything whatever the ACLs say. */
  superUsers: string
  /** Kafka's allow.everyone.if.no.acl.found: a resource no ACL names is open to everyone (default false). */
  allowEveryoneIfNoAclFound: boolean
  /** Serve the web console and /metrics over HTTP on 127.0.0.1 at this port (0 picks one); off when unset. */
  consolePort: number | undefined
  /** Kafka's quota.window.num: samples a client quota's rate is measured over. */
  quotaWindowNum: number
  /** Kafka's quota.window.size.seconds: the length of one sample. */
  quotaWindowSizeSeconds: number
  /** Kafka's controller.quota.window.num: samples a controller_mutation_rate is measured over (KIP-599). */
  controllerQuotaWindowNum: number
  /** Kafka's controller.quota.window.size.seconds: the length of one of those samples. */
  controllerQuotaWindowSizeSeconds: number
  /** Kafka's client.quota.callback.class (KIP-257): a module whose ClientQuotaCallback decides produce, fetch, request and controller mutation quotas (quotas/callback.ts). */
  clientQuotaCallbackClass: string | undefined
  /** Kafka's sasl.server.callback.handler.class: here a JavaScript module whose authenticate({ username, password, listener }) decides PLAIN logins. */
  saslServerCallbackHandlerClass: string | undefined
  /**
   * Kafka's listener-prefixed settings (KIP-103), as in server.properties:
   * `listener.name.<listener>.sasl.enabled.mechanisms`, `...<mechanism>.sasl.jaas.config`,
   * `...plain.sasl.server.callback.handler.class`, `...sasl.oauthbearer.*`. They win over the broker-wide ones.
   */
  listenerNameConfigs: Readonly<Record<string, string>>
}

export const DEFAULT_CONFIG: Readonly<BrokerConfig> = Object.freeze({
  host: '127.0.0.1',
  port: 9092,
  advertisedHost: undefined,
  advertisedPort: undefined,
  dataDir: './data',
  nodeId: 1,
  numPartitions: 1,
  autoCreateTopics: true,
  segmentBytes: 1024 * 1024 * 1024,
  segmentMs: 7 * 24 * 60 * 60 * 1000,
  retentionMs: 7 * 24 * 60 * 60 * 1000,
  retentionBytes: -1,
  retentionCheckIntervalMs: 300_000,
  flushMessages: Infinity,
  flushMs: Infinity,
  producerIdExpirationMs: 86_400_000,
  producerIdExpirationCheckIntervalMs: 600_000,
  groupShareRecordLockDurationMs: 30_000,
  groupShareDeliveryCountLimit: 5,
  groupSharePartitionMaxRecordLocks: 2000,
  groupShareSessionTimeoutMs: 45_000,
  groupShareHeartbeatIntervalMs: 5_000,
  transactionMaxTimeoutMs: 900_000,
  transactionalIdExpirationMs: 604_800_000,
  transactionAbortTimedOutTransactionCleanupIntervalMs: 10_000,
  transactionRemoveExpiredTransactionCleanupIntervalMs: 3_600_000,
  transactionPartitionVerificationEnable: true,
  addPartitionsToTxnRetryBackoffMs: 20,
  addPartitionsToTxnRetryBackoffMaxMs: 100,
  maxOpenFiles: 1000,
  logCleanerEnable: true,
  logCleanerBackoffMs: 15_000,
  logCleanerDedupeBufferSize: 128 * 1024 * 1024,
  logCleanerIoMaxBytesPerSecond: Infinity,
  // Kafka's message.max.bytes default: 1 MiB plus the record-batch overhead.
  maxMessageBytes: 1048588,
  // Kafka's fetch.max.bytes default: 55 MiB.
  fetchMaxBytes: 57671680,
  messageTimestampBeforeMaxMs: Infinity,
  messageTimestampAfterMaxMs: Infinity,
  maxRequestBytes: 100 * 1024 * 1024,
  // Kafka's defaults (Int.MaxValue: no limit) for the connection counts and idle time.
  maxConnections: 2 ** 31 - 1,
  maxConnectionsPerIp: 2 ** 31 - 1,
  connectionsMaxIdleMs: 10 * 60 * 1000,
  // Kafka's default is -1 (unbounded). An embedded broker shares its process with
  // the application, so it is bounded by default; Kafka's rule that the pool is at
  // least socket.request.max.bytes keeps every legal request readable.
  queuedMaxRequestBytes: 256 * 1024 * 1024,
  maxPartitionsPerRequest: 10_000,
  // KIP-578 (not adopted) proposed no default; every partition keeps a file open
  // and a few KiB of memory, so an unbounded count lets one client exhaust both.
  maxBrokerPartitions: 100_000,
  logLevel: 'info',
  listeners: undefined,
  advertisedListeners: undefined,
  listenerSecurityProtocolMap: undefined,
  sslKeystoreType: 'PEM',
  sslKeystorePassword: undefined,
  sslKeystoreLocation: undefined,
  sslKeystoreCertificateChain: undefined,
  sslKeystoreKey: undefined,
  sslKeyPassword: undefined,
  sslTruststoreType: 'PEM',
  sslTruststorePassword: undefined,
  sslTruststoreLocation: undefined,
  sslTruststoreCertificates: undefined,
  sslClientAuth: 'none',
  sslAllowDnChanges: false,
  sslAllowSanChanges: false,
  sslReloadIntervalMs: 30_000,
  // Kafka's default is GSSAPI, which is not served; these are what is.
  saslEnabledMechanisms: 'PLAIN,SCRAM-SHA-256,SCRAM-SHA-512',
  saslPlainUsersFile: undefined,
  oauthbearerSaslJaasConfig: undefined,
  saslOauthbearerJwksEndpointUrl: undefined,
  saslOauthbearerJwksEndpointRefreshMs: 3_600_000,
  saslOauthbearerExpectedAudience: undefined,
  saslOauthbearerExpectedIssuer: undefined,
  saslOauthbearerSubClaimName: 'sub',
  saslOauthbearerScopeClaimName: 'scope',
  saslOauthbearerClockSkewSeconds: 30,
  connectionsMaxReauthMs: 0,
  connectionFailedAuthenticationDelayMs: 100,
  sslPrincipalMappingRules: 'DEFAULT',
  authorizerClassName: undefined,
  createTopicPolicyClassName: undefined,
  alterConfigPolicyClassName: undefined,
  superUsers: '',
  allowEveryoneIfNoAclFound: false,
  consolePort: undefined,
  quotaWindowNum: 11,
  quotaWindowSizeSeconds: 1,
  controllerQuotaWindowNum: 11,
  controllerQuotaWindowSizeSeconds: 1,
  clientQuotaCallbackClass: undefined,
  saslServerCallbackHandlerClass: undefined,
  listenerNameConfigs: Object.freeze({}),
})

const INT32_MAX = 2 ** 31 - 1
const SAFE = Number.MAX_SAFE_INTEGER

// One table drives flags, environment variables, the config file and --help, so
// they cannot drift apart.
export const OPTIONS: readonly OptionSpec[] = [
  { key: 'host', flag: 'host', env: 'TIDELOG_HOST', kind: { type: 'string', nonEmpty: true }, help: 'address to listen on' },
  { key: 'port', flag: 'port', env: 'TIDELOG_PORT', kind: { type: 'int', min: 0, max: 65535 }, help: 'port to listen on; 0 picks a free one (printed when ready)' },
  { key: 'advertisedHost', flag: 'advertised-host', env: 'TIDELOG_ADVERTISED_HOST', kind: { type: 'string', nonEmpty: true }, help: 'host clients are told to connect to (default: --host, or 127.0.0.1 for 0.0.0.0/::)' },
  { key: 'advertisedPort', flag: 'advertised-port', env: 'TIDELOG_ADVERTISED_PORT', kind: { type: 'int', min: 1, max: 65535 }, help: 'port clients are told to connect to (default: the bound port)' },
  { key: 'dataDir', flag: 'data-dir', env: 'TIDELOG_DATA_DIR', kind: { type: 'string', nonEmpty: true }, help: 'directory holding the logs, offsets and checkpoints' },
  { key: 'nodeId', flag: 'node-id', env: 'TIDELOG_NODE_ID', kind: { type: 'int', min: 0, max: INT32_MAX }, help: 'this broker\'s node id' },
  { key: 'numPartitions', flag: 'num-partitions', env: 'TIDELOG_NUM_PARTITIONS', kind: { type: 'int', min: 1, max: 100000 }, help: 'partitions of an auto-created topic' },
  { key: 'autoCreateTopics', flag: 'auto-create-topics', env: 'TIDELOG_AUTO_CREATE_TOPICS', kind: { type: 'bool' }, help: 'create unknown topics when a client asks for their metadata (true|false)' },
  { key: 'segmentBytes', flag: 'segment-bytes', env: 'TIDELOG_SEGMENT_BYTES', kind: { type: 'int', min: 14, max: INT32_MAX }, help: 'roll a segment once it reaches this size' },
  { key: 'segmentMs', flag: 'segment-ms', env: 'TIDELOG_SEGMENT_MS', kind: { type: 'int', min: 1, max: SAFE }, help: 'roll a segment once it is this old' },
  { key: 'retentionMs', flag: 'retention-ms', env: 'TIDELOG_RETENTION_MS', kind: { type: 'int', min: -1, max: SAFE }, help: 'delete segments whose newest record is older than this; -1 keeps them' },
  { key: 'retentionBytes', flag: 'retention-bytes', env: 'TIDELOG_RETENTION_BYTES', kind: { type: 'int', min: -1, max: SAFE }, help: 'delete oldest segments while a partition is larger than this; -1 keeps them' },
  { key: 'retentionCheckIntervalMs', flag: 'retention-check-interval-ms', env: 'TIDELOG_RETENTION_CHECK_INTERVAL_MS', kind: { type: 'int', min: 1, max: INT32_MAX }, help: 'how often segments past retention are deleted (Kafka\'s log.retention.check.interval.ms)' },
  { key: 'flushMessages', flag: 'flush-messages', env: 'TIDELOG_FLUSH_MESSAGES', kind: { type: 'int', min: 1, max: SAFE, infinite: 'max' }, help: 'fsync after this many messages (1 = before every acknowledgement); default: page cache' },
  { key: 'flushMs', flag: 'flush-ms', env: 'TIDELOG_FLUSH_MS', kind: { type: 'int', min: 0, max: SAFE, infinite: 'max' }, help: 'fsync at least this often (ms); default: page cache' },
  { key: 'producerIdExpirationMs', flag: 'producer-id-expiration-ms', env: 'TIDELOG_PRODUCER_ID_EXPIRATION_MS', kind: { type: 'int', min: 1, max: INT32_MAX }, help: 'forget an idempotent producer this long after its last write (Kafka\'s producer.id.expiration.ms)' },
  { key: 'producerIdExpirationCheckIntervalMs', flag: 'producer-id-expiration-check-interval-ms', env: 'TIDELOG_PRODUCER_ID_EXPIRATION_CHECK_INTERVAL_MS', kind: { type: 'int', min: 1, max: INT32_MAX }, help: 'how often idle producers are looked for (Kafka\'s producer.id.expiration.check.interval.ms)' },
  { key: 'groupShareRecordLockDurationMs', flag: 'group-share-record-lock-duration-ms', env: 'TIDELOG_GROUP_SHARE_RECORD_LOCK_DURATION_MS', kind: { type: 'int', min: 1000, max: 3_600_000 }, help: 'how long a share consumer holds acquired records before they are offered again (KIP-932)' },
  { key: 'groupShareDeliveryCountLimit', flag: 'group-share-delivery-count-limit', env: 'TIDELOG_GROUP_SHARE_DELIVERY_COUNT_LIMIT', kind: { type: 'int', min: 2, max: 10 }, help: 'deliveries of a share-group record before it is archived (KIP-932)' },
  { key: 'groupSharePartitionMaxRecordLocks', flag: 'group-share-partition-max-record-locks', env: 'TIDELOG_GROUP_SHARE_PARTITION_MAX_RECORD_LOCKS', kind: { type: 'int', min: 100, max: 10_000 }, help: 'in-flight records per share-partition (KIP-932)' },
  { key: 'groupShareSessionTimeoutMs', flag: 'group-share-session-timeout-ms', env: 'TIDELOG_GROUP_SHARE_SESSION_TIMEOUT_MS', kind: { type: 'int', min: 1, max: INT32_MAX }, help: 'a share-group member silent this long is removed (KIP-932)' },
  { key: 'groupShareHeartbeatIntervalMs', flag: 'group-share-heartbeat-interval-ms', env: 'TIDELOG_GROUP_SHARE_HEARTBEAT_INTERVAL_MS', kind: { type: 'int', min: 1, max: INT32_MAX }, help: 'the heartbeat interval given to share-group members (KIP-932)' },
  { key: 'transactionMaxTimeoutMs', flag: 'transaction-max-timeout-ms', env: 'TIDELOG_TRANSACTION_MAX_TIMEOUT_MS', kind: { type: 'int', min: 1, max: INT32_MAX }, help: 'longest transaction.timeout.ms a producer may ask for (Kafka\'s transaction.max.timeout.ms)' },
  { key: 'transactionalIdExpirationMs', flag: 'transactional-id-expiration-ms', env: 'TIDELOG_TRANSACTIONAL_ID_EXPIRATION_MS', kind: { type: 'int', min: 1, max: INT32_MAX }, help: 'forget a transactional id this long after its last transaction (Kafka\'s transactional.id.expiration.ms)' },
  { key: 'transactionAbortTimedOutTransactionCleanupIntervalMs', flag: 'transaction-abort-timed-out-transaction-cleanup-interval-ms', env: 'TIDELOG_TRANSACTION_ABORT_TIMED_OUT_TRANSACTION_CLEANUP_INTERVAL_MS', kind: { type: 'int', min: 1, max: INT32_MAX }, help: 'how often transactions past their timeout are aborted (Kafka\'s transaction.abort.timed.out.transaction.cleanup.interval.ms)' },
  { key: 'transactionRemoveExpiredTransactionCleanupIntervalMs', flag: 'transaction-remove-expired-transaction-cleanup-interval-ms', env: 'TIDELOG_TRANSACTION_REMOVE_EXPIRED_TRANSACTION_CLEANUP_INTERVAL_MS', kind: { type: 'int', min: 1, max: INT32_MAX }, help: 'how often expired transactional ids are removed (Kafka\'s transaction.remove.expired.transaction.cleanup.interval.ms)' },
  { key: 'transactionPartitionVerificationEnable', flag: 'transaction-partition-verification-enable', env: 'TIDELOG_TRANSACTION_PARTITION_VERIFICATION_ENABLE', kind: { type: 'bool' }, help: 'transactional Produce must name a partition already in the transaction (KIP-890; true|false)' },
  { key: 'addPartitionsToTxnRetryBackoffMs', flag: 'add-partitions-to-txn-retry-backoff-ms', env: 'TIDELOG_ADD_PARTITIONS_TO_TXN_RETRY_BACKOFF_MS', kind: { type: 'int', min: 1, max: INT32_MAX }, help: 'how often a transactional Produce v12 retries its implicit add while the previous transaction completes (Kafka\'s add.partitions.to.txn.retry.backoff.ms)' },
  { key: 'addPartitionsToTxnRetryBackoffMaxMs', flag: 'add-partitions-to-txn-retry-backoff-max-ms', env: 'TIDELOG_ADD_PARTITIONS_TO_TXN_RETRY_BACKOFF_MAX_MS', kind: { type: 'int', min: 0, max: INT32_MAX }, help: 'how long those retries go on before the client is answered, at most the request\'s timeout (Kafka\'s add.partitions.to.txn.retry.backoff.max.ms)' },
  { key: 'maxOpenFiles', flag: 'max-open-files', env: 'TIDELOG_MAX_OPEN_FILES', kind: { type: 'int', min: 16, max: INT32_MAX }, help: 'most segment files kept open; the least recently used are closed and reopened on demand (not a Kafka setting)' },
  { key: 'maxMessageBytes', flag: 'max-message-bytes', env: 'TIDELOG_MAX_MESSAGE_BYTES', kind: { type: 'int', min: 0, max: INT32_MAX }, help: 'largest record batch accepted' },
  { key: 'fetchMaxBytes', flag: 'fetch-max-bytes', env: 'TIDELOG_FETCH_MAX_BYTES', kind: { type: 'int', min: 0, max: INT32_MAX }, help: 'record bytes in one fetch response (at least one batch is always returned)' },
  { key: 'logCleanerEnable', flag: 'log-cleaner-enable', env: 'TIDELOG_LOG_CLEANER_ENABLE', kind: { type: 'bool' }, help: 'compact topics whose cleanup.policy has compact (Kafka\'s log.cleaner.enable)' },
  { key: 'logCleanerBackoffMs', flag: 'log-cleaner-backoff-ms', env: 'TIDELOG_LOG_CLEANER_BACKOFF_MS', kind: { type: 'int', min: 0, max: SAFE }, help: 'pause of the log cleaner when no log needs cleaning (Kafka\'s log.cleaner.backoff.ms)' },
  { key: 'logCleanerDedupeBufferSize', flag: 'log-cleaner-dedupe-buffer-size', env: 'TIDELOG_LOG_CLEANER_DEDUPE_BUFFER_SIZE', kind: { type: 'int', min: 1024 * 1024, max: SAFE }, help: 'memory for the key map of one cleaning, 24 bytes a key (Kafka\'s log.cleaner.dedupe.buffer.size)' },
  { key: 'logCleanerIoMaxBytesPerSecond', flag: 'log-cleaner-io-max-bytes-per-second', env: 'TIDELOG_LOG_CLEANER_IO_MAX_BYTES_PER_SECOND', kind: { type: 'int', min: 1, max: SAFE, infinite: 'max' }, help: 'cap on the bytes the log cleaner reads and writes per second (Kafka\'s log.cleaner.io.max.bytes.per.second)', defaultText: 'unlimited' },
  { key: 'messageTimestampBeforeMaxMs', flag: 'log-message-timestamp-before-max-ms', env: 'TIDELOG_LOG_MESSAGE_TIMESTAMP_BEFORE_MAX_MS', kind: { type: 'int', min: 0, max: SAFE, infinite: 'max' }, help: 'refuse CreateTime records older than this (INVALID_TIMESTAMP)', defaultText: 'unlimited' },
  { key: 'messageTimestampAfterMaxMs', flag: 'log-message-timestamp-after-max-ms', env: 'TIDELOG_LOG_MESSAGE_TIMESTAMP_AFTER_MAX_MS', kind: { type: 'int', min: 0, max: SAFE, infinite: 'max' }, help: 'refuse CreateTime records further in the future than this (INVALID_TIMESTAMP)', defaultText: 'unlimited' },
  { key: 'maxRequestBytes', flag: 'max-request-bytes', env: 'TIDELOG_MAX_REQUEST_BYTES', kind: { type: 'int', min: 1024, max: INT32_MAX }, help: 'largest request frame accepted; larger ones close the connection' },
  { key: 'maxConnections', flag: 'max-connections', env: 'TIDELOG_MAX_CONNECTIONS', kind: { type: 'int', min: 1, max: INT32_MAX }, help: 'connections open at once; further ones are closed at accept (max.connections)' },
  { key: 'maxConnectionsPerIp', flag: 'max-connections-per-ip', env: 'TIDELOG_MAX_CONNECTIONS_PER_IP', kind: { type: 'int', min: 1, max: INT32_MAX }, help: 'connections open at once from one address (max.connections.per.ip)' },
  { key: 'connectionsMaxIdleMs', flag: 'connections-max-idle-ms', env: 'TIDELOG_CONNECTIONS_MAX_IDLE_MS', kind: { type: 'int', min: -1, max: INT32_MAX }, help: 'close connections idle this long; -1 never (connections.max.idle.ms)' },
  { key: 'queuedMaxRequestBytes', flag: 'queued-max-request-bytes', env: 'TIDELOG_QUEUED_MAX_REQUEST_BYTES', kind: { type: 'int', min: -1, max: SAFE }, help: 'memory all partial and queued requests may hold; reading pauses beyond it; -1 unbounded (queued.max.request.bytes)' },
  { key: 'maxPartitionsPerRequest', flag: 'max-partitions-per-request', env: 'TIDELOG_MAX_PARTITIONS_PER_REQUEST', kind: { type: 'int', min: 1, max: INT32_MAX }, help: 'partitions one CreateTopics or CreatePartitions request may create' },
  { key: 'maxBrokerPartitions', flag: 'max-broker-partitions', env: 'TIDELOG_MAX_BROKER_PARTITIONS', kind: { type: 'int', min: 1, max: INT32_MAX }, help: 'partitions this broker may host in total (KIP-578)' },
  { key: 'logLevel', flag: 'log-level', env: 'TIDELOG_LOG_LEVEL', kind: { type: 'enum', values: ['error', 'warn', 'info', 'debug'] }, help: 'error | warn | info | debug' },
  { key: 'listeners', flag: 'listeners', env: 'TIDELOG_LISTENERS', kind: { type: 'string', nonEmpty: true }, help: "listeners to open, e.g. 'PLAINTEXT://127.0.0.1:9092,SASL_SSL://127.0.0.1:9093' (replaces --host/--port)" },
  { key: 'advertisedListeners', flag: 'advertised-listeners', env: 'TIDELOG_ADVERTISED_LISTENERS', kind: { type: 'string', nonEmpty: true }, help: 'NAME://host:port per listener, as Metadata tells clients (default: the bound address)' },
  { key: 'listenerSecurityProtocolMap', flag: 'listener-security-protocol-map', env: 'TIDELOG_LISTENER_SECURITY_PROTOCOL_MAP', kind: { type: 'string', nonEmpty: true }, help: 'NAME:PROTOCOL pairs for listeners not named after their protocol', defaultText: 'each protocol name to itself' },
  { key: 'sslKeystoreType', flag: 'ssl-keystore-type', env: 'TIDELOG_SSL_KEYSTORE_TYPE', kind: { type: 'enum', values: ['PEM', 'PKCS12', 'JKS'] }, help: 'PEM | PKCS12 (JKS: convert with keytool -importkeystore ... -deststoretype PKCS12)' },
  { key: 'sslKeystorePassword', flag: 'ssl-keystore-password', env: 'TIDELOG_SSL_KEYSTORE_PASSWORD', kind: { type: 'string' }, help: 'password of a PKCS12 keystore' },
  { key: 'sslKeystoreLocation', flag: 'ssl-keystore-location', env: 'TIDELOG_SSL_KEYSTORE_LOCATION', kind: { type: 'string', nonEmpty: true }, help: 'PEM file with the private key and certificate chain; re-read when it changes' },
  { key: 'sslKeystoreCertificateChain', flag: 'ssl-keystore-certificate-chain', env: 'TIDELOG_SSL_KEYSTORE_CERTIFICATE_CHAIN', kind: { type: 'string', nonEmpty: true }, help: 'the certificate chain as PEM text (instead of a keystore file)' },
  { key: 'sslKeystoreKey', flag: 'ssl-keystore-key', env: 'TIDELOG_SSL_KEYSTORE_KEY', kind: { type: 'string', nonEmpty: true }, help: 'the private key as PEM text (instead of a keystore file)' },
  { key: 'sslKeyPassword', flag: 'ssl-key-password', env: 'TIDELOG_SSL_KEY_PASSWORD', kind: { type: 'string', nonEmpty: true }, help: 'passphrase of an encrypted private key' },
  { key: 'sslTruststoreType', flag: 'ssl-truststore-type', env: 'TIDELOG_SSL_TRUSTSTORE_TYPE', kind: { type: 'enum', values: ['PEM', 'PKCS12', 'JKS'] }, help: 'PEM | PKCS12 (JKS: convert with keytool)' },
  { key: 'sslTruststorePassword', flag: 'ssl-truststore-password', env: 'TIDELOG_SSL_TRUSTSTORE_PASSWORD', kind: { type: 'string' }, help: 'password of a PKCS12 truststore' },
  { key: 'sslTruststoreLocation', flag: 'ssl-truststore-location', env: 'TIDELOG_SSL_TRUSTSTORE_LOCATION', kind: { type: 'string', nonEmpty: true }, help: 'PEM file of the CAs client certificates must chain to' },
  { key: 'sslTruststoreCertificates', flag: 'ssl-truststore-certificates', env: 'TIDELOG_SSL_TRUSTSTORE_CERTIFICATES', kind: { type: 'string', nonEmpty: true }, help: 'those CAs as PEM text' },
  { key: 'sslClientAuth', flag: 'ssl-client-auth', env: 'TIDELOG_SSL_CLIENT_AUTH', kind: { type: 'enum', values: ['none', 'requested', 'required'] }, help: 'none | requested | required: ask TLS clients for a certificate (its subject is the principal)' },
  { key: 'sslAllowDnChanges', flag: 'ssl-allow-dn-changes', env: 'TIDELOG_SSL_ALLOW_DN_CHANGES', kind: { type: 'bool' }, help: "a reloaded keystore may change the certificate's subject (Kafka's ssl.allow.dn.changes)" },
  { key: 'sslAllowSanChanges', flag: 'ssl-allow-san-changes', env: 'TIDELOG_SSL_ALLOW_SAN_CHANGES', kind: { type: 'bool' }, help: 'a reloaded keystore may drop subject alternative names (ssl.allow.san.changes)' },
  { key: 'sslReloadIntervalMs', flag: 'ssl-reload-interval-ms', env: 'TIDELOG_SSL_RELOAD_INTERVAL_MS', kind: { type: 'int', min: 0, max: INT32_MAX }, help: 'also compare the keystore and truststore files this often, for mounts without change events; 0 events only' },
  { key: 'saslEnabledMechanisms', flag: 'sasl-enabled-mechanisms', env: 'TIDELOG_SASL_ENABLED_MECHANISMS', kind: { type: 'string', nonEmpty: true }, help: 'SASL mechanisms offered: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER' },
  { key: 'saslPlainUsersFile', flag: 'sasl-plain-users-file', env: 'TIDELOG_SASL_PLAIN_USERS_FILE', kind: { type: 'string', nonEmpty: true }, help: 'JAAS-style file whose user_NAME="password" entries are the PLAIN users' },
  { key: 'oauthbearerSaslJaasConfig', flag: 'oauthbearer-sasl-jaas-config', env: 'TIDELOG_OAUTHBEARER_SASL_JAAS_CONFIG', kind: { type: 'string', nonEmpty: true }, help: 'OAuthBearerLoginModule required unsecuredValidatorRequiredScope="..." ...; options of the unsecured OAUTHBEARER validator' },
  { key: 'saslOauthbearerJwksEndpointUrl', flag: 'sasl-oauthbearer-jwks-endpoint-url', env: 'TIDELOG_SASL_OAUTHBEARER_JWKS_ENDPOINT_URL', kind: { type: 'string', nonEmpty: true }, help: 'http(s):// or file: JWKS whose keys sign OAUTHBEARER tokens (KIP-768); unset, unsecured tokens are accepted (development only)' },
  { key: 'saslOauthbearerJwksEndpointRefreshMs', flag: 'sasl-oauthbearer-jwks-endpoint-refresh-ms', env: 'TIDELOG_SASL_OAUTHBEARER_JWKS_ENDPOINT_REFRESH_MS', kind: { type: 'int', min: 0, max: SAFE }, help: 'reload the JWKS this often; 0 loads it once' },
  { key: 'saslOauthbearerExpectedAudience', flag: 'sasl-oauthbearer-expected-audience', env: 'TIDELOG_SASL_OAUTHBEARER_EXPECTED_AUDIENCE', kind: { type: 'string', nonEmpty: true }, help: 'comma-separated audiences; a token\'s aud must name one' },
  { key: 'saslOauthbearerExpectedIssuer', flag: 'sasl-oauthbearer-expected-issuer', env: 'TIDELOG_SASL_OAUTHBEARER_EXPECTED_ISSUER', kind: { type: 'string', nonEmpty: true }, help: 'a token\'s iss must be this' },
  { key: 'saslOauthbearerSubClaimName', flag: 'sasl-oauthbearer-sub-claim-name', env: 'TIDELOG_SASL_OAUTHBEARER_SUB_CLAIM_NAME', kind: { type: 'string', nonEmpty: true }, help: 'the claim naming the principal (User:<value>)' },
  { key: 'saslOauthbearerScopeClaimName', flag: 'sasl-oauthbearer-scope-claim-name', env: 'TIDELOG_SASL_OAUTHBEARER_SCOPE_CLAIM_NAME', kind: { type: 'string', nonEmpty: true }, help: 'the claim holding the token\'s scope' },
  { key: 'saslOauthbearerClockSkewSeconds', flag: 'sasl-oauthbearer-clock-skew-seconds', env: 'TIDELOG_SASL_OAUTHBEARER_CLOCK_SKEW_SECONDS', kind: { type: 'int', min: 0, max: INT32_MAX }, help: 'clock difference allowed when checking exp, iat and nbf' },
  { key: 'connectionsMaxReauthMs', flag: 'connections-max-reauth-ms', env: 'TIDELOG_CONNECTIONS_MAX_REAUTH_MS', kind: { type: 'int', min: 0, max: SAFE }, help: 'SASL sessions last this long, then must re-authenticate (KIP-368); 0 never expires' },
  { key: 'connectionFailedAuthenticationDelayMs', flag: 'connection-failed-authentication-delay-ms', env: 'TIDELOG_CONNECTION_FAILED_AUTHENTICATION_DELAY_MS', kind: { type: 'int', min: 0, max: INT32_MAX }, help: 'hold back the answer to a failed authentication this long before closing' },
  { key: 'consolePort', flag: 'console-port', env: 'TIDELOG_CONSOLE_PORT', kind: { type: 'int', min: 0, max: 65535 }, help: 'serve the web console and Prometheus /metrics on http://127.0.0.1:PORT (0 picks a free one); off by default' },
  { key: 'sslPrincipalMappingRules', flag: 'ssl-principal-mapping-rules', env: 'TIDELOG_SSL_PRINCIPAL_MAPPING_RULES', kind: { type: 'string', nonEmpty: true }, help: 'RULE:pattern/replacement/[LU],...,DEFAULT: the user name from a client certificate subject (KIP-371)' },
  { key: 'authorizerClassName', flag: 'authorizer-class-name', env: 'TIDELOG_AUTHORIZER_CLASS_NAME', kind: { type: 'enum', values: ACCEPTED_AUTHORIZERS }, help: `turn ACLs on: ${STANDARD_AUTHORIZER}` },
  { key: 'createTopicPolicyClassName', flag: 'create-topic-policy-class-name', env: 'TIDELOG_CREATE_TOPIC_POLICY_CLASS_NAME', kind: { type: 'string', nonEmpty: true }, help: 'module (path or package) whose default export checks each topic created; a PolicyViolationError refuses it with POLICY_VIOLATION' },
  { key: 'alterConfigPolicyClassName', flag: 'alter-config-policy-class-name', env: 'TIDELOG_ALTER_CONFIG_POLICY_CLASS_NAME', kind: { type: 'string', nonEmpty: true }, help: 'module (path or package) whose default export checks each config change; a PolicyViolationError refuses it with POLICY_VIOLATION' },
  { key: 'superUsers', flag: 'super-users', env: 'TIDELOG_SUPER_USERS', kind: { type: 'string' }, help: 'principals allowed everything, e.g. User:admin;User:ops' },
  { key: 'allowEveryoneIfNoAclFound', flag: 'allow-everyone-if-no-acl-found', env: 'TIDELOG_ALLOW_EVERYONE_IF_NO_ACL_FOUND', kind: { type: 'bool' }, help: 'with ACLs on, a resource no ACL names is open to everyone (true|false)' },
  { key: 'quotaWindowNum', flag: 'quota-window-num', env: 'TIDELOG_QUOTA_WINDOW_NUM', kind: { type: 'int', min: 1, max: 1000 }, help: 'samples a client quota rate is measured over (quota.window.num)' },
  { key: 'controllerQuotaWindowNum', flag: 'controller-quota-window-num', env: 'TIDELOG_CONTROLLER_QUOTA_WINDOW_NUM', kind: { type: 'int', min: 1, max: 1000 }, help: 'samples a controller_mutation_rate is measured over (controller.quota.window.num, KIP-599)' },
  { key: 'controllerQuotaWindowSizeSeconds', flag: 'controller-quota-window-size-seconds', env: 'TIDELOG_CONTROLLER_QUOTA_WINDOW_SIZE_SECONDS', kind: { type: 'int', min: 1, max: 3600 }, help: 'length of one controller mutation quota sample in seconds (controller.quota.window.size.seconds)' },
  { key: 'clientQuotaCallbackClass', flag: 'client-quota-callback-class', env: 'TIDELOG_CLIENT_QUOTA_CALLBACK_CLASS', kind: { type: 'string', nonEmpty: true }, help: 'module (path or package) whose default export is a ClientQuotaCallback (KIP-257) deciding produce, fetch, request and controller mutation quotas' },
  { key: 'saslServerCallbackHandlerClass', flag: 'sasl-server-callback-handler-class', env: 'TIDELOG_SASL_SERVER_CALLBACK_HANDLER_CLASS', kind: { type: 'string', nonEmpty: true }, help: 'path of a JS module exporting authenticate({ username, password, listener }) that decides PLAIN logins' },
  { key: 'quotaWindowSizeSeconds', flag: 'quota-window-size-seconds', env: 'TIDELOG_QUOTA_WINDOW_SIZE_SECONDS', kind: { type: 'int', min: 1, max: 3600 }, help: 'length of one quota sample in seconds (quota.window.size.seconds)' },
]

const CONFIG_ENV = 'TIDELOG_CONFIG'

function describeDefault(spec: OptionSpec): string {
  const v = DEFAULT_CONFIG[spec.key]
  if (spec.defaultText !== undefined) return ` (default: ${spec.defaultText})`
  if (v === undefined) return ''
  if (v === Infinity) return ' (default: none, page cache)'
  return ` (default: ${String(v)})`
}

export function helpText(): string {
  const lines = [
    'Usage: tidelog-broker [options]',
    '',
    'A Kafka-wire-compatible broker. Every option can also be set through the',
    'environment variable shown, or in a JSON config file (--config) whose keys are',
    'the option names without dashes in camelCase (e.g. "segmentBytes") or as spelled',
    'here (e.g. "segment-bytes"). Precedence: flag > environment > file > default.',
    'Sizes are bytes, durations milliseconds.',
    '',
    'Options:',
  ]
  const rows: [string, string][] = OPTIONS.map((o) => [
    `--${o.flag} <${o.kind.type === 'bool' ? 'bool' : o.kind.type === 'int' ? 'n' : 'value'}>`,
    `${o.help}${describeDefault(o)}  [${o.env}]`,
  ])
  rows.push(['--listener-name-<l>-<setting> <value>', 'Kafka\'s listener.name.<l>.<setting> (KIP-103), e.g. --listener-name-external-sasl-enabled-mechanisms  [TIDELOG_LISTENER_NAME_<L>_<SETTING>]'])
  rows.push(['--config <file>', `JSON config file  [${CONFIG_ENV}]`])
  rows.push(['-h, --help', 'print this help and exit'])
  const width = Math.max(...rows.map((r) => r[0].length)) + 2
  for (const [a, b] of rows) lines.push(`  ${a.padEnd(width)}${b}`)
  return lines.join('\n') + '\n'
}

export type ParseResult = { help: true } | { help: false; config: BrokerConfig }

export interface ParseSources {
  argv?: readonly string[]
  env?: NodeJS.ProcessEnv
  readFile?: (path: string) => string
}

/**
 * Resolves the configuration from flags, environment and an optional JSON file.
 * Throws ConfigError with a message fit for a human on anything it cannot use.
 */
export function parseConfig(sources: ParseSources = {}): ParseResult {
  const env = sources.env ?? process.env
  // Listener-prefixed flags name listeners only known once the rest is parsed (cli-forms.ts).
  const { argv, forms: listenerNameFlags } = takeListenerNameFlags(sources.argv ?? process.argv.slice(2))
  const readFile = sources.readFile ?? ((p: string) => readFileSync(p, 'utf8'))

  const options: Record<string, { type: 'string' | 'boolean'; short?: string }> = {
    config: { type: 'string' },
    help: { type: 'boolean', short: 'h' },
  }
  for (const o of OPTIONS) options[o.flag] = { type: 'string' }

  let values: Record<string, string | boolean | undefined>
  try {
    values = parseArgs({ args: joinNegativeValues(argv), options, strict: true, allowPositionals: false }).values as typeof values
  } catch (err) {
    // parseArgs' own messages name the flag; add where to look.
    throw new ConfigError(`${(err as Error).message}\nRun with --help to see the options.`)
  }
  if (values.help === true) return { help: true }

  const configPath = (values.config as string | undefined) ?? env[CONFIG_ENV]
  const file = configPath !== undefined && configPath !== '' ? readConfigFile(configPath, readFile) : {}

  const byFileKey = new Map<string, OptionSpec>()
  for (const o of OPTIONS) {
    byFileKey.set(o.key, o)
    byFileKey.set(o.flag, o)
    // Kafka's own spelling too (ssl.keystore.location), so a server.properties line carries over.
    byFileKey.set(o.flag.replace(/-/g, '.'), o)
  }
  for (const k of Object.keys(file)) {
    if (!byFileKey.has(k) && !isListenerNameKey(k)) throw new ConfigError(`config file ${configPath}: unknown option "${k}"`)
  }

  const config: BrokerConfig = { ...DEFAULT_CONFIG }
  const seenInFile = new Set<keyof BrokerConfig>()
  const listenerNameConfigs: Record<string, string> = {}
  for (const [k, raw] of Object.entries(file)) {
    if (isListenerNameKey(k)) {
      if (typeof raw !== 'string' && typeof raw !== 'number') throw new ConfigError(`config file ${configPath}, "${k}": expected a string, got ${JSON.stringify(raw)}`)
      listenerNameConfigs[k] = String(raw)
      config.listenerNameConfigs = listenerNameConfigs
      continue
    }
    const spec = byFileKey.get(k)!
    if (seenInFile.has(spec.key)) throw new ConfigError(`config file ${configPath}: "${k}" is set twice`)
    seenInFile.add(spec.key)
    ;(config as unknown as Record<string, unknown>)[spec.key] = parseValue(spec, raw, `config file ${configPath}, "${k}"`)
  }
  for (const o of OPTIONS) {
    const e = env[o.env]
    if (e !== undefined && e !== '') {
      ;(config as unknown as Record<string, unknown>)[o.key] = parseValue(o, e, `environment ${o.env}`)
    }
    const f = values[o.flag]
    if (typeof f === 'string') {
      ;(config as unknown as Record<string, unknown>)[o.key] = parseValue(o, f, `--${o.flag}`)
    }
  }
  const listenerNameForms = [...listenerNameEnv(env), ...listenerNameFlags]
  if (listenerNameForms.length > 0) config.listenerNameConfigs = applyListenerNameForms(config.listenerNameConfigs, listenerNameForms, resolveListeners(config))
  checkCombination(config)
  return { help: false, config }
}

// Kafka's own rule (KafkaConfig): a pool smaller than the largest request could
// never hold one, and that connection would wait forever.
function checkCombination(config: BrokerConfig): void {
  // Throws ConfigError naming the bad listener, so a typo fails at parse time, not at bind.
  parseListenerSaslSettings(config.listenerNameConfigs, resolveListeners(config))
  // Node cannot read Java KeyStore files: fail at parse time with the keytool command that converts one.
  if (config.sslKeystoreType === 'JKS') throw new ConfigError(jksUnsupported('ssl.keystore', config.sslKeystoreLocation).message)
  if (config.sslTruststoreType === 'JKS') throw new ConfigError(jksUnsupported('ssl.truststore', config.sslTruststoreLocation).message)
  for (const m of config.saslEnabledMechanisms.split(',')) {
    if (m.trim().toUpperCase() === 'OAUTHBEARER') continue
    if (!['PLAIN', 'SCRAM-SHA-256', 'SCRAM-SHA-512'].includes(m.trim().toUpperCase())) {
      throw new ConfigError(`sasl-enabled-mechanisms: ${m.trim()} is not served (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512; GSSAPI is not)`)
    }
  }
  if (config.queuedMaxRequestBytes > 0 && config.queuedMaxRequestBytes < config.maxRequestBytes) {
    throw new ConfigError(
      `queued-max-request-bytes (${config.queuedMaxRequestBytes}) must be -1 or at least max-request-bytes (${config.maxRequestBytes})`,
    )
  }
}

// Exposed for callers that build a config programmatically (startBroker) and want
// the same checks as the CLI.
export function validateConfig(partial: Partial<BrokerConfig>): BrokerConfig {
  const config: BrokerConfig = { ...DEFAULT_CONFIG }
  for (const o of OPTIONS) {
    const v = partial[o.key]
    if (v === undefined) continue
    ;(config as unknown as Record<string, unknown>)[o.key] =
      v === Infinity && o.kind.type === 'int' && o.kind.infinite === 'max' ? Infinity : parseValue(o, v, `option ${o.key}`)
  }
  if (partial.listenerNameConfigs !== undefined) config.listenerNameConfigs = { ...partial.listenerNameConfigs }
  checkCombination(config)
  return config
}
