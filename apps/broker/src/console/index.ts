import type { BrokerContext } from '../context.js'
import { BrokerMetrics } from '../metrics/broker-metrics.js'
import { ConsoleAuth, type ConsoleSecurityOptions } from './auth.js'
import { type ConsoleServer, startConsole } from './http.js'

export interface ConsoleInfo {
  readonly host: string
  readonly port: number
  /** http://127.0.0.1:port/ */
  readonly url: string
}

/**
 * The broker's console and metrics as startBroker() wires them: counters exist from
 * before the first request (the server feeds them), the HTTP side opens once the
 * listeners are bound, and close() ends both.
 */
export class BrokerConsole {
  readonly metrics: BrokerMetrics
  private server: ConsoleServer | undefined

  constructor(private readonly broker: BrokerContext) {
    this.metrics = new BrokerMetrics(broker)
  }

  /**
   * With `security`, the console logs users in as the broker's SASL listeners do and asks its
   * authorizer about every call; a broker with no SASL listener and no authorizer needs neither.
   */
  async listen(port: number, security?: ConsoleSecurityOptions): Promise<ConsoleInfo> {
    const candidate = security === undefined ? undefined : new ConsoleAuth(security, () => this.metrics.consoleLoginFailures++)
    const auth = candidate !== undefined && (candidate.loginRequired || security!.authorizer !== undefined) ? candidate : undefined
    const s = (this.server = await startConsole(this.broker, this.metrics, port, auth))
    this.broker.logger.info(`console and /metrics on ${s.url}${auth === undefined ? '' : auth.loginRequired ? ' (login with a SASL user)' : ' (as User:ANONYMOUS, with ACLs)'}`)
    return { host: s.host, port: s.port, url: s.url }
  }

  async close(): Promise<void> {
    this.metrics.close()
    await this.server?.close()
  }
}
