import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startBroker, type Broker } from '@tidelog/broker'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Consumer, type Message } from '@tidelog/consumer'
import { TestProducer } from './helpers/produce.js'

let broker: Broker
let dir: string
let producer: TestProducer
const brokers = () => [`127.0.0.1:${broker.port}`]

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'tidelog-consumer-'))
  broker = await startBroker({ port: 0, dataDir: dir, numPartitions: 3, groups: { initialRebalanceDelayMs: 0 } })
  producer = new TestProducer(brokers())
})

afterAll(async () => {
  await producer?.close()
  await broker?.close()
  rmSync(dir, { recursive: true, force: true })
})

async function take(c: Consumer, n: number): Promise<Message[]> {
  const out: Message[] = []
  if (n === 0) return out
  for await (const m of c) {
    out.push(m)
    if (out.length === n) break
  }
  return out
}

describe('manual assignment', () => {
  it('reads every record of assigned partitions in offset order', async () => {
    await producer.fill('assign-basic', 3, 3000, { perBatch: 100 })
    const c = new Consumer({ brokers: brokers(), autoOffsetReset: 'earliest' })
    c.assign([0, 1, 2].map((partition) => ({ topic: 'assign-basic', partition })))
    const got = await take(c, 3000)
    const values = new Set(got.map((m) => m.value!.toString()))
    expect(values.size).toBe(3000)
    for (const p of [0, 1, 2]) {
      const offsets = got.filter((m) => m.partition === p).map((m) => m.offset)
      expect(offsets).toEqual(offsets.slice().sort((a, b) => (a < b ? -1 : 1)))
      expect(offsets[0]).toBe(0n)
    }
    await c.close()
  })
})
