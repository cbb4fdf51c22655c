/**
 * AlterConfigs (33) and IncrementalAlterConfigs (44) over a real socket: Kafka 4.4's
 * error codes and messages (probed against a live Kafka 4.4.0 for the same requests),
 * the broker's dynamic configs and their precedence in DescribeConfigs, validateOnly,
 * live effect on existing topics, and persistence across a restart.
 */
import { existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { ApiKeys, ErrorCodes } from '@tidelog/protocol'
import { describe, expect, it } from 'vitest'
import { type BrokerOptions, startBroker } from '../src/index.js'
import { makeBatch } from './helpers/batches.js'
import { RawClient } from './helpers/raw-client.js'
import { tempDir } from './helpers/tmp.js'
import { startWithClient, trackOpened } from './helpers/opened.js'

const TOPIC = 2
const BROKER = 4
const [SET, DELETE, APPEND, SUBTRACT] = [0, 1, 2, 3]
const [DYNAMIC_TOPIC, DYNAMIC_BROKER, DYNAMIC_DEFAULT, STATIC, DEFAULT] = [1, 2, 3, 4, 5]

const open = trackOpened()
const start = (opts: BrokerOptions = {}) => startWithClient(open, opts)

async function createTopic(c: RawClient, name: string, configs: Record<string, string> = {}) {
  const r = await c.request(ApiKeys.CreateTopics, 7, {
    topics: [{ name, numPartitions: 1, replicationFactor: 1, assignments: [], configs: Object.entries(configs).map(([n, value]) => ({ name: n, value })) }],
    timeoutMs: 1000,
    validateOnly: false,
  })
  expect(r.topics[0].errorCode).toBe(0)
}

type Op = [name: string, op: number, value: string | null]
async function inc(c: RawClient, resourceType: number, resourceName: string, ops: Op[], validateOnly = false) {
  const r = await c.request(ApiKeys.IncrementalAlterConfigs, 1, {
    resources: [{ resourceType, resourceName, configs: ops.map(([name, configOperation, value]) => ({ name, configOperation, value })) }],
    validateOnly,
  })
  return [r.responses[0].errorCode, r.responses[0].errorMessage] as [number, string | null]
}

async function alter(c: RawClient, resourceType: number, resourceName: string, configs: Record<string, string | null>, validateOnly = false) {
  const r = await c.request(ApiKeys.AlterConfigs, 2, {
    resources: [{ resourceType, resourceName, configs: Object.entries(configs).map(([name, value]) => ({ name, value })) }],
    validateOnly,
  })
  return [r.responses[0].errorCode, r.responses[0].errorMessage] as [number, string | null]
}

async function describeConfigs(c: RawClient, resourceType: number, resourceName: string) {
  const r = await c.request(ApiKeys.DescribeConfigs, 4, { resources: [{ resourceType, resourceName, configurationKeys: null }], includeSynonyms: true, includeDocumentation: false })
  expect(r.results[0].errorCode).toBe(0)
  return new Map<string, any>(r.results[0].configs.map((x: any) => [x.name, x]))
}
const syn = (e: any) => e.synonyms.map((s: any) => [s.name, s.value, s.source])

async function produce(c: RawClient, topic: string, records: Buffer) {
  const r = await c.request(ApiKeys.Produce, 9, { transactionalId: null, acks: -1, timeoutMs: 5000, topicData: [{ name: topic, partitionData: [{ index: 0, records }] }] })
  return r.responses[0].partitionResponses[0]
}

async function earliest(c: RawClient, topic: string): Promise<bigint> {
  const r = await c.request(ApiKeys.ListOffsets, 7, { replicaId: -1, isolationLevel: 0, topics: [{ name: topic, partitions: [{ partitionIndex: 0, currentLeaderEpoch: -1, timestamp: -2n }] }] })
  return r.topics[0].partitions[0].offset
}

async function waitFor(what: string, check: () => Promise<boolean>, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 25))
  }
}

describe('IncrementalAlterConfigs on a topic', () => {
  it('SET, DELETE, APPEND and SUBTRACT change the overrides as Kafka does, and refuse with Kafka 4.4 messages', async () => {
    const { c } = await start()
    await createTopic(c, 't', { 'segment.ms': '60000' })
    expect(await inc(c, TOPIC, 't', [['retention.ms', SET, '3600000'], ['segment.ms', DELETE, null]])).toEqual([0, null])
    let d = await describeConfigs(c, TOPIC, 't')
    expect([d.get('retention.ms').value, d.get('retention.ms').configSource]).toEqual(['3600000', DYNAMIC_TOPIC])
    expect([d.get('segment.ms').value, d.get('segment.ms').configSource]).toEqual(['604800000', DEFAULT])
    // APPEND starts from Kafka's default when there is no override; SUBTRACT removes.
    expect(await inc(c, TOPIC, 't', [['follower.replication.throttled.replicas', APPEND, '0:1']])).toEqual([0, null])
    expect(await inc(c, TOPIC, 't', [['follower.replication.throttled.replicas', APPEND, '1:1,0:1']])).toEqual([0, null])
    d = await describeConfigs(c, TOPIC, 't')
    expect(d.get('follower.replication.throttled.replicas').value).toBe('0:1,1:1')
    expect(await inc(c, TOPIC, 't', [['follower.replication.throttled.replicas', SUBTRACT, '0:1']])).toEqual([0, null])
    expect((await describeConfigs(c, TOPIC, 't')).get('follower.replication.throttled.replicas').value).toBe('1:1')
    expect(await inc(c, TOPIC, 't', [['cleanup.policy', SUBTRACT, 'compact']])).toEqual([0, null])
    // Deleting what is not set (even an unknown name) is not an error, as on Kafka.
    expect(await inc(c, TOPIC, 't', [['segment.ms', DELETE, null], ['foo.bar', DELETE, null]])).toEqual([0, null])

    // Kafka 4.4.0's own answers to the same requests.
    expect(await inc(c, TOPIC, 't', [['foo.bar', SET, '1']])).toEqual([ErrorCodes.INVALID_CONFIG, 'Unknown topic config name: foo.bar'])
    expect(await inc(c, TOPIC, 't', [['retention.ms', SET, 'abc']])).toEqual([ErrorCodes.INVALID_CONFIG, 'Invalid value abc for configuration retention.ms: Not a number of type LONG'])
    expect(await inc(c, TOPIC, 'nope', [['retention.ms', SET, '1']])).toEqual([ErrorCodes.UNKNOWN_TOPIC_OR_PARTITION, "The topic 'nope' does not exist."])
    expect(await inc(c, TOPIC, 't', [['retention.ms', APPEND, '5']])).toEqual([ErrorCodes.INVALID_CONFIG, "Can't APPEND to key retention.ms because its type is not LIST."])
    expect(await inc(c, TOPIC, 't', [['retention.ms', SUBTRACT, '5']])).toEqual([ErrorCodes.INVALID_CONFIG, "Can't SUBTRACT to key retention.ms because its type is not LIST."])
    expect(await inc(c, TOPIC, 't', [['segment.ms', SET, '10000'], ['segment.ms', SET, '20000']])).toEqual([ErrorCodes.INVALID_REQUEST, 'Error due to duplicate config keys'])
    expect(await inc(c, TOPIC, 't', [['segment.ms', SET, null]])).toEqual([ErrorCodes.INVALID_REQUEST, 'Null value not supported for : segment.ms'])
    expect(await inc(c, TOPIC, '', [['segment.ms', SET, '10000']])).toEqual([ErrorCodes.INVALID_REQUEST, 'Default topic resources are not allowed.'])
    expect(await inc(c, TOPIC, 't', [['segment.ms', 7, '1']])).toEqual([ErrorCodes.INVALID_REQUEST, 'Unknown config operation 7 for segment.ms'])
    expect(await inc(c, 1, 'x', [['a', SET, 'b']])).toEqual([ErrorCodes.INVALID_REQUEST, 'Unknown resource type 1'])
    // Refused changes lose nothing: the overrides are as before.
    d = await describeConfigs(c, TOPIC, 't')
    expect([...d.values()].filter((e) => e.configSource === DYNAMIC_TOPIC).map((e) => [e.name, e.value]).sort()).toEqual([
      ['cleanup.policy', 'delete'],
      ['follower.replication.throttled.replicas', '1:1'],
      ['retention.ms', '3600000'],
    ])
  })

  it('validateOnly checks without changing anything', async () => {
    const { c } = await start()
    await createTopic(c, 'v')
    expect(await inc(c, TOPIC, 'v', [['retention.ms', SET, '1000']], true)).toEqual([0, null])
    expect(await inc(c, TOPIC, 'v', [['retention.ms', SET, '-5']], true)).toEqual([ErrorCodes.INVALID_CONFIG, 'Invalid value -5 for configuration retention.ms: Value must be at least -1'])
    expect((await describeConfigs(c, TOPIC, 'v')).get('retention.ms').configSource).toBe(DEFAULT)
  })
})

describe('AlterConfigs', () => {
  it('replaces all of a topic\'s overrides with the given set', async () => {
    const { c } = await start()
    await createTopic(c, 'a', { 'retention.ms': '1000', 'segment.ms': '60000' })
    expect(await alter(c, TOPIC, 'a', { 'segment.ms': '30000' })).toEqual([0, null])
    const d = await describeConfigs(c, TOPIC, 'a')
    expect([...d.values()].filter((e) => e.configSource === DYNAMIC_TOPIC).map((e) => [e.name, e.value])).toEqual([['segment.ms', '30000']])
    expect(await alter(c, TOPIC, 'a', { 'foo.bar': '1' })).toEqual([ErrorCodes.INVALID_CONFIG, 'Unknown topic config name: foo.bar'])
    expect(await alter(c, TOPIC, 'a', { 'segment.ms': null })).toEqual([ErrorCodes.INVALID_REQUEST, 'Null value not supported for : segment.ms'])
    expect(await alter(c, TOPIC, 'nope', { 'segment.ms': '1' })).toEqual([ErrorCodes.UNKNOWN_TOPIC_OR_PARTITION, "The topic 'nope' does not exist."])
    expect(await alter(c, BROKER, '1', { 'num.partitions': '2' })).toEqual([ErrorCodes.INVALID_REQUEST, 'Cannot update these configs dynamically: [num.partitions]'])
    expect(await alter(c, BROKER, '1', { 'log.retention.ms': '200000' })).toEqual([0, null])
    expect((await describeConfigs(c, BROKER, '1')).get('log.retention.ms').value).toBe('200000')
  })
})

describe('dynamic broker configs', () => {
  it('this node and the cluster default: Kafka 4.4\'s checks, and the sources and synonyms DescribeConfigs reports', async () => {
    const { c } = await start({ nodeId: 1, segmentBytes: 4 * 1024 * 1024 })
    await createTopic(c, 't')
    expect(await inc(c, BROKER, '2', [['log.retention.ms', SET, '1000']])).toEqual([ErrorCodes.INVALID_REQUEST, 'Unexpected broker id, expected 1, but received 2'])
    expect(await inc(c, BROKER, 'abc', [['log.retention.ms', SET, '1000']])).toEqual([ErrorCodes.INVALID_REQUEST, 'Node id must be an integer, but it is: abc'])
    expect(await inc(c, BROKER, '1', [['num.partitions', SET, '3']])).toEqual([ErrorCodes.INVALID_REQUEST, 'Cannot update these configs dynamically: [num.partitions]'])
    expect(await inc(c, BROKER, '', [['num.partitions', SET, '3']])).toEqual([ErrorCodes.INVALID_REQUEST, 'Cannot update these configs dynamically: [num.partitions]'])
    expect(await inc(c, BROKER, '1', [['log.retention.hours', SET, '10']])).toEqual([ErrorCodes.INVALID_REQUEST, 'Cannot update these configs dynamically: [log.retention.hours]'])
    expect(await inc(c, BROKER, '1', [['num.partitions', SET, '3'], ['auto.create.topics.enable', SET, 'false']])).toEqual([
      ErrorCodes.INVALID_REQUEST,
      'Cannot update these configs dynamically: [num.partitions, auto.create.topics.enable]',
    ])
    expect(await inc(c, BROKER, '1', [['log.retention.ms', SET, 'abc']])).toEqual([ErrorCodes.INVALID_REQUEST, 'Invalid value abc for configuration log.retention.ms: Not a number of type LONG'])
    expect(await inc(c, BROKER, '1', [['num.io.threads', SET, 'many']])).toEqual([ErrorCodes.INVALID_REQUEST, 'Invalid value many for configuration num.io.threads: Not a number of type INT'])
    expect(await inc(c, BROKER, '1', [['log.segment.bytes', SET, '10']])).toEqual([ErrorCodes.INVALID_REQUEST, 'Invalid value 10 for configuration log.segment.bytes: Value must be at least 1048576'])
    expect(await inc(c, BROKER, '', [['listeners', SET, 'PLAINTEXT://:9093']])).toEqual([
      ErrorCodes.INVALID_REQUEST,
      'Cannot update these configs at default cluster level, broker id must be specified: [listeners]',
    ])

    expect(await inc(c, BROKER, '', [['log.segment.bytes', SET, '2000000'], ['message.max.bytes', SET, '2000000']])).toEqual([0, null])
    expect(await inc(c, BROKER, '1', [['message.max.bytes', SET, '3000000'], ['num.io.threads', SET, '4']])).toEqual([0, null])
    // validateOnly on the broker changes nothing either.
    expect(await inc(c, BROKER, '1', [['log.flush.interval.messages', SET, '5']], true)).toEqual([0, null])

    const topic = await describeConfigs(c, TOPIC, 't')
    expect([topic.get('segment.bytes').value, topic.get('segment.bytes').configSource]).toEqual(['2000000', DYNAMIC_DEFAULT])
    expect(syn(topic.get('segment.bytes'))).toEqual([
      ['log.segment.bytes', '2000000', DYNAMIC_DEFAULT],
      ['log.segment.bytes', String(4 * 1024 * 1024), STATIC],
      ['log.segment.bytes', '1073741824', DEFAULT],
    ])
    expect([topic.get('max.message.bytes').value, topic.get('max.message.bytes').configSource]).toEqual(['3000000', DYNAMIC_BROKER])
    expect(syn(topic.get('max.message.bytes'))).toEqual([
      ['message.max.bytes', '3000000', DYNAMIC_BROKER],
      ['message.max.bytes', '2000000', DYNAMIC_DEFAULT],
      ['message.max.bytes', '1048588', DEFAULT],
    ])

    const node = await describeConfigs(c, BROKER, '1')
    expect([node.get('message.max.bytes').value, node.get('message.max.bytes').configSource, node.get('message.max.bytes').readOnly]).toEqual(['3000000', DYNAMIC_BROKER, false])
    expect([node.get('log.segment.bytes').value, node.get('log.segment.bytes').configSource]).toEqual(['2000000', DYNAMIC_DEFAULT])
    expect([node.get('num.io.threads').value, node.get('num.io.threads').configSource, node.get('num.io.threads').readOnly]).toEqual(['4', DYNAMIC_BROKER, false])
    expect([node.get('num.partitions').readOnly, node.get('node.id').readOnly, node.get('max.connections').readOnly]).toEqual([true, true, false])
    expect(node.get('log.flush.interval.messages').configSource).toBe(DEFAULT)

    const cluster = await describeConfigs(c, BROKER, '')
    expect([...cluster.values()].map((e) => [e.name, e.value, e.configSource, syn(e)])).toEqual([
      ['log.segment.bytes', '2000000', DYNAMIC_DEFAULT, [['log.segment.bytes', '2000000', DYNAMIC_DEFAULT]]],
      ['message.max.bytes', '2000000', DYNAMIC_DEFAULT, [['message.max.bytes', '2000000', DYNAMIC_DEFAULT]]],
    ])

    // A topic created now reports the same in its CreateTopics (v5+) answer.
    const created = await c.request(ApiKeys.CreateTopics, 7, { topics: [{ name: 'later', numPartitions: 1, replicationFactor: 1, assignments: [], configs: [] }], timeoutMs: 1000, validateOnly: false })
    const seg = created.topics[0].configs.find((x: any) => x.name === 'segment.bytes')
    expect([seg.value, seg.configSource]).toEqual(['2000000', DYNAMIC_DEFAULT])

    // A topic override still wins over both.
    expect(await inc(c, TOPIC, 't', [['max.message.bytes', SET, '5000']])).toEqual([0, null])
    expect((await describeConfigs(c, TOPIC, 't')).get('max.message.bytes').configSource).toBe(DYNAMIC_TOPIC)
    // DELETE falls back to the next layer.
    expect(await inc(c, BROKER, '1', [['message.max.bytes', DELETE, null]])).toEqual([0, null])
    expect((await describeConfigs(c, BROKER, '1')).get('message.max.bytes').configSource).toBe(DYNAMIC_DEFAULT)
  })
})

describe('changes take effect on live topics without a restart', () => {
  it('max.message.bytes: raised on the topic (or by the broker default), a larger batch is accepted by the next produce', async () => {
    const { c } = await start()
    await createTopic(c, 'big', { 'max.message.bytes': '2000' })
    const batch = makeBatch(1, { valueSize: 5000 })
    expect((await produce(c, 'big', batch)).errorCode).toBe(ErrorCodes.MESSAGE_TOO_LARGE)
    expect(await inc(c, TOPIC, 'big', [['max.message.bytes', SET, '10000']])).toEqual([0, null])
    expect((await produce(c, 'big', batch)).errorCode).toBe(0)

    // A topic without an override follows the broker's dynamic message.max.bytes.
    await createTopic(c, 'plain')
    expect(await inc(c, BROKER, '', [['message.max.bytes', SET, '2000']])).toEqual([0, null])
    expect((await produce(c, 'plain', batch)).errorCode).toBe(ErrorCodes.MESSAGE_TOO_LARGE)
    expect(await inc(c, BROKER, '', [['message.max.bytes', DELETE, null]])).toEqual([0, null])
    expect((await produce(c, 'plain', batch)).errorCode).toBe(0)
  })

  it('segment size and timestamp type: the next append rolls at the new size and stamps LogAppendTime', async () => {
    const { b, c } = await start()
    await createTopic(c, 'roll')
    const segments = () => readdirSync(join(b.dataDir, 'roll-0')).filter((f) => f.endsWith('.log')).length
    for (let i = 0; i < 3; i++) expect((await produce(c, 'roll', makeBatch(1, { valueSize: 200 }))).errorCode).toBe(0)
    expect(segments()).toBe(1)
    expect(await inc(c, TOPIC, 'roll', [['internal.segment.bytes', SET, '300']])).toEqual([0, null])
    for (let i = 0; i < 3; i++) expect((await produce(c, 'roll', makeBatch(1, { valueSize: 200 }))).errorCode).toBe(0)
    expect(segments()).toBeGreaterThanOrEqual(3)

    const before = await produce(c, 'roll', makeBatch(1, { baseTimestamp: 1_000 }))
    expect(before.logAppendTimeMs).toBe(-1n)
    expect(await inc(c, TOPIC, 'roll', [['message.timestamp.type', SET, 'LogAppendTime']])).toEqual([0, null])
    const after = await produce(c, 'roll', makeBatch(1, { baseTimestamp: 1_000 }))
    expect(after.errorCode).toBe(0)
    expect(after.logAppendTimeMs).toBeGreaterThan(BigInt(Date.now() - 60_000))
  })

  it('retention.ms lowered on a live topic: the next retention pass deletes the old segments', async () => {
    const { c } = await start({ retentionCheckIntervalMs: 20 })
    await createTopic(c, 'r', { 'internal.segment.bytes': '300' })
    const old = Date.now() - 60 * 60_000
    for (let i = 0; i < 6; i++) expect((await produce(c, 'r', makeBatch(1, { valueSize: 200, baseTimestamp: old }))).errorCode).toBe(0)
    // Kept under the default 7 days (several retention passes run meanwhile).
    await new Promise((r) => setTimeout(r, 200))
    expect(await earliest(c, 'r')).toBe(0n)
    expect(await inc(c, TOPIC, 'r', [['retention.ms', SET, '60000']])).toEqual([0, null])
    // Every segment but the active one goes: the earliest offset moves to the last batch.
    await waitFor('retention to delete the old segments', async () => (await earliest(c, 'r')) >= 5n)
  })

  it('the broker\'s dynamic log.retention.ms applies to topics without an override of their own', async () => {
    const { c } = await start({ retentionCheckIntervalMs: 20 })
    await createTopic(c, 'follows', { 'internal.segment.bytes': '300' })
    await createTopic(c, 'own', { 'internal.segment.bytes': '300', 'retention.ms': '-1' })
    const old = Date.now() - 60 * 60_000
    for (const t of ['follows', 'own']) for (let i = 0; i < 4; i++) await produce(c, t, makeBatch(1, { valueSize: 200, baseTimestamp: old }))
    expect(await inc(c, BROKER, '1', [['log.retention.ms', SET, '60000']])).toEqual([0, null])
    await waitFor('retention on the topic without an override', async () => (await earliest(c, 'follows')) >= 3n)
    expect(await earliest(c, 'own')).toBe(0n)
  })
})

describe('persistence', () => {
  it('topic overrides and both dynamic broker scopes survive a restart, with their sources', async () => {
    const dataDir = tempDir()
    const first = await startBroker({ port: 0, dataDir, logLevel: 'error' })
    const c1 = await RawClient.connect(first.port)
    await createTopic(c1, 'p')
    expect(await inc(c1, TOPIC, 'p', [['retention.ms', SET, '123456']])).toEqual([0, null])
    expect(await inc(c1, BROKER, '1', [['log.retention.bytes', SET, '7777777']])).toEqual([0, null])
    expect(await inc(c1, BROKER, '', [['log.roll.ms', SET, '3600000']])).toEqual([0, null])
    c1.close()
    await first.close()
    expect(existsSync(join(dataDir, 'dynamic-configs.json'))).toBe(true)

    const { c } = await start({ dataDir })
    const d = await describeConfigs(c, TOPIC, 'p')
    expect([d.get('retention.ms').value, d.get('retention.ms').configSource]).toEqual(['123456', DYNAMIC_TOPIC])
    expect([d.get('retention.bytes').value, d.get('retention.bytes').configSource]).toEqual(['7777777', DYNAMIC_BROKER])
    expect([d.get('segment.ms').value, d.get('segment.ms').configSource]).toEqual(['3600000', DYNAMIC_DEFAULT])
  })

  it('a damaged dynamic-configs.json is kept aside and the broker starts without dynamic configs; a newer layout stops startup', async () => {
    const dataDir = tempDir()
    writeFileSync(join(dataDir, 'dynamic-configs.json'), '{"version":1,"clusterDefault":{"log.ret')
    const { b, c } = await start({ dataDir })
    expect(readFileSync(join(dataDir, 'dynamic-configs.json.unreadable'), 'utf8')).toContain('log.ret')
    expect((await describeConfigs(c, BROKER, '')).size).toBe(0)
    expect(await inc(c, BROKER, '', [['log.retention.bytes', SET, '9999999']])).toEqual([0, null])
    expect(JSON.parse(readFileSync(join(dataDir, 'dynamic-configs.json'), 'utf8')).clusterDefault).toEqual({ 'log.retention.bytes': '9999999' })
    await b.close()
    open.brokers.splice(open.brokers.indexOf(b), 1)

    const newer = tempDir()
    writeFileSync(join(newer, 'dynamic-configs.json'), JSON.stringify({ version: 99, clusterDefault: {}, brokers: {} }))
    await expect(startBroker({ port: 0, dataDir: newer, logLevel: 'error' })).rejects.toThrow(/dynamic-configs\.json/)
  })
})
