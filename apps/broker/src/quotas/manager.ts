import type { GuardedQuotaCallback } from './callback.js'
import { MutationSensor, RequestMutationQuota } from './mutations.js'
import { QuotaSensor, type WindowConfig } from './rate.js'
import { type QuotaEntity, type QuotaStore, entityKey } from './store.js'

/** The client quota types Kafka's QuotaFactory makes a ClientQuotaManager for, by their config key. */
export const CLIENT_QUOTA_TYPES = {
  produce: 'producer_byte_rate',
  fetch: 'consumer_byte_rate',
  request: 'request_percentage',
} as const
export type ClientQuotaType = keyof typeof CLIENT_QUOTA_TYPES
/** KIP-599's quota on partitions created and deleted, counted in a token bucket (mutations.ts). */
export const MUTATION_QUOTA_KEY = 'controller_mutation_rate'
/** Every quota a (user, client-id) is counted against, with its config key. */
export type QuotaKind = ClientQuotaType | 'mutation'
const QUOTA_KEYS: Readonly<Record<QuotaKind, string>> = { ...CLIENT_QUOTA_TYPES, mutation: MUTATION_QUOTA_KEY }
type Tags = Readonly<Record<string, string>>
const sensorId = (kind: QuotaKind, tags: Tags): string => `${kind}\u0000${JSON.stringify(Object.entries(tags).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))}`

const SENSOR_EXPIRY_MS = 3600_000
const SWEEP_EVERY_MS = 60_000

/** Which sensor a client's usage is counted in: Kafka's quota metric tags (user, client-id). */
export interface QuotaTags {
  readonly user: string
  readonly clientId: string
}

/** What the broker has counted for one sensor: exposed for tests, /metrics and the console. */
export interface SensorAccount {
  type: QuotaKind
  user: string
  clientId: string
  bound: number
  /** The sensor's metric tags (user and client-id; whatever a client.quota.callback.class answers). */
  tags: Tags
  /** The windowed rate now (per second; request: percent of one thread). */
  rate: number
  /** Sum of the samples inside the window and the time that window spans. */
  windowTotal: number
  windowMs: number
  samples: { startMs: number; value: number }[]
  /** Everything recorded since the sensor was made. */
  recorded: number
  violations: number
  throttledMs: number
  /** Average of the throttles answered inside the window, ms (Kafka's throttle-time); NaN when none. */
  throttleTimeAvg: number
  /** mutation only: the tokens left in its bucket (Kafka's `tokens` metric). */
  tokens?: number
}

/**
 * Kafka's ClientQuotaManager for produce, fetch and request time, with its default quota
 * callback: a (user, client-id) pair is counted in the sensor of the most specific entity that
 * has this type's quota set, in the order of KIP-55 —
 * /users/<user>/clients/<client-id>, /users/<user>/clients/<default>, /users/<user>,
 * /users/<default>/clients/<client-id>, /users/<default>/clients/<default>, /users/<default>,
 * /clients/<client-id>, /clients/<default>. Sharing a sensor is what makes a user quota
 * shared by all of that user's clients. Quotas change at once: a change drops the sensors so
 * the next request resolves again (Kafka updates the bound of live sensors; a fresh window is
 * the simpler equivalent for a single broker, and loses at most one window of history).
 *
 * With a client.quota.callback.class (KIP-257, callback.ts) the callback's tags choose the
 * sensor and its quotaLimit the bound for produce, fetch, request and controller mutations
 * (Kafka's ControllerMutationQuotaManager is a ClientQuotaManager too); every request is
 * counted (Kafka's CUSTOM_QUOTAS), and a quota change or quotaResetRequired updates the bounds
 * of the live sensors in place, as Kafka's updateQuotaMetricConfigs does.
 */
export class QuotaManager {
  private readonly sensors = new Map<string, { type: ClientQuotaType; tags: Tags; sensor: QuotaSensor; lastMs: number }>()
  private readonly mutationSensors = new Map<string, { tags: Tags; sensor: MutationSensor; lastMs: number }>()
  /** The quota keys set on some user or client-id entity: the others are not even resolved. */
  private readonly enabled = new Set<string>()
  private lastSweepMs = 0
  private readonly maxRequestThrottleMs: number

  constructor(
    readonly store: QuotaStore,
    readonly window: WindowConfig,
    private readonly now: () => number = () => performance.now(),
    /** controller.quota.window.num / .size.seconds: KIP-599's own windows for controller_mutation_rate. */
    readonly controllerWindow: WindowConfig = window,
    private readonly callback?: GuardedQuotaCallback,
  ) {
    this.maxRequestThrottleMs = window.windowMs
    store.onChange(() => this.changed())
    this.changed()
  }

  /** Some client quota is set (Kafka's quotasEnabled): without one nothing is counted at all. */
  active = false

  /** What the callback was last told, by entity and quota kind (to tell it only what changed). */
  private told = new Map<string, { kind: QuotaKind; entity: QuotaEntity; value: number }>()

  private changed(): void {
    this.enabled.clear()
    const keys = Object.values(QUOTA_KEYS)
    for (const e of this.store.all()) if (!('ip' in e.entity)) for (const k of keys) if (e.values.has(k)) this.enabled.add(k)
    this.active = this.callback !== undefined || this.enabled.size > 0
    if (this.callback === undefined) {
      this.sensors.clear()
      this.mutationSensors.clear()
      return
    }
    const now = new Map<string, { kind: QuotaKind; entity: QuotaEntity; value: number }>()
    for (const e of this.store.all()) {
      if ('ip' in e.entity) continue
      for (const kind of Object.keys(QUOTA_KEYS) as QuotaKind[]) {
        const value = e.values.get(QUOTA_KEYS[kind])
        if (value !== undefined) now.set(`${kind}\u0000${entityKey(e.entity)}`, { kind, entity: e.entity, value })
      }
    }
    for (const [id, q] of now) if (this.told.get(id)?.value !== q.value) this.callback.update(q.kind, q.entity, q.value)
    for (const [id, q] of this.told) if (!now.has(id)) this.callback.remove(q.kind, q.entity)
    this.told = now
    this.refreshBounds()
  }

  /** Asks the callback again for the bound of each live sensor (of one kind, or all). */
  private refreshBounds(kind?: QuotaKind): void {
    for (const e of this.sensors.values()) {
      if (kind !== undefined && e.type !== kind) continue
      const bound = this.callback?.limit(e.type, e.tags)
      if (bound !== undefined) e.sensor.bound = bound
    }
    if (kind !== undefined && kind !== 'mutation') return
    for (const [id, e] of this.mutationSensors) {
      const bound = this.callback?.limit('mutation', e.tags)
      // A bucket without a bound would hold Infinity - Infinity tokens: no quota is no bucket.
      if (bound === Number.POSITIVE_INFINITY) this.mutationSensors.delete(id)
      else if (bound !== undefined) e.sensor.bound = bound
    }
  }

  /**
   * The sensor tags and bound a (user, client-id) is counted under for one kind of quota: the
   * callback's, or the stored quotas' KIP-55 resolution (tags user and client-id, as Kafka's).
   */
  private counted(kind: QuotaKind, user: string, clientId: string): { tags: Tags; bound: () => number | undefined } | undefined {
    if (this.callback === undefined) {
      const resolved = this.resolveKey(QUOTA_KEYS[kind], user, clientId)
      if (resolved === undefined) return undefined
      return { tags: { user: resolved.tags.user, 'client-id': resolved.tags.clientId }, bound: () => resolved.bound }
    }
    const tags = this.callback.tags(kind, user, clientId)
    if (tags === undefined) return undefined
    return { tags, bound: () => this.callback!.limit(kind, tags) }
  }

  /** Tells a callback the cluster it runs in (Kafka: on every metadata change; here once, at start). */
  clusterMetadata(cluster: { clusterId: string; nodes: { id: number; host: string; port: number }[] }): void {
    this.callback?.clusterMetadata(cluster)
  }

  /** The sensor's tags and bound for this client (undefined: no quota applies). */
  resolve(type: ClientQuotaType, user: string, clientId: string): { tags: QuotaTags; bound: number } | undefined {
    return this.resolveKey(CLIENT_QUOTA_TYPES[type], user, clientId)
  }

  private resolveKey(key: string, user: string, clientId: string): { tags: QuotaTags; bound: number } | undefined {
    if (!this.enabled.has(key)) return undefined
    const at = (entity: QuotaEntity): number | undefined => this.store.get(entity, key)
    const candidates: [QuotaEntity, QuotaTags][] = [
      [{ user, 'client-id': clientId }, { user, clientId }],
      [{ user, 'client-id': null }, { user, clientId }],
      [{ user }, { user, clientId: '' }],
      [{ user: null, 'client-id': clientId }, { user, clientId }],
      [{ user: null, 'client-id': null }, { user, clientId }],
      [{ user: null }, { user, clientId: '' }],
      [{ 'client-id': clientId }, { user: '', clientId }],
      [{ 'client-id': null }, { user: '', clientId }],
    ]
    for (const [entity, tags] of candidates) {
      // An empty user or client id takes no quota of that type, named or default (Kafka checks nonEmpty).
      if ((user === '' && 'user' in entity) || (clientId === '' && 'client-id' in entity)) continue
      const bound = at(entity)
      if (bound !== undefined) return { tags, bound }
    }
    return undefined
  }

  private sensorFor(type: ClientQuotaType, user: string, clientId: string): QuotaSensor | undefined {
    const counted = this.counted(type, user, clientId)
    if (counted === undefined) return undefined
    const id = sensorId(type, counted.tags)
    let entry = this.sensors.get(id)
    if (entry === undefined) {
      const bound = counted.bound()
      if (bound === undefined) return undefined
      this.sweep()
      entry = { type, tags: counted.tags, sensor: new QuotaSensor(this.window, bound, type === 'request' ? this.maxRequestThrottleMs : Number.POSITIVE_INFINITY), lastMs: 0 }
      this.sensors.set(id, entry)
    }
    if (this.callback?.resetRequired(type) === true) this.refreshBounds(type)
    entry.lastMs = this.now()
    return entry.sensor
  }

  /**
   * Drops sensors idle for an hour (Kafka's InactiveSensorExpirationTimeSeconds), so clients
   * inventing a new client id per connection cannot grow the broker's memory without bound.
   */
  private sweep(): void {
    const now = this.now()
    if (now - this.lastSweepMs < SWEEP_EVERY_MS) return
    this.lastSweepMs = now
    for (const [id, e] of this.sensors) if (now - e.lastMs > SENSOR_EXPIRY_MS) this.sensors.delete(id)
    for (const [id, e] of this.mutationSensors) if (now - e.lastMs > SENSOR_EXPIRY_MS) this.mutationSensors.delete(id)
  }

  /**
   * The controller mutation quota for one CreateTopics / DeleteTopics / CreatePartitions request
   * (ControllerMutationQuotaManager.newQuotaFor): undefined while no controller_mutation_rate
   * applies to this client; strict refuses topics, permissive (older versions) only throttles.
   */
  mutationQuota(user: string, clientId: string, strict: boolean): RequestMutationQuota | undefined {
    const counted = this.counted('mutation', user, clientId)
    if (counted === undefined) return undefined
    const id = sensorId('mutation', counted.tags)
    let entry = this.mutationSensors.get(id)
    if (entry === undefined) {
      const bound = counted.bound()
      if (bound === undefined || bound === Number.POSITIVE_INFINITY) return undefined
      this.sweep()
      entry = { tags: counted.tags, sensor: new MutationSensor(this.controllerWindow, bound, this.now()), lastMs: 0 }
      this.mutationSensors.set(id, entry)
    }
    if (this.callback?.resetRequired('mutation') === true) this.refreshBounds('mutation')
    entry.lastMs = this.now()
    return new RequestMutationQuota(entry.sensor, strict, this.now)
  }

  /** Records usage and answers the throttle time in ms (0: within quota, or no quota). */
  record(type: ClientQuotaType, user: string, clientId: string, value: number): number {
    return this.sensorFor(type, user, clientId)?.record(value, this.now()) ?? 0
  }

  /** Takes back usage recorded for a response that was not sent (a throttled fetch). */
  unrecord(type: ClientQuotaType, user: string, clientId: string, value: number): void {
    this.sensorFor(type, user, clientId)?.unrecord(value, this.now())
  }

  /**
   * The most this client may get in one response (getMaxValueInQuotaWindow): bound ×
   * (samples - 1) windows, so a single fetch can never exceed what the quota allows.
   */
  maxValueInWindow(type: ClientQuotaType, user: string, clientId: string): number {
    const bound = this.callback === undefined ? this.resolve(type, user, clientId)?.bound : this.sensorFor(type, user, clientId)?.bound
    return bound === undefined ? Number.POSITIVE_INFINITY : bound * (this.window.samples - 1) * (this.window.windowMs / 1000)
  }

  /** What has been counted, sensor by sensor. */
  accounts(): SensorAccount[] {
    const now = this.now()
    const account = (type: QuotaKind, tags: Tags, sensor: QuotaSensor | MutationSensor): SensorAccount => ({
      type,
      user: tags.user ?? '',
      clientId: tags['client-id'] ?? '',
      tags,
      bound: sensor.bound,
      rate: sensor.rate.rate(now),
      windowTotal: sensor.rate.total(now),
      windowMs: sensor.rate.windowSizeMs(now),
      samples: sensor.rate.snapshot(now),
      recorded: sensor.recorded,
      violations: sensor.violations,
      throttledMs: sensor.throttledMs,
      throttleTimeAvg: sensor.throttles.average(now),
      ...(sensor instanceof MutationSensor ? { tokens: sensor.remaining(now) } : {}),
    })
    return [
      ...[...this.sensors.values()].map((e) => account(e.type, e.tags, e.sensor)),
      ...[...this.mutationSensors.values()].map((e) => account('mutation', e.tags, e.sensor)),
    ]
  }
}
