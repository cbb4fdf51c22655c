import type { BrokerContext } from '../context.js'
import { BrokerMetrics } from '../metrics/broker-metrics.js'
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

  async listen(port: number): Promise<ConsoleInfo> {
    const s = (this.server = await startConsole(this.broker, this.metrics, port))
    this.broker.logger.info(`console and /metrics on ${s.url}`)
    return { host: s.host, port: s.port, url: s.url }
  }

  async close(): Promise<void> {
    this.metrics.close()
    await this.server?.close()
  }
}
