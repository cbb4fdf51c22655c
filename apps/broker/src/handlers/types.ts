import type { ApiDefinition, RequestHeader } from '@tidelog/protocol'
import type { BrokerContext } from '../context.js'
import type { RequestMutationQuota } from '../quotas/mutations.js'
import type { ConnectionSecurity } from '../security/authenticator.js'

export interface RequestContext {
  readonly broker: BrokerContext
  readonly header: RequestHeader
  readonly version: number
  /** Remote address, for logs. */
  readonly peer: string
  /**
   * Closes the connection once the responses before this request are written
   * (Kafka's answer to a failed acks=0 produce, which has no response to carry
   * the error).
   */
  closeConnection(reason: string): void
  /**
   * Reads and dispatches nothing more on this connection until `until` settles,
   * as Kafka mutes a channel while its request waits: a request held back must
   * not be overtaken by the ones behind it (a producer's next batches).
   */
  holdConnection?(until: Promise<unknown>): void
  /** This connection's authentication (state, principal) and the broker's credentials; absent outside a server. */
  readonly security?: ConnectionSecurity
  /** The controller mutation quota CreateTopics / DeleteTopics / CreatePartitions charge (KIP-599); absent when none applies. */
  readonly mutations?: RequestMutationQuota | undefined
}

/**
 * One API served by the broker: the versions it answers and how. The
 * ApiVersions response is built from the registered handlers, so what is
 * advertised is exactly what is served.
 */
export interface ApiHandler<Req = any, Res = any> {
  readonly api: ApiDefinition<Req, Res>
  /** Versions answered normally. */
  readonly minVersion: number
  readonly maxVersion: number
  /**
   * Advertised minimum when it is below minVersion: versions in between are
   * decoded and answered with errorResponse(UNSUPPORTED_VERSION).
   */
  readonly advertisedMinVersion?: number
  /** The response, or undefined when none is sent (acks=0 produce). */
  handle(ctx: RequestContext, req: Req): Res | undefined | Promise<Res | undefined>
  /** A response carrying `errorCode` wherever the response has one. */
  errorResponse(req: Req, errorCode: number, version: number): Res
}

export function defineHandler<Req, Res>(h: ApiHandler<Req, Res>): ApiHandler<Req, Res> {
  return h
}
