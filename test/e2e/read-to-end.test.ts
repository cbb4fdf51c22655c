import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startBroker } from '@tidelog/broker'
import { Admin } from '@tidelog/client'
import { Producer } from '@tidelog/producer'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { readToEnd } from '../helpers/read-to-end.js'

// The interop tests lean on readToEnd to show nothing lies beyond what they expect; here it is
// shown to read everything, past aborted data and transaction markers, and to stop at the end.
describe('readToEnd (test helper)', () => {
  let broker: Awaited<ReturnType<typeof startBroker>>
  let dir: string
  let brokers: string[]
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tidelog-rte-'))
    broker = await startBroker({ port: 0, dataDir: dir })
    brokers = [`127.0.0.1:${broker.port}`]
    const admin = new Admin({ brokers })
    await admin.createTopics([{ name: 'rte', partitions: 3, replicationFactor: 1 }, { name: 'rte-empty', partitions: 2, replicationFactor: 1 }])
    await admin.close()
  })
  afterAll(async () => {
    await broker?.close()
    rmSync(dir, { recursive: true, force: true })
  })

  it('reads every committed record, skipping aborted ones and markers, and ends at the last stable offset', async () => {
    const p = new Producer({ brokers, transactionalId: 'rte' })
    try {
      await p.initTransactions()
      p.beginTransaction()
      await p.send(Array.from({ length: 30 }, (_, i) => ({ topic: 'rte', partition: i % 3, value: `c${i}` })))
      await p.commitTransaction()
      p.beginTransaction()
      await p.send(Array.from({ length: 9 }, (_, i) => ({ topic: 'rte', partition: i % 3, value: `a${i}` })))
      await p.abortTransaction()
    } finally {
      await p.close()
    }
    const committed = await readToEnd(brokers, 'rte', 3, { timeoutMs: 30_000 })
    expect(committed.map((records) => records.map((r) => r.value))).toEqual([0, 1, 2].map((p) => Array.from({ length: 10 }, (_, k) => `c${k * 3 + p}`)))
    const all = await readToEnd(brokers, 'rte', 3, { isolationLevel: 'read_uncommitted', timeoutMs: 30_000 })
    expect(all.flat().map((r) => r.value).filter((v) => v.startsWith('a')).sort()).toEqual(Array.from({ length: 9 }, (_, i) => `a${i}`).sort())
    expect(await readToEnd(brokers, 'rte-empty', 2, { timeoutMs: 30_000 })).toEqual([[], []])
  })
})
