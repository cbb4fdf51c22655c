/**
 * KIP-320 over real sockets with scripted brokers: after a leader change (seen as
 * FENCED_LEADER_EPOCH, or as a new leader in the metadata) the consumer asks OffsetForLeaderEpoch
 * where its position's epoch ends; a log truncated below the position is detected: the consumer
 * goes on from the divergence point, or raises LogTruncationError with autoOffsetReset 'none'.
 */
import { Consumer, LogTruncationError, type ConsumerOptions, type Message } from '@tidelog/consumer'
import { ErrorCodes, Fetch, ListOffsets, OffsetForLeaderEpoch, type FetchRequest } from '@tidelog/protocol'
import { afterEach, expect, it } from 'vitest'
import { fakeCluster, type FakeBroker } from '../../client/test/fake-broker.js'
import { FakeLog, fakeTopic, serveFetch, serveListOffsets, serveOffsetForLeaderEpoch } from './helpers/fake-log.js'

const cleanups: (() => Promise<unknown>)[] = []
afterEach(async () => {
  for (const f of cleanups.splice(0).reverse()) await f().catch(() => {})
})

async function setup(nodes: number, options: Partial<ConsumerOptions> = {}) {
  const cluster = await fakeCluster(nodes)
  cleanups.push(() => cluster.close())
  const { topic, logs } = fakeTopic('tr', 1, 0)
  cluster.state.topics.push(topic)
  const log = logs.get('tr:0')!
  log.append(['a', 'b'])
  log.append(['c', 'd'])
  const leader0 = cluster.brokers[0]!
  leader0.on(Fetch.apiKey, serveFetch(logs))
  leader0.on(ListOffsets.apiKey, serveListOffsets(logs))
  leader0.on(OffsetForLeaderEpoch.apiKey, serveOffsetForLeaderEpoch(logs))
  const consumer = new Consumer({ brokers: [leader0.address], autoOffsetReset: 'earliest', fetchMaxWaitMs: 50, ...options })
  cleanups.push(() => consumer.close())
  consumer.assign([{ topic: 'tr', partition: 0 }])
  // Without a group, 'none' has no start position: seek to one.
  if (options.autoOffsetReset === 'none') consumer.seek({ topic: 'tr', partition: 0, offset: 0n })
  const messages = consumer[Symbol.asyncIterator]()
  const next = async (): Promise<Message> => (await messages.next()).value as Message
  const read: string[] = []
  for (let i = 0; i < 4; i++) read.push((await next()).value!.toString())
  expect(read).toEqual(['a', 'b', 'c', 'd'])
  return { cluster, topic, log, logs, leader0, consumer, next }
}

/** Node 0 stays leader at epoch 1, having lost offsets 2-3 (epoch 0) and written "x" at 2. */
function truncateInPlace(log: FakeLog, topic: { leaderEpochs?: number[] }): void {
  log.truncateTo(2n)
  log.leaderEpoch = 1
  topic.leaderEpochs![0] = 1
  log.append(['x'])
}

function epochRequests(b: FakeBroker) {
  return b.received(OffsetForLeaderEpoch.apiKey).map((r) => ({ version: r.header.apiVersion, replicaId: r.body.replicaId, ...r.body.topics[0].partitions[0] }))
}

it('detects truncation after FENCED_LEADER_EPOCH and goes on from the divergent offset', async () => {
  const { log, topic, leader0, consumer, next } = await setup(1)
  truncateInPlace(log, topic)
  const m = await next()
  expect({ offset: m.offset, value: m.value!.toString(), leaderEpoch: m.leaderEpoch }).toEqual({ offset: 2n, value: 'x', leaderEpoch: 1 })
  // The fetch was fenced, then the position (4, epoch 0) checked against epoch 1.
  const asked = epochRequests(leader0)
  expect(asked).toHaveLength(1)
  expect(asked[0]).toMatchObject({ partition: 0, leaderEpoch: 0, currentLeaderEpoch: 1, replicaId: -1 })
  expect(asked[0]!.version).toBeGreaterThanOrEqual(3)
  const fetches = leader0.received(Fetch.apiKey).map((r) => (r.body as FetchRequest).topics[0]!.partitions[0]!)
  expect(fetches.at(-1)!.currentLeaderEpoch).toBe(1)
  expect(fetches.some((p) => p.currentLeaderEpoch === 0 && p.fetchOffset === 4n)).toBe(true)
  expect(consumer.position({ topic: 'tr', partition: 0 })).toBe(3n)
})

it("raises LogTruncationError with autoOffsetReset 'none', and a seek goes on", async () => {
  const { log, topic, consumer, next } = await setup(1, { autoOffsetReset: 'none' })
  truncateInPlace(log, topic)
  const err = await next().catch((e: unknown) => e)
  expect(err).toBeInstanceOf(LogTruncationError)
  const t = err as LogTruncationError
  expect({ topic: t.topic, partition: t.partition, offset: t.offset, divergentOffset: t.divergentOffset }).toEqual({ topic: 'tr', partition: 0, offset: 4n, divergentOffset: { offset: 2n, leaderEpoch: 0 } })
  consumer.seek({ topic: 'tr', partition: 0, offset: 2n })
  expect((await next()).value!.toString()).toBe('x')
}, 15_000)

it('validates against a new leader from the metadata and goes on without redelivery when nothing was lost', async () => {
  const { cluster, topic, log, leader0, next } = await setup(2)
  const leader1 = cluster.brokers[1]!
  // Node 1 has the full log and leads at epoch 1; node 0 is no longer the leader.
  const logs1 = new Map([['tr:0', log]])
  leader1.on(Fetch.apiKey, serveFetch(logs1))
  leader1.on(OffsetForLeaderEpoch.apiKey, serveOffsetForLeaderEpoch(logs1))
  leader0.on(Fetch.apiKey, serveFetch(logs1, () => ({ errorCode: ErrorCodes.NOT_LEADER_OR_FOLLOWER })))
  log.leaderEpoch = 1
  topic.leaders[0] = 1
  topic.leaderEpochs![0] = 1
  log.append(['e'])
  const m = await next()
  expect({ offset: m.offset, value: m.value!.toString() }).toEqual({ offset: 4n, value: 'e' })
  expect(epochRequests(leader1)).toMatchObject([{ leaderEpoch: 0, currentLeaderEpoch: 1 }])
  expect(epochRequests(leader0)).toEqual([])
})

it('asks again after FENCED_LEADER_EPOCH from OffsetForLeaderEpoch, once the metadata catches up', async () => {
  const { log, topic, leader0, next } = await setup(1)
  // The leader is at epoch 2 but the metadata still says 1 for a while.
  log.leaderEpoch = 2
  topic.leaderEpochs![0] = 1
  log.append(['e'])
  setTimeout(() => (topic.leaderEpochs![0] = 2), 300)
  const m = await next()
  expect({ offset: m.offset, value: m.value!.toString() }).toEqual({ offset: 4n, value: 'e' })
  const asked = epochRequests(leader0)
  expect(asked.length).toBeGreaterThanOrEqual(2)
  expect(asked[0]).toMatchObject({ leaderEpoch: 0, currentLeaderEpoch: 1 })
  expect(asked.at(-1)).toMatchObject({ leaderEpoch: 0, currentLeaderEpoch: 2 })
  // Retried with backoff, not in a hot loop.
  expect(asked.length).toBeLessThanOrEqual(6)
  const fetches = leader0.received(Fetch.apiKey).map((r) => (r.body as FetchRequest).topics[0]!.partitions[0]!)
  expect(fetches.at(-1)!.currentLeaderEpoch).toBe(2)
})
