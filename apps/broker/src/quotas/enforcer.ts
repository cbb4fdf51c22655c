import { ApiKeys, type FetchRequest, type FetchResponse } from '@tidelog/protocol'
import type { QuotaManager } from './manager.js'

// Authentication runs before a principal exists; Kafka serves it outside the request quota.
const EXEMPT = new Set<number>([ApiKeys.SaslHandshake, ApiKeys.SaslAuthenticate])
// ClientRequestQuotaManager.NanosToPercentagePerSecond, per millisecond: 1 ms of handler time is 0.1 % of a second.
const PERCENT_PER_MS = 100 / 1000

/** Who a request counts against: the principal's name (Kafka's sanitized user) and the header's client id. */
export interface QuotaClient {
  readonly user: string
  readonly clientId: string
}

export const quotaClient = (principal: string, clientId: string | null): QuotaClient => {
  const at = principal.indexOf(':')
  return { user: at < 0 ? principal : principal.slice(at + 1), clientId: clientId ?? '' }
}

/**
 * Where the request path meets the quotas, as KafkaApis does it: produce counts the request's
 * bytes, fetch the response's record bytes (and asks for no more than one quota window can
 * hold), every request its handler time against request_percentage. The throttle is the
 * larger of the byte and time throttles; it goes into throttle_time_ms and the server mutes
 * the connection for that long (KIP-219).
 */
export class RequestThrottler {
  constructor(readonly quotas: QuotaManager) {}

  /** Before the handler runs: a fetch's max bytes are capped at what the consumer quota allows in its window. */
  prepare(apiKey: number, request: unknown, who: QuotaClient): void {
    if (apiKey !== ApiKeys.Fetch || !this.quotas.active) return
    const fetch = request as FetchRequest
    const cap = this.quotas.maxValueInWindow('fetch', who.user, who.clientId)
    if (cap < Number.POSITIVE_INFINITY) fetch.maxBytes = Math.max(1, Math.min(fetch.maxBytes ?? 0x7fffffff, Math.floor(cap)))
  }

  /**
   * After the handler: records usage and answers the throttle and the response to send (a
   * throttled fetch is answered empty and its bytes unrecorded, as Kafka does).
   */
  settle(apiKey: number, response: unknown, requestBytes: number, handlerMs: number, who: QuotaClient): { response: unknown; throttleMs: number } {
    if (!this.quotas.active || EXEMPT.has(apiKey)) return { response, throttleMs: 0 }
    let bytesThrottle = 0
    let fetchBytes = 0
    if (apiKey === ApiKeys.Produce) {
      bytesThrottle = this.quotas.record('produce', who.user, who.clientId, requestBytes)
    } else if (apiKey === ApiKeys.Fetch && response !== undefined) {
      fetchBytes = fetchedBytes(response as FetchResponse)
      bytesThrottle = this.quotas.record('fetch', who.user, who.clientId, fetchBytes)
    }
    const timeThrottle = this.quotas.record('request', who.user, who.clientId, handlerMs * PERCENT_PER_MS)
    const throttleMs = Math.max(bytesThrottle, timeThrottle)
    if (throttleMs <= 0 || response === undefined) return { response, throttleMs }
    let out = response as { throttleTimeMs?: number }
    if (apiKey === ApiKeys.Fetch) {
      this.quotas.unrecord('fetch', who.user, who.clientId, fetchBytes)
      const empty: FetchResponse = { ...(response as FetchResponse), responses: [] }
      out = empty
    }
    if ('throttleTimeMs' in out) out = { ...out, throttleTimeMs: Math.max(out.throttleTimeMs ?? 0, throttleMs) }
    return { response: out, throttleMs }
  }
}

function fetchedBytes(res: FetchResponse): number {
  let n = 0
  for (const t of res.responses) for (const p of t.partitions) n += p.records?.length ?? 0
  return n
}
