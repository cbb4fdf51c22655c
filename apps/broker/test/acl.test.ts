/**
 * StandardAuthorizer's decisions (implied operations, DENY over ALLOW, hosts, wildcards,
 * prefixes, super users, allow.everyone.if.no.acl.found, KIP-679's by-resource-type check),
 * the filters of DescribeAcls/DeleteAcls, and per-API rules seen over a real socket with SASL
 * users: what is refused carries Kafka's error, the rest of the request is served.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ApiKeys, ErrorCodes } from '@tidelog/protocol'
import { type Broker, startBroker } from '../src/index.js'
import { type AclBinding, type AclFilter, AclOperation as Op, AclPermission as P, PatternType as PT, ResourceType as R, filterMatches } from '../src/security/acl.js'
import type { AclStore } from '../src/security/acl-store.js'
import { StandardAuthorizer } from '../src/security/authorizer.js'
import { RawClient } from './helpers/raw-client.js'
import { tempDir } from './helpers/tmp.js'
import { captureLogger, login } from './security/helpers.js'

const acl = (o: Partial<AclBinding>): AclBinding => ({
  resourceType: R.TOPIC,
  resourceName: 't',
  patternType: PT.LITERAL,
  principal: 'User:alice',
  host: '*',
  operation: Op.READ,
  permissionType: P.ALLOW,
  ...o,
})
const authorizer = (bindings: AclBinding[], superUsers = '', allowEveryoneIfNoAclFound = false) =>
  new StandardAuthorizer({ all: () => bindings.values() } as unknown as AclStore, { superUsers, allowEveryoneIfNoAclFound })
const alice = { principal: 'User:alice', host: '10.0.0.1' }

describe('StandardAuthorizer', () => {
  it('READ, WRITE, DELETE and ALTER imply DESCRIBE; ALTER_CONFIGS implies DESCRIBE_CONFIGS; nothing else is implied', () => {
    for (const op of [Op.READ, Op.WRITE, Op.DELETE, Op.ALTER]) expect(authorizer([acl({ operation: op })]).authorize(alice, Op.DESCRIBE, R.TOPIC, 't')).toBe(true)
    expect(authorizer([acl({ operation: Op.ALTER_CONFIGS })]).authorize(alice, Op.DESCRIBE_CONFIGS, R.TOPIC, 't')).toBe(true)
    expect(authorizer([acl({ operation: Op.READ })]).authorize(alice, Op.WRITE, R.TOPIC, 't')).toBe(false)
    expect(authorizer([acl({ operation: Op.CREATE })]).authorize(alice, Op.DESCRIBE, R.TOPIC, 't')).toBe(false)
    expect(authorizer([acl({ operation: Op.ALL })]).authorize(alice, Op.ALTER_CONFIGS, R.TOPIC, 't')).toBe(true)
  })

  it('a matching DENY wins over any ALLOW; a DENY of READ does not deny DESCRIBE, a DENY of ALL does', () => {
    const allowAll = acl({ operation: Op.ALL })
    expect(authorizer([allowAll, acl({ permissionType: P.DENY })]).authorize(alice, Op.READ, R.TOPIC, 't')).toBe(false)
    expect(authorizer([allowAll, acl({ permissionType: P.DENY })]).authorize(alice, Op.DESCRIBE, R.TOPIC, 't')).toBe(true)
    expect(authorizer([allowAll, acl({ operation: Op.ALL, permissionType: P.DENY, resourceName: 't', patternType: PT.PREFIXED })]).authorize(alice, Op.DESCRIBE, R.TOPIC, 'topic')).toBe(false)
  })

  it('matches principals (or User:*), hosts (or *), literal names, the * resource and prefixes', () => {
    const a = authorizer([acl({ principal: 'User:*', host: '10.0.0.1', resourceName: 'pay', patternType: PT.PREFIXED })])
    expect(a.authorize(alice, Op.READ, R.TOPIC, 'payments')).toBe(true)
    expect(a.authorize({ ...alice, host: '10.0.0.2' }, Op.READ, R.TOPIC, 'payments')).toBe(false)
    expect(a.authorize(alice, Op.READ, R.TOPIC, 'pa')).toBe(false)
    expect(a.authorize(alice, Op.READ, R.GROUP, 'payments')).toBe(false)
    expect(authorizer([acl({ resourceName: '*' })]).authorize(alice, Op.READ, R.TOPIC, 'anything')).toBe(true)
    expect(authorizer([acl({ principal: 'User:bob' })]).authorize(alice, Op.READ, R.TOPIC, 't')).toBe(false)
  })

  it('super users may do anything; allow.everyone.if.no.acl.found opens only resources no binding names', () => {
    expect(authorizer([acl({ permissionType: P.DENY })], 'User:ops;User:alice').authorize(alice, Op.READ, R.TOPIC, 't')).toBe(true)
    const open = authorizer([acl({ principal: 'User:bob' })], '', true)
    expect(open.authorize(alice, Op.WRITE, R.TOPIC, 'unnamed')).toBe(true)
    expect(open.authorize(alice, Op.WRITE, R.TOPIC, 't')).toBe(false)
    expect(authorizer([]).authorize(alice, Op.READ, R.TOPIC, 'unnamed')).toBe(false)
  })

  it('authorizeByResourceType (KIP-679): an ALLOW anywhere counts unless a DENY on its name, a prefix of it or * cancels it', () => {
    const write = (bindings: AclBinding[]) => authorizer(bindings).authorizeByResourceType(alice, Op.WRITE, R.TOPIC)
    expect(write([])).toBe(false)
    expect(write([acl({ operation: Op.WRITE, resourceName: 'orders' })])).toBe(true)
    expect(write([acl({ operation: Op.WRITE, resourceName: 'orders' }), acl({ operation: Op.WRITE, resourceName: 'ord', patternType: PT.PREFIXED, permissionType: P.DENY })])).toBe(false)
    expect(write([acl({ operation: Op.WRITE, resourceName: 'orders' }), acl({ operation: Op.WRITE, resourceName: '*', permissionType: P.DENY })])).toBe(false)
    expect(write([acl({ operation: Op.WRITE, resourceName: 'orders' }), acl({ operation: Op.WRITE, resourceName: 'other', permissionType: P.DENY })])).toBe(true)
  })

  it('authorized operations are the bit set of what may be done (KIP-430)', () => {
    const bits = authorizer([acl({ operation: Op.WRITE })]).authorizedOperations(alice, R.TOPIC, 't')
    expect(bits).toBe((1 << Op.WRITE) | (1 << Op.DESCRIBE))
  })
})

describe('ACL filters', () => {
  const f = (o: Partial<AclFilter>): AclFilter => ({ resourceType: R.ANY, resourceName: null, patternType: PT.ANY, principal: null, host: null, operation: Op.ANY, permissionType: P.ANY, ...o })
  const prefixed = acl({ resourceName: 'pay', patternType: PT.PREFIXED })
  const star = acl({ resourceName: '*' })
  it('MATCH finds every pattern that applies to a name; ANY and exact types compare the name as is', () => {
    expect(filterMatches(f({ resourceName: 'payments', patternType: PT.MATCH }), prefixed)).toBe(true)
    expect(filterMatches(f({ resourceName: 'payments', patternType: PT.MATCH }), star)).toBe(true)
    expect(filterMatches(f({ resourceName: 'payments', patternType: PT.ANY }), prefixed)).toBe(false)
    expect(filterMatches(f({ resourceName: 'pay', patternType: PT.ANY }), prefixed)).toBe(true)
    expect(filterMatches(f({ resourceName: 'pay', patternType: PT.LITERAL }), prefixed)).toBe(false)
    expect(filterMatches(f({ principal: 'User:bob' }), prefixed)).toBe(false)
    expect(filterMatches(f({ operation: Op.READ, permissionType: P.ALLOW, resourceType: R.TOPIC }), prefixed)).toBe(true)
  })
})

describe('per-API rules over a socket', () => {
  let broker: Broker
  let admin: RawClient
  let alice: RawClient
  let dir: string
  const log = captureLogger()

  beforeAll(async () => {
    // Not tempDir(): that one is removed after each test, and this broker lives for the block.
    dir = mkdtempSync(join(tmpdir(), 'tidelog-acl-rules-'))
    const users = join(dir, 'users.jaas')
    writeFileSync(users, 'x { y required user_admin="a" user_alice="b"; };\n')
    broker = await startBroker({
      dataDir: join(dir, 'data'),
      listeners: 'SASL_PLAINTEXT://127.0.0.1:0',
      saslPlainUsersFile: users,
      authorizerClassName: 'org.apache.kafka.metadata.authorizer.StandardAuthorizer',
      superUsers: 'User:admin',
      autoCreateTopics: true,
      logger: log.logger,
    })
    admin = await RawClient.connect(broker.port)
    expect((await login(admin, 'PLAIN', 'admin', 'a')).errorCode).toBe(0)
    alice = await RawClient.connect(broker.port)
    expect((await login(alice, 'PLAIN', 'alice', 'b')).errorCode).toBe(0)
    const created = await admin.request(ApiKeys.CreateTopics, 7, {
      topics: ['seen', 'hidden'].map((name) => ({ name, numPartitions: 1, replicationFactor: -1, assignments: [], configs: [] })),
      timeoutMs: 5000,
      validateOnly: false,
    })
    expect(created.topics.map((t: { errorCode: number }) => t.errorCode)).toEqual([0, 0])
    const res = await admin.request(ApiKeys.CreateAcls, 3, {
      creations: [
        { resourceType: R.TOPIC, resourceName: 'seen', resourcePatternType: PT.LITERAL, principal: 'User:alice', host: '*', operation: Op.READ, permissionType: P.ALLOW },
        { resourceType: R.GROUP, resourceName: 'g', resourcePatternType: PT.LITERAL, principal: 'User:alice', host: '*', operation: Op.DESCRIBE, permissionType: P.ALLOW },
      ],
    })
    expect(res.results.map((r: { errorCode: number }) => r.errorCode)).toEqual([0, 0])
  })
  afterAll(async () => {
    admin?.close()
    alice?.close()
    await broker?.close()
    rmSync(dir, { recursive: true, force: true })
  })

  it('Metadata lists only what alice may describe, refuses named ones, does not auto-create for her, and reports authorized operations', async () => {
    const all = await alice.request(ApiKeys.Metadata, 12, { topics: null, allowAutoTopicCreation: true, includeTopicAuthorizedOperations: true })
    expect(all.topics.map((t: { name: string; topicAuthorizedOperations: number }) => [t.name, t.topicAuthorizedOperations])).toEqual([['seen', (1 << Op.READ) | (1 << Op.DESCRIBE)]])
    const named = await alice.request(ApiKeys.Metadata, 12, { topics: [{ name: 'hidden' }, { name: 'new-one' }, { name: 'seen' }], allowAutoTopicCreation: true, includeTopicAuthorizedOperations: false })
    const codes = Object.fromEntries(named.topics.map((t: { name: string; errorCode: number }) => [t.name, t.errorCode]))
    expect(codes).toEqual({ hidden: ErrorCodes.TOPIC_AUTHORIZATION_FAILED, 'new-one': ErrorCodes.TOPIC_AUTHORIZATION_FAILED, seen: ErrorCodes.NONE })
    const after = await admin.request(ApiKeys.Metadata, 12, { topics: null, allowAutoTopicCreation: false, includeTopicAuthorizedOperations: false })
    expect(after.topics.map((t: { name: string }) => t.name).sort()).toEqual(['hidden', 'seen'])
  })

  it('FindCoordinator needs DESCRIBE on the group or the transactional id, key by key', async () => {
    const res = await alice.request(ApiKeys.FindCoordinator, 4, { keyType: 0, coordinatorKeys: ['g', 'other'] })
    const codes = Object.fromEntries(res.coordinators.map((c: { key: string; errorCode: number }) => [c.key, c.errorCode]))
    expect(codes).toEqual({ g: ErrorCodes.NONE, other: ErrorCodes.GROUP_AUTHORIZATION_FAILED })
    const txn = await alice.request(ApiKeys.FindCoordinator, 4, { keyType: 1, coordinatorKeys: ['tx'] })
    expect(txn.coordinators[0].errorCode).toBe(ErrorCodes.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    // The denial is logged as Kafka's authorizer logger words it, naming what is missing.
    expect(log.lines.some((l) => l.includes('Principal = User:alice is Denied operation = DESCRIBE from host = 127.0.0.1 on resource = TRANSACTIONAL_ID:tx'))).toBe(true)
  })

  it('InitProducerId: TRANSACTIONAL_ID_AUTHORIZATION_FAILED for a transactional id, CLUSTER_AUTHORIZATION_FAILED without WRITE anywhere', async () => {
    const txn = await alice.request(ApiKeys.InitProducerId, 5, { transactionalId: 'tx', transactionTimeoutMs: 60000, producerId: -1n, producerEpoch: -1 })
    expect(txn.errorCode).toBe(ErrorCodes.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    const idem = await alice.request(ApiKeys.InitProducerId, 5, { transactionalId: null, transactionTimeoutMs: 60000, producerId: -1n, producerEpoch: -1 })
    expect(idem.errorCode).toBe(ErrorCodes.CLUSTER_AUTHORIZATION_FAILED)
  })

  it('DescribeConfigs: the topic she may not see is refused, the broker needs DESCRIBE_CONFIGS on the cluster; ListOffsets splits by topic', async () => {
    const res = await alice.request(ApiKeys.DescribeConfigs, 4, {
      resources: [
        { resourceType: 2, resourceName: 'hidden', configurationKeys: null },
        { resourceType: 4, resourceName: '1', configurationKeys: null },
      ],
      includeSynonyms: false,
      includeDocumentation: false,
    })
    expect(res.results.map((r: { resourceName: string; errorCode: number }) => [r.resourceName, r.errorCode])).toEqual([
      ['hidden', ErrorCodes.TOPIC_AUTHORIZATION_FAILED],
      ['1', ErrorCodes.CLUSTER_AUTHORIZATION_FAILED],
    ])
    const offsets = await alice.request(ApiKeys.ListOffsets, 7, {
      replicaId: -1,
      isolationLevel: 0,
      topics: ['seen', 'hidden'].map((name) => ({ name, partitions: [{ partitionIndex: 0, currentLeaderEpoch: -1, timestamp: -1n }] })),
    })
    const codes = Object.fromEntries(offsets.topics.map((t: { name: string; partitions: { errorCode: number }[] }) => [t.name, t.partitions[0]!.errorCode]))
    expect(codes).toEqual({ seen: ErrorCodes.NONE, hidden: ErrorCodes.TOPIC_AUTHORIZATION_FAILED })
  })

  it('OffsetFetch v8 checks each group, then each topic of an allowed group', async () => {
    const res = await alice.request(ApiKeys.OffsetFetch, 8, {
      groups: ['g', 'other'].map((groupId) => ({ groupId, topics: ['seen', 'hidden'].map((name) => ({ name, partitionIndexes: [0] })) })),
      requireStable: false,
    })
    const byGroup = Object.fromEntries(res.groups.map((g: { groupId: string; errorCode: number; topics: { name: string; partitions: { errorCode: number }[] }[] }) => [g.groupId, [g.errorCode, Object.fromEntries(g.topics.map((t) => [t.name, t.partitions[0]!.errorCode]))]]))
    expect(byGroup).toEqual({
      g: [ErrorCodes.NONE, { seen: ErrorCodes.NONE, hidden: ErrorCodes.TOPIC_AUTHORIZATION_FAILED }],
      other: [ErrorCodes.GROUP_AUTHORIZATION_FAILED, {}],
    })
  })

  it('DescribeGroups and DescribeCluster report the authorized operations the ACLs give (KIP-430)', async () => {
    const groups = await alice.request(ApiKeys.DescribeGroups, 5, { groups: ['g', 'other'], includeAuthorizedOperations: true })
    const ops = Object.fromEntries(groups.groups.map((g: { groupId: string; errorCode: number; authorizedOperations: number }) => [g.groupId, [g.errorCode, g.authorizedOperations]]))
    expect(ops.g).toEqual([ErrorCodes.NONE, 1 << Op.DESCRIBE])
    expect(ops.other[0]).toBe(ErrorCodes.GROUP_AUTHORIZATION_FAILED)
    const mine = await alice.request(ApiKeys.DescribeCluster, 1, { includeClusterAuthorizedOperations: true, endpointType: 1 })
    expect(mine.clusterAuthorizedOperations).toBe(0)
    const all = await admin.request(ApiKeys.DescribeCluster, 1, { includeClusterAuthorizedOperations: true, endpointType: 1 })
    const clusterOps = [Op.CREATE, Op.CLUSTER_ACTION, Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS, Op.IDEMPOTENT_WRITE, Op.ALTER, Op.DESCRIBE]
    expect(all.clusterAuthorizedOperations).toBe(clusterOps.reduce((bits, op) => bits | (1 << op), 0))
  })

  it('transactions: AddPartitionsToTxn and EndTxn need WRITE on the transactional id', async () => {
    const add = await alice.request(ApiKeys.AddPartitionsToTxn, 3, { v3AndBelowTransactionalId: 'tx', v3AndBelowProducerId: 1n, v3AndBelowProducerEpoch: 0, v3AndBelowTopics: [{ name: 'seen', partitions: [0] }] })
    expect(add.resultsByTopicV3AndBelow[0].resultsByPartition[0].partitionErrorCode).toBe(ErrorCodes.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    const end = await alice.request(ApiKeys.EndTxn, 4, { transactionalId: 'tx', producerId: 1n, producerEpoch: 0, committed: true })
    expect(end.errorCode).toBe(ErrorCodes.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
  })

  it('CreateTopics: CREATE on the topic is enough to create it; its configs come back only with DESCRIBE_CONFIGS', async () => {
    const grant = await admin.request(ApiKeys.CreateAcls, 3, {
      creations: [{ resourceType: R.TOPIC, resourceName: 'alice-made', resourcePatternType: PT.LITERAL, principal: 'User:alice', host: '*', operation: Op.CREATE, permissionType: P.ALLOW }],
    })
    expect(grant.results[0].errorCode).toBe(0)
    const res = await alice.request(ApiKeys.CreateTopics, 7, {
      topics: ['alice-made', 'not-hers'].map((name) => ({ name, numPartitions: 1, replicationFactor: -1, assignments: [], configs: [] })),
      timeoutMs: 5000,
      validateOnly: false,
    })
    const byName = Object.fromEntries(res.topics.map((t: { name: string; errorCode: number; topicConfigErrorCode: number; configs: unknown }) => [t.name, [t.errorCode, t.topicConfigErrorCode, t.configs]]))
    expect(byName['alice-made']).toEqual([ErrorCodes.NONE, ErrorCodes.TOPIC_AUTHORIZATION_FAILED, null])
    expect(byName['not-hers']![0]).toBe(ErrorCodes.TOPIC_AUTHORIZATION_FAILED)
  })

  it('the ACL APIs need the cluster: alice gets CLUSTER_AUTHORIZATION_FAILED', async () => {
    const res = await alice.request(ApiKeys.DescribeAcls, 3, { resourceTypeFilter: R.ANY, resourceNameFilter: null, patternTypeFilter: PT.ANY, principalFilter: null, hostFilter: null, operation: Op.ANY, permissionType: P.ANY })
    expect(res.errorCode).toBe(ErrorCodes.CLUSTER_AUTHORIZATION_FAILED)
    const del = await alice.request(ApiKeys.DeleteAcls, 3, { filters: [{ resourceTypeFilter: R.ANY, resourceNameFilter: null, patternTypeFilter: PT.ANY, principalFilter: null, hostFilter: null, operation: Op.ANY, permissionType: P.ANY }] })
    expect(del.filterResults[0].errorCode).toBe(ErrorCodes.CLUSTER_AUTHORIZATION_FAILED)
  })

  it('bad ACL input gets INVALID_REQUEST per item and changes nothing; the broker keeps serving', async () => {
    const everything = { resourceTypeFilter: R.ANY, resourceNameFilter: null, patternTypeFilter: PT.ANY, principalFilter: null, hostFilter: null, operation: Op.ANY, permissionType: P.ANY }
    const count = async () => (await admin.request(ApiKeys.DescribeAcls, 3, everything)).resources.flatMap((r: { acls: unknown[] }) => r.acls).length
    const before = await count()
    expect(before).toBeGreaterThan(0)
    const res = await admin.request(ApiKeys.CreateAcls, 3, {
      creations: [
        { resourceType: 99, resourceName: 'x', resourcePatternType: PT.LITERAL, principal: 'User:a', host: '*', operation: Op.READ, permissionType: P.ALLOW },
        { resourceType: R.TOPIC, resourceName: 'x', resourcePatternType: PT.MATCH, principal: 'User:a', host: '*', operation: Op.READ, permissionType: P.ALLOW },
        { resourceType: R.TOPIC, resourceName: 'x', resourcePatternType: PT.LITERAL, principal: 'User:a', host: '*', operation: Op.ANY, permissionType: P.ALLOW },
        { resourceType: R.TOPIC, resourceName: '', resourcePatternType: PT.LITERAL, principal: 'User:a', host: '*', operation: Op.READ, permissionType: P.ALLOW },
      ],
    })
    expect(res.results.map((r: { errorCode: number }) => r.errorCode)).toEqual(Array(4).fill(ErrorCodes.INVALID_REQUEST))
    const unknown = await admin.request(ApiKeys.DescribeAcls, 3, { resourceTypeFilter: 0, resourceNameFilter: null, patternTypeFilter: PT.ANY, principalFilter: null, hostFilter: null, operation: Op.ANY, permissionType: P.ANY })
    expect(unknown.errorCode).toBe(ErrorCodes.INVALID_REQUEST)
    expect(await count()).toBe(before)
  })
})

describe('acls.json', () => {
  it('a damaged file stops startup instead of starting with other ACLs', async () => {
    const dir = tempDir()
    writeFileSync(join(dir, 'acls.json'), '{"version":1,"acls":[{"resourceType":"TOPIC"')
    await expect(startBroker({ port: 0, dataDir: dir, authorizerClassName: 'org.apache.kafka.metadata.authorizer.StandardAuthorizer' })).rejects.toThrow(/acls\.json is not valid JSON/)
  })

  it('refuses an authorizer class it does not implement', async () => {
    await expect(startBroker({ port: 0, dataDir: tempDir(), authorizerClassName: 'com.example.MyAuthorizer' })).rejects.toThrow(/expected one of org\.apache\.kafka\.metadata\.authorizer\.StandardAuthorizer/)
  })
})
