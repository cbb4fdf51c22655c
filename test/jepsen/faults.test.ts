/**
 * Our transactional producer through test/helpers/fault-proxy.ts against an in-process broker
 * (the fast sibling of test/interop/transactions-jepsen.test.ts, in `npm test`): connections cut,
 * stalled and half-closed mid-request and mid-response while transactions over 3 partitions
 * commit and abort. Some stalls outlast the producer's request timeout, so it retries on a new
 * connection while the proxy still delivers the first attempt late (the held bytes, then FIN), as
 * a congested link would. Transactions run until every kind of fault has struck in both directions
 * (bounded), then our read_committed consumer reads everything: each committed transaction
 * exactly once on all its partitions, no aborted one, an unknown outcome all or nothing.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type Broker, startBroker } from '@tidelog/broker'
import { Producer, TransactionAbortableError } from '@tidelog/producer'
import { type FaultKind, type FaultProxy, startFaultProxy } from '../helpers/fault-proxy.js'
import { readToEnd } from '../helpers/read-to-end.js'

const TOPIC = 'faulty'
const PARTITIONS = 3
const CLIENT_ID = 'fault-writer'
const MAX_TRANSACTIONS = 400

describe('transactional producer through a fault proxy', () => {
  let broker: Broker
  let proxy: FaultProxy
  let dataDir: string
  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'tidelog-faults-'))
    let target = { host: '127.0.0.1', port: 0 }
    proxy = await startFaultProxy({ target: () => target, seed: 4242 })
    broker = await startBroker({ port: 0, dataDir, numPartitions: PARTITIONS, advertisedPort: proxy.port })
    target = { host: '127.0.0.1', port: broker.port }
  })
  afterAll(async () => {
    await proxy?.close()
    await broker?.close()
    rmSync(dataDir, { recursive: true, force: true })
  })

  it('cuts, stalls and half-closes lose no committed write, show no aborted one, duplicate nothing', async () => {
    const open = async () => {
      const p = new Producer({ brokers: `${proxy.host}:${proxy.port}`, clientId: CLIENT_ID, transactionalId: 'faulty-tx', requestTimeoutMs: 1_500, retryBackoffMs: 20, retryBackoffMaxMs: 200, maxBlockMs: 30_000 })
      await p.initTransactions()
      return p
    }
    // Metadata and the first InitProducerId before the faults: the topic exists for everyone.
    let p = await open()
    p.beginTransaction()
    await p.send({ topic: TOPIC, partition: 0, value: 'warm' })
    await p.commitTransaction()
    proxy.setFaults({ perChunk: 0.1, stallMs: [20, 2_000], weights: { cut: 2 }, clientIds: (id) => id === CLIENT_ID })
    const outcome = new Map<number, 'committed' | 'aborted' | 'unknown'>()
    const struck = () => (['cut', 'stall', 'halfClose'] as FaultKind[]).every((k) => proxy.stats[`${k}:request`] > 0 && proxy.stats[`${k}:response`] > 0)
    let n = 0
    for (; n < MAX_TRANSACTIONS && !struck(); n++) {
      const commit = n % 4 !== 3
      try {
        p.beginTransaction()
        await p.send(Array.from({ length: PARTITIONS }, (_, partition) => ({ topic: TOPIC, partition, value: `${n}` })))
        if (commit) {
          try {
            await p.commitTransaction()
            outcome.set(n, 'committed')
          } catch (e) {
            if (!(e instanceof TransactionAbortableError)) throw e
            // Abortable: it did not commit, and after the abort it must not be read.
            await p.abortTransaction()
            outcome.set(n, 'aborted')
          }
        } else {
          await p.abortTransaction()
          outcome.set(n, 'aborted')
        }
      } catch {
        outcome.set(n, 'unknown')
        await p.close({ timeoutMs: 0 }).catch(() => {})
        // The next producer with the id fences this one and ends whatever it left open.
        for (;;) {
          try {
            p = await open()
            break
          } catch {
            // the connection was struck again: a new attempt
          }
        }
      }
    }
    proxy.setFaults(null)
    await p.close()
    expect(struck(), `every fault kind in both directions within ${MAX_TRANSACTIONS} transactions: ${JSON.stringify(proxy.stats)}`).toBe(true)

    const read = await readToEnd([`127.0.0.1:${broker.port}`], TOPIC, PARTITIONS)
    const seen = new Map<string, number>()
    for (let partition = 0; partition < PARTITIONS; partition++) {
      for (let i = 1; i < read[partition]!.length; i++) expect(read[partition]![i]!.offset).toBeGreaterThan(read[partition]![i - 1]!.offset)
      for (const r of read[partition]!) seen.set(`${r.value}@${partition}`, (seen.get(`${r.value}@${partition}`) ?? 0) + 1)
    }
    const problems: string[] = []
    for (const [key, times] of seen) if (times > 1) problems.push(`duplicate ${key} x${times}`)
    for (const [txn, out] of outcome) {
      const on = [...Array(PARTITIONS).keys()].filter((partition) => seen.has(`${txn}@${partition}`)).length
      if (out === 'committed' && on < PARTITIONS) problems.push(`lost: committed txn ${txn} on ${on} of ${PARTITIONS}`)
      if (out === 'aborted' && on > 0) problems.push(`aborted read: txn ${txn} on ${on}`)
      if (out === 'unknown' && on > 0 && on < PARTITIONS) problems.push(`torn: txn ${txn} on ${on} of ${PARTITIONS}`)
    }
    expect(problems).toEqual([])
    const committed = [...outcome.values()].filter((o) => o === 'committed').length
    console.log(`fault proxy: ${n} transactions (${committed} committed, ${[...outcome.values()].filter((o) => o === 'unknown').length} unknown), faults ${JSON.stringify(proxy.stats)}`)
    expect(committed).toBeGreaterThan(0)
  }, 120_000)
})
