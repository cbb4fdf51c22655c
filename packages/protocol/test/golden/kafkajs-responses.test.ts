/**
 * Real broker responses captured by the kafkajs project (kafkajs-response-fixtures.json, see
 * its "source" and "note"): each decodes with our decoder to its last byte and re-encodes to
 * the same bytes, and key fields agree with what kafkajs' own decoders read from them.
 */
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { describe, expect, it } from 'vitest'
import {
  apis,
  decodeConsumerProtocolAssignment,
  decodeConsumerProtocolSubscription,
  DecodeError,
  Reader,
  Writer,
  type ApiDefinition,
  type ApiVersionsResponse,
  type DescribeGroupsResponse,
  type FetchResponse,
  type JoinGroupResponse,
  type MetadataResponse,
  type ProduceResponse,
  type SyncGroupResponse,
} from '@tidelog/protocol'

const require = createRequire(import.meta.url)
const doc = JSON.parse(readFileSync(new URL('./kafkajs-response-fixtures.json', import.meta.url), 'utf8')) as {
  fixtures: Record<string, string>
}

const byDir = new Map<string, ApiDefinition<unknown, unknown>>()
for (const api of apis.values()) byDir.set(api.name[0]!.toLowerCase() + api.name.slice(1), api)

/** kafkajs names fixtures v<N>_response*, or *_v<N>. */
function locate(key: string): { api: ApiDefinition<unknown, unknown>; version: number; bytes: Buffer } {
  const [dir, name] = key.split('/') as [string, string]
  const m = /^v(\d+)_/.exec(name) ?? /_v(\d+)$/.exec(name)
  return { api: byDir.get(dir)!, version: m === null ? 0 : Number(m[1]), bytes: Buffer.from(doc.fixtures[key]!, 'hex') }
}

function decode<T>(key: string): T {
  const { api, version, bytes } = locate(key)
  return api.decodeResponse(new Reader(bytes), version) as T
}

async function theirs(key: string): Promise<Record<string, unknown>> {
  const [dir] = key.split('/') as [string]
  const { version, bytes } = locate(key)
  const proto = require(`kafkajs/src/protocol/requests/${dir}/index.js`) as {
    protocol: (a: { version: number }) => (args: unknown) => { response: { decode(b: Buffer): Promise<Record<string, unknown>> } }
  }
  const args = { topics: [], groupProtocols: [], groupIds: [], resources: [], groupAssignment: [] }
  return proto.protocol({ version })(args).response.decode(bytes)
}

// A v1 answer without its throttle time: kafkajs tolerates it (kafkajs#491); Kafka's own
// generated decoder does not, and neither do we.
const MALFORMED = new Set(['apiVersions/v1_response_missing_throttle_time'])

describe('kafkajs fixtures: decode to the last byte, re-encode byte for byte', () => {
  for (const key of Object.keys(doc.fixtures).sort()) {
    const { api, version, bytes } = locate(key)
    it(`${api.name} v${version} response (${key})`, () => {
      const r = new Reader(bytes)
      if (MALFORMED.has(key)) {
        expect(() => api.decodeResponse(r, version)).toThrow(DecodeError)
        return
      }
      const msg = api.decodeResponse(r, version)
      expect(r.remaining).toBe(0)
      const w = new Writer(16)
      api.encodeResponse(w, msg, version)
      expect(w.finish().toString('hex')).toBe(bytes.toString('hex'))
    })
  }
})

describe('kafkajs fixtures: fields agree with kafkajs decoders', () => {
  it('Metadata v5', async () => {
    const key = 'metadata/v5_response'
    const ours = decode<MetadataResponse>(key)
    const t = (await theirs(key)) as {
      brokers: { nodeId: number; host: string; port: number; rack: string | null }[]
      clusterId: string
      controllerId: number
      topicMetadata: { topic: string; partitionMetadata: { partitionId: number; leader: number; replicas: number[]; isr: number[] }[] }[]
    }
    expect(ours.brokers.map((b) => [b.nodeId, b.host, b.port, b.rack])).toEqual(t.brokers.map((b) => [b.nodeId, b.host, b.port, b.rack]))
    expect(ours.clusterId).toBe('wyOEk0m7Tn-08oGZjtVgEg')
    expect(ours.clusterId).toBe(t.clusterId)
    expect(ours.controllerId).toBe(t.controllerId)
    expect(ours.topics.map((x) => x.name)).toEqual(t.topicMetadata.map((x) => x.topic))
    expect(ours.topics[0]!.partitions.map((p) => [p.partitionIndex, p.leaderId, p.replicaNodes, p.isrNodes])).toEqual(
      t.topicMetadata[0]!.partitionMetadata.map((p) => [p.partitionId, p.leader, p.replicas, p.isr]),
    )
  })

  it('ApiVersions v1', async () => {
    const key = 'apiVersions/v1_response'
    const ours = decode<ApiVersionsResponse>(key)
    const t = (await theirs(key)) as { apiVersions: { apiKey: number; minVersion: number; maxVersion: number }[] }
    expect(ours.apiKeys).toEqual(t.apiVersions)
    expect(ours.apiKeys.find((k) => k.apiKey === 0)).toBeDefined()
  })

  it('Fetch v4 (record batch bytes handed over untouched)', async () => {
    const key = 'fetch/v4_response'
    const ours = decode<FetchResponse>(key)
    const t = (await theirs(key)) as {
      responses: { topicName: string; partitions: { partition: number; highWatermark: string; lastStableOffset: string }[] }[]
    }
    expect(ours.responses.map((x) => x.topic)).toEqual(t.responses.map((x) => x.topicName))
    const p = ours.responses[0]!.partitions[0]!
    const q = t.responses[0]!.partitions[0]!
    expect([p.partitionIndex, String(p.highWatermark), String(p.lastStableOffset)]).toEqual([q.partition, q.highWatermark, q.lastStableOffset])
    expect(p.records![16]).toBe(2) // magic of a v2 record batch
  })

  it('Produce v7', async () => {
    const key = 'produce/v7_response'
    const ours = decode<ProduceResponse>(key)
    const t = (await theirs(key)) as {
      topics: { topicName: string; partitions: { partition: number; errorCode: number; baseOffset: string; logStartOffset: string }[] }[]
    }
    expect(ours.responses.map((x) => x.name)).toEqual(t.topics.map((x) => x.topicName))
    const p = ours.responses[0]!.partitionResponses[0]!
    const q = t.topics[0]!.partitions[0]!
    expect([p.index, p.errorCode, String(p.baseOffset), String(p.logStartOffset)]).toEqual([q.partition, q.errorCode, q.baseOffset, q.logStartOffset])
  })

  it('JoinGroup v5: member metadata is a consumer protocol subscription', async () => {
    const key = 'joinGroup/v5_response'
    const ours = decode<JoinGroupResponse>(key)
    const t = (await theirs(key)) as { generationId: number; leaderId: string; memberId: string; members: { memberId: string; memberMetadata: Buffer }[] }
    expect([ours.generationId, ours.leader, ours.memberId]).toEqual([t.generationId, t.leaderId, t.memberId])
    expect(ours.members.map((m) => m.memberId)).toEqual(t.members.map((m) => m.memberId))
    for (const m of ours.members) {
      const sub = decodeConsumerProtocolSubscription(m.metadata)
      expect(sub.topics.length).toBeGreaterThan(0)
    }
  })

  it('DescribeGroups v1: members carry subscriptions and assignments', async () => {
    const key = 'describeGroups/v1_response'
    const ours = decode<DescribeGroupsResponse>(key)
    const t = (await theirs(key)) as { groups: { groupId: string; state: string; protocol: string; members: { memberId: string; clientHost: string }[] }[] }
    expect(ours.groups.map((g) => [g.groupId, g.groupState, g.protocolData])).toEqual(t.groups.map((g) => [g.groupId, g.state, g.protocol]))
    const m = ours.groups[0]!.members[0]!
    expect(m.clientHost).toBe(t.groups[0]!.members[0]!.clientHost)
    expect(decodeConsumerProtocolSubscription(m.memberMetadata).version).toBeGreaterThanOrEqual(0)
    expect(decodeConsumerProtocolAssignment(m.memberAssignment).assignedPartitions.length).toBeGreaterThan(0)
  })

  it('SyncGroup v3: the assignment is a consumer protocol assignment', async () => {
    const key = 'syncGroup/v3_response'
    const ours = decode<SyncGroupResponse>(key)
    const t = (await theirs(key)) as { errorCode: number; memberAssignment: Buffer }
    expect(ours.errorCode).toBe(t.errorCode)
    expect(Buffer.from(ours.assignment).equals(t.memberAssignment)).toBe(true)
    const { MemberAssignment } = require('kafkajs/src/consumer/assignerProtocol.js') as {
      MemberAssignment: { decode(b: Buffer): { version: number; assignment: Record<string, number[]> } }
    }
    const a = decodeConsumerProtocolAssignment(ours.assignment)
    const k = MemberAssignment.decode(t.memberAssignment)
    expect(a.version).toBe(k.version)
    expect(Object.fromEntries(a.assignedPartitions.map((p) => [p.topic, p.partitions]))).toEqual(k.assignment)
  })
})
