/**
 * Client quotas enforced over real sockets (issue 16, KIP-13 / KIP-219): a producer over
 * producer_byte_rate gets throttle_time_ms > 0 and its connection is muted, and the broker's
 * windowed byte count stays at the quota; a consumer over consumer_byte_rate is throttled the
 * same way and still gets every record; request_percentage throttles by handler time, capped at
 * one window. Our producer and consumer honour the throttle (they hold requests, no errors).
 * The assertions read the broker's own accounting, not wall time; wall time is only a lower
 * bound (a loaded machine can only make things slower).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type Broker, startBroker } from '@tidelog/broker'
import { Admin } from '@tidelog/client'
import { Consumer } from '@tidelog/consumer'
import { Producer } from '@tidelog/producer'
import { ApiKeys, encodeRecordBatch } from '@tidelog/protocol'
import { RawClient } from '../../apps/broker/test/helpers/raw-client.js'

// Three 1 s samples: a client's first burst is two windows' worth, so the runs stay short.
const WINDOWS = 3
const W0_S = WINDOWS - 1
let dir: string
let broker: Broker
let admin: Admin

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'tidelog-quotas-'))
  broker = await startBroker({ port: 0, dataDir: dir, quotaWindowNum: WINDOWS, quotaWindowSizeSeconds: 1, logLevel: 'error' })
  admin = new Admin({ brokers: [`127.0.0.1:${broker.port}`], clientId: 'quota-admin' })
})

afterAll(async () => {
  await admin?.close()
  await broker?.close()
  rmSync(dir, { recursive: true, force: true })
})

/** Our client's connection holds requests while the broker throttles it (KIP-219) and logs each throttle. */
function throttleLog() {
  const held: number[] = []
  const noop = () => {}
  const logger = { debug: noop, warn: noop, error: noop, info: (o: object, msg?: string) => void (msg?.includes('throttled') && held.push((o as { throttleTimeMs: number }).throttleTimeMs)) }
  return { held, logger }
}

const account = (type: string, clientId: string) => broker.quotaAccounts().find((a) => a.type === type && a.clientId === clientId)

describe('client quotas on the tidelog broker', () => {
  it('a raw producer over producer_byte_rate gets throttle_time_ms > 0 and a muted connection', async () => {
    const BOUND = 100_000
    // RawClient sends client id "raw".
    await admin.alterClientQuotas([{ entity: { 'client-id': 'raw' }, ops: [{ key: 'producer_byte_rate', value: BOUND }] }])
    await admin.createTopics([{ name: 'q-raw', partitions: 1 }])
    const c = await RawClient.connect(broker.port)
    const records = Buffer.alloc(50_000)
    // A record batch is opaque to the quota: any bytes in the request count.
    const produce = () =>
      c.request(ApiKeys.Produce, 9, { transactionalId: null, acks: 1, timeoutMs: 5000, topicData: [{ name: 'q-raw', partitionData: [{ index: 0, records: batch(records) }] }] })
    let throttled: { ms: number; at: number } | undefined
    for (let i = 0; i < 20 && throttled === undefined; i++) {
      const res = await produce()
      if (res.throttleTimeMs > 0) throttled = { ms: res.throttleTimeMs, at: performance.now() }
    }
    expect(throttled, 'a produce over the quota answered throttle_time_ms').toBeDefined()
    // KIP-219: the answer came at once and the connection is muted for throttle_time_ms: the next
    // request is read only after it (a lower bound on wall time, safe on a slow machine; half of
    // it, as the answer itself may have reached this test late).
    await produce()
    expect(performance.now() - throttled!.at).toBeGreaterThanOrEqual(throttled!.ms / 2)
    c.close()
    const a = account('produce', 'raw')!
    expect(a).toMatchObject({ bound: BOUND, user: '' })
    expect(a.violations).toBeGreaterThan(0)
  })

  it('our producer over its quota is throttled, delivers everything, and the broker counts no more than the quota allows', async () => {
    const BOUND = 250_000
    await admin.alterClientQuotas([{ entity: { user: null, 'client-id': 'fast-producer' }, ops: [{ key: 'producer_byte_rate', value: BOUND }] }])
    await admin.createTopics([{ name: 'q-producer', partitions: 2 }])
    const { held, logger } = throttleLog()
    const producer = new Producer({ brokers: [`127.0.0.1:${broker.port}`], clientId: 'fast-producer', acks: 1, lingerMs: 5, batchBytes: 32_768, logger })
    const value = Buffer.alloc(1000, 7)
    const total = 1000
    const started = performance.now()
    const sends: Promise<unknown>[] = []
    for (let i = 0; i < total; i++) sends.push(producer.send({ topic: 'q-producer', key: `k${i % 50}`, value }))
    await Promise.all(sends)
    const elapsedS = (performance.now() - started) / 1000
    await producer.close()
    const a = account('produce', 'fast-producer')!
    // Sensor of /users/<default>/clients/fast-producer: tagged with the user and the client id.
    expect(a).toMatchObject({ user: 'ANONYMOUS', clientId: 'fast-producer', bound: BOUND })
    expect(a.violations).toBeGreaterThan(0)
    expect(held.length).toBeGreaterThan(0)
    expect(Math.min(...held)).toBeGreaterThan(0)
    expect(a.recorded).toBeGreaterThan(total * 1000)
    // Everything the broker counted fits the quota over the run plus the burst Kafka's Rate allows
    // a new client (samples - 1 windows), give or take the one request that crossed the line
    // (≤ one 32 KB batch per partition) per window span. Kafka's windowed rate is a sawtooth (its
    // window shrinks by one sample as a sample boundary passes), so the bound is on the run.
    expect(a.recorded).toBeLessThanOrEqual(BOUND * (elapsedS + W0_S) + 3 * 66_000)
    // The time it took: at least what the quota allows beyond the burst.
    expect(elapsedS).toBeGreaterThanOrEqual((a.recorded - BOUND * W0_S - 3 * 66_000) / BOUND)
    console.log(`produce quota ${BOUND} B/s: achieved ${Math.round(a.recorded / elapsedS)} B/s over ${elapsedS.toFixed(2)} s (${a.violations} throttles, ${a.throttledMs} ms)`)
  })

  it('a consumer over consumer_byte_rate is throttled, fetches are capped at the window, and it gets every record', async () => {
    const BOUND = 200_000
    await admin.createTopics([{ name: 'q-fetch', partitions: 1 }])
    const producer = new Producer({ brokers: [`127.0.0.1:${broker.port}`], clientId: 'filler', acks: 1, lingerMs: 5 })
    const value = Buffer.alloc(1000, 1)
    const total = 700
    await Promise.all(Array.from({ length: total }, (_, i) => producer.send({ topic: 'q-fetch', partition: 0, key: `k${i}`, value })))
    await producer.close()
    await admin.alterClientQuotas([{ entity: { 'client-id': 'slow-reader' }, ops: [{ key: 'consumer_byte_rate', value: BOUND }] }])
    const { held, logger } = throttleLog()
    const consumer = new Consumer({ brokers: [`127.0.0.1:${broker.port}`], clientId: 'slow-reader', autoOffsetReset: 'earliest', fetchMaxBytes: 50 * 1024 * 1024, logger })
    consumer.assign([{ topic: 'q-fetch', partition: 0 }])
    const started = performance.now()
    let seen = 0
    for await (const _m of consumer) if (++seen === total) break
    const elapsedS = (performance.now() - started) / 1000
    await consumer.close()
    const a = account('fetch', 'slow-reader')!
    expect(a).toMatchObject({ user: '', clientId: 'slow-reader', bound: BOUND })
    expect(a.violations).toBeGreaterThan(0)
    expect(held.length).toBeGreaterThan(0)
    // Throttled fetches were answered empty and unrecorded: what was counted is what was sent.
    expect(a.recorded).toBeGreaterThanOrEqual(total * 1000)
    // A fetch is capped at bound × (samples - 1) windows, so one response can exceed the run's
    // allowance by at most that much.
    expect(a.recorded).toBeLessThanOrEqual(BOUND * (elapsedS + 2 * W0_S))
    console.log(`fetch quota ${BOUND} B/s: achieved ${Math.round(a.recorded / elapsedS)} B/s over ${elapsedS.toFixed(2)} s (${a.violations} throttles)`)
  })

  it('request_percentage throttles by handler time, at most one window', async () => {
    await admin.alterClientQuotas([{ entity: { user: 'ANONYMOUS', 'client-id': 'raw' }, ops: [{ key: 'request_percentage', value: 0.0001 }] }])
    const c = await RawClient.connect(broker.port)
    let throttle = 0
    for (let i = 0; i < 50 && throttle === 0; i++) throttle = (await c.request(ApiKeys.Metadata, 12, { topics: null, allowAutoTopicCreation: false, includeTopicAuthorizedOperations: false })).throttleTimeMs
    c.close()
    expect(throttle).toBeGreaterThan(0)
    expect(throttle).toBeLessThanOrEqual(1000)
    expect(account('request', 'raw')).toMatchObject({ user: 'ANONYMOUS', bound: 0.0001 })
    await admin.alterClientQuotas([{ entity: { user: 'ANONYMOUS', 'client-id': 'raw' }, ops: [{ key: 'request_percentage', value: null }] }])
  })
})

/** A v2 record batch holding one record of `value`. */
function batch(value: Buffer): Uint8Array {
  return encodeRecordBatch({ records: [{ key: null, value }] })
}
