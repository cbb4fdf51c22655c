import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type Broker, startBroker } from '@tidelog/broker'
import { Admin } from '@tidelog/client'
import { Consumer } from '@tidelog/consumer'
import { Producer } from '@tidelog/producer'
import { ProtocolError } from '@tidelog/protocol'
import { afterEach, describe, expect, it } from 'vitest'

const teardown: (() => Promise<unknown>)[] = []
afterEach(async () => {
  for (const f of teardown.splice(0).reverse()) await f().catch(() => {})
})

async function start(opts: Parameters<typeof startBroker>[0]): Promise<{ broker: Broker; brokers: string[] }> {
  const dataDir = mkdtempSync(join(tmpdir(), 'tidelog-limits-'))
  const broker = await startBroker({ port: 0, dataDir, ...opts })
  teardown.push(async () => {
    await broker.close()
    rmSync(dataDir, { recursive: true, force: true })
  })
  return { broker, brokers: [`127.0.0.1:${broker.port}`] }
}

describe('broker limits with the tidelog clients', () => {
  it('a consumer reads every record through a small fetch.max.bytes, batches larger than it included (KIP-74)', async () => {
    const { brokers } = await start({ fetchMaxBytes: 8192, maxMessageBytes: 256 * 1024 })
    const admin = new Admin({ brokers })
    teardown.push(() => admin.close())
    await admin.createTopics([{ name: 'small-fetches', partitions: 3 }])
    const producer = new Producer({ brokers, lingerMs: 0, compression: 'none' })
    teardown.push(() => producer.close())
    const sizes = [10, 100_000, 500, 20_000, 3, 60_000, 1000, 1000, 1000, 150_000]
    const sent: string[] = []
    for (let round = 0; round < 3; round++) {
      for (const [i, n] of sizes.entries()) {
        const value = `${round}-${i}-`.padEnd(n, 'x')
        sent.push(value)
        await producer.send({ topic: 'small-fetches', partition: i % 3, value })
      }
    }
    const consumer = new Consumer({ brokers, autoOffsetReset: 'earliest', fetchMaxWaitMs: 50 })
    teardown.push(() => consumer.close())
    consumer.assign([0, 1, 2].map((partition) => ({ topic: 'small-fetches', partition })))
    const got: string[] = []
    const next = [0n, 0n, 0n]
    for await (const m of consumer) {
      expect(m.offset).toBe(next[m.partition])
      next[m.partition]! += 1n
      got.push(m.value!.toString())
      if (got.length === sent.length) break
    }
    expect(got.sort()).toEqual([...sent].sort())
  })

  it('a producer gets INVALID_TIMESTAMP for a record outside log.message.timestamp.*.max.ms; others still go through', async () => {
    const { brokers } = await start({ messageTimestampBeforeMaxMs: 60_000, messageTimestampAfterMaxMs: 60_000 })
    const admin = new Admin({ brokers })
    teardown.push(() => admin.close())
    await admin.createTopics([{ name: 'stamped', partitions: 1 }])
    const producer = new Producer({ brokers, lingerMs: 0 })
    teardown.push(() => producer.close())
    const err = await producer.send({ topic: 'stamped', value: 'stale', timestamp: Date.now() - 3_600_000 }).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(ProtocolError)
    expect((err as ProtocolError).type).toBe('INVALID_TIMESTAMP')
    const ok = await producer.send({ topic: 'stamped', value: 'fresh' })
    expect(ok.offset).toBe(0n)
  })
})
