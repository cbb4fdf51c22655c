/**
 * controller_mutation_rate (KIP-599) over a real socket: CreateTopics, DeleteTopics and
 * CreatePartitions charge the partitions they create or delete to the client's token bucket
 * (quota 2/s over 2 windows of 1 s: a burst of 4). From the versions that know the error
 * (CreateTopics v6, DeleteTopics v5, CreatePartitions v3) a topic asked for while the bucket is
 * negative gets THROTTLING_QUOTA_EXCEEDED and the response throttle_time_ms; older versions are
 * served and only throttled. Our Admin retries a refused topic once the throttle is over, as
 * Java's does with retryOnQuotaViolation (its default), and gives up at once without it.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { ApiKeys, ErrorCodes, ZERO_UUID } from '@tidelog/protocol'
import { Admin, AdminError } from '@tidelog/client'
import { type Broker, startBroker } from '../src/index.js'
import { parseConfig } from '../src/config.js'
import { THROTTLED_MESSAGE } from '../src/quotas/mutations.js'
import { RawClient } from './helpers/raw-client.js'
import { tempDir } from './helpers/tmp.js'

const open: { broker: Broker; client: RawClient }[] = []
afterEach(async () => {
  for (const o of open.splice(0)) {
    o.client.close()
    await o.broker.close()
  }
})

/** A broker with the given topics (3 partitions each) created before the quota on client id `raw` is set. */
async function start(topics: string[] = [], windows: { controllerQuotaWindowNum: number; controllerQuotaWindowSizeSeconds: number } = { controllerQuotaWindowNum: 2, controllerQuotaWindowSizeSeconds: 1 }) {
  // The client quota windows stay at Kafka's 11: KIP-599's bucket follows controller.quota.window.*.
  const broker = await startBroker({ port: 0, dataDir: tempDir(), ...windows })
  const client = await RawClient.connect(broker.port)
  open.push({ broker, client })
  if (topics.length > 0) {
    const res = await client.request(ApiKeys.CreateTopics, 7, { topics: topics.map((name) => newTopic(name, 3)), timeoutMs: 5000, validateOnly: false })
    expect(res.topics.map((t: { errorCode: number }) => t.errorCode)).toEqual(topics.map(() => ErrorCodes.NONE))
  }
  await setQuota(client, 'raw', 2)
  return { broker, client }
}

async function setQuota(client: RawClient, clientId: string, rate: number): Promise<void> {
  const res = await client.request(ApiKeys.AlterClientQuotas, 1, {
    entries: [{ entity: [{ entityType: 'client-id', entityName: clientId }], ops: [{ key: 'controller_mutation_rate', value: rate, remove: false }] }],
    validateOnly: false,
  })
  expect(res.entries[0].errorCode).toBe(ErrorCodes.NONE)
}

const newTopic = (name: string, numPartitions: number) => ({ name, numPartitions, replicationFactor: 1, assignments: [], configs: [] })
const codes = (results: { name: string; errorCode: number }[]) => Object.fromEntries(results.map((r) => [r.name, r.errorCode]))
const mutationAccount = (broker: Broker, clientId: string) => broker.quotaAccounts().find((a) => a.type === 'mutation' && a.clientId === clientId)

/**
 * A refused topic's answer, and the throttle: the 2 tokens below zero refill in 1 s, less the
 * time the answer took (its topics.json write), which a loaded machine can stretch.
 */
function expectRefused(res: { throttleTimeMs: number }, result: { errorCode: number; errorMessage?: string | null } | undefined): void {
  expect(result).toMatchObject({ errorCode: ErrorCodes.THROTTLING_QUOTA_EXCEEDED, errorMessage: THROTTLED_MESSAGE })
  expectThrottled(res)
}

function expectThrottled(res: { throttleTimeMs: number }): void {
  expect(res.throttleTimeMs).toBeGreaterThan(0)
  expect(res.throttleTimeMs).toBeLessThanOrEqual(1000)
}

describe('controller mutation quota (KIP-599)', () => {
  it('CreateTopics v7: the burst is served, the topic asked for below zero is refused with the throttle; the muted connection then creates it', async () => {
    const { broker, client } = await start()
    // Taken before the request: the mute starts when the broker answers, which a loaded machine
    // may deliver to this test late, so only the time since sending is a safe lower bound.
    const t0 = performance.now()
    const res = await client.request(ApiKeys.CreateTopics, 7, { topics: [newTopic('a', 3), newTopic('b', 3), newTopic('c', 1)], timeoutMs: 5000, validateOnly: false })
    expect(codes(res.topics)).toEqual({ a: ErrorCodes.NONE, b: ErrorCodes.NONE, c: ErrorCodes.THROTTLING_QUOTA_EXCEEDED })
    expectRefused(res, res.topics[2])
    const account = mutationAccount(broker, 'raw')!
    expect(account).toMatchObject({ user: '', clientId: 'raw', bound: 2, recorded: 6, violations: 1 })
    expect(account.tokens!).toBeLessThan(0)
    // The broker reads nothing more from this connection until the throttle has passed.
    let again
    for (let i = 0; i < 5; i++) {
      again = await client.request(ApiKeys.CreateTopics, 7, { topics: [newTopic('c', 1)], timeoutMs: 5000, validateOnly: false })
      if (again.topics[0].errorCode === ErrorCodes.NONE) break
    }
    // Less a few ms: the answer's throttle is rounded, the mute's is not.
    expect(performance.now() - t0).toBeGreaterThanOrEqual(res.throttleTimeMs - 5)
    expect(again.topics[0].errorCode).toBe(ErrorCodes.NONE)
    expect(mutationAccount(broker, 'raw')!.recorded).toBe(7)
  })

  it('sizes the burst from controller.quota.window.num × controller.quota.window.size.seconds, not the client quota windows', async () => {
    // 3 samples of 2 s at 2 partitions/s: 12 tokens.
    const { broker, client } = await start([], { controllerQuotaWindowNum: 3, controllerQuotaWindowSizeSeconds: 2 })
    const res = await client.request(ApiKeys.CreateTopics, 7, { topics: [newTopic('a', 6), newTopic('b', 6), newTopic('c', 1), newTopic('d', 1)], timeoutMs: 5000, validateOnly: false })
    expect(codes(res.topics)).toEqual({ a: ErrorCodes.NONE, b: ErrorCodes.NONE, c: ErrorCodes.NONE, d: ErrorCodes.THROTTLING_QUOTA_EXCEEDED })
    expect(mutationAccount(broker, 'raw')).toMatchObject({ recorded: 13, violations: 1 })
    const parsed = parseConfig({ argv: ['--config', 'c.json'], env: {}, readFile: () => JSON.stringify({ 'controller.quota.window.num': 5, 'controller.quota.window.size.seconds': '3' }) })
    expect(parsed.help === false && [parsed.config.controllerQuotaWindowNum, parsed.config.controllerQuotaWindowSizeSeconds, parsed.config.quotaWindowNum]).toEqual([5, 3, 11])
    expect(() => parseConfig({ argv: ['--controller-quota-window-num', '0'], env: {} })).toThrow(/controller-quota-window-num: expected an integer from 1/)
  })

  it('CreateTopics v5 (before the error existed): every topic is created and the response carries the throttle', async () => {
    const { broker, client } = await start()
    const res = await client.request(ApiKeys.CreateTopics, 5, { topics: [newTopic('a', 3), newTopic('b', 3)], timeoutMs: 5000, validateOnly: false })
    expect(codes(res.topics)).toEqual({ a: ErrorCodes.NONE, b: ErrorCodes.NONE })
    expectThrottled(res)
    expect(mutationAccount(broker, 'raw')).toMatchObject({ recorded: 6, violations: 1 })
  })

  it('validate_only is charged too, as in KRaft', async () => {
    const { broker, client } = await start()
    const res = await client.request(ApiKeys.CreateTopics, 7, { topics: [newTopic('a', 5), newTopic('b', 1)], timeoutMs: 5000, validateOnly: true })
    expect(codes(res.topics)).toEqual({ a: ErrorCodes.NONE, b: ErrorCodes.THROTTLING_QUOTA_EXCEEDED })
    expect(mutationAccount(broker, 'raw')!.recorded).toBe(5)
  })

  it('DeleteTopics v6 refuses the topic deleted below zero (it stays); v4 deletes and throttles', async () => {
    const { broker, client } = await start(['a', 'b', 'c'])
    const res = await client.request(ApiKeys.DeleteTopics, 6, { topics: ['a', 'b', 'c'].map((name) => ({ name, topicId: ZERO_UUID })), timeoutMs: 5000 })
    expect(codes(res.responses)).toEqual({ a: ErrorCodes.NONE, b: ErrorCodes.NONE, c: ErrorCodes.THROTTLING_QUOTA_EXCEEDED })
    expectRefused(res, res.responses[2])
    const meta = await client.request(ApiKeys.Metadata, 12, { topics: null, allowAutoTopicCreation: false, includeTopicAuthorizedOperations: false })
    expect(meta.topics.map((t: { name: string }) => t.name)).toEqual(['c'])

    const { client: old } = await start(['x', 'y'])
    const permissive = await old.request(ApiKeys.DeleteTopics, 4, { topicNames: ['x', 'y'], timeoutMs: 5000 })
    expect(codes(permissive.responses)).toEqual({ x: ErrorCodes.NONE, y: ErrorCodes.NONE })
    expectThrottled(permissive)
    expect(mutationAccount(broker, 'raw')).toMatchObject({ recorded: 6 })
  })

  it('CreatePartitions v3 charges the partitions added and refuses below zero; v2 grows and throttles', async () => {
    const { broker, client } = await start(['a', 'b', 'c'])
    const grow = (count: number) => ['a', 'b', 'c'].map((name) => ({ name, count, assignments: null }))
    const res = await client.request(ApiKeys.CreatePartitions, 3, { topics: grow(6), timeoutMs: 5000, validateOnly: false })
    expect(codes(res.results)).toEqual({ a: ErrorCodes.NONE, b: ErrorCodes.NONE, c: ErrorCodes.THROTTLING_QUOTA_EXCEEDED })
    expectRefused(res, res.results[2])
    expect(mutationAccount(broker, 'raw')).toMatchObject({ recorded: 6 })

    const { broker: other, client: old } = await start(['a', 'b'])
    const permissive = await old.request(ApiKeys.CreatePartitions, 2, { topics: ['a', 'b'].map((name) => ({ name, count: 6, assignments: null })), timeoutMs: 5000, validateOnly: false })
    expect(codes(permissive.results)).toEqual({ a: ErrorCodes.NONE, b: ErrorCodes.NONE })
    expectThrottled(permissive)
    expect(mutationAccount(other, 'raw')).toMatchObject({ recorded: 6 })
  })

  it('our Admin retries a refused topic after the throttle (Java retryOnQuotaViolation) and fails it at once when told not to', async () => {
    const { broker, client } = await start()
    await setQuota(client, 'admin-q', 2)
    const admin = new Admin({ brokers: [`127.0.0.1:${broker.port}`], clientId: 'admin-q' })
    try {
      const t0 = performance.now()
      const created = await admin.createTopics(['a', 'b', 'c'].map((name) => ({ name, partitions: 3, replicationFactor: 1 })))
      expect(created.map((t) => t.name)).toEqual(['a', 'b', 'c'])
      // c waited for the bucket to refill from -2 to 0 at 2 tokens a second.
      expect(performance.now() - t0).toBeGreaterThan(800)
      const account = mutationAccount(broker, 'admin-q')!
      expect(account.recorded).toBe(9)
      expect(account.violations).toBeGreaterThanOrEqual(1)

      const refused = await admin.createTopics([{ name: 'd', partitions: 1, replicationFactor: 1 }], { retryOnQuotaViolation: false }).then(
        () => undefined,
        (e: unknown) => e,
      )
      expect(refused).toBeInstanceOf(AdminError)
      expect((refused as AdminError).errors[0]).toMatchObject({ code: ErrorCodes.THROTTLING_QUOTA_EXCEEDED })
    } finally {
      await admin.close()
    }
  })
})
