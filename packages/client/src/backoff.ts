/**
 * Exponential backoff with jitter, as Java's ExponentialBackoff (KIP-144 for reconnects,
 * KIP-580 for retries): initial * 2^attempts, capped at max, times a random factor in
 * [1 - jitter, 1 + jitter) so that many clients do not retry in lockstep.
 */
export class ExponentialBackoff {
  private readonly expMax: number
  constructor(
    readonly initialMs: number,
    readonly maxMs: number,
    readonly multiplier = 2,
    readonly jitter = 0.2,
  ) {
    this.expMax = maxMs > initialMs ? Math.log(maxMs / Math.max(initialMs, 1)) / Math.log(multiplier) : 0
  }

  /** Delay before attempt `attempts + 1`, given `attempts` failures so far (0 for the first retry). */
  delay(attempts: number): number {
    if (this.expMax === 0) return this.initialMs
    const term = this.initialMs * Math.pow(this.multiplier, Math.min(attempts, this.expMax))
    const factor = this.jitter > 0 ? 1 - this.jitter + Math.random() * 2 * this.jitter : 1
    return Math.min(Math.floor(term * factor), this.maxMs)
  }
}

/**
 * A timer that can be cut short. Deliberately not unref'd: an operation waiting out a backoff
 * with no socket open must still keep the process alive until it settles.
 */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  if (ms <= 0 && signal?.aborted !== true) return Promise.resolve()
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason)
      return
    }
    const onAbort = (): void => {
      clearTimeout(timer)
      reject(signal!.reason)
    }
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort)
      resolve()
    }, ms)
    signal?.addEventListener('abort', onAbort, { once: true })
  })
}
