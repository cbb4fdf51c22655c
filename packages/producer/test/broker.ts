/** Starting the tidelog broker for producer tests, optionally behind a cuttable proxy. */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createRegistry, startBroker, type Broker, type BrokerOptions } from '@tidelog/broker'
import { startCuttableProxy, type CuttableProxy } from './helpers.js'

export interface TestBroker {
  broker: Broker
  /** What clients should bootstrap from (the proxy when there is one). */
  bootstrap: string
  proxy: CuttableProxy | undefined
  close(): Promise<void>
}

/** Whether this broker build answers InitProducerId (needed for exactly-once tests). */
export const brokerSupportsIdempotence = (): boolean => createRegistry().has(22)

/**
 * A tidelog broker in a temp directory. With `proxied`, it advertises a proxy's port, so every
 * connection a client makes (bootstrap and per-node) passes through the proxy.
 */
export async function startTestBroker(options: BrokerOptions & { proxied?: boolean } = {}): Promise<TestBroker> {
  const { proxied, ...rest } = options
  const dataDir = mkdtempSync(join(tmpdir(), 'tidelog-producer-'))
  let target = { host: '127.0.0.1', port: 0 }
  const proxy = proxied ? await startCuttableProxy(() => target) : undefined
  const broker = await startBroker({ port: 0, dataDir, ...(proxy ? { advertisedPort: proxy.port } : {}), ...rest })
  target = { host: '127.0.0.1', port: broker.port }
  return {
    broker,
    bootstrap: `127.0.0.1:${proxy?.port ?? broker.port}`,
    proxy,
    async close() {
      await proxy?.close()
      await broker.close()
      rmSync(dataDir, { recursive: true, force: true })
    },
  }
}
