/**
 * client.quota.callback.class (KIP-257) over real sockets: a callback module that counts every
 * member of a principal group in one sensor with the group's quota. Two users of one group
 * share it (the second is throttled where alone it would not be), a user of a group without a
 * quota is never throttled, AlterClientQuotas reaches the callback (updateQuota / removeQuota)
 * and the live sensor's bound follows at once, fetch, request and controller mutation quotas
 * ask it too, and a
 * callback that throws fails only that quota decision: served, unthrottled, logged once.
 * The quota clock is held by the test, so every throttle is an exact figure.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ApiKeys, ErrorCodes } from '@tidelog/protocol'
import { type Broker, startBroker } from '../src/index.js'
import { countedBytes, kafkaThrottle, produceBody } from './helpers/quota-produce.js'
import { RawClient } from './helpers/raw-client.js'
import { tempDir } from './helpers/tmp.js'
import { captureLogger, login } from './security/helpers.js'

const CALLBACK = `
const groups = { alice: 'team-a', bob: 'team-a', carol: 'solo', dave: 'broken' }
const calls = (globalThis.__quotaCallbackCalls = [])
const entityText = (e) => e.configEntities.map((c) => c.entityType + ':' + c.name).join(',')
export default class GroupQuotas {
  limits = new Map([['team-a', 2000]])
  configure(config) { calls.push(['configure', config.nodeId]) }
  quotaMetricTags(type, principal, clientId) {
    if (principal.name === 'boom') throw new Error('group directory unreachable')
    calls.push(['tags', type, principal.principalType + ':' + principal.name, clientId])
    return { group: groups[principal.name] ?? 'nobody' }
  }
  quotaLimit(type, tags) {
    if (tags.group === 'broken') throw new Error('no limit for ' + tags.group)
    if (type === 'CONTROLLER_MUTATION') return tags.group === 'solo' ? 1 : null
    return type === 'PRODUCE' ? this.limits.get(tags.group) ?? null : null
  }
  // A quota set on a user is its group's quota.
  updateQuota(type, entity, value) {
    calls.push(['update', type, entityText(entity), value])
    const user = entity.configEntities.find((c) => c.entityType === 'USER')
    if (type === 'PRODUCE' && user) this.limits.set(groups[user.name], value)
  }
  removeQuota(type, entity) {
    calls.push(['remove', type, entityText(entity)])
    const user = entity.configEntities.find((c) => c.entityType === 'USER')
    if (type === 'PRODUCE' && user) this.limits.delete(groups[user.name])
  }
  quotaResetRequired() { return false }
  updateClusterMetadata(cluster) { calls.push(['cluster', cluster.nodes.length]); return true }
  close() { calls.push(['close']) }
}
`
const BOUND = 2000
const calls = (): unknown[][] => (globalThis as { __quotaCallbackCalls?: unknown[][] }).__quotaCallbackCalls ?? []

let dir: string
let broker: Broker
const log = captureLogger()

const open: RawClient[] = []

async function as(user: string): Promise<RawClient> {
  const c = await RawClient.connect(broker.port)
  open.push(c)
  expect((await login(c, 'PLAIN', user, `${user}-pw`)).errorCode).toBe(ErrorCodes.NONE)
  return c
}
const counted = (valueBytes: number) => countedBytes('g', valueBytes)
const produce = (c: RawClient, valueBytes: number) => c.request(ApiKeys.Produce, 9, produceBody('g', valueBytes))
const sensor = (type: string, group: string) => broker.quotaAccounts().find((a) => a.type === type && a.tags.group === group)

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'tidelog-quota-callback-'))
  writeFileSync(join(dir, 'group-quotas.mjs'), CALLBACK)
  const users = join(dir, 'users.jaas')
  writeFileSync(users, `x { y required ${['alice', 'bob', 'carol', 'boom', 'dave'].map((u) => `user_${u}="${u}-pw"`).join(' ')}; };\n`)
  broker = await startBroker({
    dataDir: join(dir, 'data'),
    listeners: 'SASL_PLAINTEXT://127.0.0.1:0',
    saslPlainUsersFile: users,
    clientQuotaCallbackClass: join(dir, 'group-quotas.mjs'),
    connectionFailedAuthenticationDelayMs: 0,
    logger: log.logger,
    quotaClock: () => 0,
  })
})

afterAll(async () => {
  for (const c of open) c.close()
  await broker?.close()
  expect(calls().at(-1)).toEqual(['close'])
  rmSync(dir, { recursive: true, force: true })
})

describe('client.quota.callback.class', () => {
  it('counts a principal group in one sensor with its quota; the throttle follows the group and AlterClientQuotas', async () => {
    expect(calls().slice(0, 2)).toEqual([['configure', 1], ['cluster', 1]])
    const alice = await as('alice')
    // Authentication is outside the request quota; later requests are asked about (REQUEST).
    const created = await alice.request(ApiKeys.CreateTopics, 7, { topics: [{ name: 'g', numPartitions: 1, replicationFactor: 1, assignments: [], configs: [] }], timeoutMs: 5000, validateOnly: false })
    expect(created.topics[0].errorCode).toBe(ErrorCodes.NONE)
    expect(calls()).toContainEqual(['tags', 'REQUEST', 'User:alice', 'raw'])

    const S = counted(12_000)
    // Alone, alice is within her group's 20 KB first burst (2000 B/s over 10 padded windows).
    expect((await produce(alice, 12_000)).throttleTimeMs).toBe(0)
    const bob = await as('bob')
    // Bob alone would be too; counted with alice, he crosses it.
    const crossed = await produce(bob, 12_000)
    expect(crossed.responses[0].partitionResponses[0].errorCode).toBe(ErrorCodes.NONE)
    expect(crossed.throttleTimeMs).toBe(kafkaThrottle(2 * S, 10_000, BOUND))
    expect(crossed.throttleTimeMs).toBeGreaterThan(0)
    expect(sensor('produce', 'team-a')).toMatchObject({ tags: { group: 'team-a' }, user: '', clientId: '', bound: BOUND, recorded: 2 * S, violations: 1 })

    // A group the callback gives no quota: counted, never throttled (Kafka: Long.MAX_VALUE).
    const carol = await as('carol')
    expect((await produce(carol, 30_000)).throttleTimeMs).toBe(0)
    expect(sensor('produce', 'solo')).toMatchObject({ bound: Number.POSITIVE_INFINITY, recorded: counted(30_000), violations: 0 })
    // Controller mutations too: carol's group may create 1 partition/s, a bucket of 11 (11 windows of 1 s).
    const topics = await carol.request(ApiKeys.CreateTopics, 7, {
      topics: [{ name: 'm', numPartitions: 12, replicationFactor: 1, assignments: [], configs: [] }, { name: 'n', numPartitions: 1, replicationFactor: 1, assignments: [], configs: [] }],
      timeoutMs: 5000,
      validateOnly: false,
    })
    expect(topics.topics.map((t: { errorCode: number }) => t.errorCode)).toEqual([ErrorCodes.NONE, ErrorCodes.THROTTLING_QUOTA_EXCEEDED])
    expect(calls()).toContainEqual(['tags', 'CONTROLLER_MUTATION', 'User:carol', 'raw'])
    expect(sensor('mutation', 'solo')).toMatchObject({ bound: 1, recorded: 12, tokens: -1 })
    // Alice's group has no mutation quota from the callback: her CreateTopics above was not counted.
    expect(sensor('mutation', 'team-a')).toBeUndefined()

    // AlterClientQuotas reaches the callback; the live group sensor takes the new bound at once.
    const alter = (value: number | null) =>
      carol.request(ApiKeys.AlterClientQuotas, 1, {
        entries: [{ entity: [{ entityType: 'user', entityName: 'alice' }], ops: [{ key: 'producer_byte_rate', value: value ?? 0, remove: value === null }] }],
        validateOnly: false,
      })
    expect((await alter(100_000)).entries[0].errorCode).toBe(ErrorCodes.NONE)
    expect(calls()).toContainEqual(['update', 'PRODUCE', 'USER:alice', 100_000])
    expect(calls().filter((c) => c[0] === 'update' && c[1] !== 'PRODUCE')).toEqual([])
    expect(sensor('produce', 'team-a')).toMatchObject({ bound: 100_000, recorded: 2 * S })
    expect((await produce(alice, 12_000)).throttleTimeMs).toBe(0)
    expect((await alter(null)).entries[0].errorCode).toBe(ErrorCodes.NONE)
    expect(calls()).toContainEqual(['remove', 'PRODUCE', 'USER:alice'])
    expect(sensor('produce', 'team-a')!.bound).toBe(Number.POSITIVE_INFINITY)

    // A fetch is asked about too (FETCH).
    const fetched = await alice.request(ApiKeys.Fetch, 12, {
      replicaId: -1, maxWaitMs: 0, minBytes: 0, maxBytes: 1_000_000, isolationLevel: 0, sessionId: 0, sessionEpoch: -1,
      topics: [{ topic: 'g', partitions: [{ partition: 0, currentLeaderEpoch: -1, fetchOffset: 0n, lastFetchedEpoch: -1, logStartOffset: -1n, partitionMaxBytes: 1_000_000 }] }],
      forgottenTopicsData: [], rackId: '',
    })
    expect(fetched.responses[0].partitions[0].errorCode).toBe(ErrorCodes.NONE)
    expect(calls()).toContainEqual(['tags', 'FETCH', 'User:alice', 'raw'])
    expect(sensor('fetch', 'team-a')!.recorded).toBeGreaterThan(0)
  })

  it('a callback that throws fails only that quota decision: the request is served unthrottled, the error logged once a minute', async () => {
    const before = log.lines.length
    const boom = await as('boom')
    for (let i = 0; i < 3; i++) {
      const r = await produce(boom, 30_000)
      expect(r.responses[0].partitionResponses[0].errorCode).toBe(ErrorCodes.NONE)
      expect(r.throttleTimeMs).toBe(0)
    }
    const dave = await as('dave')
    const r = await produce(dave, 30_000)
    expect(r.responses[0].partitionResponses[0].errorCode).toBe(ErrorCodes.NONE)
    expect(r.throttleTimeMs).toBe(0)
    const logged = log.lines.slice(before).filter((l) => l.includes('client.quota.callback.class'))
    expect(logged.filter((l) => l.includes('quotaMetricTags() failed'))).toHaveLength(1)
    expect(logged.filter((l) => l.includes('quotaLimit() failed'))).toHaveLength(1)
    expect(logged.join('\n')).toContain('group directory unreachable')
    // Nothing was counted for them, and the broker still serves everyone else.
    expect(broker.quotaAccounts().some((a) => a.tags.group === 'broken')).toBe(false)
    const alice = await as('alice')
    expect((await produce(alice, 100)).responses[0].partitionResponses[0].errorCode).toBe(ErrorCodes.NONE)
  })

  it('a module that is not a ClientQuotaCallback stops startup with a clear error', async () => {
    const bad = join(dir, 'not-a-callback.mjs')
    writeFileSync(bad, 'export default { quotaLimit() { return 1 } }\n')
    await expect(startBroker({ port: 0, dataDir: tempDir(), clientQuotaCallbackClass: bad })).rejects.toThrow(
      `client.quota.callback.class: the default export of ${bad} is not a client quota callback (a class or an object with quotaMetricTags())`,
    )
    await expect(startBroker({ port: 0, dataDir: tempDir(), clientQuotaCallbackClass: join(dir, 'missing.mjs') })).rejects.toThrow(/client.quota.callback.class: cannot load/)
  })
})
