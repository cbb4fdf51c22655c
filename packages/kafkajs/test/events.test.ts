import diagnostics from 'node:diagnostics_channel'
import { Metadata } from '@tidelog/protocol'
import { afterEach, describe, expect, it } from 'vitest'
import { Kafka, logLevel } from '../src/index.js'
import { FakeBroker, NO_RESPONSE } from '../../client/test/fake-broker.js'
import { until } from '../../../test/kafkajs-compat/types.js'
import { startTestBroker } from '../../consumer/test/helpers/broker.js'

const cleanup: (() => Promise<unknown>)[] = []
afterEach(async () => {
  for (const c of cleanup.splice(0).reverse()) await c().catch(() => undefined)
})

async function slowBroker(): Promise<FakeBroker> {
  const b = await FakeBroker.start()
  b.on(Metadata.apiKey, (req) => (req.body.topics?.[0]?.name === 'slow' ? NO_RESPONSE : b.metadataResponse(req)))
  return b
}

describe('network instrumentation events', () => {
  it('REQUEST_TIMEOUT carries kafkajs fields for a request the broker never answers', async () => {
    const b = await slowBroker()
    cleanup.push(() => b.close())
    const kafka = new Kafka({ clientId: 'timeouts', brokers: [b.address], requestTimeout: 200, retry: { retries: 0 }, logLevel: logLevel.NOTHING })
    const admin = kafka.admin()
    cleanup.push(() => admin.disconnect())
    const timeouts: { payload: Record<string, unknown>; timestamp: number }[] = []
    const answered: string[] = []
    admin.on(admin.events.REQUEST_TIMEOUT, (e) => void timeouts.push(e))
    admin.on(admin.events.REQUEST, (e) => void answered.push(e.payload.apiName))
    await admin.connect()
    // The admin call itself goes on retrying until its API timeout; disconnect() ends it.
    void admin.fetchTopicMetadata({ topics: ['slow'] }).catch(() => undefined)
    await until(() => timeouts.length > 0, 'a REQUEST_TIMEOUT event')
    const p = timeouts[0]!.payload
    expect(Object.keys(p).sort()).toEqual(['apiKey', 'apiName', 'apiVersion', 'broker', 'clientId', 'correlationId', 'createdAt', 'pendingDuration', 'sentAt'])
    expect(p).toMatchObject({ apiKey: 3, apiName: 'Metadata', broker: b.address, clientId: 'timeouts', pendingDuration: 0 })
    // sentAt is when the request went out: a request timeout (200 ms) before the event.
    expect(timeouts[0]!.timestamp - (p.sentAt as number)).toBeGreaterThanOrEqual(150)
    expect(answered).toContain('ApiVersions')
  })

  it("a client sees only its own requests, and listens to the channels only while connected and observed", async () => {
    const b = await slowBroker()
    cleanup.push(() => b.close())
    const end = diagnostics.channel('tidelog:request:end')
    const kafka = new Kafka({ clientId: 'app', brokers: [b.address], logLevel: logLevel.NOTHING })
    const watched = kafka.admin()
    const other = kafka.admin()
    cleanup.push(() => watched.disconnect(), () => other.disconnect())
    const seen: number[] = []
    const off = watched.on(watched.events.REQUEST, (e) => void seen.push(e.payload.correlationId))
    expect(end.hasSubscribers).toBe(false)
    await watched.connect()
    expect(end.hasSubscribers).toBe(true)
    await other.connect()
    const before = seen.length
    for (let i = 0; i < 5; i++) await other.fetchTopicMetadata({ topics: [] })
    expect(seen.length).toBe(before)
    await watched.fetchTopicMetadata({ topics: [] })
    expect(seen.length).toBe(before + 1)
    off()
    expect(end.hasSubscribers).toBe(false)
    watched.on(watched.events.REQUEST, () => undefined)
    expect(end.hasSubscribers).toBe(true)
    await watched.disconnect()
    expect(end.hasSubscribers).toBe(false)
  })

  it('REBALANCING tells a member the group rebalances, with kafkajs fields; stopping is not a rebalance', async () => {
    const { brokers } = await startTestBroker(2)
    const kafka = new Kafka({ clientId: 'app', brokers, logLevel: logLevel.NOTHING })
    const admin = kafka.admin()
    cleanup.push(() => admin.disconnect())
    await admin.connect()
    await admin.createTopics({ topics: [{ topic: 'rb', numPartitions: 2 }] })
    // Short fetch waits: a member rejoins (and stops) once its long poll is answered.
    const first = kafka.consumer({ groupId: 'rb-group', heartbeatInterval: 100, maxWaitTimeInMs: 100 })
    const second = kafka.consumer({ groupId: 'rb-group', heartbeatInterval: 100, maxWaitTimeInMs: 100 })
    cleanup.push(() => first.disconnect(), () => second.disconnect())
    const rebalancing: { member: string; payload: Record<string, unknown> }[] = []
    first.on(first.events.REBALANCING, (e) => void rebalancing.push({ member: 'first', payload: e.payload }))
    second.on(second.events.REBALANCING, (e) => void rebalancing.push({ member: 'second', payload: e.payload }))
    let firstMemberId = ''
    first.on(first.events.GROUP_JOIN, (e) => void (firstMemberId = e.payload.memberId))
    for (const c of [first, second]) {
      await c.connect()
      await c.subscribe({ topic: 'rb' })
    }
    await first.run({ eachMessage: async () => undefined })
    await second.run({ eachMessage: async () => undefined })
    await until(() => rebalancing.length > 0, 'the first member told of the rebalance')
    expect(rebalancing[0]!.member).toBe('first')
    expect(rebalancing[0]!.payload).toEqual({ groupId: 'rb-group', memberId: firstMemberId })
    const before = rebalancing.length
    await second.stop()
    await first.stop()
    // The first member may be told of the rebalance the second's leaving causes; neither is told of its own stop.
    expect(rebalancing.slice(before).every((r) => r.member === 'first')).toBe(true)
  })
})
