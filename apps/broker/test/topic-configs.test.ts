/**
 * Topic configs over a real socket, against what Apache Kafka 4.4.0 answered for the
 * same requests (golden/kafka-4.4-topic-configs.json, captured by
 * test/interop/capture-topic-configs.ts): CreateTopics validation and messages,
 * validate_only, DescribeConfigs names, types, defaults, sources and synonyms, the
 * BROKER resource, and per-topic timestamp limits.
 */
import { readFileSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import { ApiKeys, ErrorCodes } from '@tidelog/protocol'
import { describe, expect, it } from 'vitest'
import { type BrokerOptions } from '../src/index.js'
import { makeBatch } from './helpers/batches.js'
import { RawClient } from './helpers/raw-client.js'
import { tempDir } from './helpers/tmp.js'
import { startWithClient, trackOpened } from './helpers/opened.js'

interface GoldenConfig {
  name: string
  value: string | null
  source: number
  type: number
  readOnly: boolean
  sensitive: boolean
  synonyms: { name: string; value: string | null; source: number }[]
}
interface Golden {
  kafkaVersion: string
  topicConfigs: GoldenConfig[]
  brokerConfigs: GoldenConfig[]
  probes: { configs: Record<string, string | null>; errorCode: number; errorMessage: string | null }[]
}
const golden: Golden = JSON.parse(readFileSync(join(import.meta.dirname, 'golden/kafka-4.4-topic-configs.json'), 'utf8'))

const DYNAMIC_TOPIC_CONFIG = 1
const STATIC_BROKER_CONFIG = 4
const DEFAULT_CONFIG = 5

const open = trackOpened()
const start = (opts: BrokerOptions = {}) => startWithClient(open, opts)

function create(c: RawClient, name: string, configs: Record<string, string | null>, validateOnly = false) {
  return c
    .request(ApiKeys.CreateTopics, 7, {
      topics: [{ name, numPartitions: 1, replicationFactor: 1, assignments: [], configs: Object.entries(configs).map(([n, value]) => ({ name: n, value })) }],
      timeoutMs: 1000,
      validateOnly,
    })
    .then((r) => r.topics[0])
}

async function describeTopic(c: RawClient, name: string, opts: { keys?: string[]; synonyms?: boolean; docs?: boolean; version?: number } = {}) {
  const r = await c.request(ApiKeys.DescribeConfigs, opts.version ?? 4, {
    resources: [{ resourceType: 2, resourceName: name, configurationKeys: opts.keys ?? null }],
    includeSynonyms: opts.synonyms ?? false,
    includeDocumentation: opts.docs ?? false,
  })
  return r.results[0]
}

// Values Kafka accepts that this broker refuses rather than silently not honouring.
const REFUSED: Record<string, RegExp> = {
  '{"cleanup.policy":""}': /an empty cleanup.policy is not supported by this broker/,
  '{"min.insync.replicas":"2"}': /^Invalid value 2 for configuration min.insync.replicas: this broker is a single node/,
}

describe('CreateTopics validates topic configs as Kafka 4.4 does', () => {
  it('answers every golden probe with Kafka\'s error code and message (or a stated refusal), creating nothing', async () => {
    const { c } = await start()
    expect(golden.kafkaVersion).toBe('4.4.0')
    expect(golden.probes.length).toBeGreaterThan(50)
    const refusedSeen: string[] = []
    for (const [i, p] of golden.probes.entries()) {
      const key = JSON.stringify(p.configs)
      const r = await create(c, `probe-${i}`, p.configs, true)
      const refused = REFUSED[key]
      if (refused !== undefined) {
        expect(p.errorCode, key).toBe(0) // Kafka accepts it
        expect(r.errorCode, key).toBe(ErrorCodes.INVALID_CONFIG)
        expect(r.errorMessage, key).toMatch(refused)
        refusedSeen.push(key)
        continue
      }
      expect({ key, code: r.errorCode, message: r.errorMessage }).toEqual({ key, code: p.errorCode, message: p.errorMessage })
    }
    expect(refusedSeen.sort()).toEqual(Object.keys(REFUSED).sort())
    const meta = await c.request(ApiKeys.Metadata, 12, { topics: null, allowAutoTopicCreation: false, includeTopicAuthorizedOperations: false })
    expect(meta.topics).toEqual([])
  })

  it('validate_only checks and reports the configs without creating; the same request then creates', async () => {
    const { c } = await start()
    const configs = { 'retention.ms': ' 3600000 ', 'message.timestamp.type': 'LogAppendTime', 'unclean.leader.election.enable': 'TRUE' }
    const dry = await create(c, 'dry', configs, true)
    expect(dry.errorCode).toBe(0)
    expect(dry.topicId).toBe('AAAAAAAAAAAAAAAAAAAAAA')
    const reported = new Map(dry.configs.map((x: any) => [x.name, x]))
    expect(reported.get('retention.ms')).toMatchObject({ value: '3600000', configSource: DYNAMIC_TOPIC_CONFIG })
    expect(reported.get('segment.bytes')).toMatchObject({ value: '1073741824', configSource: DEFAULT_CONFIG })
    expect((await describeTopic(c, 'dry')).errorCode).toBe(ErrorCodes.UNKNOWN_TOPIC_OR_PARTITION)
    const real = await create(c, 'dry', configs)
    expect(real.errorCode).toBe(0)
    expect(real.topicId).not.toBe('AAAAAAAAAAAAAAAAAAAAAA')
    const d = await describeTopic(c, 'dry', { keys: ['retention.ms', 'message.timestamp.type', 'unclean.leader.election.enable'] })
    expect(d.configs.map((x: any) => [x.name, x.value, x.configSource])).toEqual([
      ['message.timestamp.type', 'LogAppendTime', DYNAMIC_TOPIC_CONFIG],
      ['retention.ms', '3600000', DYNAMIC_TOPIC_CONFIG],
      ['unclean.leader.election.enable', 'TRUE', DYNAMIC_TOPIC_CONFIG],
    ])
  })

  it('accepts internal.segment.bytes (Kafka\'s testing knob) below segment.bytes\' minimum, and rolls by it', async () => {
    const dataDir = tempDir()
    const { c } = await start({ dataDir })
    expect((await create(c, 'small', { 'internal.segment.bytes': '13' })).errorMessage).toMatch(/at least 14 bytes/)
    expect((await create(c, 'small', { 'segment.bytes': '2000' })).errorMessage).toBe('Invalid value 2000 for configuration segment.bytes: Value must be at least 1048576')
    expect((await create(c, 'small', { 'internal.segment.bytes': '2000' })).errorCode).toBe(0)
    for (let i = 0; i < 6; i++) {
      const r = await c.request(ApiKeys.Produce, 9, {
        transactionalId: null,
        acks: -1,
        timeoutMs: 1000,
        topicData: [{ name: 'small', partitionData: [{ index: 0, records: makeBatch(1, { valueSize: 900 }) }] }],
      })
      expect(r.responses[0].partitionResponses[0].errorCode).toBe(0)
    }
    // About two 1 KB batches a segment.
    expect(readdirSync(join(dataDir, 'small-0')).filter((f) => f.endsWith('.log')).length).toBeGreaterThanOrEqual(3)
    // Never listed, as Kafka lists no internal config.
    expect((await describeTopic(c, 'small')).configs.map((x: any) => x.name)).not.toContain('internal.segment.bytes')
  })
})

describe('max.decompressed.message.bytes per topic', () => {
  it('caps what a compressed batch may inflate to, up to the 64 MiB this broker inflates in memory', async () => {
    const { c } = await start()
    expect((await create(c, 'huge', { 'max.decompressed.message.bytes': String(64 * 1024 * 1024 + 1) })).errorMessage).toBe(
      'Invalid value 67108865 for configuration max.decompressed.message.bytes: this broker inflates a compressed batch in memory to validate it, so at most 67108864 is accepted',
    )
    expect((await create(c, 'tight', { 'max.decompressed.message.bytes': '5000' })).errorCode).toBe(0)
    expect((await create(c, 'roomy', {})).errorCode).toBe(0)
    const produce = async (topic: string) => {
      const r = await c.request(ApiKeys.Produce, 9, {
        transactionalId: null,
        acks: -1,
        timeoutMs: 1000,
        topicData: [{ name: topic, partitionData: [{ index: 0, records: makeBatch(10, { valueSize: 1000, compression: 1 }) }] }],
      })
      return r.responses[0].partitionResponses[0].errorCode
    }
    expect(await produce('tight')).toBe(ErrorCodes.MESSAGE_TOO_LARGE)
    expect(await produce('roomy')).toBe(0)
  })
})

describe('DescribeConfigs of a topic', () => {
  it('lists exactly Kafka 4.4\'s topic config names, types and defaults', async () => {
    const { c } = await start()
    await create(c, 't', {})
    const d = await describeTopic(c, 't', { synonyms: true, docs: true })
    expect(d.errorCode).toBe(0)
    expect(d.configs.map((x: any) => x.name)).toEqual(golden.topicConfigs.map((g) => g.name))
    // This broker's defaults that differ from Kafka 4.4's, on purpose (see the broker README).
    const ownDefaults: Record<string, string> = {
      'message.timestamp.after.max.ms': '9223372036854775807', // the broker keeps Kafka 3.9's default
      'max.decompressed.message.bytes': String(64 * 1024 * 1024), // the codec's decompression cap
      'min.insync.replicas': '1',
    }
    for (const [i, g] of golden.topicConfigs.entries()) {
      const ours = d.configs[i]
      expect({ name: g.name, type: ours.configType, readOnly: ours.readOnly, sensitive: ours.isSensitive }).toEqual({ name: g.name, type: g.type, readOnly: g.readOnly, sensitive: g.sensitive })
      expect(ours.value, g.name).toBe(ownDefaults[g.name] ?? g.value)
      expect(ours.configSource, g.name).toBe(DEFAULT_CONFIG)
      expect(ours.documentation, g.name).toMatch(/\S/)
      // The broker-level synonym names are Kafka's (min.insync.replicas: Kafka 4.4 sets it cluster-wide, we do not).
      if (g.name !== 'min.insync.replicas') expect(ours.synonyms.map((s: any) => [s.name, s.source]), g.name).toEqual(g.synonyms.map((s) => [s.name, s.source]))
    }
  })

  it('reports sources and synonyms in precedence order: topic override, broker flag, default', async () => {
    const { c } = await start({ retentionMs: 3_600_000, segmentBytes: 50 * 1024 * 1024, messageTimestampBeforeMaxMs: 60_000 })
    await create(c, 't', { 'segment.bytes': '2097152', 'cleanup.policy': 'delete', 'flush.ms': '1000' })
    const d = await describeTopic(c, 't', { synonyms: true, keys: ['segment.bytes', 'retention.ms', 'cleanup.policy', 'message.timestamp.before.max.ms', 'flush.ms', 'retention.bytes', 'remote.storage.enable'] })
    const by = new Map(d.configs.map((x: any) => [x.name, { value: x.value, source: x.configSource, synonyms: x.synonyms.map((s: any) => [s.name, s.value, s.source]) }]))
    expect(by.get('segment.bytes')).toEqual({
      value: '2097152',
      source: DYNAMIC_TOPIC_CONFIG,
      synonyms: [['segment.bytes', '2097152', DYNAMIC_TOPIC_CONFIG], ['log.segment.bytes', '52428800', STATIC_BROKER_CONFIG], ['log.segment.bytes', '1073741824', DEFAULT_CONFIG]],
    })
    // Kafka leaves log.retention.ms unset by default (log.retention.hours), so no default synonym.
    expect(by.get('retention.ms')).toEqual({ value: '3600000', source: STATIC_BROKER_CONFIG, synonyms: [['log.retention.ms', '3600000', STATIC_BROKER_CONFIG], ['log.retention.hours', '168', DEFAULT_CONFIG]] })
    expect(by.get('message.timestamp.before.max.ms')).toEqual({
      value: '60000',
      source: STATIC_BROKER_CONFIG,
      synonyms: [['log.message.timestamp.before.max.ms', '60000', STATIC_BROKER_CONFIG], ['log.message.timestamp.before.max.ms', '9223372036854775807', DEFAULT_CONFIG]],
    })
    expect(by.get('cleanup.policy')).toEqual({ value: 'delete', source: DYNAMIC_TOPIC_CONFIG, synonyms: [['cleanup.policy', 'delete', DYNAMIC_TOPIC_CONFIG], ['log.cleanup.policy', 'delete', DEFAULT_CONFIG]] })
    expect(by.get('flush.ms')).toEqual({ value: '1000', source: DYNAMIC_TOPIC_CONFIG, synonyms: [['flush.ms', '1000', DYNAMIC_TOPIC_CONFIG]] })
    expect(by.get('retention.bytes')).toEqual({ value: '-1', source: DEFAULT_CONFIG, synonyms: [['log.retention.bytes', '-1', DEFAULT_CONFIG]] })
    expect(by.get('remote.storage.enable')).toEqual({ value: 'false', source: DEFAULT_CONFIG, synonyms: [] })
    expect(d.configs).toHaveLength(7)
  })

  it('leaves synonyms and documentation out unless asked, and the type out before v3', async () => {
    const { c } = await start()
    await create(c, 't', { 'retention.ms': '1000' })
    const plain = await describeTopic(c, 't', { keys: ['retention.ms'] })
    expect(plain.configs[0]).toMatchObject({ value: '1000', synonyms: [], documentation: null, configType: 5 })
    const v2 = await describeTopic(c, 't', { keys: ['retention.ms'], version: 2 })
    expect(v2.configs[0].configType).toBe(0) // not on the wire before v3: the codec's default
    expect(v2.configs[0].configSource).toBe(DYNAMIC_TOPIC_CONFIG)
  })
})

describe('DescribeConfigs of the broker', () => {
  it('reports the broker\'s settings by Kafka\'s names, with STATIC_BROKER_CONFIG for what was set', async () => {
    const { c } = await start({ nodeId: 7, retentionMs: 1000, maxConnections: 50, flushMessages: 1, autoCreateTopics: false, connectionsMaxReauthMs: 5000 })
    const r = await c.request(ApiKeys.DescribeConfigs, 4, {
      resources: [{ resourceType: 4, resourceName: '7', configurationKeys: null }],
      includeSynonyms: true,
      includeDocumentation: false,
    })
    const res = r.results[0]
    expect(res.errorCode).toBe(0)
    const by = new Map<string, any>(res.configs.map((x: any) => [x.name, x]))
    const expected: Record<string, [string, number]> = {
      'node.id': ['7', STATIC_BROKER_CONFIG],
      'log.retention.ms': ['1000', STATIC_BROKER_CONFIG],
      'max.connections': ['50', STATIC_BROKER_CONFIG],
      'log.flush.interval.messages': ['1', STATIC_BROKER_CONFIG],
      'auto.create.topics.enable': ['false', STATIC_BROKER_CONFIG],
      // What librdkafka reads to learn the KIP-368 session lifetime (its test 0142).
      'connections.max.reauth.ms': ['5000', STATIC_BROKER_CONFIG],
      'log.segment.bytes': ['1073741824', DEFAULT_CONFIG],
      'message.max.bytes': ['1048588', DEFAULT_CONFIG],
      'socket.request.max.bytes': ['104857600', DEFAULT_CONFIG],
      'fetch.max.bytes': ['57671680', DEFAULT_CONFIG],
      'max.connections.per.ip': ['2147483647', DEFAULT_CONFIG],
      'connections.max.idle.ms': ['600000', DEFAULT_CONFIG],
      'queued.max.request.bytes': [String(256 * 1024 * 1024), DEFAULT_CONFIG],
      'producer.id.expiration.ms': ['86400000', DEFAULT_CONFIG],
      'log.message.timestamp.before.max.ms': ['9223372036854775807', DEFAULT_CONFIG],
      'log.message.timestamp.after.max.ms': ['9223372036854775807', DEFAULT_CONFIG],
      'num.partitions': ['1', DEFAULT_CONFIG],
      'log.flush.interval.ms': ['9223372036854775807', DEFAULT_CONFIG],
      'log.cleanup.policy': ['delete', DEFAULT_CONFIG],
    }
    for (const [name, [value, source]] of Object.entries(expected)) expect([name, by.get(name)?.value, by.get(name)?.configSource]).toEqual([name, value, source])
    // Kafka's log.retention.ms has no default of its own: it derives from log.retention.hours, listed last.
    expect(by.get('log.retention.ms').synonyms.map((s: any) => [s.name, s.value, s.source])).toEqual([
      ['log.retention.ms', '1000', STATIC_BROKER_CONFIG],
      ['log.retention.hours', '168', DEFAULT_CONFIG],
    ])
    // Types as Kafka 4.4 reports them for the names both list.
    for (const g of golden.brokerConfigs) {
      if (by.has(g.name)) expect([g.name, by.get(g.name).configType]).toEqual([g.name, g.type])
    }
    const goldenNames = new Set(golden.brokerConfigs.map((g) => g.name))
    expect([...by.keys()].filter((n) => !goldenNames.has(n)).sort()).toEqual(['log.remote.copy.lag.bytes', 'log.remote.copy.lag.ms', 'max.decompressed.message.bytes'])
  })
})

describe('DescribeConfigs of the cluster-wide broker default', () => {
  it('lists only dynamic broker defaults, which this broker has none of (Kafka 4.4 lists its dynamic ones)', async () => {
    const { c } = await start({ retentionMs: 1000 })
    const r = await c.request(ApiKeys.DescribeConfigs, 4, { resources: [{ resourceType: 4, resourceName: '', configurationKeys: null }], includeSynonyms: true, includeDocumentation: false })
    const g = (golden as unknown as { clusterDefaultBrokerConfigs: { errorCode: number; configs: GoldenConfig[] } }).clusterDefaultBrokerConfigs
    expect(g.errorCode).toBe(0)
    expect(g.configs.every((x) => x.source === 3)).toBe(true) // DYNAMIC_DEFAULT_BROKER_CONFIG only
    expect(r.results[0]).toMatchObject({ errorCode: 0, configs: [] })
  })
})

describe('per-topic timestamp limits', () => {
  it('message.timestamp.before/after.max.ms on a topic override the broker-wide values', async () => {
    const { c } = await start({ messageTimestampBeforeMaxMs: 60_000 })
    expect((await create(c, 'strict', { 'message.timestamp.after.max.ms': '1000' })).errorCode).toBe(0)
    expect((await create(c, 'lenient', { 'message.timestamp.before.max.ms': '86400000' })).errorCode).toBe(0)
    expect((await create(c, 'plain', {})).errorCode).toBe(0)
    const now = Date.now()
    const produce = async (topic: string, timestamp: number) => {
      const r = await c.request(ApiKeys.Produce, 9, {
        transactionalId: null,
        acks: -1,
        timeoutMs: 1000,
        topicData: [{ name: topic, partitionData: [{ index: 0, records: makeBatch([{ value: 'x', timestamp }]) }] }],
      })
      return r.responses[0].partitionResponses[0].errorCode
    }
    const hourAgo = now - 3_600_000
    const minuteAhead = now + 60_000
    expect(await produce('plain', hourAgo)).toBe(ErrorCodes.INVALID_TIMESTAMP) // broker-wide 60 s
    expect(await produce('lenient', hourAgo)).toBe(0) // topic allows a day
    expect(await produce('strict', hourAgo)).toBe(ErrorCodes.INVALID_TIMESTAMP) // inherits the broker's before
    expect(await produce('plain', minuteAhead)).toBe(0) // broker-wide after: unlimited
    expect(await produce('strict', minuteAhead)).toBe(ErrorCodes.INVALID_TIMESTAMP) // topic allows 1 s ahead
    expect(await produce('strict', now)).toBe(0)
  })
})
