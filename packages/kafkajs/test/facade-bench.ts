// What the kafkajs facade costs over the native clients (issue 13: @tidelog/kafkajs >= 4x
// kafkajs): this process's CPU time per record, which a loaded machine moves far less than it
// moves rates, for produce (send() of 816-record chunks, 5 awaiting) and consume (run() with
// eachBatch and with eachMessage, partitionsConsumedConcurrently 6) through the native API,
// @tidelog/kafkajs and kafkajs 2.2.4, against a tidelog broker in its own process (needs a
// build of apps/broker). Run: npx tsx packages/kafkajs/test/facade-bench.ts [records] [rounds]
import { mkdtempSync, rmSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import * as realKafkajs from 'kafkajs'
import { Admin } from '@tidelog/client'
import { Consumer } from '@tidelog/consumer'
import { Producer } from '@tidelog/producer'
import { spawnTidelogBroker } from '../../../apps/bench/src/env/brokers.js'
import * as facade from '../src/index.js'

const N = Number(process.argv[2] ?? 120_000)
const ROUNDS = Number(process.argv[3] ?? 3)
const CHUNK = 816
const WINDOW = 5
const dataDir = mkdtempSync(join(tmpdir(), 'facade-bench-'))
const broker = await spawnTidelogBroker(['--port', '0', '--data-dir', dataDir, '--num-partitions', '6', '--log-level', 'warn'])
const brokers = [`127.0.0.1:${broker.port}`]
// A run that fails must not leave the broker behind.
process.once('exit', () => broker.proc.kill())
const value = Buffer.alloc(100, 'v')
const keys = Array.from({ length: 10_000 }, (_, i) => Buffer.from(String(i).padStart(10, '0')))
type Api = typeof facade
const apis: Record<'facade' | 'kafkajs', Api> = { facade, kafkajs: ((realKafkajs as unknown as { default?: Api }).default ?? realKafkajs) as unknown as Api }
let seq = 0

/** Sends every chunk, keeping at most WINDOW unacknowledged; returns CPU µs per record. */
async function pump(send: (i: number) => Promise<unknown>): Promise<number> {
  const chunks = Math.ceil(N / CHUNK)
  const cpu0 = process.cpuUsage()
  await new Promise<void>((resolve, reject) => {
    let next = 0
    let done = 0
    const launch = () => {
      while (next < chunks && next - done < WINDOW) send(next++).then(() => (++done === chunks ? resolve() : launch()), reject)
    }
    launch()
  })
  const c = process.cpuUsage(cpu0)
  return (c.user + c.system) / N
}
const slice = (i: number) => keys.slice(0, Math.min(CHUNK, N - i * CHUNK))

async function produce(client: string, topic: string): Promise<number> {
  if (client === 'native') {
    const p = new Producer({ brokers, acks: 1, idempotent: false, lingerMs: 5, clientId: 'bench' })
    await p.send({ topic, value })
    const chunks = Array.from({ length: Math.ceil(N / CHUNK) }, (_, i) => slice(i).map((key) => ({ topic, key, value })))
    try {
      return await pump((i) => p.send(chunks[i]!))
    } finally {
      await p.close()
    }
  }
  const api = apis[client as 'facade' | 'kafkajs']
  const p = new api.Kafka({ clientId: 'bench', brokers, logLevel: api.logLevel.NOTHING }).producer({ allowAutoTopicCreation: false, maxInFlightRequests: 5 })
  await p.connect()
  await p.send({ topic, messages: [{ value }], acks: 1 })
  const chunks = Array.from({ length: Math.ceil(N / CHUNK) }, (_, i) => slice(i).map((key) => ({ key, value })))
  try {
    return await pump((i) => p.send({ topic, messages: chunks[i]!, acks: 1 }))
  } finally {
    await p.disconnect()
  }
}

/**
 * Reads the N + 1 records of `topic` in a new group; CPU µs per record from the consumer's
 * creation to the last record (waiting for the group costs no CPU; a clock started at the
 * first record would leave out decoding the first fetch, most of a short run for kafkajs).
 */
async function consume(client: string, topic: string, style: 'batch' | 'message'): Promise<number> {
  const total = N + 1
  let n = 0
  const cpu0 = process.cpuUsage()
  let finished: () => void = () => {}
  const all = new Promise<void>((r) => (finished = r))
  const seen = (count: number) => {
    n += count
    if (n >= total) finished()
  }
  const groupId = `g-${++seq}`
  let close: () => Promise<unknown>
  if (client === 'native') {
    const c = new Consumer({ brokers, groupId, clientId: 'bench', autoOffsetReset: 'earliest' })
    await c.subscribe([topic])
    const run =
      style === 'batch'
        ? c.run({ partitionsConsumedConcurrently: 6, eachBatch: ({ batch }) => seen(batch.messages.length) })
        : c.run({ partitionsConsumedConcurrently: 6, eachMessage: () => seen(1) })
    close = async () => {
      await c.close()
      await run
    }
  } else {
    const api = apis[client as 'facade' | 'kafkajs']
    const c = new api.Kafka({ clientId: 'bench', brokers, logLevel: api.logLevel.NOTHING }).consumer({ groupId })
    await c.connect()
    await c.subscribe({ topic, fromBeginning: true })
    await c.run(
      style === 'batch'
        ? { partitionsConsumedConcurrently: 6, eachBatch: async ({ batch }) => seen(batch.messages.length) }
        : { partitionsConsumedConcurrently: 6, eachMessage: async () => seen(1) },
    )
    close = () => c.disconnect()
  }
  await all
  const cpu = process.cpuUsage(cpu0)
  await close()
  return (cpu.user + cpu.system) / total
}

const admin = new Admin({ brokers, clientId: 'bench-admin' })
const load0 = loadavg()[0]!
const CELLS = ['produce native', 'produce facade', 'produce kafkajs', 'eachBatch native', 'eachBatch facade', 'eachBatch kafkajs', 'eachMessage native', 'eachMessage facade', 'eachMessage kafkajs']
const picked = process.env.CELLS?.split(',') ?? CELLS
const results: Record<string, number[]> = {}
for (let round = 0; round < ROUNDS; round++) {
  const order = round % 2 === 0 ? picked : [...picked].reverse()
  for (const cell of order) {
    const [what, client] = cell.split(' ') as [string, string]
    const topic = `t-${++seq}`
    await admin.createTopics([{ name: topic, partitions: 6 }])
    const cpu = what === 'produce' ? await produce(client, topic) : await (async () => {
      await produce('native', topic)
      return consume(client, topic, what === 'eachBatch' ? 'batch' : 'message')
    })()
    ;(results[cell] ??= []).push(cpu)
  }
}
const median = (a: number[]) => a.slice().sort((x, y) => x - y)[a.length >> 1]!
console.log(`${N} records x ${ROUNDS} rounds, load average ${load0.toFixed(1)} -> ${loadavg()[0]!.toFixed(1)}; CPU µs per record, median (all rounds)`)
for (const cell of picked) {
  const m = median(results[cell]!)
  const kjs = results[cell.replace(/ \w+$/, ' kafkajs')]
  const vs = kjs === undefined || cell.endsWith('kafkajs') ? '' : `  kafkajs/this ${(median(kjs) / m).toFixed(2)}x`
  console.log(`${cell.padEnd(20)} ${m.toFixed(2).padStart(6)} µs${vs}  (${results[cell]!.map((x) => x.toFixed(2)).join(', ')})`)
}
await admin.close()
broker.proc.kill()
await new Promise((resolve) => broker.proc.once('exit', resolve))
rmSync(dataDir, { recursive: true, force: true })
