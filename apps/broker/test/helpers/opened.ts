import { ApiKeys } from '@tidelog/protocol'
import { afterEach, expect } from 'vitest'
import { type Broker, type BrokerOptions, startBroker } from '../../src/index.js'
import { RawClient } from './raw-client.js'
import { tempDir } from './tmp.js'

export interface Opened {
  brokers: Broker[]
  clients: RawClient[]
}

/**
 * The brokers and raw clients a test file opens, closed after each test
 * (clients first, so a broker's close never waits on a test's idle socket).
 */
export function trackOpened(): Opened {
  const open: Opened = { brokers: [], clients: [] }
  afterEach(async () => {
    for (const c of open.clients.splice(0)) c.close()
    for (const b of open.brokers.splice(0)) await b.close()
  })
  return open
}

/** A broker on an ephemeral port with a fresh data dir (unless `opts` names one), closed after the test. */
export async function startTracked(open: Opened, opts: BrokerOptions = {}): Promise<Broker> {
  const b = await startBroker({ port: 0, dataDir: tempDir(), ...opts })
  open.brokers.push(b)
  return b
}

/** A tracked broker (quiet: log level error unless `opts` says) and a raw client connected to it. */
export async function startWithClient(open: Opened, opts: BrokerOptions = {}): Promise<{ b: Broker; c: RawClient }> {
  const b = await startTracked(open, { logLevel: 'error', ...opts })
  return { b, c: await connectTracked(open, b) }
}

export async function connectTracked(open: Opened, b: Broker): Promise<RawClient> {
  const c = await RawClient.connect(b.port)
  open.clients.push(c)
  return c
}

/** CreateTopics v7 that must succeed. */
export async function createTopic(c: RawClient, name: string, partitions: number, configs: Record<string, string> = {}): Promise<void> {
  const r = await c.request(ApiKeys.CreateTopics, 7, {
    topics: [{ name, numPartitions: partitions, replicationFactor: 1, assignments: [], configs: Object.entries(configs).map(([n, value]) => ({ name: n, value })) }],
    timeoutMs: 1000,
    validateOnly: false,
  })
  expect(r.topics[0].errorCode).toBe(0)
}
