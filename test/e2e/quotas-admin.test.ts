/**
 * Client quotas through our Admin (Java Admin's describeClientQuotas / alterClientQuotas
 * shapes) on a broker with SASL PLAIN users and StandardAuthorizer: the quota APIs need
 * DESCRIBE_CONFIGS / ALTER_CONFIGS on the cluster, bad alterations fail with the broker's
 * INVALID_REQUEST message in an AdminError, and a user quota counts against the SASL
 * principal's name.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type Broker, startBroker } from '@tidelog/broker'
import { Admin, AdminError } from '@tidelog/client'
import { Producer } from '@tidelog/producer'
import { ProtocolError } from '@tidelog/protocol'

let dir: string
let broker: Broker
const open: { close(): Promise<void> }[] = []
const login = (user: string, clientId = `quota-${user}`) => ({
  brokers: [`127.0.0.1:${broker.port}`],
  clientId,
  sasl: { mechanism: 'PLAIN' as const, username: user, password: `${user}-pw` },
})
const as = <T extends { close(): Promise<void> }>(c: T): T => {
  open.push(c)
  return c
}
async function failure(p: Promise<unknown>): Promise<{ type: string; message: string }> {
  const e = await p.then(() => undefined, (err: unknown) => err)
  const inner = e instanceof AdminError ? e.errors[0] : e
  if (!(inner instanceof ProtocolError)) throw new Error(`expected a ProtocolError, got ${String(e)}`)
  return { type: inner.type, message: inner.message }
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'tidelog-quota-admin-'))
  const users = join(dir, 'users.jaas')
  writeFileSync(users, 'KafkaServer { org.apache.kafka.common.security.plain.PlainLoginModule required user_admin="admin-pw" user_alice="alice-pw"; };\n')
  broker = await startBroker({
    dataDir: join(dir, 'data'),
    listeners: 'SASL_PLAINTEXT://127.0.0.1:0',
    saslPlainUsersFile: users,
    authorizerClassName: 'org.apache.kafka.metadata.authorizer.StandardAuthorizer',
    superUsers: 'User:admin',
    quotaWindowNum: 3,
    logLevel: 'error',
  })
})

afterAll(async () => {
  for (const c of open.splice(0).reverse()) await c.close().catch(() => {})
  await broker?.close()
  rmSync(dir, { recursive: true, force: true })
})

describe('Admin client quotas', () => {
  it('alice may not read or change quotas without DESCRIBE_CONFIGS / ALTER_CONFIGS on the cluster', async () => {
    const alice = as(new Admin(login('alice')))
    expect((await failure(alice.describeClientQuotas())).type).toBe('CLUSTER_AUTHORIZATION_FAILED')
    expect((await failure(alice.alterClientQuotas([{ entity: { user: 'alice' }, ops: [{ key: 'producer_byte_rate', value: 1e9 }] }]))).type).toBe('CLUSTER_AUTHORIZATION_FAILED')
  })

  it('sets, filters, validates and removes quotas with Java Admin\'s shapes', async () => {
    const admin = as(new Admin(login('admin')))
    await admin.alterClientQuotas([
      { entity: { user: 'alice' }, ops: [{ key: 'producer_byte_rate', value: 1024 }, { key: 'consumer_byte_rate', value: 2048 }] },
      { entity: { 'client-id': null }, ops: [{ key: 'request_percentage', value: 50 }] },
      { entity: { user: 'alice', 'client-id': 'etl' }, ops: [{ key: 'producer_byte_rate', value: 4096 }] },
    ])
    const all = await admin.describeClientQuotas()
    expect(all).toHaveLength(3)
    expect(await admin.describeClientQuotas({ components: [{ entityType: 'user', match: 'alice' }], strict: true })).toEqual([
      { entity: { user: 'alice' }, values: { producer_byte_rate: 1024, consumer_byte_rate: 2048 } },
    ])
    expect(await admin.describeClientQuotas({ components: [{ entityType: 'client-id', match: null }] })).toEqual([{ entity: { 'client-id': null }, values: { request_percentage: 50 } }])
    // Any entity of the type, the default one included (Kafka's MATCH_TYPE_SPECIFIED).
    expect((await admin.describeClientQuotas({ components: [{ entityType: 'client-id' }] })).map((e) => e.entity)).toEqual([{ 'client-id': null }, { user: 'alice', 'client-id': 'etl' }])

    const bad = await failure(admin.alterClientQuotas([{ entity: { user: 'bob' }, ops: [{ key: 'producer_byte_rate', value: 10.5 }] }]))
    expect(bad).toMatchObject({ type: 'INVALID_REQUEST' })
    expect(bad.message).toContain('producer_byte_rate cannot be a fractional value.')
    await admin.alterClientQuotas([{ entity: { user: 'bob' }, ops: [{ key: 'producer_byte_rate', value: 10 }] }], { validateOnly: true })
    expect(await admin.describeClientQuotas({ components: [{ entityType: 'user', match: 'bob' }] })).toEqual([])
    const filterError = await failure(admin.describeClientQuotas({ components: [{ entityType: 'ip' }, { entityType: 'user' }] }))
    expect(filterError.type).toBe('INVALID_REQUEST')

    await admin.alterClientQuotas([
      { entity: { user: 'alice', 'client-id': 'etl' }, ops: [{ key: 'producer_byte_rate', value: null }] },
      { entity: { 'client-id': null }, ops: [{ key: 'request_percentage', value: null }] },
    ])
    expect((await admin.describeClientQuotas()).map((e) => e.entity)).toEqual([{ user: 'alice' }])
  })

  it('a user quota counts against the SASL principal: alice\'s producer is throttled, admin\'s is not', async () => {
    const admin = as(new Admin(login('admin')))
    // 10 KB/s over three 1 s samples allows a 20 KB first burst; 40 KB at once is over it.
    await admin.alterClientQuotas([{ entity: { user: 'alice' }, ops: [{ key: 'producer_byte_rate', value: 10_000 }] }])
    await admin.createAcls([{ resourceType: 'TOPIC', resourceName: 'q-alice', principal: 'User:alice', operation: 'WRITE', permission: 'ALLOW' }])
    await admin.createTopics([{ name: 'q-alice', partitions: 1 }])
    const producer = as(new Producer({ ...login('alice'), idempotent: false, acks: 1 }))
    const value = Buffer.alloc(1000)
    await Promise.all(Array.from({ length: 40 }, () => producer.send({ topic: 'q-alice', value })))
    const alice = broker.quotaAccounts().find((a) => a.type === 'produce' && a.user === 'alice')
    // /config/users/alice: one sensor for all of alice's client ids.
    expect(alice).toMatchObject({ clientId: '', bound: 10_000 })
    expect(alice!.violations).toBeGreaterThan(0)
    expect(broker.quotaAccounts().some((a) => a.user === 'admin')).toBe(false)
  })
})
