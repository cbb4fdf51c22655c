import { afterEach, describe, expect, it } from 'vitest'
import {
  AlterConfigs,
  CreateTopics,
  DescribeConfigs,
  DescribeGroups,
  FindCoordinator,
  IncrementalAlterConfigs,
  ListOffsets,
  OffsetCommit,
  ProtocolError,
  encodeConsumerProtocolAssignment,
  encodeConsumerProtocolSubscription,
} from '@tidelog/protocol'
import { Admin, AdminError } from '@tidelog/client'
import { fakeCluster } from './fake-broker.js'

const cleanup: (() => Promise<unknown> | unknown)[] = []
afterEach(async () => {
  while (cleanup.length > 0) await cleanup.pop()!()
})

async function setup(n = 2) {
  const fc = await fakeCluster(n)
  cleanup.push(() => fc.close())
  const admin = new Admin({ brokers: [fc.brokers[0]!.address], retryBackoffMs: 10, retryBackoffMaxMs: 20, timeoutMs: 3000 })
  cleanup.push(() => admin.close())
  for (const b of fc.brokers) {
    b.on(FindCoordinator.apiKey, (req) => ({
      coordinators: req.body.coordinatorKeys.map((key: string) => ({ key, nodeId: 1, host: '127.0.0.1', port: fc.brokers[1]!.port, errorCode: 0, errorMessage: null })),
    }))
  }
  return { ...fc, admin }
}

describe('Admin against fake brokers', () => {
  it('createTopics retries NOT_CONTROLLER on the new controller and reports per-topic errors with partial results', async () => {
    const { state, brokers, admin } = await setup()
    state.controllerId = 0
    brokers[0]!.on(CreateTopics.apiKey, (req) => {
      // The old controller: refuses, and the metadata moves the controller to node 1.
      state.controllerId = 1
      return { topics: req.body.topics.map((t: { name: string }) => ({ name: t.name, errorCode: 41, errorMessage: null })) }
    })
    brokers[1]!.on(CreateTopics.apiKey, (req) => ({
      topics: req.body.topics.map((t: { name: string; numPartitions: number }) =>
        t.name === 'exists'
          ? { name: t.name, errorCode: 36, errorMessage: 'Topic exists already.' }
          : { name: t.name, errorCode: 0, errorMessage: null, topicId: 'AAAAAAAAAAAAAAAAAAAAAg', numPartitions: t.numPartitions, replicationFactor: 1, configs: [] },
      ),
    }))
    const err = await admin.createTopics([{ name: 'new', partitions: 3, replicationFactor: 1, configs: { 'cleanup.policy': 'compact' } }, { name: 'exists', partitions: 1, replicationFactor: 1 }]).catch((e) => e)
    expect(err).toBeInstanceOf(AdminError)
    expect(err.errors).toHaveLength(1)
    expect(err.errors[0]).toBeInstanceOf(ProtocolError)
    expect(err.errors[0]).toMatchObject({ type: 'TOPIC_ALREADY_EXISTS', topic: 'exists', serverMessage: 'Topic exists already.' })
    expect(err.results).toEqual([{ name: 'new', topicId: 'AAAAAAAAAAAAAAAAAAAAAg', partitions: 3, replicationFactor: 1 }])
    expect(err.retriable).toBe(false)
    const sent = brokers[1]!.received(CreateTopics.apiKey)[0]!.body.topics[0]
    expect(sent.configs).toEqual([{ name: 'cleanup.policy', value: 'compact' }])
    expect(brokers[0]!.received(CreateTopics.apiKey)).toHaveLength(1)
  })

  it('listOffsets sends each partition to its leader with the leader epoch, and retries NOT_LEADER_OR_FOLLOWER', async () => {
    const { state, brokers, admin } = await setup()
    state.topics = [{ name: 't', leaders: [0, 1], leaderEpochs: [7, 9] }]
    let moved = false
    for (const b of brokers) {
      b.on(ListOffsets.apiKey, (req) => ({
        topics: req.body.topics.map((t: { name: string; partitions: { partitionIndex: number; timestamp: bigint }[] }) => ({
          name: t.name,
          partitions: t.partitions.map((p) => {
            // Partition 1's leader moves to node 0 after the first answer.
            if (p.partitionIndex === 1 && !moved) {
              moved = true
              state.topics[0]!.leaders[1] = 0
              state.topics[0]!.leaderEpochs![1] = 10
              return { partitionIndex: 1, errorCode: 6, timestamp: -1n, offset: -1n, leaderEpoch: -1 }
            }
            return { partitionIndex: p.partitionIndex, errorCode: 0, timestamp: -1n, offset: BigInt(100 + p.partitionIndex) + (p.timestamp === -2n ? -100n : 0n), leaderEpoch: 7 }
          }),
        })),
      }))
    }
    const latest = await admin.listOffsets('t')
    expect(latest.map((o) => [o.partition, o.offset])).toEqual([
      [0, 100n],
      [1, 101n],
    ])
    const first = brokers[0]!.received(ListOffsets.apiKey)[0]!.body
    expect(first.replicaId).toBe(-1)
    expect(first.topics[0].partitions[0]).toMatchObject({ partitionIndex: 0, currentLeaderEpoch: 7, timestamp: -1n })
    expect(brokers[1]!.received(ListOffsets.apiKey)[0]!.body.topics[0].partitions[0]).toMatchObject({ partitionIndex: 1, currentLeaderEpoch: 9 })
    const retried = brokers[0]!.received(ListOffsets.apiKey)[1]!.body.topics[0].partitions
    expect(retried).toEqual([expect.objectContaining({ partitionIndex: 1, currentLeaderEpoch: 10 })])

    const mixed = await admin.listOffsets([{ topic: 't', partition: 0, timestamp: 'earliest' }, { topic: 't', partition: 1, timestamp: 1_700_000_000_000n }])
    expect(mixed.map((o) => o.offset)).toEqual([0n, 101n])
    const maxTs = admin.listOffsets([{ topic: 't', partition: 0, timestamp: 'max-timestamp' }])
    await maxTs
    expect(brokers[0]!.received(ListOffsets.apiKey).at(-1)!.header.apiVersion).toBeGreaterThanOrEqual(7)
  })

  it('describeGroups decodes the consumer protocol of each member', async () => {
    const { brokers, admin } = await setup()
    const subscription = encodeConsumerProtocolSubscription({ topics: ['a', 'b'], userData: null, ownedPartitions: [{ topic: 'a', partitions: [0] }] }, 1)
    const assignment = encodeConsumerProtocolAssignment({ assignedPartitions: [{ topic: 'a', partitions: [0, 1] }], userData: null }, 1)
    brokers[1]!.on(DescribeGroups.apiKey, (req) => ({
      groups: req.body.groups.map((groupId: string) =>
        groupId === 'gone'
          ? { errorCode: 69, groupId, groupState: '', protocolType: '', protocolData: '', members: [] }
          : {
              errorCode: 0,
              groupId,
              groupState: 'Stable',
              protocolType: 'consumer',
              protocolData: 'range',
              members: [
                { memberId: 'm1', groupInstanceId: null, clientId: 'c1', clientHost: '/10.0.0.1', memberMetadata: subscription, memberAssignment: assignment },
                { memberId: 'm2', groupInstanceId: 'static', clientId: 'c2', clientHost: '/10.0.0.2', memberMetadata: Buffer.from([1, 2]), memberAssignment: Buffer.alloc(0) },
              ],
            },
      ),
    }))
    const [g] = await admin.describeGroups(['billing'])
    expect(g).toMatchObject({ groupId: 'billing', state: 'Stable', protocolType: 'consumer', protocol: 'range' })
    expect(g!.members[0]!.subscription).toMatchObject({ version: 1, topics: ['a', 'b'], ownedPartitions: [{ topic: 'a', partitions: [0] }] })
    expect(g!.members[0]!.memberAssignment).toMatchObject({ version: 1, assignedPartitions: [{ topic: 'a', partitions: [0, 1] }] })
    expect(g!.members[1]!.subscription).toBeUndefined()
    expect(g!.members[1]!.metadata).toEqual(Buffer.from([1, 2]))
    expect(g!.members[1]!.groupInstanceId).toBe('static')
    const err = await admin.describeGroups(['billing', 'gone']).catch((e) => e)
    expect(err).toBeInstanceOf(AdminError)
    expect(err.errors[0]).toMatchObject({ type: 'GROUP_ID_NOT_FOUND', groupId: 'gone' })
    expect(err.results.map((r: { groupId: string }) => r.groupId)).toEqual(['billing'])
  })

  it('alterOffsets commits as an admin (generation -1, no member id) to the coordinator', async () => {
    const { brokers, admin } = await setup()
    brokers[1]!.on(OffsetCommit.apiKey, (req) => ({
      topics: req.body.topics.map((t: { name: string; partitions: { partitionIndex: number }[] }) => ({
        name: t.name,
        partitions: t.partitions.map((p) => ({ partitionIndex: p.partitionIndex, errorCode: p.partitionIndex === 1 ? 25 : 0 })),
      })),
    }))
    const err = await admin.alterOffsets('g', [{ topic: 't', partition: 0, offset: 5n }, { topic: 't', partition: 1, offset: 6n, metadata: 'm' }]).catch((e) => e)
    const body = brokers[1]!.received(OffsetCommit.apiKey)[0]!.body
    expect(body).toMatchObject({ groupId: 'g', generationIdOrMemberEpoch: -1, memberId: '' })
    expect(body.topics[0].partitions[1]).toMatchObject({ committedOffset: 6n, committedMetadata: 'm' })
    expect(err).toBeInstanceOf(AdminError)
    expect(err.errors[0]).toMatchObject({ type: 'UNKNOWN_MEMBER_ID', topic: 't', partition: 1, groupId: 'g' })
  })

  it('alterConfigs uses IncrementalAlterConfigs, or merges into AlterConfigs on brokers without it', async () => {
    const { brokers, admin } = await setup(1)
    const b = brokers[0]!
    b.on(IncrementalAlterConfigs.apiKey, (req) => ({
      throttleTimeMs: 0,
      responses: req.body.resources.map((r: { resourceType: number; resourceName: string }) => ({ errorCode: 0, errorMessage: null, resourceType: r.resourceType, resourceName: r.resourceName })),
    }))
    await admin.alterConfigs([{ type: 'topic', name: 't', configs: [{ name: 'retention.ms', value: '1000' }, { name: 'cleanup.policy', op: 'delete' }] }])
    expect(b.received(IncrementalAlterConfigs.apiKey)[0]!.body.resources[0].configs).toEqual([
      { name: 'retention.ms', configOperation: 0, value: '1000' },
      { name: 'cleanup.policy', configOperation: 1, value: null },
    ])

    // An old broker: no IncrementalAlterConfigs. The current dynamic configs are carried over.
    await admin.close()
    b.apiVersions = b.apiVersions.filter((v) => v.apiKey !== IncrementalAlterConfigs.apiKey)
    const old = new Admin({ brokers: [b.address], timeoutMs: 3000 })
    cleanup.push(() => old.close())
    b.on(DescribeConfigs.apiKey, (req) => ({
      throttleTimeMs: 0,
      results: req.body.resources.map((r: { resourceType: number; resourceName: string }) => ({
        errorCode: 0,
        errorMessage: null,
        resourceType: r.resourceType,
        resourceName: r.resourceName,
        configs: [
          { name: 'segment.ms', value: '5000', readOnly: false, configSource: 1, isSensitive: false, synonyms: [] },
          { name: 'cleanup.policy', value: 'compact', readOnly: false, configSource: 1, isSensitive: false, synonyms: [] },
          { name: 'retention.ms', value: '604800000', readOnly: false, configSource: 5, isSensitive: false, synonyms: [] },
        ],
      })),
    }))
    b.on(AlterConfigs.apiKey, (req) => ({
      throttleTimeMs: 0,
      responses: req.body.resources.map((r: { resourceType: number; resourceName: string }) => ({ errorCode: 0, errorMessage: null, resourceType: r.resourceType, resourceName: r.resourceName })),
    }))
    await old.alterConfigs([{ type: 'topic', name: 't', configs: [{ name: 'retention.ms', value: '1000' }, { name: 'cleanup.policy', op: 'delete' }] }])
    const sent = b.received(AlterConfigs.apiKey)[0]!.body.resources[0]
    expect(sent.resourceType).toBe(2)
    expect(sent.configs).toEqual([
      { name: 'segment.ms', value: '5000' },
      { name: 'retention.ms', value: '1000' },
    ])
    const err = await old.alterConfigs([{ type: 'topic', name: 't', configs: [{ name: 'x', value: 'y', op: 'append' }] }]).catch((e) => e)
    expect(err).toBeInstanceOf(AdminError)
    expect(err.errors[0].name).toBe('UnsupportedVersionError')
    expect(err.errors[0].message).toMatch(/append \(needs IncrementalAlterConfigs/)
  })
})
