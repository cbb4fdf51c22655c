import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { ApiKeys, ErrorCodes, ZERO_UUID, decodeRecordBatches } from '@tidelog/protocol'
import { describe, expect, it } from 'vitest'
import { type Broker, type BrokerOptions, CLEAN_SHUTDOWN_MARKER, startBroker } from '../src/index.js'
import { makeBatch } from './helpers/batches.js'
import { RawClient } from './helpers/raw-client.js'
import { tempDir } from './helpers/tmp.js'
import { connectTracked, trackOpened } from './helpers/opened.js'

const open = trackOpened()

async function start(opts: BrokerOptions = {}) {
  const b = await startBroker({ port: 0, dataDir: tempDir(), ...opts })
  open.brokers.push(b)
  return b
}

const connect = (b: Broker) => connectTracked(open, b)

const produce = (topic: string, records: Buffer, opts: { acks?: number; partition?: number } = {}) => ({
  transactionalId: null,
  acks: opts.acks ?? -1,
  timeoutMs: 1000,
  topicData: [{ name: topic, partitionData: [{ index: opts.partition ?? 0, records }] }],
})

const fetchReq = (topic: string, offset: bigint, o: { maxWaitMs?: number; minBytes?: number; maxBytes?: number; partitionMaxBytes?: number } = {}) => ({
  replicaId: -1,
  maxWaitMs: o.maxWaitMs ?? 0,
  minBytes: o.minBytes ?? 1,
  maxBytes: o.maxBytes ?? 1 << 20,
  isolationLevel: 0,
  sessionId: 0,
  sessionEpoch: -1,
  topics: [{ topic, partitions: [{ partition: 0, fetchOffset: offset, partitionMaxBytes: o.partitionMaxBytes ?? 1 << 20, logStartOffset: -1n, currentLeaderEpoch: -1 }] }],
  forgottenTopicsData: [],
  rackId: '',
})

async function createTopic(c: RawClient, name: string) {
  const r = await c.request(ApiKeys.Metadata, 12, { topics: [{ name, topicId: ZERO_UUID }], allowAutoTopicCreation: true, includeTopicAuthorizedOperations: false })
  expect(r.topics[0].errorCode).toBe(0)
  return r.topics[0]
}

describe('ApiVersions', () => {
  it('lists what the registry serves, at every version', async () => {
    const c = await connect(await start())
    for (let v = 0; v <= 4; v++) {
      const r = await c.request(ApiKeys.ApiVersions, v, v >= 3 ? { clientSoftwareName: 'raw', clientSoftwareVersion: '1.0' } : {})
      expect(r.errorCode).toBe(0)
      const byKey = new Map<number, [number, number]>(r.apiKeys.map((k: any) => [k.apiKey, [k.minVersion, k.maxVersion]]))
      expect(byKey.get(ApiKeys.Produce)).toEqual([0, 12])
      expect(byKey.get(ApiKeys.Fetch)).toEqual([4, 17])
      expect(byKey.get(ApiKeys.ListOffsets)).toEqual([1, 10])
      expect(byKey.get(ApiKeys.Metadata)).toEqual([0, 12])
      expect(byKey.get(ApiKeys.ApiVersions)).toEqual([0, 4])
    }
  })

  it('answers an unknown version with UNSUPPORTED_VERSION and the key list, on v0', async () => {
    const c = await connect(await start())
    // Header v2 (ApiVersions is flexible from v3): key, version 99, correlation 7, null client id, no tags; then a body we do not know.
    const body = Buffer.from([0, 18, 0, 99, 0, 0, 0, 7, 0xff, 0xff, 0, 1, 2, 3])
    const frame = Buffer.alloc(4 + body.length)
    frame.writeInt32BE(body.length)
    body.copy(frame, 4)
    const pending = c.expect(ApiKeys.ApiVersions, 0, 7)
    c.write(frame)
    const r = await pending
    expect(r.errorCode).toBe(ErrorCodes.UNSUPPORTED_VERSION)
    expect(r.apiKeys.find((k: any) => k.apiKey === 18)).toEqual({ apiKey: 18, minVersion: 0, maxVersion: 4 })
    // The connection stays usable.
    expect((await c.request(ApiKeys.ApiVersions, 3, { clientSoftwareName: 'raw', clientSoftwareVersion: '1' })).errorCode).toBe(0)
  })

  it('rejects malformed client software names (KIP-511)', async () => {
    const c = await connect(await start())
    const r = await c.request(ApiKeys.ApiVersions, 3, { clientSoftwareName: 'bad name!', clientSoftwareVersion: '1' })
    expect(r.errorCode).toBe(ErrorCodes.INVALID_REQUEST)
  })
})

describe('Metadata', () => {
  it('describes this broker, auto-creates valid topics, and refuses invalid or disallowed ones', async () => {
    const b = await start({ numPartitions: 3 })
    const c = await connect(b)
    const r = await c.request(ApiKeys.Metadata, 12, {
      topics: [{ name: 'auto', topicId: ZERO_UUID }, { name: 'bad name', topicId: ZERO_UUID }],
      allowAutoTopicCreation: true,
      includeTopicAuthorizedOperations: false,
    })
    expect(r.brokers).toEqual([{ nodeId: 1, host: '127.0.0.1', port: b.port, rack: null }])
    expect(r.clusterId).toBe(b.clusterId)
    expect(r.controllerId).toBe(1)
    expect(r.topics[0]).toMatchObject({ errorCode: 0, name: 'auto' })
    expect(r.topics[0].partitions.map((p: any) => [p.partitionIndex, p.leaderId, p.replicaNodes, p.isrNodes])).toEqual([
      [0, 1, [1], [1]],
      [1, 1, [1], [1]],
      [2, 1, [1], [1]],
    ])
    expect(r.topics[0].topicId).not.toBe(ZERO_UUID)
    expect(r.topics[1]).toMatchObject({ errorCode: ErrorCodes.INVALID_TOPIC_EXCEPTION, name: 'bad name' })

    const noAuto = await c.request(ApiKeys.Metadata, 12, { topics: [{ name: 'other', topicId: ZERO_UUID }], allowAutoTopicCreation: false, includeTopicAuthorizedOperations: false })
    expect(noAuto.topics[0].errorCode).toBe(ErrorCodes.UNKNOWN_TOPIC_OR_PARTITION)

    const byId = await c.request(ApiKeys.Metadata, 12, { topics: [{ name: null, topicId: r.topics[0].topicId }], allowAutoTopicCreation: false, includeTopicAuthorizedOperations: false })
    expect(byId.topics[0]).toMatchObject({ errorCode: 0, name: 'auto' })

    const all = await c.request(ApiKeys.Metadata, 1, { topics: null })
    expect(all.topics.map((t: any) => t.name)).toEqual(['auto'])
    const v0all = await c.request(ApiKeys.Metadata, 0, { topics: [] })
    expect(v0all.topics.map((t: any) => t.name)).toEqual(['auto'])
  })

  it('does not auto-create when the broker forbids it', async () => {
    const c = await connect(await start({ autoCreateTopics: false }))
    const r = await c.request(ApiKeys.Metadata, 9, { topics: [{ name: 'x' }], allowAutoTopicCreation: true, includeTopicAuthorizedOperations: false })
    expect(r.topics[0].errorCode).toBe(ErrorCodes.UNKNOWN_TOPIC_OR_PARTITION)
  })
})

describe('Produce', () => {
  it('appends and acknowledges with offsets, log start and no append time for CreateTime', async () => {
    const c = await connect(await start())
    await createTopic(c, 't')
    const r1 = await c.request(ApiKeys.Produce, 9, produce('t', makeBatch(3)))
    const r2 = await c.request(ApiKeys.Produce, 3, produce('t', makeBatch(2)))
    expect(r1.responses[0].partitionResponses[0]).toMatchObject({ index: 0, errorCode: 0, baseOffset: 0n, logAppendTimeMs: -1n, logStartOffset: 0n })
    expect(r2.responses[0].partitionResponses[0]).toMatchObject({ errorCode: 0, baseOffset: 3n })
  })

  it('answers the advertised-but-refused versions 0-2 with UNSUPPORTED_VERSION', async () => {
    const c = await connect(await start())
    await createTopic(c, 't')
    const r = await c.request(ApiKeys.Produce, 2, { acks: 1, timeoutMs: 1000, topicData: [{ name: 't', partitionData: [{ index: 0, records: makeBatch(1) }] }] })
    expect(r.responses[0].partitionResponses[0].errorCode).toBe(ErrorCodes.UNSUPPORTED_VERSION)
  })

  it('validates batches as Kafka does', async () => {
    const c = await connect(await start({ maxMessageBytes: 2000 }))
    await createTopic(c, 't')
    const code = async (records: Buffer, topic = 't', partition = 0) =>
      (await c.request(ApiKeys.Produce, 9, produce(topic, records, { partition }))).responses[0].partitionResponses[0].errorCode
    const badCrc = makeBatch(2)
    badCrc[badCrc.length - 1] ^= 1
    expect(await code(badCrc)).toBe(ErrorCodes.CORRUPT_MESSAGE)
    const offset = makeBatch(2)
    offset.writeBigInt64BE(5n, 0)
    expect(await code(offset)).toBe(ErrorCodes.INVALID_RECORD)
    expect(await code(Buffer.concat([makeBatch(1), makeBatch(1)]))).toBe(ErrorCodes.INVALID_RECORD)
    expect(await code(makeBatch(1, { valueSize: 3000 }))).toBe(ErrorCodes.MESSAGE_TOO_LARGE)
    expect(await code(makeBatch(1, { isControl: true }))).toBe(ErrorCodes.INVALID_RECORD)
    const magic1 = makeBatch(1)
    magic1[16] = 1
    expect(await code(magic1)).toBe(ErrorCodes.INVALID_RECORD)
    expect(await code(makeBatch(1).subarray(0, 40))).toBe(ErrorCodes.CORRUPT_MESSAGE)
    expect(await code(makeBatch(1), 'nope')).toBe(ErrorCodes.UNKNOWN_TOPIC_OR_PARTITION)
    expect(await code(makeBatch(1), 't', 7)).toBe(ErrorCodes.UNKNOWN_TOPIC_OR_PARTITION)
    // Nothing above was stored.
    expect(await code(makeBatch(1))).toBe(0)
    const lo = await c.request(ApiKeys.ListOffsets, 5, { replicaId: -1, isolationLevel: 0, topics: [{ name: 't', partitions: [{ partitionIndex: 0, timestamp: -1n, currentLeaderEpoch: -1 }] }] })
    expect(lo.topics[0].partitions[0].offset).toBe(1n)
  })

  it('sends nothing back for acks=0, and closes the connection when such a produce fails', async () => {
    const b = await start()
    const c = await connect(b)
    await createTopic(c, 't')
    c.fireAndForget(ApiKeys.Produce, 9, produce('t', makeBatch(2), { acks: 0 }))
    const lo = await c.request(ApiKeys.ListOffsets, 5, { replicaId: -1, isolationLevel: 0, topics: [{ name: 't', partitions: [{ partitionIndex: 0, timestamp: -1n, currentLeaderEpoch: -1 }] }] })
    expect(lo.topics[0].partitions[0].offset).toBe(2n)
    c.fireAndForget(ApiKeys.Produce, 9, produce('missing', makeBatch(2), { acks: 0 }))
    await c.closed
    expect(c.isClosed).toBe(true)
  })

  it('stamps LogAppendTime topics (and acknowledges under flush-messages=1)', async () => {
    const b = await start({ flushMessages: 1 })
    const c = await connect(b)
    const created = await c.request(ApiKeys.CreateTopics, 7, {
      topics: [{ name: 'lat', numPartitions: 1, replicationFactor: 1, assignments: [], configs: [{ name: 'message.timestamp.type', value: 'LogAppendTime' }] }],
      timeoutMs: 1000,
      validateOnly: false,
    })
    expect(created.topics[0].errorCode).toBe(0)
    const before = Date.now()
    const r = await c.request(ApiKeys.Produce, 9, produce('lat', makeBatch(2, { baseTimestamp: 1000 })))
    const p = r.responses[0].partitionResponses[0]
    expect(p.errorCode).toBe(0)
    expect(Number(p.logAppendTimeMs)).toBeGreaterThanOrEqual(before)
    const f = await c.request(ApiKeys.Fetch, 12, fetchReq('lat', 0n))
    const [batch] = decodeRecordBatches(f.responses[0].partitions[0].records)
    expect(batch!.timestampType).toBe(1)
    expect(batch!.maxTimestamp).toBe(p.logAppendTimeMs)
    expect([...batch!].map((rec) => rec.timestamp)).toEqual([p.logAppendTimeMs, p.logAppendTimeMs])
  })

  it('answers pipelined requests in order', async () => {
    const c = await connect(await start())
    await createTopic(c, 't')
    const all: Promise<any>[] = []
    for (let i = 0; i < 60; i++) {
      if (i % 3 === 0) all.push(c.request(ApiKeys.Produce, 9, produce('t', makeBatch(1))))
      else if (i % 3 === 1) all.push(c.request(ApiKeys.Fetch, 11, fetchReq('t', 0n, { maxWaitMs: i === 1 ? 300 : 0, minBytes: 1 << 20 })))
      else all.push(c.request(ApiKeys.ApiVersions, 2, {}))
    }
    const res = await Promise.all(all)
    const offsets = res.filter((_, i) => i % 3 === 0).map((r) => r.responses[0].partitionResponses[0].baseOffset)
    expect(offsets).toEqual(Array.from({ length: 20 }, (_, i) => BigInt(i)))
  })
})

describe('Fetch', () => {
  it('returns whole batches from the one holding the offset, bounded by max bytes but at least one batch', async () => {
    const c = await connect(await start())
    await createTopic(c, 't')
    const one = makeBatch(3, { valueSize: 100 })
    for (let i = 0; i < 4; i++) await c.request(ApiKeys.Produce, 9, produce('t', makeBatch(3, { valueSize: 100 })))
    const all = await c.request(ApiKeys.Fetch, 12, fetchReq('t', 4n))
    const p = all.responses[0].partitions[0]
    expect(p).toMatchObject({ errorCode: 0, highWatermark: 12n, lastStableOffset: 12n, logStartOffset: 0n })
    expect(decodeRecordBatches(p.records).map((b) => b.baseOffset)).toEqual([3n, 6n, 9n])
    const small = await c.request(ApiKeys.Fetch, 12, fetchReq('t', 0n, { maxBytes: 10, partitionMaxBytes: 10 }))
    expect(small.responses[0].partitions[0].records.length).toBe(one.length)
    const two = await c.request(ApiKeys.Fetch, 12, fetchReq('t', 0n, { partitionMaxBytes: one.length * 2 + 5 }))
    expect(two.responses[0].partitions[0].records.length).toBe(one.length * 2)
    const records = [...decodeRecordBatches(two.responses[0].partitions[0].records)[1]!]
    expect(records.map((r) => r.offset)).toEqual([3n, 4n, 5n])
  })

  it('answers OFFSET_OUT_OF_RANGE past the end and unknown topics by name and id', async () => {
    const c = await connect(await start())
    const t = await createTopic(c, 't')
    await c.request(ApiKeys.Produce, 9, produce('t', makeBatch(2)))
    const oor = await c.request(ApiKeys.Fetch, 12, fetchReq('t', 3n))
    expect(oor.responses[0].partitions[0]).toMatchObject({ errorCode: ErrorCodes.OFFSET_OUT_OF_RANGE, highWatermark: 2n, logStartOffset: 0n })
    const unknown = await c.request(ApiKeys.Fetch, 12, fetchReq('nope', 0n))
    expect(unknown.responses[0].partitions[0].errorCode).toBe(ErrorCodes.UNKNOWN_TOPIC_OR_PARTITION)
    const req13 = { ...fetchReq('', 0n), topics: [{ topicId: t.topicId, partitions: [{ partition: 0, fetchOffset: 0n, partitionMaxBytes: 1 << 20 }] }] }
    const byId = await c.request(ApiKeys.Fetch, 13, req13)
    expect(byId.responses[0].topicId).toBe(t.topicId)
    expect(byId.responses[0].partitions[0]).toMatchObject({ errorCode: 0, highWatermark: 2n })
    expect(decodeRecordBatches(byId.responses[0].partitions[0].records).length).toBe(1)
    const badId = await c.request(ApiKeys.Fetch, 16, { ...req13, topics: [{ topicId: 'AAAAAAAAAAAAAAAAAAAAAg', partitions: req13.topics[0]!.partitions }] })
    expect(badId.responses[0].partitions[0].errorCode).toBe(ErrorCodes.UNKNOWN_TOPIC_ID)
  })

  it('long-polls until an append arrives, or until max wait', async () => {
    const b = await start()
    const c = await connect(b)
    const other = await connect(b)
    await createTopic(c, 't')
    const t0 = Date.now()
    const empty = await c.request(ApiKeys.Fetch, 12, fetchReq('t', 0n, { maxWaitMs: 200 }))
    expect(Date.now() - t0).toBeGreaterThanOrEqual(180)
    expect(empty.responses[0].partitions[0].records.length).toBe(0)
    const t1 = Date.now()
    const waiting = c.request(ApiKeys.Fetch, 12, fetchReq('t', 0n, { maxWaitMs: 10_000 }))
    await new Promise((r) => setTimeout(r, 100))
    await other.request(ApiKeys.Produce, 9, produce('t', makeBatch(2)))
    const got = await waiting
    expect(Date.now() - t1).toBeLessThan(5000)
    expect(decodeRecordBatches(got.responses[0].partitions[0].records).length).toBe(1)
  })

  it('answers a long poll at shutdown and shuts down cleanly', async () => {
    const b = await start()
    const c = await connect(b)
    await createTopic(c, 't')
    const waiting = c.request(ApiKeys.Fetch, 12, fetchReq('t', 0n, { maxWaitMs: 30_000 }))
    await new Promise((r) => setTimeout(r, 50))
    const t0 = Date.now()
    await b.close()
    open.brokers.splice(open.brokers.indexOf(b), 1)
    expect((await waiting).responses[0].partitions[0].errorCode).toBe(0)
    expect(Date.now() - t0).toBeLessThan(2000)
    expect(existsSync(join(b.dataDir, CLEAN_SHUTDOWN_MARKER))).toBe(true)
  })
})

describe('ListOffsets', () => {
  it('answers earliest, latest, by timestamp and max timestamp', async () => {
    const c = await connect(await start())
    await createTopic(c, 't')
    await c.request(ApiKeys.Produce, 9, produce('t', makeBatch([{ value: 'a', timestamp: 1000 }, { value: 'b', timestamp: 3000 }])))
    await c.request(ApiKeys.Produce, 9, produce('t', makeBatch([{ value: 'c', timestamp: 2000 }, { value: 'd', timestamp: 5000 }])))
    await c.request(ApiKeys.Produce, 9, produce('t', makeBatch([{ value: 'e', timestamp: 4000 }])))
    const ask = async (timestamp: bigint, v = 8) =>
      (await c.request(ApiKeys.ListOffsets, v, { replicaId: -1, isolationLevel: 0, topics: [{ name: 't', partitions: [{ partitionIndex: 0, timestamp, currentLeaderEpoch: -1 }] }] })).topics[0].partitions[0]
    expect(await ask(-2n)).toMatchObject({ errorCode: 0, offset: 0n })
    expect(await ask(-1n)).toMatchObject({ errorCode: 0, offset: 5n })
    expect(await ask(0n)).toMatchObject({ offset: 0n, timestamp: 1000n })
    expect(await ask(1500n)).toMatchObject({ offset: 1n, timestamp: 3000n })
    expect(await ask(3500n)).toMatchObject({ offset: 3n, timestamp: 5000n })
    expect(await ask(6000n)).toMatchObject({ offset: -1n, timestamp: -1n })
    expect(await ask(-3n)).toMatchObject({ offset: 3n, timestamp: 5000n })
    expect(await ask(-2n, 1)).toMatchObject({ offset: 0n })
  })
})

describe('restart', () => {
  it('keeps topics, their ids and their data', async () => {
    const dataDir = tempDir()
    const b1 = await startBroker({ port: 0, dataDir })
    const c1 = await RawClient.connect(b1.port)
    const t = await createTopic(c1, 'kept')
    await c1.request(ApiKeys.Produce, 9, produce('kept', makeBatch(4)))
    c1.close()
    await b1.close()
    const b2 = await start({ dataDir })
    expect(b2.clusterId).toBe(b1.clusterId)
    const c2 = await connect(b2)
    const again = await createTopic(c2, 'kept')
    expect(again.topicId).toBe(t.topicId)
    const f = await c2.request(ApiKeys.Fetch, 12, fetchReq('kept', 0n))
    expect(f.responses[0].partitions[0].highWatermark).toBe(4n)
    await expect(startBroker({ port: 0, dataDir })).rejects.toThrow(/in use/)
  })
})

describe('topic configs', () => {
  it('CreateTopics refuses unknown or invalid configs with INVALID_CONFIG and creates nothing; DescribeConfigs shows what was set', async () => {
    const b = await start()
    const c = await connect(b)
    const create = (name: string, configs: { name: string; value: string }[]) =>
      c.request(ApiKeys.CreateTopics, 7, {
        topics: [{ name, numPartitions: 1, replicationFactor: 1, assignments: [], configs }],
        timeoutMs: 10_000,
        validateOnly: false,
      })
    const bad = await create('bad-config', [{ name: 'retention.ms', value: 'soon' }])
    expect(bad.topics[0].errorCode).toBe(ErrorCodes.INVALID_CONFIG)
    expect(bad.topics[0].errorMessage).toMatch(/retention\.ms/)
    const unknown = await create('unknown-config', [{ name: 'no.such.config', value: '1' }])
    expect(unknown.topics[0].errorCode).toBe(ErrorCodes.INVALID_CONFIG)
    const meta = await c.request(ApiKeys.Metadata, 12, {
      topics: [{ name: 'bad-config', topicId: ZERO_UUID }, { name: 'unknown-config', topicId: ZERO_UUID }],
      allowAutoTopicCreation: false,
      includeTopicAuthorizedOperations: false,
    })
    expect(meta.topics.map((t: { errorCode: number }) => t.errorCode)).toEqual([ErrorCodes.UNKNOWN_TOPIC_OR_PARTITION, ErrorCodes.UNKNOWN_TOPIC_OR_PARTITION])

    const good = await create('good-config', [{ name: 'retention.ms', value: '3600000' }])
    expect(good.topics[0].errorCode).toBe(ErrorCodes.NONE)
    const described = await c.request(ApiKeys.DescribeConfigs, 4, {
      resources: [{ resourceType: 2, resourceName: 'good-config', configurationKeys: null }],
      includeSynonyms: false,
      includeDocumentation: false,
    })
    const configs = new Map(described.results[0].configs.map((x: { name: string; value: string }) => [x.name, x.value]))
    expect(configs.get('retention.ms')).toBe('3600000')
    expect(configs.get('cleanup.policy')).toBe('delete')
    expect(configs.get('max.message.bytes')).toBe('1048588')
  })
})
