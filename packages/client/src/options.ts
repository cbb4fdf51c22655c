import type { ConnectionOptions as TlsConnectionOptions } from 'node:tls'
import type { Logger } from './logger.js'
import type { SaslOptions } from './sasl/types.js'

/** Options shared by everything built on a Cluster (Admin, producer, consumer). */
export interface ClientOptions {
  /** Bootstrap addresses, "host:port" (IPv6 as "[::1]:9092"); the port defaults to 9092. */
  brokers: string[] | string
  /** Sent in every request header; brokers log it and use it for quotas. Default 'tidelog'. */
  clientId?: string
  /** TLS: true for node's defaults, or tls.connect options (ca, cert, key, servername, ...). */
  ssl?: boolean | TlsConnectionOptions
  sasl?: SaslOptions
  /** pino-compatible; default silent. */
  logger?: Logger
  /** Java's socket.connection.setup.timeout.ms (10 s). */
  connectTimeoutMs?: number
  /** Java's request.timeout.ms (30 s). */
  requestTimeoutMs?: number
  /** Java's reconnect.backoff.ms (50) and reconnect.backoff.max.ms (1000). */
  reconnectBackoffMs?: number
  reconnectBackoffMaxMs?: number
  /** Java's retry.backoff.ms (100) and retry.backoff.max.ms (1000). */
  retryBackoffMs?: number
  retryBackoffMaxMs?: number
  /** Java's metadata.max.age.ms (5 min): the cache is refreshed at least this often. */
  metadataMaxAgeMs?: number
  /** Largest response frame accepted (default 100 MiB). */
  maxFrameBytes?: number
  /**
   * Whether Metadata requests for unknown topics may create them (on brokers with
   * auto.create.topics.enable). Default false.
   */
  allowAutoTopicCreation?: boolean
  /**
   * Carried unchanged as `tag` in this client's request events on node:diagnostics_channel, so
   * an observer can tell its own clients' requests from others' (channels are process-wide).
   */
  diagnosticsTag?: unknown
}

export interface BrokerAddress {
  host: string
  port: number
}

/** Parses "host:port", "host" (port 9092) and "[v6::addr]:port". */
export function parseBrokerAddress(address: string): BrokerAddress {
  const s = address.trim().replace(/^[a-z]+:\/\//i, '')
  let host: string
  let port = '9092'
  if (s.startsWith('[')) {
    const end = s.indexOf(']')
    if (end < 0) throw new TypeError(`invalid broker address ${JSON.stringify(address)}`)
    host = s.slice(1, end)
    if (s.length > end + 1) {
      if (s[end + 1] !== ':') throw new TypeError(`invalid broker address ${JSON.stringify(address)}`)
      port = s.slice(end + 2)
    }
  } else {
    const colon = s.lastIndexOf(':')
    if (colon >= 0 && s.indexOf(':') !== colon) throw new TypeError(`IPv6 broker addresses need brackets: ${JSON.stringify(address)}`)
    host = colon < 0 ? s : s.slice(0, colon)
    if (colon >= 0) port = s.slice(colon + 1)
  }
  const n = Number(port)
  if (host === '' || !/^\d+$/.test(port) || n < 1 || n > 65535) throw new TypeError(`invalid broker address ${JSON.stringify(address)}`)
  return { host, port: n }
}

export function parseBrokerList(brokers: string[] | string): BrokerAddress[] {
  const list = (typeof brokers === 'string' ? brokers.split(',') : brokers).filter((b) => b.trim() !== '')
  if (list.length === 0) throw new TypeError('brokers: at least one "host:port" is needed')
  return list.map(parseBrokerAddress)
}
