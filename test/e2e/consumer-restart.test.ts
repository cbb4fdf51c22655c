import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startBroker, type Broker } from '@tidelog/broker'
import { Consumer } from '@tidelog/consumer'
import { describe, expect, it } from 'vitest'
import { cleanup } from '../../packages/consumer/test/helpers/broker.js'
import { TestProducer, waitFor } from '../../packages/consumer/test/helpers/produce.js'

/** A broker that can be stopped and started again on the same port and data. */
async function restartable() {
  const dataDir = mkdtempSync(join(tmpdir(), 'tidelog-consumer-restart-'))
  const start = (port: number) => startBroker({ port, dataDir, numPartitions: 3, groups: { initialRebalanceDelayMs: 100 } })
  let broker: Broker = await start(0)
  const port = broker.port
  cleanup(async () => {
    await broker.close()
    rmSync(dataDir, { recursive: true, force: true })
  })
  return {
    brokers: [`127.0.0.1:${port}`],
    async restart(downMs: number) {
      await broker.close()
      await new Promise((r) => setTimeout(r, downMs))
      broker = await start(port)
    },
  }
}

describe('the broker going away and coming back', () => {
  it('assigned partitions: fetching resumes at the position, nothing lost or repeated', async () => {
    const b = await restartable()
    const producer = new TestProducer(b.brokers)
    cleanup(() => producer.close())
    await producer.fill('resume', 3, 3000)
    const c = new Consumer({ brokers: b.brokers, autoOffsetReset: 'earliest', reconnectBackoffMaxMs: 200, retryBackoffMaxMs: 200 })
    cleanup(() => c.close())
    c.assign([0, 1, 2].map((partition) => ({ topic: 'resume', partition })))
    const seen = new Map<string, number>()
    const run = (async () => {
      for await (const m of c) {
        const v = m.value!.toString()
        seen.set(v, (seen.get(v) ?? 0) + 1)
      }
    })()
    await waitFor(() => seen.size === 3000, 20_000, 'the first records')
    await b.restart(500)
    await producer.fill('resume', 3, 3000, { from: 3000 })
    await waitFor(() => seen.size === 6000, 30_000, 'records after the restart')
    expect([...seen.values()].every((n) => n === 1)).toBe(true)
    await c.close()
    await run
  }, 60_000)

  it('a group member finds its coordinator again and keeps consuming', async () => {
    const b = await restartable()
    const producer = new TestProducer(b.brokers)
    cleanup(() => producer.close())
    await producer.fill('regroup', 3, 300)
    const c = new Consumer({ brokers: b.brokers, groupId: 'regroup-group', autoOffsetReset: 'earliest', sessionTimeoutMs: 6000, heartbeatIntervalMs: 200, reconnectBackoffMaxMs: 200, retryBackoffMaxMs: 200 })
    cleanup(() => c.close())
    await c.subscribe(['regroup'])
    const values = new Set<string>()
    const run = (async () => {
      for await (const m of c) values.add(m.value!.toString())
    })()
    await waitFor(() => values.size === 300, 20_000, 'the first records')
    await new Promise((r) => setTimeout(r, 700))
    await b.restart(500)
    await producer.fill('regroup', 3, 300, { from: 300 })
    await waitFor(() => values.size === 600, 30_000, 'records after the restart')
    expect(c.generation).toBeDefined()
    await c.close()
    await run
  }, 60_000)
})
