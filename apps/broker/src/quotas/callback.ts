/**
 * client.quota.callback.class (KIP-257): Kafka's ClientQuotaCallback for a Node broker. The
 * module (loaded as the policies are: a default export that is a class or an object) decides
 * which sensor a request is counted in (quotaMetricTags) and that sensor's bound (quotaLimit)
 * for produce, fetch, request and controller mutation quotas; quotas altered with AlterClientQuotas reach it through
 * updateQuota / removeQuota, the ones stored at start included, as Kafka replays its metadata.
 *
 * A callback that throws never crashes the broker. Kafka lets the exception fail the request
 * (often after a produce was already appended); here it is logged and that one quota decision
 * falls back to "no quota": the request is served, not counted and not throttled.
 */
import type { BrokerConfig } from '../config.js'
import type { Logger } from '../logger.js'
import { loadPlugin } from '../policy/policy.js'
import type { QuotaKind } from './manager.js'
import type { QuotaEntity } from './store.js'

/** Kafka's ClientQuotaType names. */
export type ClientQuotaTypeName = 'PRODUCE' | 'FETCH' | 'REQUEST' | 'CONTROLLER_MUTATION'
export const QUOTA_TYPE_NAMES: Readonly<Record<QuotaKind, ClientQuotaTypeName>> = { produce: 'PRODUCE', fetch: 'FETCH', request: 'REQUEST', mutation: 'CONTROLLER_MUTATION' }

/** Kafka's KafkaPrincipal. */
export interface KafkaPrincipal {
  readonly principalType: string
  readonly name: string
}

/** Kafka's ClientQuotaEntity.ConfigEntity: `name` is `<default>` for the default entities. */
export interface ConfigEntity {
  readonly entityType: 'USER' | 'CLIENT_ID' | 'DEFAULT_USER' | 'DEFAULT_CLIENT_ID'
  readonly name: string
}

/** Kafka's ClientQuotaEntity: the user part first, then the client-id part. */
export interface ClientQuotaEntity {
  readonly configEntities: readonly ConfigEntity[]
}

/** Kafka's ClientQuotaCallback. Only quotaMetricTags and quotaLimit are required here. */
export interface ClientQuotaCallback {
  configure?(config: Readonly<BrokerConfig>): void
  /** The tags of the sensor this request is counted in; requests with equal tags share a quota. */
  quotaMetricTags(quotaType: ClientQuotaTypeName, principal: KafkaPrincipal, clientId: string): Readonly<Record<string, string>> | ReadonlyMap<string, string>
  /** The bound for a sensor's tags (bytes/s; request: percent; mutations: partitions/s); null or undefined for no quota. */
  quotaLimit(quotaType: ClientQuotaTypeName, metricTags: Readonly<Record<string, string>>): number | null | undefined
  updateQuota?(quotaType: ClientQuotaTypeName, entity: ClientQuotaEntity, newValue: number): void
  removeQuota?(quotaType: ClientQuotaTypeName, entity: ClientQuotaEntity): void
  /** true: every sensor's bound of this type is asked again from quotaLimit (checked on each request). */
  quotaResetRequired?(quotaType: ClientQuotaTypeName): boolean
  /** Kafka calls it when partition metadata changes; this single-node broker calls it once at start. */
  updateClusterMetadata?(cluster: { readonly clusterId: string; readonly nodes: readonly { id: number; host: string; port: number }[] }): boolean
  close?(): void | Promise<void>
}

export class QuotaCallbackLoadError extends Error {
  override readonly name = 'QuotaCallbackLoadError'
}

export const loadQuotaCallback = (specifier: string, config: BrokerConfig): Promise<ClientQuotaCallback> =>
  loadPlugin<ClientQuotaCallback>('client.quota.callback.class', specifier, config, { kind: 'client quota callback', method: 'quotaMetricTags', error: QuotaCallbackLoadError })

/** Our store's entity as Kafka hands it to the callback. */
export function toClientQuotaEntity(e: QuotaEntity): ClientQuotaEntity {
  const parts: ConfigEntity[] = []
  if ('user' in e) parts.push(e.user === null || e.user === undefined ? { entityType: 'DEFAULT_USER', name: '<default>' } : { entityType: 'USER', name: e.user })
  if ('client-id' in e) parts.push(e['client-id'] === null || e['client-id'] === undefined ? { entityType: 'DEFAULT_CLIENT_ID', name: '<default>' } : { entityType: 'CLIENT_ID', name: e['client-id'] })
  return { configEntities: parts }
}

/**
 * The callback behind a guard: each call that throws (or answers something unusable) is
 * logged, at most once a minute per method so a broken callback cannot flood the log, and
 * answers undefined.
 */
export class GuardedQuotaCallback {
  private readonly lastLogged = new Map<string, number>()
  /** Calls that failed, for tests and the log line. */
  failures = 0

  constructor(
    readonly callback: ClientQuotaCallback,
    private readonly logger: Logger | undefined,
    private readonly now: () => number,
  ) {}

  tags(type: QuotaKind, user: string, clientId: string): Record<string, string> | undefined {
    return this.guard('quotaMetricTags', () => {
      // The broker's principals are all User:<name> (SASL, mTLS mapping, ANONYMOUS).
      const got = this.callback.quotaMetricTags(QUOTA_TYPE_NAMES[type], { principalType: 'User', name: user }, clientId)
      if (got === null || typeof got !== 'object') throw new TypeError('quotaMetricTags must answer an object or Map of string tags')
      const entries = got instanceof Map ? [...got.entries()] : Object.entries(got)
      if (entries.some(([, v]) => typeof v !== 'string')) throw new TypeError('quotaMetricTags must answer string tags')
      return Object.fromEntries(entries) as Record<string, string>
    })
  }

  /** The bound: Infinity when the callback sets none (Kafka: Long.MAX_VALUE), undefined when it failed. */
  limit(type: QuotaKind, tags: Readonly<Record<string, string>>): number | undefined {
    return this.guard('quotaLimit', () => {
      const got = this.callback.quotaLimit(QUOTA_TYPE_NAMES[type], tags)
      if (got === null || got === undefined) return Number.POSITIVE_INFINITY
      if (typeof got !== 'number' || Number.isNaN(got) || got <= 0) throw new TypeError(`quotaLimit answered ${String(got)}, not a positive number`)
      return got
    })
  }

  resetRequired(type: QuotaKind): boolean {
    return this.guard('quotaResetRequired', () => this.callback.quotaResetRequired?.(QUOTA_TYPE_NAMES[type]) === true) ?? false
  }

  update(type: QuotaKind, entity: QuotaEntity, value: number): void {
    this.guard('updateQuota', () => this.callback.updateQuota?.(QUOTA_TYPE_NAMES[type], toClientQuotaEntity(entity), value))
  }

  remove(type: QuotaKind, entity: QuotaEntity): void {
    this.guard('removeQuota', () => this.callback.removeQuota?.(QUOTA_TYPE_NAMES[type], toClientQuotaEntity(entity)))
  }

  clusterMetadata(cluster: Parameters<NonNullable<ClientQuotaCallback['updateClusterMetadata']>>[0]): void {
    this.guard('updateClusterMetadata', () => this.callback.updateClusterMetadata?.(cluster))
  }

  async close(): Promise<void> {
    try {
      await this.callback.close?.()
    } catch (err) {
      this.logger?.warn(`client.quota.callback.class: close() failed: ${(err as Error).message}`)
    }
  }

  private guard<T>(method: string, fn: () => T): T | undefined {
    try {
      return fn()
    } catch (err) {
      this.failures++
      const now = this.now()
      const last = this.lastLogged.get(method)
      if (last === undefined || now - last >= 60_000) {
        this.lastLogged.set(method, now)
        this.logger?.error(`client.quota.callback.class: ${method}() failed (that request's quota falls back to none; ${this.failures} failures so far): ${(err as Error)?.message ?? String(err)}`)
      }
      return undefined
    }
  }
}
