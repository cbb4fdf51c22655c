import { KafkaConnectionError, RequestTimeoutError, type BrokerInfo, type Cluster, type RequestOptions } from '@tidelog/client'
import { ErrorCodes, type ApiDefinition } from '@tidelog/protocol'

/** Group error codes that mean "find the coordinator again" (Java's markCoordinatorUnknown cases). */
export const COORDINATOR_MOVED = new Set<number>([ErrorCodes.NOT_COORDINATOR, ErrorCodes.COORDINATOR_NOT_AVAILABLE])

/**
 * The way to a group's coordinator: found with FindCoordinator, reached over its own connection
 * lane (as Java keeps a separate connection to the coordinator) so that a long-polling Fetch to
 * the same broker never delays a heartbeat. When the coordinator moves or its connection fails,
 * the next request looks it up again.
 */
export class CoordinatorLink {
  private known: BrokerInfo | undefined

  constructor(
    private readonly cluster: Cluster,
    readonly groupId: string,
  ) {}

  get coordinator(): BrokerInfo | undefined {
    return this.known
  }

  async find(timeoutMs?: number): Promise<BrokerInfo> {
    if (this.known !== undefined) return this.known
    this.known = await this.cluster.findCoordinator(this.groupId, 'group', timeoutMs)
    return this.known
  }

  /** After NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE or a failed connection. */
  markUnknown(): void {
    if (this.known === undefined) return
    this.cluster.logger.debug({ groupId: this.groupId, nodeId: this.known.nodeId }, 'group coordinator unknown, will look it up again')
    this.known = undefined
    this.cluster.invalidateCoordinator(this.groupId, 'group')
  }

  /** Looks at a response's error code: returns true (after forgetting the coordinator) if it moved. */
  moved(errorCode: number): boolean {
    if (!COORDINATOR_MOVED.has(errorCode)) return false
    this.markUnknown()
    return true
  }

  /**
   * One request to the coordinator. Connection failures and timeouts forget the coordinator
   * before rethrowing, so the caller's retry finds the new one.
   */
  async request<Req, Res>(api: ApiDefinition<Req, Res>, body: Req | ((version: number) => Req), options?: RequestOptions & { lane?: string }): Promise<Res> {
    // Looking the coordinator up counts against the request's own timeout (close() bounds it).
    const broker = await this.find(options?.timeoutMs !== undefined ? Math.min(options.timeoutMs, this.cluster.requestTimeoutMs) : undefined)
    try {
      const conn = await this.cluster.connectionToBroker(broker, options?.lane ?? 'group')
      return await conn.request(api, body, options)
    } catch (err) {
      if (err instanceof KafkaConnectionError || err instanceof RequestTimeoutError) this.markUnknown()
      throw err
    }
  }
}
