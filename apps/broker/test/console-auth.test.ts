/**
 * The console when the broker has security on (issue 18): HTTP Basic checked against the
 * broker's own SASL users (the PLAIN users file and SCRAM credentials created over the Kafka
 * protocol), and every API call authorized by the broker's StandardAuthorizer for that user.
 * A broker without security serves the console as before (console.test.ts).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ApiKeys, encodeRecordBatch } from '@tidelog/protocol'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type Broker, startBroker } from '../src/index.js'
import { AclOperation as Op, AclPermission as P, PatternType as PT, ResourceType as R } from '../src/security/acl.js'
import { RawClient } from './helpers/raw-client.js'
import { login, upsertScramUser } from './security/helpers.js'

const AUTHORIZER = 'org.apache.kafka.metadata.authorizer.StandardAuthorizer'

type Reply = { status: number; body: any; headers: Headers }

async function get(b: Broker, path: string, user?: string, password?: string): Promise<Reply> {
  const headers: Record<string, string> = user === undefined ? {} : { authorization: `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}` }
  const res = await fetch(new URL(path, b.console!.url), { headers })
  const text = await res.text()
  return { status: res.status, headers: res.headers, body: res.headers.get('content-type')?.startsWith('application/json') ? JSON.parse(text) : text }
}

function acl(principal: string, resourceType: number, resourceName: string, operation: number) {
  return { resourceType, resourceName, resourcePatternType: PT.LITERAL, principal, host: '*', operation, permissionType: P.ALLOW }
}

describe('console with SASL and ACLs on', () => {
  let dir: string
  let broker: Broker
  let admin: RawClient
  const as = {
    admin: (path: string) => get(broker, path, 'admin', 'admin-pw'),
    alice: (path: string) => get(broker, path, 'alice', 'alice-pw'),
    carol: (path: string) => get(broker, path, 'carol', 'carol-scram'),
  }

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tidelog-console-auth-'))
    const users = join(dir, 'users.jaas')
    writeFileSync(users, 'KafkaServer { org.apache.kafka.common.security.plain.PlainLoginModule required user_admin="admin-pw" user_alice="alice-pw"; };\n')
    broker = await startBroker({
      dataDir: join(dir, 'data'),
      listeners: 'SASL_PLAINTEXT://127.0.0.1:0',
      saslPlainUsersFile: users,
      authorizerClassName: AUTHORIZER,
      superUsers: 'User:admin',
      consolePort: 0,
      // A wrong password is answered after this delay, as a failed SASL exchange is.
      connectionFailedAuthenticationDelayMs: 50,
      logLevel: 'error',
    })
    admin = await RawClient.connect(broker.port)
    expect((await login(admin, 'PLAIN', 'admin', 'admin-pw')).errorCode).toBe(0)
    // carol exists only as a SCRAM credential, as kafka-configs.sh --add-config 'SCRAM-SHA-512=[...]' makes one.
    expect((await upsertScramUser(admin, 'carol', 'carol-scram', 'SCRAM-SHA-512')).map((r) => r.errorCode)).toEqual([0])
    const created = await admin.request(ApiKeys.CreateTopics, 7, {
      topics: ['public', 'secret', 'readable'].map((name) => ({ name, numPartitions: 1, replicationFactor: -1, assignments: [], configs: [] })),
      timeoutMs: 5000,
      validateOnly: false,
    })
    expect(created.topics.map((t: { errorCode: number }) => t.errorCode)).toEqual([0, 0, 0])
    for (const topic of ['public', 'secret', 'readable']) {
      const r = await admin.request(ApiKeys.Produce, 9, {
        transactionalId: null,
        acks: -1,
        timeoutMs: 5000,
        topicData: [{ name: topic, partitionData: [{ index: 0, records: encodeRecordBatch({ now: 1_700_000_000_000, records: [{ key: 'k', value: `${topic} value` }] }) }] }],
      })
      expect(r.responses[0].partitionResponses[0].errorCode).toBe(0)
    }
    const res = await admin.request(ApiKeys.CreateAcls, 3, {
      creations: [
        // alice may describe 'public' (not read it), read 'readable' (READ implies DESCRIBE); nothing on 'secret'.
        acl('User:alice', R.TOPIC, 'public', Op.DESCRIBE),
        acl('User:alice', R.TOPIC, 'readable', Op.READ),
        acl('User:carol', R.TOPIC, 'secret', Op.ALL),
      ],
    })
    expect(res.results.map((r: { errorCode: number }) => r.errorCode)).toEqual([0, 0, 0])
  })
  afterAll(async () => {
    admin?.close()
    await broker?.close()
    rmSync(dir, { recursive: true, force: true })
  })

  it('asks for a login (401, a Basic challenge) for pages, the API and /metrics; refuses a wrong password or an unknown user', async () => {
    for (const path of ['/', '/app.js', '/api/topics', '/api/health', '/metrics']) {
      const r = await get(broker, path)
      expect(r.status, path).toBe(401)
      expect(r.headers.get('www-authenticate')).toBe('Basic realm="tidelog console", charset="UTF-8"')
      expect(r.body.error).toBe('SASL_AUTHENTICATION_FAILED')
    }
    for (const [user, password] of [['alice', 'wrong'], ['nobody', 'x'], ['carol', 'alice-pw'], ['alice', '']]) {
      const r = await get(broker, '/api/topics', user, password)
      expect(r.status, `${user}:${password}`).toBe(401)
      expect(r.body).toEqual({ error: 'SASL_AUTHENTICATION_FAILED', message: 'SASL_AUTHENTICATION_FAILED: invalid username or password' })
    }
    const malformed = await fetch(new URL('/api/topics', broker.console!.url), { headers: { authorization: 'Bearer abc' } })
    expect(malformed.status).toBe(401)
  })

  it('a PLAIN user and a SCRAM user log in; each sees only the topics they may describe', async () => {
    const names = (r: Reply) => r.body.map((t: { name: string }) => t.name)
    expect(names(await as.admin('/api/topics'))).toEqual(['public', 'readable', 'secret'])
    expect(names(await as.alice('/api/topics'))).toEqual(['public', 'readable'])
    expect(names(await as.carol('/api/topics'))).toEqual(['secret'])
    const health = await as.alice('/api/health')
    expect(health.status).toBe(200)
    expect(health.body).toMatchObject({ principal: 'User:alice', topics: 2, partitions: 2 })
    // Totals over what alice may see only (one record each in 'public' and 'readable').
    expect(health.body.totals.messagesIn).toBe(2)
    expect((await as.admin('/api/health')).body).toMatchObject({ principal: 'User:admin', topics: 3, totals: { messagesIn: 3 } })
  })

  it('without DESCRIBE a topic is refused as Kafka refuses it, existing or not; without READ its messages are; without DESCRIBE_CONFIGS its configs are withheld', async () => {
    for (const name of ['secret', 'no-such-topic']) {
      const r = await as.alice(`/api/topics/${name}`)
      expect(r.status).toBe(403)
      expect(r.body).toEqual({ error: 'TOPIC_AUTHORIZATION_FAILED', message: `User:alice is not authorized to describe topic ${name}` })
    }
    const pub = await as.alice('/api/topics/public')
    expect(pub.status).toBe(200)
    expect(pub.body.partitions[0]).toMatchObject({ logEndOffset: 1 })
    expect(pub.body.configs).toBeNull()
    const browse = await as.alice('/api/topics/public/partitions/0/messages?offset=0')
    expect(browse.status).toBe(403)
    expect(browse.body).toEqual({ error: 'TOPIC_AUTHORIZATION_FAILED', message: 'User:alice is not authorized to read topic public' })
    const readable = await as.alice('/api/topics/readable/partitions/0/messages?offset=0')
    expect(readable.status).toBe(200)
    expect(readable.body.records.map((m: { value: { text: string } }) => m.value.text)).toEqual(['readable value'])
    // carol's ALL covers DESCRIBE_CONFIGS.
    expect((await as.carol('/api/topics/secret')).body.configs).toEqual(expect.arrayContaining([expect.objectContaining({ name: 'cleanup.policy' })]))
    expect((await as.admin('/api/topics/secret/partitions/0/messages?offset=0')).body.records).toHaveLength(1)
  })

  it('groups need DESCRIBE on the group, their lag shows only topics the user may describe; /metrics needs DESCRIBE on the cluster', async () => {
    const commit = await admin.request(ApiKeys.OffsetCommit, 8, {
      groupId: 'g',
      generationIdOrMemberEpoch: -1,
      memberId: '',
      groupInstanceId: null,
      topics: ['public', 'secret'].map((name) => ({ name, partitions: [{ partitionIndex: 0, committedOffset: 0n, committedLeaderEpoch: -1, committedMetadata: null }] })),
    })
    expect(commit.topics.flatMap((t: { partitions: { errorCode: number }[] }) => t.partitions.map((p) => p.errorCode))).toEqual([0, 0])
    expect((await as.alice('/api/groups')).body).toEqual([])
    expect((await as.alice('/api/groups/g')).body).toEqual({ error: 'GROUP_AUTHORIZATION_FAILED', message: 'User:alice is not authorized to describe group g' })
    const granted = await admin.request(ApiKeys.CreateAcls, 3, { creations: [acl('User:alice', R.GROUP, 'g', Op.DESCRIBE)] })
    expect(granted.results[0].errorCode).toBe(0)
    const groups = await as.alice('/api/groups')
    expect(groups.body).toEqual([expect.objectContaining({ groupId: 'g', totalLag: 1 })])
    const g = await as.alice('/api/groups/g')
    expect(g.body.lag.map((p: { topic: string; lag: number }) => [p.topic, p.lag])).toEqual([['public', 1]])
    expect((await as.admin('/api/groups/g')).body.lag.map((p: { topic: string }) => p.topic).sort()).toEqual(['public', 'secret'])

    const metrics = await as.alice('/metrics')
    expect(metrics.status).toBe(403)
    expect(metrics.body.error).toBe('CLUSTER_AUTHORIZATION_FAILED')
    const scrape = await as.admin('/metrics')
    expect(scrape.status).toBe(200)
    expect(scrape.body).toContain('kafka_server_brokertopicmetrics_messagesin_total 3')
    // The four refused logins of the first test (a request with no credentials is not a failed login).
    expect(scrape.body).toMatch(/^tidelog_console_failed_logins_total 4$/m)
  })

  it('a SCRAM credential changed or deleted over the Kafka protocol stops working at once (no stale login)', async () => {
    expect((await as.carol('/api/topics')).status).toBe(200)
    expect((await upsertScramUser(admin, 'carol', 'new-password', 'SCRAM-SHA-512')).map((r) => r.errorCode)).toEqual([0])
    expect((await as.carol('/api/topics')).status).toBe(401)
    expect((await get(broker, '/api/topics', 'carol', 'new-password')).status).toBe(200)
    const del = await admin.request(ApiKeys.AlterUserScramCredentials, 0, { deletions: [{ name: 'carol', mechanism: 2 }], upsertions: [] })
    expect(del.results.map((r: { errorCode: number }) => r.errorCode)).toEqual([0])
    expect((await get(broker, '/api/topics', 'carol', 'new-password')).status).toBe(401)
  })
})

describe('console with ACLs but no SASL listener', () => {
  it('acts as User:ANONYMOUS (what a PLAINTEXT client is) without a login, authorized by the ACLs', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tidelog-console-anon-'))
    const broker = await startBroker({ port: 0, dataDir: dir, authorizerClassName: AUTHORIZER, superUsers: 'User:ops', consolePort: 0, logLevel: 'error' })
    try {
      const r = await get(broker, '/api/topics')
      expect(r.status).toBe(200)
      expect(r.body).toEqual([])
      expect((await get(broker, '/api/health')).body.principal).toBe('User:ANONYMOUS')
      expect((await get(broker, '/metrics')).status).toBe(403)
    } finally {
      await broker.close()
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
