import { performance } from 'node:perf_hooks'
import { ExponentialBackoff, sleep } from './backoff.js'
import { isRetriable } from './errors.js'

/** Java's retry.backoff.ms and retry.backoff.max.ms (KIP-580). */
export const DEFAULT_RETRY_BACKOFF_MS = 100
export const DEFAULT_RETRY_BACKOFF_MAX_MS = 1000

export interface RetryOptions {
  /** Total time allowed, first attempt included. */
  timeoutMs: number
  backoff?: ExponentialBackoff
  /** Aborting stops waiting and rejects with the signal's reason. */
  signal?: AbortSignal
  /** Which errors to retry; default: TidelogError with retriable set. */
  retriable?: (error: unknown) => boolean
  /** The wait before retrying this error where it is not the backoff's (Java's shorter wait for AddPartitionsToTxn, say). */
  delayFor?: (error: unknown, attempt: number) => number | undefined
  /** Called before each backoff, e.g. to refresh metadata. */
  onRetry?: (error: unknown, attempt: number, delayMs: number) => void
}

/** A point in time an operation must finish by. */
export class Deadline {
  readonly at: number
  constructor(timeoutMs: number) {
    this.at = performance.now() + timeoutMs
  }

  remaining(): number {
    return Math.max(0, this.at - performance.now())
  }

  /** Whether waiting `ms` more would pass the deadline. */
  passedAfter(ms: number): boolean {
    return performance.now() + ms >= this.at
  }
}

/**
 * Runs `fn` until it succeeds, retrying only errors that are retriable, with exponential
 * backoff and jitter, while the next attempt can still start before the deadline. The last
 * error is rethrown as is, so the caller sees what actually went wrong.
 */
export async function retry<T>(fn: (attempt: number, deadline: Deadline) => Promise<T>, options: RetryOptions): Promise<T> {
  const deadline = new Deadline(options.timeoutMs)
  const backoff = options.backoff ?? new ExponentialBackoff(DEFAULT_RETRY_BACKOFF_MS, DEFAULT_RETRY_BACKOFF_MAX_MS)
  const retriable = options.retriable ?? isRetriable
  for (let attempt = 0; ; attempt++) {
    try {
      return await fn(attempt, deadline)
    } catch (e) {
      if (!retriable(e)) throw e
      const delay = options.delayFor?.(e, attempt) ?? backoff.delay(attempt)
      if (deadline.passedAfter(delay)) throw e
      options.onRetry?.(e, attempt, delay)
      await sleep(delay, options.signal)
    }
  }
}
