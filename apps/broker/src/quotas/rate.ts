/**
 * Kafka's windowed rate (org.apache.kafka.common.metrics.stats.Rate over a SampledStat), the
 * measure every client quota is checked against: `samples` windows of `windowMs` each
 * (quota.window.num, 11, and quota.window.size.seconds, 1). A rate is the sum of the samples
 * still inside the window divided by the time they cover, where that time is never less than
 * samples - 1 full windows; a fresh client therefore gets (samples - 1) windows' worth of
 * quota as a burst before it is throttled, exactly as on Kafka.
 */
export interface WindowConfig {
  /** quota.window.num */
  readonly samples: number
  /** quota.window.size.seconds, in ms */
  readonly windowMs: number
}

interface Sample {
  startMs: number
  value: number
  events: number
}

export class SampledRate {
  private readonly samples: Sample[] = []
  private current = 0

  constructor(private readonly config: WindowConfig) {}

  record(value: number, nowMs: number): void {
    let sample = this.currentSample(nowMs)
    if (nowMs - sample.startMs >= this.config.windowMs) sample = this.advance(nowMs)
    sample.value += value
    sample.events++
  }

  /** Takes back a recorded value (Kafka unrecords a throttled fetch, whose data is not sent). */
  unrecord(value: number, nowMs: number): void {
    this.record(-value, nowMs)
  }

  /** Sum of the samples still inside the window. */
  total(nowMs: number): number {
    this.purge(nowMs)
    let sum = 0
    for (const s of this.samples) sum += s.value
    return sum
  }

  /** Recordings inside the window (the event counts Kafka's Avg divides by). */
  events(nowMs: number): number {
    this.purge(nowMs)
    let n = 0
    for (const s of this.samples) n += s.events
    return n
  }

  /** Kafka's Avg over the window: NaN when nothing was recorded in it. */
  average(nowMs: number): number {
    const n = this.events(nowMs)
    return n === 0 ? Number.NaN : this.total(nowMs) / n
  }

  /** The time the rate is measured over, in ms (Rate.windowSize). */
  windowSizeMs(nowMs: number): number {
    this.purge(nowMs)
    let elapsed = nowMs - this.oldest(nowMs).startMs
    const full = Math.floor(elapsed / this.config.windowMs)
    const minFull = this.config.samples - 1
    if (full < minFull) elapsed += (minFull - full) * this.config.windowMs
    return Math.max(elapsed, 1)
  }

  /** Per second. */
  rate(nowMs: number): number {
    return this.total(nowMs) / (this.windowSizeMs(nowMs) / 1000)
  }

  /** The samples still inside the window, oldest first (for tests and metrics). */
  snapshot(nowMs: number): { startMs: number; value: number }[] {
    this.purge(nowMs)
    return [...this.samples].sort((a, b) => a.startMs - b.startMs).map((s) => ({ startMs: s.startMs, value: s.value }))
  }

  private currentSample(nowMs: number): Sample {
    if (this.samples.length === 0) this.samples.push({ startMs: nowMs, value: 0, events: 0 })
    return this.samples[this.current]!
  }

  private advance(nowMs: number): Sample {
    this.current = (this.current + 1) % this.config.samples
    if (this.current >= this.samples.length) {
      const s = { startMs: nowMs, value: 0, events: 0 }
      this.samples.push(s)
      return s
    }
    const s = this.samples[this.current]!
    reset(s, nowMs)
    return s
  }

  private oldest(nowMs: number): Sample {
    if (this.samples.length === 0) this.samples.push({ startMs: nowMs, value: 0, events: 0 })
    let oldest = this.samples[0]!
    for (const s of this.samples) if (s.startMs < oldest.startMs) oldest = s
    return oldest
  }

  private purge(nowMs: number): void {
    const expireAge = this.config.samples * this.config.windowMs
    for (const s of this.samples) if (nowMs - s.startMs >= expireAge) reset(s, nowMs)
  }
}

function reset(s: Sample, nowMs: number): void {
  s.startMs = nowMs
  s.value = 0
  s.events = 0
}

/**
 * A rate with an upper bound (a Sensor with a Quota). Recording checks the bound after adding
 * the value, as Kafka's Sensor.record(value, now, checkQuotas) does, and answers how long the
 * client must wait for the rate to fall back to the bound (QuotaUtils.throttleTime):
 * (rate - bound) / bound * windowSize.
 */
export class QuotaSensor {
  readonly rate: SampledRate
  /** Values recorded since the sensor was made, for the broker's accounting. */
  recorded = 0
  /** Recordings that came back over the bound. */
  violations = 0
  /** Sum of the throttle times answered. */
  throttledMs = 0
  /** Each throttle answered, for Kafka's throttle-time metric (their average over the window). */
  readonly throttles: SampledRate

  constructor(
    config: WindowConfig,
    public bound: number,
    /** Longest throttle answered (the request quota caps it at one window); Infinity for none. */
    private readonly maxThrottleMs = Number.POSITIVE_INFINITY,
  ) {
    this.rate = new SampledRate(config)
    this.throttles = new SampledRate(config)
  }

  /** Records `value` and returns the throttle time in ms (0 when within the bound). */
  record(value: number, nowMs: number): number {
    this.rate.record(value, nowMs)
    this.recorded += value
    const measured = this.rate.rate(nowMs)
    if (measured <= this.bound) return 0
    const ms = Math.min(Math.round(((measured - this.bound) / this.bound) * this.rate.windowSizeMs(nowMs)), this.maxThrottleMs)
    if (ms <= 0) return 0
    this.violations++
    this.throttledMs += ms
    this.throttles.record(ms, nowMs)
    return ms
  }


  unrecord(value: number, nowMs: number): void {
    this.rate.unrecord(value, nowMs)
    this.recorded -= value
  }
}
