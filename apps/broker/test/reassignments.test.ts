/**
 * AlterPartitionReassignments (45) and ListPartitionReassignments (46) as a single-node Kafka
 * answers them, through @tidelog/client's Admin over a real socket: a move to [this broker]
 * completes at once, anything else gets Kafka's error and message per partition, and both
 * APIs need CLUSTER ALTER / DESCRIBE under the StandardAuthorizer.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Admin, AdminError } from '@tidelog/client'
import { ApiKeys, ErrorCodes, ProtocolError } from '@tidelog/protocol'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type Broker, startBroker } from '../src/index.js'
import { RawClient } from './helpers/raw-client.js'
import { login } from './security/helpers.js'

describe('partition reassignment on one broker', () => {
  let broker: Broker
  let admin: Admin
  let dir: string
  let nodeId: number
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tidelog-reassign-'))
    broker = await startBroker({ port: 0, dataDir: dir })
    admin = new Admin({ brokers: [`127.0.0.1:${broker.port}`] })
    await admin.createTopics([{ name: 'moves', partitions: 2 }])
    nodeId = broker.nodeId
  })
  afterAll(async () => {
    await admin?.close()
    await broker?.close()
    rmSync(dir, { recursive: true, force: true })
  })

  it('ApiVersions advertises both at v0, as Kafka 4.0', async () => {
    const c = await RawClient.connect(broker.port)
    try {
      const res = await c.request(ApiKeys.ApiVersions, 3, { clientSoftwareName: 't', clientSoftwareVersion: '1' })
      const range = (k: number) => res.apiKeys.find((a: { apiKey: number }) => a.apiKey === k)
      expect(range(45)).toMatchObject({ minVersion: 0, maxVersion: 0 })
      expect(range(46)).toMatchObject({ minVersion: 0, maxVersion: 0 })
    } finally {
      c.close()
    }
  })

  it('a move to [this broker] completes at once: nothing is left in progress', async () => {
    await admin.alterPartitionReassignments([
      { topic: 'moves', partition: 0, targetReplicas: [nodeId] },
      { topic: 'moves', partition: 1, targetReplicas: [nodeId] },
    ])
    expect(await admin.listPartitionReassignments()).toEqual([])
    expect(await admin.listPartitionReassignments([{ topic: 'moves', partition: 0 }, { topic: 'nope', partition: 0 }])).toEqual([])
  })

  it("each partition gets Kafka's error and message; the valid one in the same request succeeds", async () => {
    const err = await admin
      .alterPartitionReassignments([
        { topic: 'moves', partition: 0, targetReplicas: [nodeId, nodeId + 7] },
        { topic: 'moves', partition: 1, targetReplicas: [] },
        { topic: 'moves', partition: 0, targetReplicas: [nodeId] },
        { topic: 'ghost', partition: 0, targetReplicas: [nodeId] },
        { topic: 'moves', partition: 9, targetReplicas: [nodeId] },
      ])
      .catch((e: unknown) => e)
    // Items are keyed by partition: the later entry for moves:0 is dropped, as Java's map keeps one.
    expect(err).toBeInstanceOf(AdminError)
    const errors = (err as AdminError).errors as ProtocolError[]
    expect(errors.map((e) => [e.type, e.topic, e.partition, e.serverMessage])).toEqual([
      ['INVALID_REPLICA_ASSIGNMENT', 'moves', 0, `The manual partition assignment includes broker ${nodeId + 7}, but no such broker is registered.`],
      ['INVALID_REPLICA_ASSIGNMENT', 'moves', 1, 'The manual partition assignment includes an empty replica list.'],
      ['UNKNOWN_TOPIC_OR_PARTITION', 'ghost', 0, 'Unable to find a topic named ghost.'],
      ['UNKNOWN_TOPIC_OR_PARTITION', 'moves', 9, 'Unable to find partition moves:9.'],
    ])
    const dup = await admin.alterPartitionReassignments([{ topic: 'moves', partition: 1, targetReplicas: [nodeId, nodeId] }]).catch((e: unknown) => e)
    expect(((dup as AdminError).errors[0] as ProtocolError).serverMessage).toBe(`The manual partition assignment includes the broker ${nodeId} more than once.`)
  })

  it('cancelling (null replicas) with nothing in progress: NO_REASSIGNMENT_IN_PROGRESS', async () => {
    const err = await admin.alterPartitionReassignments([{ topic: 'moves', partition: 0, targetReplicas: null }]).catch((e: unknown) => e)
    const e = (err as AdminError).errors[0] as ProtocolError
    expect(e.code).toBe(ErrorCodes.NO_REASSIGNMENT_IN_PROGRESS)
    expect(e.serverMessage).toBe('No partition reassignment is in progress.')
  })
})

describe('partition reassignment under the StandardAuthorizer', () => {
  it('CLUSTER ALTER for 45 and CLUSTER DESCRIBE for 46: others get CLUSTER_AUTHORIZATION_FAILED, at the top and on each partition', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tidelog-reassign-acl-'))
    const users = join(dir, 'users.jaas')
    writeFileSync(users, 'x { y required user_admin="a" user_alice="b"; };\n')
    const broker = await startBroker({
      dataDir: join(dir, 'data'),
      listeners: 'SASL_PLAINTEXT://127.0.0.1:0',
      saslPlainUsersFile: users,
      authorizerClassName: 'org.apache.kafka.metadata.authorizer.StandardAuthorizer',
      superUsers: 'User:admin',
    })
    const admin = await RawClient.connect(broker.port)
    const alice = await RawClient.connect(broker.port)
    try {
      expect((await login(admin, 'PLAIN', 'admin', 'a')).errorCode).toBe(0)
      expect((await login(alice, 'PLAIN', 'alice', 'b')).errorCode).toBe(0)
      const created = await admin.request(ApiKeys.CreateTopics, 7, { topics: [{ name: 't', numPartitions: 1, replicationFactor: -1, assignments: [], configs: [] }], timeoutMs: 5000, validateOnly: false })
      expect(created.topics[0].errorCode).toBe(0)
      const alter = { timeoutMs: 5000, topics: [{ name: 't', partitions: [{ partitionIndex: 0, replicas: [broker.nodeId] }] }] }
      const denied = await alice.request(ApiKeys.AlterPartitionReassignments, 0, alter)
      expect(denied.errorCode).toBe(ErrorCodes.CLUSTER_AUTHORIZATION_FAILED)
      expect(denied.responses[0].partitions[0].errorCode).toBe(ErrorCodes.CLUSTER_AUTHORIZATION_FAILED)
      expect((await alice.request(ApiKeys.ListPartitionReassignments, 0, { timeoutMs: 5000, topics: null })).errorCode).toBe(ErrorCodes.CLUSTER_AUTHORIZATION_FAILED)
      const allowed = await admin.request(ApiKeys.AlterPartitionReassignments, 0, alter)
      expect([allowed.errorCode, allowed.responses[0].partitions[0].errorCode]).toEqual([0, 0])
      expect(await admin.request(ApiKeys.ListPartitionReassignments, 0, { timeoutMs: 5000, topics: null })).toMatchObject({ errorCode: 0, topics: [] })
    } finally {
      admin.close()
      alice.close()
      await broker.close()
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
