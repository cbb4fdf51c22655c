import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startBroker, type Broker } from '@tidelog/broker'
import { Admin } from '@tidelog/client'
import { Consumer } from '@tidelog/consumer'
import { Producer } from '@tidelog/producer'
import { afterAll, beforeAll } from 'vitest'

export interface TestBroker {
  broker: Broker
  dataDir: string
  brokers: string[]
  admin: Admin
  /** lingerMs 0: the inputs a test writes go out at once. */
  producer: Producer
}

/**
 * One in-process broker for the calling test file, in a fresh data directory, with an Admin and
 * a producer; all closed (and the directory removed) after the file. `ready` gets them once the
 * broker is up, before the file's tests run.
 */
export function useBroker(prefix: string, ready: (b: TestBroker) => void): void {
  let t: TestBroker | undefined
  beforeAll(async () => {
    const dataDir = mkdtempSync(join(tmpdir(), prefix))
    const broker = await startBroker({ port: 0, dataDir })
    const brokers = [`127.0.0.1:${broker.port}`]
    t = { broker, dataDir, brokers, admin: new Admin({ brokers }), producer: new Producer({ brokers, lingerMs: 0 }) }
    ready(t)
  })
  afterAll(async () => {
    await t?.producer.close()
    await t?.admin.close()
    await t?.broker.close()
    if (t) rmSync(t.dataDir, { recursive: true, force: true })
  })
}

/** Waits for a condition (generous deadline: the machine may be loaded), failing with what was awaited. */
export async function until(what: string, cond: () => boolean | Promise<boolean>, deadlineMs = 60_000): Promise<void> {
  const end = Date.now() + deadlineMs
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out waiting until ${what}`)
    await new Promise((r) => setTimeout(r, 50))
  }
}

/** Reads partition 0 of `topic` from the start until `count` records arrived (or the deadline passed). */
export async function readTopic(brokers: string[], topic: string, count: number, deadlineMs = 60_000): Promise<{ key: Buffer | null; value: Buffer | null; timestamp: number }[]> {
  const c = new Consumer({ brokers, autoOffsetReset: 'earliest' })
  const out: { key: Buffer | null; value: Buffer | null; timestamp: number }[] = []
  const ac = new AbortController()
  const timer = setTimeout(() => ac.abort(), deadlineMs)
  try {
    c.assign([{ topic, partition: 0 }])
    for await (const batch of c.batches({ signal: ac.signal })) {
      for (const m of batch.messages) out.push({ key: m.key === null ? null : Buffer.from(m.key), value: m.value === null ? null : Buffer.from(m.value), timestamp: Number(m.timestamp) })
      if (out.length >= count) break
    }
  } catch (e) {
    if (!ac.signal.aborted) throw e
  } finally {
    clearTimeout(timer)
    await c.close()
  }
  return out
}
