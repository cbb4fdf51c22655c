import type { Socket } from 'node:net'
import { ApiKeys, type FetchRequest, type FetchResponse, type RequestHeader, responseHeaderVersion } from '@tidelog/protocol'
import { encodeResponseChunks } from '../response-frame.js'
import type { QuotaManager } from './manager.js'
import { type RequestMutationQuota, STRICT_SINCE_VERSION } from './mutations.js'

// Authentication runs before a principal exists; Kafka serves it outside the request quota.
const EXEMPT = new Set<number>([ApiKeys.SaslHandshake, ApiKeys.SaslAuthenticate])
// ClientRequestQuotaManager.NanosToPercentagePerSecond, per millisecond: 1 ms of handler time is 0.1 % of a second.
const PERCENT_PER_MS = 100 / 1000

/** Who a request counts against: the principal's name (Kafka's sanitized user) and the header's client id. */
export interface QuotaClient {
  readonly user: string
  readonly clientId: string
}

/** One request's quota bookkeeping, from dispatch to answer. */
export interface QuotaTicket {
  readonly who: QuotaClient
  /** The request's version: a fetch is counted by the size of its response in that version. */
  readonly version: number
  /** Throttle already owed when it was read (a produce over its byte rate). */
  readonly owedMs: number
  /** The handler's synchronous time, set by the server. */
  handlerMs: number
  /** CreateTopics, DeleteTopics, CreatePartitions under a controller_mutation_rate (KIP-599): what the handler charges. */
  readonly mutations?: RequestMutationQuota | undefined
}

export const quotaClient = (principal: string, clientId: string | null): QuotaClient => {
  const at = principal.indexOf(':')
  return { user: at < 0 ? principal : principal.slice(at + 1), clientId: clientId ?? '' }
}

/**
 * Where the request path meets the quotas, as KafkaApis does it: produce counts the request's
 * bytes, fetch the response's size (and asks for no more records than one quota window can
 * hold), every request its handler time against request_percentage. The throttle is the
 * larger of the byte and time throttles; it goes into throttle_time_ms and the server mutes
 * the connection for that long (KIP-219).
 */
export class RequestThrottler {
  constructor(readonly quotas: QuotaManager) {}

  /** Starts a request's bookkeeping; undefined while no client quota is set (nothing is counted then). */
  begin(header: RequestHeader, request: unknown, requestBytes: number, principal: string): QuotaTicket | undefined {
    if (!this.quotas.active) return undefined
    const who = quotaClient(principal, header.clientId)
    const strictFrom = STRICT_SINCE_VERSION.get(header.apiKey)
    const mutations = strictFrom === undefined ? undefined : this.quotas.mutationQuota(who.user, who.clientId, header.apiVersion >= strictFrom)
    return { who, version: header.apiVersion, owedMs: this.admit(header.apiKey, request, requestBytes, who), handlerMs: 0, mutations }
  }

  /** Ends it: records the rest; answers the response to send and the throttle (see settle). */
  finish(ticket: QuotaTicket, apiKey: number, response: unknown): { response: unknown; throttleMs: number } {
    // As sendResponseMaybeThrottleWithControllerQuota: the larger of the mutation and the other throttles.
    return this.settle(apiKey, ticket.version, response, ticket.handlerMs, ticket.who, Math.max(ticket.owedMs, ticket.mutations?.throttleMs() ?? 0))
  }

  /**
   * Before the handler runs. A produce's bytes are counted now: this broker dispatches pipelined
   * requests at once where Kafka reads one per connection at a time, so waiting for the answer
   * would let every request already read slip past the mute. A fetch's max bytes are capped at
   * what the consumer quota allows in its window. Returns the throttle owed so far.
   */
  private admit(apiKey: number, request: unknown, requestBytes: number, who: QuotaClient): number {
    if (apiKey === ApiKeys.Produce) return this.quotas.record('produce', who.user, who.clientId, requestBytes)
    if (apiKey === ApiKeys.Fetch) {
      const fetch = request as FetchRequest
      const cap = this.quotas.maxValueInWindow('fetch', who.user, who.clientId)
      if (cap < Number.POSITIVE_INFINITY) fetch.maxBytes = Math.max(1, Math.min(fetch.maxBytes ?? 0x7fffffff, Math.floor(cap)))
    }
    return 0
  }

  /**
   * After the handler: records its time (and a fetch's response size) and answers the throttle
   * and the response to send. A throttled fetch is answered empty and its bytes unrecorded, as
   * Kafka does, so the data is fetched again once the throttle is over.
   */
  private settle(apiKey: number, version: number, response: unknown, handlerMs: number, who: QuotaClient, owed: number): { response: unknown; throttleMs: number } {
    if (EXEMPT.has(apiKey)) return { response, throttleMs: 0 }
    let bytesThrottle = owed
    let fetchBytes = 0
    if (apiKey === ApiKeys.Fetch && response !== undefined) {
      fetchBytes = fetchResponseBytes(response as FetchResponse, version)
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

/**
 * What Kafka counts against consumer_byte_rate: FetchResponse.sizeOf, the response body's size
 * plus 4, partition headers and empty fetches included, not only the records. The frame we
 * would send is that plus the response header (correlation id; a tagged-field byte when
 * flexible). Records are spliced, not copied, so measuring costs the metadata's encoding.
 */
function fetchResponseBytes(res: FetchResponse, version: number): number {
  let frame = 0
  for (const chunk of encodeResponseChunks(ApiKeys.Fetch, version, 0, res)) frame += chunk.length
  return frame - 4 - (responseHeaderVersion(ApiKeys.Fetch, version) === 1 ? 1 : 0)
}

/**
 * A timer that keeps the latest of the deadlines it is given (a longer mute extends a shorter
 * one). Latest, not summed: every throttle is the time until the same sensor's rate is back at
 * its bound, so two answered close together cover the same wait. Kafka never has two on one
 * channel (it reads the next request only after the mute); here the mute starts when a produce
 * over its quota is dispatched, before anything behind it is read, so the same holds.
 */
export class MuteTimer {
  private timer: NodeJS.Timeout | undefined
  private until = 0

  constructor(private readonly onEnd: () => void) {}

  get active(): boolean {
    return this.timer !== undefined
  }

  /** Mutes for `ms` from now; false when an existing mute already lasts longer. */
  extend(ms: number): boolean {
    const until = performance.now() + ms
    if (until <= this.until) return false
    this.until = until
    clearTimeout(this.timer)
    this.timer = setTimeout(() => {
      this.timer = undefined
      this.onEnd()
    }, ms)
    this.timer.unref()
    return true
  }

  cancel(): void {
    clearTimeout(this.timer)
    this.timer = undefined
  }
}

/**
 * A connection over its IP's connection rate (KIP-612): Kafka keeps the socket unread for the
 * throttle time, then closes it. `tracked` holds it meanwhile, so a shutdown can cut it.
 */
export function holdThenClose(socket: Socket, ms: number, tracked: Map<string, Socket>): void {
  const key = `${socket.remoteAddress}:${socket.remotePort}`
  socket.pause()
  socket.on('error', () => {})
  const timer = setTimeout(() => socket.destroy(), ms)
  tracked.set(key, socket)
  socket.once('close', () => {
    clearTimeout(timer)
    tracked.delete(key)
  })
}
