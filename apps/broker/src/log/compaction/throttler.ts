/**
 * Kafka's Throttler for log.cleaner.io.max.bytes.per.second: the cleaner
 * reports the bytes it reads and writes; every check interval, when the rate
 * since the last check is above the cap, it sleeps until the rate is back at
 * it. Unlike Kafka's it also checks as soon as an interval's worth of bytes
 * at the cap has gone by, so a cleaning shorter than one interval is capped
 * too. The sleep waits on the job's cancel flag, so an abandoned job wakes at
 * once. Runs in the cleaner's worker thread, where a blocking wait is right.
 */
export class Throttler {
  private static readonly CHECK_INTERVAL_MS = 300
  private periodStart = performance.now()
  private observed = 0
  /** Milliseconds slept so far (tests and metrics). */
  sleptMs = 0

  constructor(
    private readonly bytesPerSecond: number,
    private readonly wake: Int32Array,
  ) {}

  maybeThrottle(bytes: number): void {
    if (!Number.isFinite(this.bytesPerSecond) || this.bytesPerSecond <= 0) return
    this.observed += bytes
    const elapsed = performance.now() - this.periodStart
    if (elapsed < Throttler.CHECK_INTERVAL_MS && this.observed < (this.bytesPerSecond * Throttler.CHECK_INTERVAL_MS) / 1000) return
    const rate = (this.observed * 1000) / elapsed
    if (rate > this.bytesPerSecond) {
      const sleepMs = Math.round((this.observed * 1000) / this.bytesPerSecond - elapsed)
      if (sleepMs > 0) {
        Atomics.wait(this.wake, 0, 0, sleepMs)
        this.sleptMs += sleepMs
      }
    }
    this.periodStart = performance.now()
    this.observed = 0
  }
}
