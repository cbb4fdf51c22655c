/**
 * Kafka's windowed rate (org.apache.kafka.common.metrics.stats.Rate over a SampledStat), the
 * measure every client quota is checked against: windows of `windowMs` each (quota.window.num,
 * 11, and quota.window.size.seconds, 1). A rate is the sum of the samples kept divided by the
 * time they cover, where that time is never less than samples - 1 full windows; a fresh client
 * therefore gets (samples - 1) windows' worth of quota as a burst before it is throttled,
 * exactly as on Kafka.
 *
 * As Kafka since 3.8 (apache/kafka#15889, "Fix rate metric spikes"): one sample more than
 * quota.window.num is kept, a sample is dropped only once its LAST event is a full
 * samples x window old (not its start), and the time measured runs from the oldest kept
 * sample's start. Dropping a sample by its start time (Kafka before 3.8, and this broker until
 * the Q1 benchmark found it) throws the first burst out while later windows still hold little,
 * so every 11 s the measured rate falls off a cliff and another burst of ~10 windows goes
 * through: a greedy producer then got 1.8x its quota over 12 s, Kafka 4.4 0.97x.
 */
export interface WindowConfig {
  /** quota.window.num */
  readonly samples: number
  /** quota.window.size.seconds, in ms */
  readonly windowMs: number
}

interface Sample {
  startMs: number
  /** When the last value was recorded in it: what expiry is measured from. */
  lastEventMs: number
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
    sample.lastEventMs = nowMs
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
    // Can exceed samples x window: a sample overlapping the window is kept whole.
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
    if (this.samples.length === 0) this.samples.push(fresh(nowMs))
    return this.samples[this.current]!
  }

  private advance(nowMs: number): Sample {
    // samples + 1 slots: the oldest may still overlap the window while a new one starts.
    this.current = (this.current + 1) % (this.config.samples + 1)
    if (this.current >= this.samples.length) {
      const s = fresh(nowMs)
      this.samples.push(s)
      return s
    }
    const s = this.samples[this.current]!
    reset(s, nowMs)
    return s
  }

  private oldest(nowMs: number): Sample {
    if (this.samples.length === 0) this.samples.push(fresh(nowMs))
    let oldest = this.samples[0]!
    for (const s of this.samples) if (s.startMs < oldest.startMs) oldest = s
    return oldest
  }

  private purge(nowMs: number): void {
    const expireAge = this.config.samples * this.config.windowMs
    for (const s of this.samples) if (nowMs - s.lastEventMs >= expireAge) reset(s, nowMs)
  }
}

const fresh = (nowMs: number): Sample => ({ startMs: nowMs, lastEventMs: nowMs, value: 0, events: 0 })

function reset(s: Sample, nowMs: number): void {
  s.startMs = nowMs
  s.lastEventMs = nowMs
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
