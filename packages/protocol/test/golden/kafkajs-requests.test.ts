/**
 * Golden bytes against kafkajs 2.2.4: for every (API, version) that kafkajs encodes and
 * tidelog also speaks, the same request built with kafkajs' encoder and with ours must be
 * byte-identical, as a body and as a whole frame (size + request header v1 + body).
 */
import { createRequire } from 'node:module'
import { describe, expect, it } from 'vitest'
import { kafkajsVersion, recordsPeers } from '../../../../test/helpers/peers.js'
import {
  decodeConsumerProtocolAssignment,
  decodeConsumerProtocolSubscription,
  encodeRequestFrame,
  getApi,
  Produce,
  Reader,
  Writer,
} from '@tidelog/protocol'

const require = createRequire(import.meta.url)
const kafkajs = (api: string, v: number): ((args: unknown) => KafkajsRequest) =>
  require(`kafkajs/src/protocol/requests/${api}/v${v}/request.js`) as (args: unknown) => KafkajsRequest
const KafkajsEncoder = require('kafkajs/src/protocol/encoder.js') as new () => { writeBytes(b: Buffer): { buffer: Buffer } }
const kafkajsFrame = require('kafkajs/src/protocol/request.js') as (a: {
  correlationId: number
  clientId: string
  request: KafkajsRequest
}) => Promise<{ buffer: Buffer }>
const { MemberMetadata, MemberAssignment } = require('kafkajs/src/consumer/assignerProtocol.js') as {
  MemberMetadata: { encode(a: { version: number; topics: string[]; userData?: Buffer }): Buffer }
  MemberAssignment: { encode(a: { version: number; assignment: Record<string, number[]>; userData?: Buffer }): Buffer }
}

interface KafkajsRequest {
  apiKey: number
  apiVersion: number
  encode(): Promise<{ buffer: Buffer }>
}

interface Case {
  /** kafkajs' folder under src/protocol/requests */
  dir: string
  versions: number[]
  kafkajs: (v: number) => unknown
  ours: (v: number) => unknown
}

const range = (lo: number, hi: number): number[] => Array.from({ length: hi - lo + 1 }, (_, i) => lo + i)

const subscription = MemberMetadata.encode({ version: 0, topics: ['topic-a', 'topic-b'], userData: Buffer.from('ud') })
const assignment = MemberAssignment.encode({ version: 0, assignment: { 'topic-a': [0, 2], 'topic-b': [1] } })

const CASES: Case[] = [
  {
    dir: 'addOffsetsToTxn',
    versions: [0, 1],
    kafkajs: () => ({ transactionalId: 'tx-1', producerId: '1234567890123', producerEpoch: 3, groupId: 'group' }),
    ours: () => ({ transactionalId: 'tx-1', producerId: 1234567890123n, producerEpoch: 3, groupId: 'group' }),
  },
  {
    dir: 'addPartitionsToTxn',
    versions: [0, 1],
    kafkajs: () => ({
      transactionalId: 'tx-1',
      producerId: '77',
      producerEpoch: 1,
      topics: [{ topic: 'a', partitions: [0, 1] }, { topic: 'b', partitions: [5] }],
    }),
    ours: () => ({
      v3AndBelowTransactionalId: 'tx-1',
      v3AndBelowProducerId: 77n,
      v3AndBelowProducerEpoch: 1,
      v3AndBelowTopics: [
        { name: 'a', partitions: [0, 1] },
        { name: 'b', partitions: [5] },
      ],
    }),
  },
  {
    dir: 'alterConfigs',
    versions: [0, 1],
    kafkajs: () => ({
      resources: [{ type: 2, name: 'events', configEntries: [{ name: 'retention.ms', value: '1000' }, { name: 'x', value: 'é' }] }],
      validateOnly: true,
    }),
    ours: () => ({
      resources: [
        {
          resourceType: 2,
          resourceName: 'events',
          configs: [
            { name: 'retention.ms', value: '1000' },
            { name: 'x', value: 'é' },
          ],
        },
      ],
      validateOnly: true,
    }),
  },
  { dir: 'apiVersions', versions: [0, 1, 2], kafkajs: () => ({}), ours: () => ({}) },
  {
    dir: 'createPartitions',
    versions: [0, 1],
    kafkajs: () => ({
      topicPartitions: [
        { topic: 'a', count: 3, assignments: [[1, 2], [2, 3]] },
        { topic: 'b', count: 6 },
      ],
      validateOnly: false,
      timeout: 5000,
    }),
    ours: () => ({
      topics: [
        { name: 'a', count: 3, assignments: [{ brokerIds: [1, 2] }, { brokerIds: [2, 3] }] },
        // kafkajs writes an empty assignment list as null
        { name: 'b', count: 6, assignments: null },
      ],
      timeoutMs: 5000,
      validateOnly: false,
    }),
  },
  {
    dir: 'createTopics',
    versions: [0, 1, 2, 3],
    kafkajs: () => ({
      topics: [
        {
          topic: 'events',
          numPartitions: 3,
          replicationFactor: 1,
          configEntries: [{ name: 'cleanup.policy', value: 'compact' }],
        },
        { topic: 'manual', replicaAssignment: [{ partition: 0, replicas: [1, 2] }] },
      ],
      timeout: 3000,
      validateOnly: true,
    }),
    ours: (v) => ({
      topics: [
        { name: 'events', numPartitions: 3, replicationFactor: 1, assignments: [], configs: [{ name: 'cleanup.policy', value: 'compact' }] },
        { name: 'manual', numPartitions: -1, replicationFactor: -1, assignments: [{ partitionIndex: 0, brokerIds: [1, 2] }], configs: [] },
      ],
      timeoutMs: 3000,
      ...(v >= 1 ? { validateOnly: true } : {}),
    }),
  },
  {
    dir: 'deleteGroups',
    versions: [0, 1],
    kafkajs: () => ['g1', 'g2'],
    ours: () => ({ groupsNames: ['g1', 'g2'] }),
  },
  {
    dir: 'deleteRecords',
    versions: [0, 1],
    kafkajs: () => ({ topics: [{ topic: 't', partitions: [{ partition: 0, offset: '5' }, { partition: 3, offset: '-1' }] }], timeout: 2000 }),
    ours: () => ({
      topics: [
        {
          name: 't',
          partitions: [
            { partitionIndex: 0, offset: 5n },
            { partitionIndex: 3, offset: -1n },
          ],
        },
      ],
      timeoutMs: 2000,
    }),
  },
  {
    dir: 'deleteTopics',
    versions: [0, 1],
    kafkajs: () => ({ topics: ['a', 'b'], timeout: 5000 }),
    ours: () => ({ topicNames: ['a', 'b'], timeoutMs: 5000 }),
  },
  {
    dir: 'describeConfigs',
    versions: [0, 1, 2],
    kafkajs: () => ({
      resources: [
        { type: 2, name: 'events', configNames: ['retention.ms'] },
        { type: 4, name: '1' },
      ],
      includeSynonyms: true,
    }),
    ours: (v) => ({
      resources: [
        { resourceType: 2, resourceName: 'events', configurationKeys: ['retention.ms'] },
        // kafkajs sends "all configs" (an empty list) as null, which is what Kafka expects
        { resourceType: 4, resourceName: '1', configurationKeys: null },
      ],
      ...(v >= 1 ? { includeSynonyms: true } : {}),
    }),
  },
  {
    dir: 'describeGroups',
    versions: [0, 1, 2],
    kafkajs: () => ({ groupIds: ['g1', 'g2'] }),
    ours: () => ({ groups: ['g1', 'g2'] }),
  },
  {
    dir: 'endTxn',
    versions: [0, 1],
    kafkajs: () => ({ transactionalId: 'tx', producerId: '9007199254740993', producerEpoch: 2, transactionResult: true }),
    ours: () => ({ transactionalId: 'tx', producerId: 9007199254740993n, producerEpoch: 2, committed: true }),
  },
  {
    dir: 'fetch',
    versions: range(0, 11),
    kafkajs: () => ({
      replicaId: -1,
      maxWaitTime: 500,
      minBytes: 1,
      maxBytes: 10485760,
      isolationLevel: 0,
      sessionId: 17,
      sessionEpoch: 2,
      rackId: 'rack-1',
      topics: [
        {
          topic: 'events',
          partitions: [
            { partition: 0, fetchOffset: '42', maxBytes: 1048576, logStartOffset: '3', currentLeaderEpoch: 7 },
            { partition: 1, fetchOffset: '0', maxBytes: 1048576 },
          ],
        },
      ],
      forgottenTopics: [{ topic: 'old', partitions: [1, 2] }],
    }),
    ours: (v) => ({
      replicaId: -1,
      maxWaitMs: 500,
      minBytes: 1,
      maxBytes: 10485760,
      isolationLevel: 0,
      sessionId: 17,
      sessionEpoch: 2,
      rackId: 'rack-1',
      topics: [
        {
          topic: 'events',
          partitions: [
            { partition: 0, fetchOffset: 42n, partitionMaxBytes: 1048576, logStartOffset: 3n, currentLeaderEpoch: 7 },
            { partition: 1, fetchOffset: 0n, partitionMaxBytes: 1048576 },
          ],
        },
      ],
      // not ignorable in Kafka's definition, so only where the version has it
      forgottenTopicsData: v >= 7 ? [{ topic: 'old', partitions: [1, 2] }] : [],
    }),
  },
  {
    dir: 'findCoordinator',
    versions: [0, 1, 2],
    kafkajs: (v) => (v === 0 ? { groupId: 'g' } : { coordinatorKey: 'tx-1', coordinatorType: 1 }),
    ours: (v) => (v === 0 ? { key: 'g' } : { key: 'tx-1', keyType: 1 }),
  },
  {
    dir: 'heartbeat',
    versions: [0, 1, 2, 3],
    kafkajs: () => ({ groupId: 'g', groupGenerationId: 5, memberId: 'm-1', groupInstanceId: 'i-1' }),
    ours: (v) => ({ groupId: 'g', generationId: 5, memberId: 'm-1', ...(v >= 3 ? { groupInstanceId: 'i-1' } : {}) }),
  },
  {
    dir: 'initProducerId',
    versions: [0, 1],
    kafkajs: () => ({ transactionalId: null, transactionTimeout: 30000 }),
    ours: () => ({ transactionalId: null, transactionTimeoutMs: 30000 }),
  },
  {
    dir: 'joinGroup',
    versions: range(0, 5),
    kafkajs: () => ({
      groupId: 'g',
      sessionTimeout: 30000,
      rebalanceTimeout: 60000,
      memberId: '',
      groupInstanceId: 'static-1',
      protocolType: 'consumer',
      groupProtocols: [{ name: 'RoundRobinAssigner', metadata: subscription }],
    }),
    ours: (v) => ({
      groupId: 'g',
      sessionTimeoutMs: 30000,
      ...(v >= 1 ? { rebalanceTimeoutMs: 60000 } : {}),
      memberId: '',
      ...(v >= 5 ? { groupInstanceId: 'static-1' } : {}),
      protocolType: 'consumer',
      protocols: [{ name: 'RoundRobinAssigner', metadata: subscription }],
    }),
  },
  {
    dir: 'leaveGroup',
    versions: [0, 1, 2, 3],
    kafkajs: (v) =>
      v < 3
        ? { groupId: 'g', memberId: 'm-1' }
        : { groupId: 'g', members: [{ memberId: 'm-1' }, { memberId: 'm-2', groupInstanceId: 'i-2' }] },
    ours: (v) =>
      v < 3
        ? { groupId: 'g', memberId: 'm-1' }
        : {
            groupId: 'g',
            members: [
              { memberId: 'm-1', groupInstanceId: null },
              { memberId: 'm-2', groupInstanceId: 'i-2' },
            ],
          },
  },
  { dir: 'listGroups', versions: [0, 1, 2], kafkajs: () => ({}), ours: () => ({}) },
  {
    dir: 'listOffsets',
    versions: [0, 1, 2, 3],
    kafkajs: () => ({
      replicaId: -1,
      isolationLevel: 1,
      topics: [{ topic: 'events', partitions: [{ partition: 0, timestamp: -2 }, { partition: 1, timestamp: 1700000000000, maxNumOffsets: 1 }] }],
    }),
    ours: (v) => ({
      replicaId: -1,
      ...(v >= 2 ? { isolationLevel: 1 } : {}),
      topics: [
        {
          name: 'events',
          partitions: [
            { partitionIndex: 0, timestamp: -2n },
            { partitionIndex: 1, timestamp: 1700000000000n },
          ],
        },
      ],
    }),
  },
  {
    dir: 'metadata',
    versions: range(0, 6),
    kafkajs: () => ({ topics: ['a', 'b'], allowAutoTopicCreation: false }),
    ours: (v) => ({ topics: [{ name: 'a' }, { name: 'b' }], ...(v >= 4 ? { allowAutoTopicCreation: false } : {}) }),
  },
  {
    dir: 'offsetCommit',
    versions: range(0, 5),
    kafkajs: () => ({
      groupId: 'g',
      groupGenerationId: 3,
      memberId: 'm-1',
      retentionTime: -1,
      topics: [{ topic: 'events', partitions: [{ partition: 0, offset: '100', timestamp: 1700000000000 }, { partition: 1, offset: '7', timestamp: 1700000000000, metadata: 'md' }] }],
    }),
    ours: (v) => ({
      groupId: 'g',
      ...(v >= 1 ? { generationIdOrMemberEpoch: 3, memberId: 'm-1' } : {}),
      ...(v >= 2 && v <= 4 ? { retentionTimeMs: -1n } : {}),
      topics: [
        {
          name: 'events',
          partitions: [
            { partitionIndex: 0, committedOffset: 100n, committedMetadata: null, ...(v === 1 ? { commitTimestamp: 1700000000000n } : {}) },
            { partitionIndex: 1, committedOffset: 7n, committedMetadata: 'md', ...(v === 1 ? { commitTimestamp: 1700000000000n } : {}) },
          ],
        },
      ],
    }),
  },
  {
    dir: 'offsetFetch',
    versions: [1, 2, 3, 4],
    kafkajs: () => ({ groupId: 'g', topics: [{ topic: 'events', partitions: [{ partition: 0 }, { partition: 2 }] }] }),
    ours: () => ({ groupId: 'g', topics: [{ name: 'events', partitionIndexes: [0, 2] }] }),
  },
  {
    dir: 'saslAuthenticate',
    versions: [0, 1],
    // kafkajs' SASL mechanisms hand over auth bytes already length-prefixed
    kafkajs: () => ({ authBytes: new KafkajsEncoder().writeBytes(Buffer.from('\0user\0secret')).buffer }),
    ours: () => ({ authBytes: Buffer.from('\0user\0secret') }),
  },
  {
    dir: 'saslHandshake',
    versions: [0, 1],
    kafkajs: () => ({ mechanism: 'SCRAM-SHA-256' }),
    ours: () => ({ mechanism: 'SCRAM-SHA-256' }),
  },
  {
    dir: 'syncGroup',
    versions: [0, 1, 2, 3],
    kafkajs: () => ({
      groupId: 'g',
      generationId: 4,
      memberId: 'm-1',
      groupInstanceId: null,
      groupAssignment: [{ memberId: 'm-1', memberAssignment: assignment }],
    }),
    ours: (v) => ({
      groupId: 'g',
      generationId: 4,
      memberId: 'm-1',
      ...(v >= 3 ? { groupInstanceId: null } : {}),
      assignments: [{ memberId: 'm-1', assignment }],
    }),
  },
  {
    dir: 'txnOffsetCommit',
    versions: [0, 1],
    kafkajs: () => ({
      transactionalId: 'tx',
      groupId: 'g',
      producerId: '5',
      producerEpoch: 0,
      topics: [{ topic: 'events', partitions: [{ partition: 0, offset: '11', metadata: null }] }],
    }),
    ours: () => ({
      transactionalId: 'tx',
      groupId: 'g',
      producerId: 5n,
      producerEpoch: 0,
      topics: [{ name: 'events', partitions: [{ partitionIndex: 0, committedOffset: 11n, committedMetadata: null }] }],
    }),
  },
]

async function compare(dir: string, v: number, kafkajsArgs: unknown, ours: unknown): Promise<void> {
  const req = kafkajs(dir, v)(kafkajsArgs)
  const api = getApi(req.apiKey)!
  expect(req.apiVersion).toBe(v)
  const theirs = (await req.encode()).buffer
  const w = new Writer(16)
  api.encodeRequest(w, ours, v)
  expect(w.finish().toString('hex')).toBe(theirs.toString('hex'))

  const theirFrame = (await kafkajsFrame({ correlationId: 0x1234, clientId: 'golden-client', request: req })).buffer
  const ourFrame = encodeRequestFrame({ apiKey: req.apiKey, apiVersion: v, correlationId: 0x1234, clientId: 'golden-client' }, ours)
  expect(ourFrame.toString('hex')).toBe(theirFrame.toString('hex'))

  // and what kafkajs wrote decodes to the message we built (up to fields the version lacks)
  const decoded = api.decodeRequest(new Reader(theirs), v)
  const again = new Writer(16)
  api.encodeRequest(again, decoded, v)
  expect(again.finish().equals(theirs)).toBe(true)
}

describe('requests: byte-identical to kafkajs 2.2.4', () => {
  recordsPeers(() => [{ peer: 'kafkajs', version: kafkajsVersion() }])
  for (const c of CASES) {
    for (const v of c.versions) {
      it(`${c.dir} v${v}`, async () => {
        await compare(c.dir, v, c.kafkajs(v), c.ours(v))
      })
    }
  }

  // kafkajs builds the record batch (or legacy message set) inside its produce encoder, so
  // the records are taken from its output; everything around them must match.
  const messages = [
    { key: 'k1', value: 'v1', timestamp: 1700000000000, headers: { h: 'x' } },
    { key: null, value: 'v2', timestamp: 1700000000005 },
  ]
  for (const v of range(0, 7)) {
    it(`produce v${v}`, async () => {
      const args = {
        acks: -1,
        timeout: 30000,
        transactionalId: v >= 3 ? 'tx-1' : undefined,
        producerId: '1000',
        producerEpoch: 0,
        topicData: [{ topic: 'events', partitions: [{ partition: 2, firstSequence: 0, messages }] }],
      }
      const req = kafkajs('produce', v)(args)
      const theirs = (await req.encode()).buffer
      const decoded = Produce.decodeRequest(new Reader(theirs), v)
      const records = decoded.topicData[0]!.partitionData[0]!.records!
      if (v >= 3) expect(records[16]).toBe(2) // magic of a v2 record batch
      const ours = {
        ...(v >= 3 ? { transactionalId: 'tx-1' } : {}),
        acks: -1,
        timeoutMs: 30000,
        topicData: [{ name: 'events', partitionData: [{ index: 2, records }] }],
      }
      await compare('produce', v, args, ours)
    })
  }
})

describe('consumer protocol: kafkajs AssignerProtocol bytes', () => {
  recordsPeers(() => [{ peer: 'kafkajs', version: kafkajsVersion() }])
  it('MemberMetadata v0 is ConsumerProtocolSubscription v0', () => {
    expect(decodeConsumerProtocolSubscription(subscription)).toEqual({
      version: 0,
      topics: ['topic-a', 'topic-b'],
      userData: Buffer.from('ud'),
      ownedPartitions: [],
      generationId: -1,
      rackId: null,
    })
  })

  it('MemberAssignment v0 is ConsumerProtocolAssignment v0', () => {
    expect(decodeConsumerProtocolAssignment(assignment)).toEqual({
      version: 0,
      assignedPartitions: [
        { topic: 'topic-a', partitions: [0, 2] },
        { topic: 'topic-b', partitions: [1] },
      ],
      userData: Buffer.alloc(0),
    })
  })
})
