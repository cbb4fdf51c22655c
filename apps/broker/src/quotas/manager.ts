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

const SENSOR_EXPIRY_MS = 3600_000
const SWEEP_EVERY_MS = 60_000

/** Which sensor a client's usage is counted in: Kafka's quota metric tags (user, client-id). */
export interface QuotaTags {
  readonly user: string
  readonly clientId: string
}

/** What the broker has counted for one sensor: exposed for tests, /metrics and the console. */
export interface SensorAccount {
  type: ClientQuotaType | 'mutation'
  user: string
  clientId: string
  bound: number
  /** The sensor's metric tags (user and client-id; whatever a client.quota.callback.class answers). */
  tags: Readonly<Record<string, string>>
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
 * sensor and its quotaLimit the bound for produce, fetch and request; every request is counted
 * (Kafka's CUSTOM_QUOTAS), and a quota change or quotaResetRequired updates the bounds of the
 * live sensors in place, as Kafka's updateQuotaMetricConfigs does.
 * controller_mutation_rate stays with the stored quotas.
 */
export class QuotaManager {
  private readonly sensors = new Map<string, { type: ClientQuotaType; tags: Readonly<Record<string, string>>; sensor: QuotaSensor; lastMs: number }>()
  private readonly mutationSensors = new Map<string, { tags: QuotaTags; sensor: MutationSensor; lastMs: number }>()
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

  /** What the callback was last told, by entity and quota type (to tell it only what changed). */
  private told = new Map<string, { type: ClientQuotaType; entity: QuotaEntity; value: number }>()

  private changed(): void {
    this.mutationSensors.clear()
    this.enabled.clear()
    const keys = [...Object.values(CLIENT_QUOTA_TYPES), MUTATION_QUOTA_KEY] as string[]
    for (const e of this.store.all()) if (!('ip' in e.entity)) for (const k of keys) if (e.values.has(k)) this.enabled.add(k)
    this.active = this.callback !== undefined || this.enabled.size > 0
    if (this.callback === undefined) {
      this.sensors.clear()
      return
    }
    const now = new Map<string, { type: ClientQuotaType; entity: QuotaEntity; value: number }>()
    for (const e of this.store.all()) {
      if ('ip' in e.entity) continue
      for (const type of Object.keys(CLIENT_QUOTA_TYPES) as ClientQuotaType[]) {
        const value = e.values.get(CLIENT_QUOTA_TYPES[type])
        if (value !== undefined) now.set(`${type}\u0000${entityKey(e.entity)}`, { type, entity: e.entity, value })
      }
    }
    for (const [id, q] of now) if (this.told.get(id)?.value !== q.value) this.callback.update(q.type, q.entity, q.value)
    for (const [id, q] of this.told) if (!now.has(id)) this.callback.remove(q.type, q.entity)
    this.told = now
    this.refreshBounds()
  }

  /** Asks the callback again for the bound of each live sensor (of one type, or all). */
  private refreshBounds(type?: ClientQuotaType): void {
    for (const e of this.sensors.values()) {
      if (type !== undefined && e.type !== type) continue
      const bound = this.callback?.limit(e.type, e.tags)
      if (bound !== undefined) e.sensor.bound = bound
    }
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
    let tags: Readonly<Record<string, string>> | undefined
    let bound: () => number | undefined
    if (this.callback === undefined) {
      const resolved = this.resolve(type, user, clientId)
      if (resolved === undefined) return undefined
      tags = { user: resolved.tags.user, 'client-id': resolved.tags.clientId }
      bound = () => resolved.bound
    } else {
      const custom = this.callback.tags(type, user, clientId)
      if (custom === undefined) return undefined
      tags = custom
      bound = () => this.callback!.limit(type, custom)
    }
    const id = `${type}\u0000${JSON.stringify(Object.entries(tags).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))}`
    let entry = this.sensors.get(id)
    if (entry === undefined) {
      const b = bound()
      if (b === undefined) return undefined
      this.sweep()
      entry = { type, tags, sensor: new QuotaSensor(this.window, b, type === 'request' ? this.maxRequestThrottleMs : Number.POSITIVE_INFINITY), lastMs: 0 }
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
    const resolved = this.resolveKey(MUTATION_QUOTA_KEY, user, clientId)
    if (resolved === undefined) return undefined
    const id = `${resolved.tags.user}\u0000${resolved.tags.clientId}`
    let entry = this.mutationSensors.get(id)
    if (entry === undefined) {
      this.sweep()
      entry = { tags: resolved.tags, sensor: new MutationSensor(this.controllerWindow, resolved.bound, this.now()), lastMs: 0 }
      this.mutationSensors.set(id, entry)
    }
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
    const account = (type: SensorAccount['type'], tags: Readonly<Record<string, string>>, sensor: QuotaSensor | MutationSensor): SensorAccount => ({
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
      ...[...this.mutationSensors.values()].map((e) => account('mutation', { user: e.tags.user, 'client-id': e.tags.clientId }, e.sensor)),
    ]
  }
}
