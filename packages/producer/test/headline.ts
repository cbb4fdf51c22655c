/**
 * The headline check, shared by the e2e (tidelog broker) and interop (Apache Kafka)
 * suites: N records over P partitions, acks=all with idempotence, while a proxy in front of the
 * broker cuts every connection several times; read back, every record must be there exactly
 * once, in per-partition send order, at the offset the producer reported.
 */
import diagnostics from 'node:diagnostics_channel'
import { expect } from 'vitest'
import { Producer, type RecordMetadata } from '../src/index.js'
import { readValues, type CuttableProxy } from './helpers.js'

export interface HeadlineOptions {
  /** Bootstrap address (the proxy's). */
  bootstrap: string
  proxy: CuttableProxy
  /** Where to read back from (the broker itself). */
  read: { host: string; port: number }
  topic: string
  partitions: number
  count: number
  cuts: number
}

export interface HeadlineResult {
  cuts: number
  /** Produce requests that failed in flight (and were retried). */
  failedRequests: number
  connections: number
  seconds: number
}

export async function exactlyOnceUnderCuts(o: HeadlineOptions): Promise<HeadlineResult> {
  const producer = new Producer({ brokers: [o.bootstrap], clientId: 'headline', acks: 'all', idempotent: true, lingerMs: 5 })
  const chunk = 10_000
  const chunks = Math.ceil(o.count / chunk)
  // Cut at evenly spaced chunks, while earlier chunks are still in flight.
  const cutAt = new Set(Array.from({ length: o.cuts }, (_, i) => Math.floor(((i + 1) * chunks) / (o.cuts + 1))))
  const offsets = new Array<bigint>(o.count)
  const partitionOf = new Int8Array(o.count)
  const outstanding: Promise<void>[] = []
  let cuts = 0
  let failedRequests = 0
  let inFlight = 0
  const onStart = (e: unknown) => {
    if ((e as { apiKey: number }).apiKey === 0) inFlight++
  }
  const onEnd = (e: unknown) => {
    if ((e as { apiKey: number }).apiKey === 0) inFlight--
  }
  const onError = (e: unknown) => {
    if ((e as { apiKey: number }).apiKey !== 0) return
    inFlight--
    failedRequests++
  }
  diagnostics.subscribe('tidelog:request:start', onStart)
  diagnostics.subscribe('tidelog:request:end', onEnd)
  diagnostics.subscribe('tidelog:request:error', onError)
  const started = performance.now()
  const record = (i: number) => ({ topic: o.topic, key: `key-${i % 997}`, value: String(i) })
  for (let c = 0; c < chunks; c++) {
    const from = c * chunk
    const n = Math.min(chunk, o.count - from)
    const batch = Array.from({ length: n }, (_, j) => record(from + j))
    outstanding.push(
      producer.send(batch).then((res: RecordMetadata[]) => {
        for (let j = 0; j < n; j++) {
          offsets[from + j] = res[j]!.offset
          partitionOf[from + j] = res[j]!.partition
        }
      }),
    )
    if (cutAt.has(c)) {
      // Once the producer is connected again and has Produce requests in flight, cut them.
      const until = Date.now() + 10_000
      while ((o.proxy.open === 0 || inFlight === 0) && Date.now() < until) await new Promise((r) => setImmediate(r))
      if (o.proxy.cut() > 0) cuts++
    }
    if (outstanding.length >= 20) await outstanding.shift()
  }
  await Promise.all(outstanding)
  const seconds = (performance.now() - started) / 1000
  await producer.close()
  diagnostics.unsubscribe('tidelog:request:start', onStart)
  diagnostics.unsubscribe('tidelog:request:end', onEnd)
  diagnostics.unsubscribe('tidelog:request:error', onError)

  const read = await readValues(o.read.host, o.read.port, o.topic, o.partitions, o.count)
  const seen = new Uint8Array(o.count)
  let total = 0
  for (let p = 0; p < o.partitions; p++) {
    const values = read[p]!
    for (let i = 0; i < values.length; i++) {
      const v = values[i]!
      if (i > 0 && !(v > values[i - 1]!)) expect.fail(`partition ${p}: ${v} follows ${values[i - 1]} (out of order or duplicated)`)
      if (seen[v]) expect.fail(`record ${v} read twice`)
      seen[v] = 1
      if (partitionOf[v] !== p || offsets[v] !== BigInt(i)) expect.fail(`record ${v} is at ${p}/${i}, the producer reported ${partitionOf[v]}/${offsets[v]}`)
      total++
    }
  }
  expect(total).toBe(o.count)
  return { cuts, failedRequests, connections: o.proxy.accepted, seconds }
}
