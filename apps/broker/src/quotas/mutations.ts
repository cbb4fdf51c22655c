import { ApiKeys, ErrorCodes } from '@tidelog/protocol'
import { SampledRate, type WindowConfig } from './rate.js'

/** Kafka's Errors.THROTTLING_QUOTA_EXCEEDED message, which ApiError.fromThrowable puts in each refused topic. */
export const THROTTLED_MESSAGE = 'The throttling quota has been exceeded.'

/**
 * KIP-599: from these versions on a topic over the quota is refused with THROTTLING_QUOTA_EXCEEDED
 * (Kafka's StrictControllerMutationQuota); older clients cannot read that error, so they are
 * served and only throttled (PermissiveControllerMutationQuota), as ControllerApis'
 * newQuotaFor(request, strictSinceVersion) decides.
 */
export const STRICT_SINCE_VERSION: ReadonlyMap<number, number> = new Map([
  [ApiKeys.CreateTopics, 6],
  [ApiKeys.DeleteTopics, 5],
  [ApiKeys.CreatePartitions, 3],
])

/**
 * Kafka's TokenBucket stat for controller_mutation_rate: it holds at most
 * samples × window × quota tokens (the burst), refills at the quota per second, and each
 * partition created or deleted takes one. It starts full, and it may go below zero: a mutation
 * is only refused while the bucket is already negative.
 */
export class MutationSensor {
  private tokens: number
  private lastMs: number
  /** Kafka's mutation-rate metric, over the same windows as the other client quotas. */
  readonly rate: SampledRate
  recorded = 0
  violations = 0
  throttledMs = 0
  /** Each throttle answered, for Kafka's throttle-time metric. */
  readonly throttles: SampledRate

  constructor(
    private readonly window: WindowConfig,
    public bound: number,
    nowMs: number,
  ) {
    this.tokens = this.burst
    this.lastMs = nowMs
    this.rate = new SampledRate(window)
    this.throttles = new SampledRate(window)
  }

  get burst(): number {
    return this.window.samples * (this.window.windowMs / 1000) * this.bound
  }

  /** The tokens left now (Kafka's `tokens` metric). */
  remaining(nowMs: number): number {
    this.tokens = Math.min(this.burst, this.tokens + (this.bound * Math.max(0, nowMs - this.lastMs)) / 1000)
    this.lastMs = nowMs
    return this.tokens
  }

  record(partitions: number, nowMs: number): void {
    this.tokens = Math.min(this.burst, this.remaining(nowMs) - partitions)
    this.rate.record(partitions, nowMs)
    this.recorded += partitions
  }

  /** How long until the bucket is back at zero (ControllerMutationQuotaManager.throttleTimeMs); 0 when it is not negative. */
  owedMs(nowMs: number): number {
    const tokens = this.remaining(nowMs)
    if (tokens >= 0) return 0
    const ms = Math.round((-tokens / this.bound) * 1000)
    this.violations++
    this.throttledMs += ms
    this.throttles.record(ms, nowMs)
    return ms
  }
}

/** A topic refused by the quota, as the handlers put it in their per-topic results. */
export interface MutationRefusal {
  errorCode: number
  errorMessage: string
}

/**
 * One request's controller mutation quota (Kafka's ControllerMutationQuota, which lives as long
 * as the request): the handler charges each topic that passed every other check with the
 * partitions it creates or deletes, then the throttle it caused goes into throttle_time_ms.
 */
export class RequestMutationQuota {
  private lastThrottleMs = 0
  private lastAt = 0

  constructor(
    private readonly sensor: MutationSensor,
    private readonly strict: boolean,
    private readonly now: () => number,
  ) {}

  /** Charges `partitions`; answers the topic's refusal when strict and the bucket is already negative. */
  charge(partitions: number): MutationRefusal | undefined {
    const now = this.now()
    if (this.strict) {
      const owed = this.sensor.owedMs(now)
      if (owed > 0) {
        this.noteThrottle(owed, now)
        return { errorCode: ErrorCodes.THROTTLING_QUOTA_EXCEEDED, errorMessage: THROTTLED_MESSAGE }
      }
      this.sensor.record(partitions, now)
      return undefined
    }
    this.sensor.record(partitions, now)
    this.noteThrottle(this.sensor.owedMs(now), now)
    return undefined
  }

  private noteThrottle(ms: number, now: number): void {
    if (ms <= 0) return
    this.lastThrottleMs = ms
    this.lastAt = now
  }

  /** The throttle still owed, less the time since it was measured (the handler may have waited on a disk write). */
  throttleMs(): number {
    return Math.max(0, Math.round(this.lastThrottleMs - (this.now() - this.lastAt)))
  }
}
