import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startBroker, type Broker } from '@tidelog/broker'
import { Admin } from '@tidelog/client'
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
