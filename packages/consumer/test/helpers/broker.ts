/** A tidelog broker in this process for consumer tests, with a test producer; torn down by `cleanup`. */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startBroker, type Broker } from '@tidelog/broker'
import { afterEach } from 'vitest'
import { TestProducer } from './produce.js'

const cleanups: (() => Promise<void>)[] = []

/** Registers teardown work; runs in reverse order after each test. */
export function cleanup(f: () => Promise<void>): void {
  cleanups.push(f)
}

afterEach(async () => {
  for (const f of cleanups.splice(0).reverse()) await f().catch(() => {})
})

export async function startTestBroker(partitions = 6): Promise<{ broker: Broker; brokers: string[]; producer: TestProducer; dataDir: string }> {
  const dataDir = mkdtempSync(join(tmpdir(), 'tidelog-consumer-'))
  const broker = await startBroker({ port: 0, dataDir, numPartitions: partitions, groups: { initialRebalanceDelayMs: 300 } })
  const brokers = [`127.0.0.1:${broker.port}`]
  const producer = new TestProducer(brokers)
  cleanup(async () => {
    await producer.close()
    await broker.close()
    rmSync(dataDir, { recursive: true, force: true })
  })
  return { broker, brokers, producer, dataDir }
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms))
