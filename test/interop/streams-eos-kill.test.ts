import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startBroker, type Broker } from '@tidelog/broker'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { KillVerifier } from './streams-kill.js'

/**
 * The exactly-once verifier with instances killed -9 (streams-kill.ts) on the tidelog broker (in
 * this process); it is here rather than in npm test because its child processes, a 6 s session
 * timeout and the killed producers' transaction timeouts make it take 20-30 s. The same
 * kill-and-restart run on Apache Kafka is in streams-kafka.test.ts (on the Kafka it starts).
 */
let broker: Broker
let dataDir: string
let verifier: KillVerifier

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'tidelog-streams-kill-'))
  broker = await startBroker({ port: 0, dataDir, transactionAbortTimedOutTransactionCleanupIntervalMs: 250 })
  verifier = new KillVerifier([`127.0.0.1:${broker.port}`])
})

afterAll(async () => {
  await verifier?.close()
  await broker?.close()
  rmSync(dataDir, { recursive: true, force: true })
})

describe('exactly_once_v2 with instances killed -9 (tidelog broker)', () => {
  it('two instances; one killed -9 (the survivor takes over its tasks and restores their state), restarted, killed -9 and restarted again while input flows: every result exactly once', async () => {
    await verifier.killAndRestart('k1')
  }, 120_000)

  it('three instances with num.standby.replicas=1; one killed -9: its tasks go to the standbys, which restore (almost) nothing, and every result is exact', async () => {
    // A full restore of the dead instance's stateful tasks would read at least the ~150 changelog records each had at the kill.
    expect(await verifier.killWithStandbys('k3')).toBeLessThan(30)
  }, 90_000)
})
