/**
 * A retriable partition error outside the leader-moved set (REQUEST_TIMED_OUT) is retried with
 * Java's backoff (retry.backoff.ms 100, doubling to retry.backoff.max.ms 1000, KIP-580, 20%
 * jitter), not re-fetched at once in a hot loop against the sick broker.
 */
import { Consumer } from '@tidelog/consumer'
import { ErrorCodes, Fetch, ListOffsets } from '@tidelog/protocol'
import { afterEach, expect, it } from 'vitest'
import { fakeCluster } from '../../client/test/fake-broker.js'
import { fakeTopic, serveFetch, serveListOffsets } from './helpers/fake-log.js'

const cleanups: (() => Promise<unknown>)[] = []
afterEach(async () => {
  for (const f of cleanups.splice(0).reverse()) await f().catch(() => {})
})

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms))
async function until(cond: () => boolean, ms = 5_000): Promise<void> {
  const end = Date.now() + ms
  while (!cond()) {
    if (Date.now() > end) throw new Error('condition not met in time')
    await sleep(5)
  }
}

it('backs off re-fetching a partition that a broker keeps answering REQUEST_TIMED_OUT', async () => {
  const cluster = await fakeCluster(1)
  cleanups.push(() => cluster.close())
  const { topic, logs } = fakeTopic('sick', 1, 0)
  cluster.state.topics.push(topic)
  logs.get('sick:0')!.append(['a', 'b', 'c'])
  let failing = true
  const broker = cluster.brokers[0]!
  broker.on(Fetch.apiKey, serveFetch(logs, () => (failing ? { errorCode: ErrorCodes.REQUEST_TIMED_OUT } : undefined)))
  broker.on(ListOffsets.apiKey, serveListOffsets(logs))

  const consumer = new Consumer({ brokers: [broker.address], autoOffsetReset: 'earliest', fetchMaxWaitMs: 100 })
  cleanups.push(() => consumer.close())
  consumer.assign([{ topic: 'sick', partition: 0 }])
  await until(() => broker.received(Fetch.apiKey).length > 0)
  const first = broker.received(Fetch.apiKey).length
  await sleep(1_600)
  const fetches = broker.received(Fetch.apiKey)
  const inWindow = fetches.length - first
  // Delays of about 100, 200, 400, 800 ms (+-20%): 4 or 5 retries in 1.6 s, never hundreds.
  expect(inWindow).toBeGreaterThanOrEqual(3)
  expect(inWindow).toBeLessThanOrEqual(6)
  const gaps = fetches.slice(1).map((r, i) => r.receivedAt - fetches[i]!.receivedAt)
  expect(gaps[0]).toBeGreaterThanOrEqual(75)
  // Exponential: each wait about doubles the one before, up to the 1 s cap.
  expect(gaps[2]!).toBeGreaterThan(gaps[0]! * 2)

  // Once the broker recovers, the records arrive.
  failing = false
  const it = consumer[Symbol.asyncIterator]()
  const got: string[] = []
  for (let i = 0; i < 3; i++) got.push((await it.next()).value.value.toString())
  expect(got).toEqual(['a', 'b', 'c'])
})
