import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startBroker, type Broker } from '@tidelog/broker'
import { Admin } from '@tidelog/client'
import { Producer, ProducerFencedError } from '@tidelog/producer'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { KafkaStreams } from '@tidelog/streams'
import { complete, expected, readOutputs, topicsOf, verifierConfig, verifierTopology } from './helpers/eos-app.js'
import { waitForState } from './helpers/wordcount.js'

let broker: Broker
let dataDir: string
let stateDir: string
let brokers: string[]
let admin: Admin
let producer: Producer

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'tidelog-streams-eos-'))
  stateDir = mkdtempSync(join(tmpdir(), 'tidelog-streams-eos-state-'))
  broker = await startBroker({ port: 0, dataDir, transactionAbortTimedOutTransactionCleanupIntervalMs: 500 })
  brokers = [`127.0.0.1:${broker.port}`]
  admin = new Admin({ brokers })
  producer = new Producer({ brokers, lingerMs: 0 })
})

afterAll(async () => {
  await producer?.close()
  await admin?.close()
  await broker?.close()
  rmSync(dataDir, { recursive: true, force: true })
  rmSync(stateDir, { recursive: true, force: true })
})

const L = (n: number) => {
  const b = Buffer.alloc(8)
  b.writeBigInt64BE(BigInt(n))
  return b
}

async function setup(prefix: string): Promise<void> {
  const t = topicsOf(prefix)
  await admin.createTopics([t.data, t.echo, t.counts, t.sums].map((name) => ({ name, partitions: 2 })))
}

async function send(prefix: string, records: { key: string; value: number }[]): Promise<void> {
  await producer.send(records.map((r) => ({ topic: topicsOf(prefix).data, key: r.key, value: L(r.value) })))
}

const batch = (from: number, n: number) => Array.from({ length: n }, (_, i) => ({ key: `k${(from + i) % 5}`, value: from + i }))

describe('KafkaStreams exactly_once_v2 on the tidelog broker', () => {
  it('writes sinks, repartition topics and changelogs in transactions with transactional.id <applicationId>-<processId>-<threadIdx>; read_committed readers see each result once', async () => {
    await setup('e1')
    const app = new KafkaStreams(verifierTopology('e1').build(), verifierConfig(brokers, 'e1-app', { 'state.dir': stateDir }))
    await app.start()
    const sent = batch(0, 40)
    await send('e1', sent)
    const seen = await readOutputs(brokers, 'e1', 2, (o) => complete(o, sent))
    expect(seen.counts).toEqual(expected(sent).counts)
    expect(seen.sums).toEqual(expected(sent).sums)
    expect([...seen.echo.values()].every((n) => n === 1)).toBe(true)
    expect(seen.echoed).toBe(40)
    const [thread] = app.metadataForLocalThreads()
    expect(thread!.transactionalId).toBe(`e1-app-${app.processId}-1`)
    expect(thread!.threadName).toBe(`e1-app-${app.processId}-StreamThread-1`)
    await app.close()
    expect(app.state).toBe('NOT_RUNNING')
  })

  it('fenced by another producer with its transactional.id: aborts, replaces its producer (fencing the intruder), revives its tasks from the changelog, and the results stay exact', async () => {
    await setup('e2')
    const app = new KafkaStreams(verifierTopology('e2').build(), verifierConfig(brokers, 'e2-app', { 'state.dir': stateDir }))
    await app.start()
    const first = batch(0, 20)
    await send('e2', first)
    await readOutputs(brokers, 'e2', 2, (o) => complete(o, first))
    const restoredBefore = app.restoredRecords

    const intruder = new Producer({ brokers, transactionalId: app.metadataForLocalThreads()[0]!.transactionalId! })
    try {
      await intruder.initTransactions()
      intruder.beginTransaction()
      await intruder.send({ topic: topicsOf('e2').echo, key: 'intruder', value: L(-1) })
      const second = batch(20, 20)
      await send('e2', second)
      const all = [...first, ...second]
      const seen = await readOutputs(brokers, 'e2', 2, (o) => complete(o, all))
      expect(seen.counts).toEqual(expected(all).counts)
      expect(seen.sums).toEqual(expected(all).sums)
      expect(seen.echoed).toBe(40)
      expect([...seen.echo.values()].every((n) => n === 1)).toBe(true)
      // The revived tasks were restored from the committed changelogs.
      expect(app.restoredRecords).toBeGreaterThan(restoredBefore)
      await expect(intruder.commitTransaction()).rejects.toBeInstanceOf(ProducerFencedError)
      expect(app.state).toBe('RUNNING')
    } finally {
      await intruder.close({ timeoutMs: 0 }).catch(() => {})
      await app.close()
    }
  })

  it('restores changelogs read_committed: an aborted write to a changelog never reaches the store', async () => {
    await setup('e3')
    const config = verifierConfig(brokers, 'e3-app', { 'state.dir': stateDir })
    const first = batch(0, 10)
    const app = new KafkaStreams(verifierTopology('e3').build(), config)
    await app.start()
    await send('e3', first)
    await readOutputs(brokers, 'e3', 2, (o) => complete(o, first))
    await app.close()

    // A zombie's write to the sums changelog (timestamped value: 8-byte timestamp, then the Long), aborted.
    const zombie = new Producer({ brokers, transactionalId: 'e3-zombie' })
    await zombie.initTransactions()
    zombie.beginTransaction()
    const bogus = Buffer.concat([L(Date.now()), L(1_000_000)])
    await zombie.send([0, 1].flatMap((partition) => ['k0', 'k1', 'k2', 'k3', 'k4'].map((key) => ({ topic: 'e3-app-sums-changelog', partition, key, value: bogus }))))
    await zombie.abortTransaction()
    await zombie.close()

    const again = new KafkaStreams(verifierTopology('e3').build(), config)
    await again.start()
    const second = batch(10, 10)
    await send('e3', second)
    const all = [...first, ...second]
    const seen = await readOutputs(brokers, 'e3', 2, (o) => complete(o, all))
    expect(seen.sums).toEqual(expected(all).sums)
    await waitForState(again, 'RUNNING')
    await again.close()
  })

  it('purges repartition topics after commit (DeleteRecords up to the committed offset, repartition.purge.interval.ms)', async () => {
    await setup('e4')
    const app = new KafkaStreams(verifierTopology('e4').build(), verifierConfig(brokers, 'e4-app', { 'state.dir': stateDir, 'repartition.purge.interval.ms': 0 }))
    await app.start()
    const sent = batch(0, 60)
    await send('e4', sent)
    await readOutputs(brokers, 'e4', 2, (o) => complete(o, sent))
    const repartition = (await admin.listTopics()).filter((t) => t.startsWith('e4-app-') && t.endsWith('-repartition'))
    expect(repartition).toEqual(['e4-app-counts-repartition'])
    const { Consumer } = await import('@tidelog/consumer')
    const probe = new Consumer({ brokers })
    try {
      const tps = [0, 1].map((partition) => ({ topic: repartition[0]!, partition }))
      const deadline = Date.now() + 30_000
      let starts: bigint[] = []
      // Purged once a commit after the records were consumed has gone through: up to everything but the commit markers.
      while (Date.now() < deadline) {
        starts = (await probe.beginningOffsets(tps)).map((o) => o.offset)
        const ends = (await probe.endOffsets(tps)).map((o) => o.offset)
        if (starts.every((s, i) => s > 0n && ends[i]! - s <= 2n)) break
        await new Promise((r) => setTimeout(r, 50))
      }
      const ends = (await probe.endOffsets(tps)).map((o) => o.offset)
      expect(starts.every((s, i) => s > 0n && ends[i]! - s <= 2n)).toBe(true)
    } finally {
      await probe.close()
      await app.close()
    }
  })
})
