import type { ClientOptions, SaslOptions as NativeSasl } from '@tidelog/client'
import { KafkaJSNonRetriableError, KafkaJSNotImplemented } from './errors.js'
import { createLogger, logLevel as LogLevel, nativeLogger, type Logger } from './logger.js'
import { KafkaProducer, type ProducerConfig } from './producer.js'
import { KafkaAdmin, type AdminConfig } from './admin.js'
import { KafkaConsumer, type ConsumerConfig } from './consumer.js'
import type { KafkaConfig, RetryOptions } from './types.js'

/** What every component needs from its Kafka: resolved native options and a logger. */
export interface KafkaContext {
  readonly clientId: string
  readonly logger: Logger
  readonly retry: RetryOptions
  /**
   * Native client options; the broker list is resolved here (kafkajs allows an async function).
   * `tag` marks the component's requests for its instrumentation events.
   */
  clientOptions(retry?: RetryOptions, tag?: object): Promise<ClientOptions>
}

// kafkajs' own defaults (its client config docs): 1 s connect, 30 s request, retries from 300 ms.
const DEFAULT_CONNECTION_TIMEOUT = 1_000
const DEFAULT_REQUEST_TIMEOUT = 30_000
const DEFAULT_INITIAL_RETRY_TIME = 300
const DEFAULT_MAX_RETRY_TIME = 30_000

function sasl(config: KafkaConfig['sasl']): NativeSasl | undefined {
  if (config === undefined) return undefined
  const mechanism = String(config.mechanism ?? '').toLowerCase()
  switch (mechanism) {
    case 'plain':
    case 'scram-sha-256':
    case 'scram-sha-512':
      return { mechanism, username: String(config.username), password: String(config.password) } as NativeSasl
    case 'oauthbearer': {
      const provider = config.oauthBearerProvider
      if (typeof provider !== 'function') throw new KafkaJSNonRetriableError('SASL OAUTHBEARER: oauthBearerProvider must be a function')
      return { mechanism: 'oauthbearer', oauthBearerProvider: async () => provider() }
    }
    case 'aws':
      throw new KafkaJSNotImplemented('SASL mechanism aws (AWS-MSK-IAM) is not supported by @tidelog/kafkajs')
    default:
      if ('authenticationProvider' in config) throw new KafkaJSNotImplemented('custom SASL authenticationProvider mechanisms are not supported by @tidelog/kafkajs')
      throw new KafkaJSNonRetriableError(`SASL ${mechanism} mechanism is not supported`)
  }
}

/**
 * kafkajs' entry point. Components share nothing but configuration: each producer, consumer
 * and admin has its own connections, as in kafkajs.
 */
export class Kafka {
  private readonly rootLogger: Logger
  private readonly context: KafkaContext

  constructor(config: KafkaConfig) {
    if (config === undefined || config === null || (typeof config.brokers !== 'function' && !Array.isArray(config.brokers))) {
      throw new KafkaJSNonRetriableError('Failed to connect: expected brokers array and got nothing')
    }
    this.rootLogger = createLogger(config.logLevel ?? LogLevel.INFO, config.logCreator)
    const logger = this.rootLogger
    const clientId = config.clientId ?? 'kafkajs'
    const saslOptions = sasl(config.sasl)
    const baseRetry = config.retry ?? {}
    this.context = {
      clientId,
      logger,
      retry: baseRetry,
      async clientOptions(retry: RetryOptions = baseRetry, tag?: object): Promise<ClientOptions> {
        const brokers = typeof config.brokers === 'function' ? await config.brokers() : config.brokers
        if (!Array.isArray(brokers) || brokers.length === 0) throw new KafkaJSNonRetriableError('Failed to connect: brokers array is empty')
        const initial = retry.initialRetryTime ?? DEFAULT_INITIAL_RETRY_TIME
        return {
          brokers,
          clientId,
          ssl: config.ssl,
          sasl: saslOptions,
          logger: nativeLogger(logger.namespace('tidelog')),
          connectTimeoutMs: config.connectionTimeout ?? DEFAULT_CONNECTION_TIMEOUT,
          requestTimeoutMs: config.requestTimeout ?? DEFAULT_REQUEST_TIMEOUT,
          retryBackoffMs: initial,
          retryBackoffMaxMs: Math.max(initial, retry.maxRetryTime ?? DEFAULT_MAX_RETRY_TIME),
          diagnosticsTag: tag,
        }
      },
    }
  }

  producer(config: ProducerConfig = {}): KafkaProducer {
    return new KafkaProducer(this.context, config)
  }

  consumer(config: ConsumerConfig): KafkaConsumer {
    return new KafkaConsumer(this.context, config)
  }

  admin(config: AdminConfig = {}): KafkaAdmin {
    return new KafkaAdmin(this.context, config)
  }

  logger(): Logger {
    return this.rootLogger
  }
}
