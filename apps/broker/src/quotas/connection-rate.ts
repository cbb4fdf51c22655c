import { QuotaSensor, type WindowConfig } from './rate.js'
import type { QuotaStore } from './store.js'

/**
 * KIP-612's per-IP connection creation rate (connection_creation_rate on /ips/<ip>, else
 * /ips/<default>), as Kafka's ConnectionQuotas applies it: each accepted connection records 1
 * in its address's sensor; one over the quota is taken back out and the socket is closed after
 * the throttle time (at most one window), so a client that reconnects in a loop is slowed
 * rather than served. IP entities are matched by their literal address.
 */
export class ConnectionRateQuota {
  private readonly sensors = new Map<string, QuotaSensor>()

  constructor(
    private readonly store: QuotaStore,
    private readonly window: WindowConfig,
    private readonly now: () => number = () => performance.now(),
  ) {
    store.onChange(() => this.sensors.clear())
  }

  /** Records a new connection from `address`; answers 0 to accept it, else how long to hold it before closing. */
  admit(address: string): number {
    const bound = this.store.get({ ip: address }, 'connection_creation_rate') ?? this.store.get({ ip: null }, 'connection_creation_rate')
    if (bound === undefined) return 0
    let sensor = this.sensors.get(address)
    if (sensor === undefined) {
      // Idle addresses are forgotten when their count is back to nothing, so the map stays small.
      if (this.sensors.size > 10_000) for (const [a, s] of this.sensors) if (s.rate.total(this.now()) === 0) this.sensors.delete(a)
      sensor = new QuotaSensor(this.window, bound, this.window.windowMs)
      this.sensors.set(address, sensor)
    }
    const now = this.now()
    const ms = sensor.record(1, now)
    if (ms > 0) sensor.unrecord(1, now)
    return ms
  }

  /** Connections counted and refused per address (for tests and metrics). */
  accounts(): { address: string; bound: number; recorded: number; violations: number }[] {
    return [...this.sensors].map(([address, s]) => ({ address, bound: s.bound, recorded: s.recorded, violations: s.violations }))
  }
}
