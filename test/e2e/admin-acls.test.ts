/**
 * ACLs end to end over real sockets (issue 16): the tidelog broker with StandardAuthorizer,
 * SASL PLAIN users, a super user managing ACLs through our Admin, and alice's producer, consumer
 * and Admin refused with Kafka's errors until the ACLs she needs exist, then served; the ACLs
 * survive a restart; without an authorizer the ACL APIs answer SECURITY_DISABLED.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type Broker, type BrokerOptions, startBroker } from '@tidelog/broker'
import { Admin, AdminError } from '@tidelog/client'
import { Consumer } from '@tidelog/consumer'
import { Producer } from '@tidelog/producer'
import { ProtocolError } from '@tidelog/protocol'

const AUTHORIZER = 'org.apache.kafka.metadata.authorizer.StandardAuthorizer'
let dir: string
let broker: Broker
const open: { close(): Promise<void> }[] = []

function options(): BrokerOptions {
  const users = join(dir, 'users.jaas')
  writeFileSync(users, 'KafkaServer { org.apache.kafka.common.security.plain.PlainLoginModule required user_admin="admin-pw" user_alice="alice-pw"; };\n')
  return {
    dataDir: join(dir, 'data'),
    listeners: 'SASL_PLAINTEXT://127.0.0.1:0',
    saslPlainUsersFile: users,
    authorizerClassName: AUTHORIZER,
    superUsers: 'User:admin',
    logLevel: 'error',
  }
}

const as = <T extends { close(): Promise<void> }>(client: T): T => {
  open.push(client)
  return client
}
const login = (user: string) => ({
  brokers: [`127.0.0.1:${broker.port}`],
  clientId: `acl-${user}`,
  sasl: { mechanism: 'PLAIN' as const, username: user, password: `${user}-pw` },
})

/** The Kafka error name a rejection carries (from an AdminError, the first item's). */
async function refusal(p: Promise<unknown>): Promise<string> {
  const e = await p.then(() => undefined, (err: unknown) => err)
  const inner = e instanceof AdminError ? e.errors[0] : e
  if (!(inner instanceof ProtocolError)) throw new Error(`expected a ProtocolError, got ${String(e)}`)
  return inner.type
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'tidelog-acls-'))
  broker = await startBroker(options())
})

afterAll(async () => {
  for (const c of open.splice(0).reverse()) await c.close().catch(() => {})
  await broker?.close()
  rmSync(dir, { recursive: true, force: true })
})

describe('ACLs on the tidelog broker', () => {
  let admin: Admin
  let alice: Admin

  beforeAll(async () => {
    admin = as(new Admin(login('admin')))
    alice = as(new Admin(login('alice')))
    await admin.createTopics([{ name: 'orders', partitions: 1 }, { name: 'secret', partitions: 1 }])
  })

  it('refuses what no ACL allows, with Kafka\'s error per resource type', async () => {
    expect(await refusal(alice.describeAcls())).toBe('CLUSTER_AUTHORIZATION_FAILED')
    expect(await refusal(alice.createTopics([{ name: 'mine', partitions: 1 }]))).toBe('TOPIC_AUTHORIZATION_FAILED')
    expect(await refusal(alice.deleteGroups(['g1']))).toBe('GROUP_AUTHORIZATION_FAILED')
    // Metadata hides the topics she may not describe rather than refusing the listing.
    expect(await alice.listTopics()).toEqual([])
    const p = as(new Producer({ ...login('alice'), idempotent: false, requestTimeoutMs: 3000, deliveryTimeoutMs: 5000 }))
    expect(await refusal(p.send({ topic: 'orders', value: 'x' }))).toBe('TOPIC_AUTHORIZATION_FAILED')
  })

  it('serves alice once the ACLs exist: prefixed group READ, literal topic WRITE/READ; the listing shows only her topic', async () => {
    await admin.createAcls([
      { resourceType: 'TOPIC', resourceName: 'orders', principal: 'User:alice', operation: 'WRITE', permission: 'ALLOW' },
      { resourceType: 'TOPIC', resourceName: 'orders', principal: 'User:alice', operation: 'READ', permission: 'ALLOW' },
      { resourceType: 'GROUP', resourceName: 'alice-', patternType: 'PREFIXED', principal: 'User:alice', operation: 'READ', permission: 'ALLOW' },
    ])
    expect(await alice.listTopics()).toEqual(['orders'])
    // KIP-679: WRITE on a topic is enough for the idempotent producer's InitProducerId.
    const p = as(new Producer({ ...login('alice'), idempotent: true }))
    const sent = await p.send([{ topic: 'orders', value: 'one' }, { topic: 'orders', value: 'two' }])
    expect(sent.map((s) => s.offset)).toEqual([0n, 1n])
    const c = as(new Consumer({ ...login('alice'), groupId: 'alice-readers', autoOffsetReset: 'earliest' }))
    await c.subscribe('orders')
    const values: string[] = []
    for await (const m of c.messages()) {
      values.push(m.value!.toString())
      if (values.length === 2) break
    }
    expect(values).toEqual(['one', 'two'])
    await c.commit()
    expect((await c.committed([{ topic: 'orders', partition: 0 }]))[0]!.offset).toBe(2n)
    // A group outside her prefix is still refused.
    const other = as(new Consumer({ ...login('alice'), groupId: 'bob-readers' }))
    expect(await refusal(other.committed([{ topic: 'orders', partition: 0 }]))).toBe('GROUP_AUTHORIZATION_FAILED')
  })

  it('DENY beats ALLOW; describeAcls filters by MATCH; deleteAcls returns what it removed', async () => {
    await admin.createAcls([{ resourceType: 'TOPIC', resourceName: 'ord', patternType: 'PREFIXED', principal: 'User:alice', host: '127.0.0.1', operation: 'WRITE', permission: 'DENY' }])
    const p = as(new Producer({ ...login('alice'), idempotent: false, requestTimeoutMs: 3000, deliveryTimeoutMs: 5000 }))
    expect(await refusal(p.send({ topic: 'orders', value: 'denied' }))).toBe('TOPIC_AUTHORIZATION_FAILED')
    const applying = await admin.describeAcls({ resourceType: 'TOPIC', resourceName: 'orders', patternType: 'MATCH' })
    expect(applying.map((b) => `${b.patternType} ${b.resourceName} ${b.operation} ${b.permission}`).sort()).toEqual([
      'LITERAL orders READ ALLOW',
      'LITERAL orders WRITE ALLOW',
      'PREFIXED ord WRITE DENY',
    ])
    const [removed] = await admin.deleteAcls([{ resourceType: 'TOPIC', permission: 'DENY' }])
    expect(removed).toEqual([{ resourceType: 'TOPIC', resourceName: 'ord', patternType: 'PREFIXED', principal: 'User:alice', host: '127.0.0.1', operation: 'WRITE', permission: 'DENY' }])
    expect((await p.send({ topic: 'orders', value: 'allowed again' })).offset).toBe(2n)
  })

  it('a transactional producer needs WRITE on its transactional id, and READ on the group its offsets go to', async () => {
    const refused = as(new Producer({ ...login('alice'), transactionalId: 'alice-tx' }))
    expect(await refusal(refused.initTransactions())).toBe('TRANSACTIONAL_ID_AUTHORIZATION_FAILED')
    await admin.createAcls([{ resourceType: 'TRANSACTIONAL_ID', resourceName: 'alice-tx', principal: 'User:alice', operation: 'WRITE', permission: 'ALLOW' }])
    const p = as(new Producer({ ...login('alice'), transactionalId: 'alice-tx' }))
    await p.initTransactions()
    p.beginTransaction()
    expect((await p.send({ topic: 'orders', value: 'in a transaction' })).offset).toBe(3n)
    await p.sendOffsetsToTransaction([{ topic: 'orders', partition: 0, offset: 3n }], { groupId: 'alice-tx-group', generationId: -1, memberId: '', groupInstanceId: null })
    await p.commitTransaction()
    const c = as(new Consumer({ ...login('alice'), groupId: 'alice-tx-group' }))
    expect((await c.committed([{ topic: 'orders', partition: 0 }]))[0]!.offset).toBe(3n)
  })

  it('refuses a malformed ACL with INVALID_REQUEST and stores the valid ones of the same request', async () => {
    const e = await admin
      .createAcls([
        { resourceType: 'CLUSTER', resourceName: 'not-the-cluster', principal: 'User:alice', operation: 'ALTER', permission: 'ALLOW' },
        { resourceType: 'TRANSACTIONAL_ID', resourceName: 'alice-tx', principal: 'User:alice', operation: 'WRITE', permission: 'ALLOW' },
        { resourceType: 'TOPIC', resourceName: 'x', principal: 'alice', operation: 'READ', permission: 'ALLOW' },
      ])
      .then(() => undefined, (err: unknown) => err)
    expect(e).toBeInstanceOf(AdminError)
    expect((e as AdminError).errors.map((x) => (x as ProtocolError).type)).toEqual(['INVALID_REQUEST', 'INVALID_REQUEST'])
    expect((e as AdminError).errors[0]!.message).toMatch(/only valid name for the CLUSTER resource is kafka-cluster/)
    expect(await admin.describeAcls({ resourceType: 'TRANSACTIONAL_ID' })).toHaveLength(1)
  })

  it('keeps the ACLs across a restart', async () => {
    const before = await admin.describeAcls()
    for (const c of open.splice(0).reverse()) await c.close().catch(() => {})
    await broker.close()
    broker = await startBroker(options())
    admin = as(new Admin(login('admin')))
    expect((await admin.describeAcls()).sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)))).toEqual(
      before.sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b))),
    )
    expect(before).toHaveLength(4)
  })
})

describe('without an authorizer', () => {
  it('answers the ACL APIs with SECURITY_DISABLED, as Kafka does', async () => {
    const plain = await startBroker({ port: 0, dataDir: join(dir, 'open'), logLevel: 'error' })
    const a = new Admin({ brokers: [`127.0.0.1:${plain.port}`], clientId: 'acl-open' })
    try {
      expect(await refusal(a.describeAcls())).toBe('SECURITY_DISABLED')
      expect(await refusal(a.createAcls([{ resourceType: 'TOPIC', resourceName: 't', principal: 'User:a', operation: 'READ', permission: 'ALLOW' }]))).toBe('SECURITY_DISABLED')
      expect(await refusal(a.deleteAcls([{}]))).toBe('SECURITY_DISABLED')
    } finally {
      await a.close()
      await plain.close()
    }
  })
})
