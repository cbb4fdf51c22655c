/**
 * KIP-392 follower fetching over real sockets with two scripted brokers: the leader answers a
 * Fetch carrying the consumer's rackId with preferredReadReplica = the follower and no records;
 * the consumer fetches from the follower; when the follower errors it falls back to the leader;
 * and the preferred replica expires after metadata.max.age.ms, as Java's consumer does.
 */
import { Consumer } from '@tidelog/consumer'
import { ErrorCodes, Fetch, ListOffsets, type FetchRequest } from '@tidelog/protocol'
import { afterEach, expect, it } from 'vitest'
import { fakeCluster } from '../../client/test/fake-broker.js'
import { fakeTopic, serveFetch, serveListOffsets, type FakeLog } from './helpers/fake-log.js'

const cleanups: (() => Promise<unknown>)[] = []
afterEach(async () => {
  for (const f of cleanups.splice(0).reverse()) await f().catch(() => {})
})

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms))

async function setup(metadataMaxAgeMs?: number) {
  const cluster = await fakeCluster(2)
  cleanups.push(() => cluster.close())
  const { topic, logs } = fakeTopic('racked', 1, 0, { replicas: [[0, 1]] })
  cluster.state.topics.push(topic)
  const log = logs.get('racked:0')!
  log.append(['a', 'b'])
  const [leader, follower] = cluster.brokers as [(typeof cluster.brokers)[0], (typeof cluster.brokers)[0]]
  const state = { followerHealthy: true, followerError: ErrorCodes.NOT_LEADER_OR_FOLLOWER as number }
  // Fetch offsets each broker answered with records, to tell who delivered what.
  const served = { leader: [] as bigint[], follower: [] as bigint[] }
  // The leader's replica selector: a consumer in rack-b reads from node 1 while it is healthy.
  leader.on(
    Fetch.apiKey,
    serveFetch(logs, (p) => {
      if (state.followerHealthy && p.request.rackId === 'rack-b') return { preferredReadReplica: 1, records: null }
      if (p.fetchOffset < log.endOffset) served.leader.push(p.fetchOffset)
      return undefined
    }),
  )
  follower.on(
    Fetch.apiKey,
    serveFetch(logs, (p) => {
      if (!state.followerHealthy) return { errorCode: state.followerError }
      if (p.fetchOffset < log.endOffset) served.follower.push(p.fetchOffset)
      return undefined
    }),
  )
  leader.on(ListOffsets.apiKey, serveListOffsets(logs))
  const consumer = new Consumer({
    brokers: [leader.address],
    autoOffsetReset: 'earliest',
    clientRack: 'rack-b',
    fetchMaxWaitMs: 50,
    ...(metadataMaxAgeMs === undefined ? {} : { metadataMaxAgeMs }),
  })
  cleanups.push(() => consumer.close())
  consumer.assign([{ topic: 'racked', partition: 0 }])
  return { leader, follower, log, logs: logs as Map<string, FakeLog>, state, served, consumer, it: consumer[Symbol.asyncIterator]() }
}

it('fetches from the preferred read replica, then falls back to the leader when it errors', async () => {
  const { leader, follower, log, state, served, it: messages } = await setup()
  const values: string[] = []
  for (let i = 0; i < 2; i++) values.push((await messages.next()).value.value.toString())
  expect(values).toEqual(['a', 'b'])
  // The records came from the follower; the leader only named it (and saw the rack).
  expect(served.follower).toContain(0n)
  expect(served.leader).toEqual([])
  const leaderFetch = leader.received(Fetch.apiKey)[0]!
  expect(leaderFetch.header.apiVersion).toBeGreaterThanOrEqual(11)
  expect((leaderFetch.body as FetchRequest).rackId).toBe('rack-b')
  expect(follower.received(Fetch.apiKey).length).toBeGreaterThan(0)

  // The follower leaves the ISR: it answers NOT_LEADER_OR_FOLLOWER, the leader stops naming it.
  state.followerHealthy = false
  log.append(['c', 'd'])
  for (let i = 0; i < 2; i++) values.push((await messages.next()).value.value.toString())
  expect(values).toEqual(['a', 'b', 'c', 'd'])
  expect(served.leader).toContain(2n)
  expect(served.follower).not.toContain(2n)
})

it('goes back to the leader when the follower answers OFFSET_OUT_OF_RANGE, without resetting the position', async () => {
  const { consumer, log, state, served, it: messages } = await setup()
  for (let i = 0; i < 2; i++) await messages.next()
  // A follower lagging behind the leader's log end: out of range for it, not for the leader.
  state.followerHealthy = false
  state.followerError = ErrorCodes.OFFSET_OUT_OF_RANGE
  log.append(['c'])
  const m = (await messages.next()).value
  expect(m.value.toString()).toBe('c')
  expect(m.offset).toBe(2n)
  expect(served.leader).toEqual([2n])
  expect(consumer.position({ topic: 'racked', partition: 0 })).toBe(3n)
})

it('asks the leader again once metadata.max.age.ms has passed', async () => {
  const { leader, follower, log, it: messages } = await setup(300)
  for (let i = 0; i < 2; i++) await messages.next()
  const before = leader.received(Fetch.apiKey).length
  await sleep(1_000)
  // About one leader fetch per 300 ms expiry, each naming the follower again.
  const again = leader.received(Fetch.apiKey).length - before
  expect(again).toBeGreaterThanOrEqual(2)
  expect(again).toBeLessThanOrEqual(6)
  log.append(['c'])
  expect((await messages.next()).value.value.toString()).toBe('c')
  expect(follower.received(Fetch.apiKey).length).toBeGreaterThan(leader.received(Fetch.apiKey).length)
})

it('falls back to the leader when the connection to the preferred replica fails', async () => {
  const { follower, log, state, served, it: messages } = await setup()
  for (let i = 0; i < 2; i++) await messages.next()
  // The follower goes away (and so leaves the ISR: the leader no longer names it).
  state.followerHealthy = false
  await follower.close()
  log.append(['c'])
  const m = (await messages.next()).value
  expect({ offset: m.offset, value: m.value.toString() }).toEqual({ offset: 2n, value: 'c' })
  expect(served.leader).toEqual([2n])
})
