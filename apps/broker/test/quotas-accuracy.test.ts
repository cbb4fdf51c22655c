/**
 * How much a throttled producer gets through (issue 16's Q1 finding: 1.8x the quota here,
 * 0.97x on Kafka 4.4), checked on the broker's accounting with a clock the test moves, never
 * on wall time. Kafka's Rate since 3.8 (apache/kafka#15889) keeps a sample until its last
 * event is samples x window old; dropping it by its start let a second burst through every
 * 11 s. Over a real socket: the throttle_time_ms answered to pipelined produce requests is
 * QuotaUtils.throttleTime of the bytes Kafka counts (the request's header and body), and a
 * request read behind a throttled one is counted only once the connection's mute is over; a
 * fetch counts its whole response, as Kafka's FetchResponse.sizeOf.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { ApiKeys, ErrorCodes, type RequestHeader } from '@tidelog/protocol'
import { type Broker, startBroker } from '../src/index.js'
import { RequestThrottler } from '../src/quotas/enforcer.js'
import { QuotaManager } from '../src/quotas/manager.js'
import { SampledRate } from '../src/quotas/rate.js'
import { QuotaStore } from '../src/quotas/store.js'
import { countedBytes, kafkaThrottle, produceBody } from './helpers/quota-produce.js'
import { RawClient } from './helpers/raw-client.js'
import { tempDir } from './helpers/tmp.js'

const W = { samples: 11, windowMs: 1000 }

describe('windowed rate as Kafka 3.8+ measures it', () => {
  it('keeps a sample until its last event is samples x window old, and measures from its start', () => {
    const r = new SampledRate(W)
    r.record(1000, 0)
    r.record(1000, 900)
    // Started 11 s ago, but its last event is 10.1 s old: still counted (Kafka < 3.8 dropped it here).
    expect(r.total(11_000)).toBe(2000)
    expect(r.windowSizeMs(11_000)).toBe(11_000)
    r.record(500, 11_000)
    // One slot more than quota.window.num: the overlapping sample and the new one coexist.
    expect(r.total(11_000)).toBe(2500)
    expect(r.total(11_900)).toBe(500)
    // With the old sample gone the window starts at the new one, padded to samples - 1 windows.
    expect(r.windowSizeMs(11_900)).toBe(10_900)
  })
})

describe('a greedy producer against producer_byte_rate, through the request throttler', () => {
  const header = (correlationId: number): RequestHeader => ({ apiKey: ApiKeys.Produce, apiVersion: 9, correlationId, clientId: 'greedy' })

  /**
   * One request at a time, each waiting out the throttle it was answered, as a channel Kafka
   * mutes (KIP-219); 2 ms of round trip between requests. Answers bytes admitted per second.
   */
  async function run(requestBytes: number, seconds: number): Promise<number> {
    let now = 0
    const store = new QuotaStore()
    const throttler = new RequestThrottler(new QuotaManager(store, W, () => now))
    await store.alter([{ entity: [{ entityType: 'client-id', entityName: 'greedy' }], ops: [{ key: 'producer_byte_rate', value: 1_000_000, remove: false }] }], false)
    let admitted = 0
    for (let id = 0; now < seconds * 1000; id++) {
      const ticket = throttler.begin(header(id), {}, requestBytes, 'User:ANONYMOUS')!
      const { throttleMs } = throttler.finish(ticket, ApiKeys.Produce, { throttleTimeMs: 0, responses: [] })
      admitted += requestBytes
      now += 2 + throttleMs
    }
    return admitted / seconds
  }

  // 40 KB requests over 12 s got 1.83x before the fix; Kafka's Rate gives 1.06x.
  for (const size of [16_000, 40_000, 100_000]) {
    it(`${size} B requests: within 10% of the quota over 12 s and over 44 s`, async () => {
      for (const seconds of [12, 44]) {
        const ratio = (await run(size, seconds)) / 1_000_000
        expect(ratio, `${seconds} s`).toBeGreaterThan(0.9)
        expect(ratio, `${seconds} s`).toBeLessThanOrEqual(1.1)
      }
    })
  }
})

describe('throttle_time_ms over a real socket, with the quota clock held by the test', () => {
  let broker: Broker | undefined
  const clients: RawClient[] = []
  afterEach(async () => {
    for (const c of clients.splice(0)) c.close()
    await broker?.close()
    broker = undefined
  })

  it('pipelined produce requests: Kafka\'s throttle per request, nothing counted during the mute, the first burst still counted 11 s on', async () => {
    const BOUND = 2000
    let now = 0
    broker = await startBroker({ port: 0, dataDir: tempDir(), logLevel: 'error', quotaClock: () => now })
    const c = await RawClient.connect(broker.port)
    clients.push(c)
    const created = await c.request(ApiKeys.CreateTopics, 7, { topics: [{ name: 'acc', numPartitions: 1, replicationFactor: 1, assignments: [], configs: [] }], timeoutMs: 5000, validateOnly: false })
    expect(created.topics[0].errorCode).toBe(ErrorCodes.NONE)
    const set = await c.request(ApiKeys.AlterClientQuotas, 1, {
      entries: [{ entity: [{ entityType: 'client-id', entityName: 'raw' }], ops: [{ key: 'producer_byte_rate', value: BOUND, remove: false }] }],
      validateOnly: false,
    })
    expect(set.entries[0].errorCode).toBe(ErrorCodes.NONE)

    const counted = (valueBytes: number) => countedBytes('acc', valueBytes)
    const small = counted(9000)
    const big = counted(13_500)
    const recorded = () => broker!.quotaAccounts().find((a) => a.type === 'produce')?.recorded
    const produce = (valueBytes: number) => c.request(ApiKeys.Produce, 9, produceBody('acc', valueBytes))

    // Burst allowance while fewer than samples - 1 windows have passed: the window is padded to 10 s.
    expect((await produce(9000)).throttleTimeMs).toBe(0)
    expect(recorded()).toBe(small)
    now = 900
    expect((await produce(9000)).throttleTimeMs).toBe(0)

    // Three pipelined: the first crosses the quota; the two read behind it wait out its mute.
    const sentAt = performance.now()
    const crossing = produce(13_500)
    const behind = [produce(9000), produce(9000)]
    // The last waits behind a second mute; the test closes the connection instead.
    behind[1]!.catch(() => undefined)
    const first = await crossing
    const expected = kafkaThrottle(2 * small + big, 10_900, BOUND)
    expect(expected).toBeGreaterThan(4500)
    expect(first.throttleTimeMs).toBe(expected)
    expect(first.responses[0].partitionResponses[0].errorCode).toBe(ErrorCodes.NONE)
    // Muted for about 5 s of real time from here (a margin no event-loop stall comes near):
    // what was read behind it is not counted yet.
    expect(recorded()).toBe(2 * small + big)
    now = 11_200

    // Read once the mute is over, and counted at 11.2 s, when the sample of 0-0.9 s still counts
    // (its last event is 10.3 s old) and the window spans 11.2 s from that sample's start.
    const next = await behind[0]!
    expect(performance.now() - sentAt).toBeGreaterThanOrEqual(expected)
    expect(next.throttleTimeMs).toBe(kafkaThrottle(3 * small + big, 11_200, BOUND))
    expect(recorded()).toBe(3 * small + big)
    const account = broker.quotaAccounts().find((a) => a.type === 'produce')!
    expect(account).toMatchObject({ user: '', clientId: 'raw', bound: BOUND, violations: 2, windowTotal: 3 * small + big, windowMs: 11_200 })
    expect(account.samples).toEqual([{ startMs: 0, value: 2 * small + big }, { startMs: 11_200, value: small }])
  }, 20_000)

  it('a fetch is counted as Kafka counts it: its response body plus 4 (FetchResponse.sizeOf), empty answers too', async () => {
    broker = await startBroker({ port: 0, dataDir: tempDir(), logLevel: 'error', quotaClock: () => 0 })
    const c = await RawClient.connect(broker.port)
    clients.push(c)
    const created = await c.request(ApiKeys.CreateTopics, 7, { topics: [{ name: 'f', numPartitions: 1, replicationFactor: 1, assignments: [], configs: [] }], timeoutMs: 5000, validateOnly: false })
    expect(created.topics[0].errorCode).toBe(ErrorCodes.NONE)
    const set = await c.request(ApiKeys.AlterClientQuotas, 1, {
      entries: [{ entity: [{ entityType: 'client-id', entityName: 'raw' }], ops: [{ key: 'consumer_byte_rate', value: 1e9, remove: false }] }],
      validateOnly: false,
    })
    expect(set.entries[0].errorCode).toBe(ErrorCodes.NONE)
    expect((await c.request(ApiKeys.Produce, 9, produceBody('f', 5000))).responses[0].partitionResponses[0].errorCode).toBe(ErrorCodes.NONE)
    // What reaches the socket: the size prefix, the v12 response header (correlation id and a
    // tagged-field byte), the body. Kafka counts the body plus 4.
    let received = 0
    c.socket.on('data', (chunk: Buffer) => void (received += chunk.length))
    const fetch = (offset: bigint) =>
      c.request(ApiKeys.Fetch, 12, {
        replicaId: -1, maxWaitMs: 0, minBytes: 0, maxBytes: 1_000_000, isolationLevel: 0, sessionId: 0, sessionEpoch: -1,
        topics: [{ topic: 'f', partitions: [{ partition: 0, currentLeaderEpoch: -1, fetchOffset: offset, lastFetchedEpoch: -1, logStartOffset: -1n, partitionMaxBytes: 1_000_000 }] }],
        forgottenTopicsData: [], rackId: '',
      })
    const full = await fetch(0n)
    expect(full.responses[0].partitions[0].records.length).toBeGreaterThan(5000)
    const fullBytes = received
    expect(broker.quotaAccounts().find((a) => a.type === 'fetch')!.recorded).toBe(fullBytes - 5)
    const empty = await fetch(1n)
    expect(empty.responses[0].partitions[0].records?.length ?? 0).toBe(0)
    expect(broker.quotaAccounts().find((a) => a.type === 'fetch')!.recorded).toBe(fullBytes - 5 + (received - fullBytes - 5))
  })
})
