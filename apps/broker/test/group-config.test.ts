/**
 * Group configs (resource type GROUP = 32, KIP-848) over a real socket, as Kafka 4.4 answers:
 * every code and message below was probed against a live Kafka 4.4.0 with the same requests.
 * DescribeConfigs (sources DEFAULT_CONFIG / DYNAMIC_GROUP_CONFIG, the broker-level synonyms),
 * IncrementalAlterConfigs and AlterConfigs with GroupConfig's checks and the broker's bounds,
 * validateOnly, persistence across a restart, and our Admin client end to end.
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { ApiKeys } from '@tidelog/protocol'
import { Admin } from '@tidelog/client'
import { describe, expect, it } from 'vitest'
import { type BrokerOptions, startBroker } from '../src/index.js'
import { RawClient } from './helpers/raw-client.js'
import { tempDir } from './helpers/tmp.js'
import { startWithClient, trackOpened } from './helpers/opened.js'

const GROUP = 32
const [SET, DELETE, APPEND, SUBTRACT] = [0, 1, 2, 3]
const [DEFAULT, DYNAMIC_GROUP] = [5, 8]
const [INVALID_CONFIG, INVALID_REQUEST] = [40, 42]

const open = trackOpened()
const start = (opts: BrokerOptions = {}) => startWithClient(open, opts)

type Op = [name: string, op: number, value: string | null]
async function inc(c: RawClient, group: string, ops: Op[], validateOnly = false) {
  const r = await c.request(ApiKeys.IncrementalAlterConfigs, 1, {
    resources: [{ resourceType: GROUP, resourceName: group, configs: ops.map(([name, configOperation, value]) => ({ name, configOperation, value })) }],
    validateOnly,
  })
  return [r.responses[0].errorCode, r.responses[0].errorMessage] as [number, string | null]
}

async function alter(c: RawClient, group: string, configs: Record<string, string>, validateOnly = false) {
  const r = await c.request(ApiKeys.AlterConfigs, 2, {
    resources: [{ resourceType: GROUP, resourceName: group, configs: Object.entries(configs).map(([name, value]) => ({ name, value })) }],
    validateOnly,
  })
  return [r.responses[0].errorCode, r.responses[0].errorMessage] as [number, string | null]
}

async function describeGroup(c: RawClient, group: string, keys: string[] | null = null) {
  const r = await c.request(ApiKeys.DescribeConfigs, 4, { resources: [{ resourceType: GROUP, resourceName: group, configurationKeys: keys }], includeSynonyms: true, includeDocumentation: true })
  return r.results[0]
}
const entries = async (c: RawClient, group: string) => new Map<string, any>((await describeGroup(c, group)).configs.map((x: any) => [x.name, x]))
const syn = (e: any) => e.synonyms.map((s: any) => [s.name, s.value, s.source])

// The public group configs Kafka 4.4 lists for any group (its internal ones only once set).
const PUBLIC = [
  'consumer.assignment.interval.ms', 'consumer.heartbeat.interval.ms', 'consumer.session.timeout.ms',
  'errors.deadletterqueue.copy.record.enable', 'errors.deadletterqueue.topic.name',
  'share.assignment.interval.ms', 'share.auto.offset.reset', 'share.delivery.count.limit', 'share.heartbeat.interval.ms',
  'share.isolation.level', 'share.partition.max.record.locks', 'share.record.lock.duration.ms', 'share.renew.acknowledge.enable',
  'share.session.timeout.ms', 'streams.assignment.interval.ms', 'streams.assignor.name', 'streams.heartbeat.interval.ms',
  'streams.initial.rebalance.delay.ms', 'streams.num.standby.replicas', 'streams.rack.aware.assignment.tags', 'streams.session.timeout.ms',
]

describe('DescribeConfigs of a group', () => {
  it('a group never configured (existing or not) has Kafka 4.4\'s defaults, with the broker-level synonyms', async () => {
    const { c } = await start()
    const r = await describeGroup(c, 'no-such-group')
    expect(r.errorCode).toBe(0)
    expect(r.configs.map((x: any) => x.name)).toEqual(PUBLIC)
    const d = new Map<string, any>(r.configs.map((x: any) => [x.name, x]))
    const session = d.get('consumer.session.timeout.ms')
    expect([session.value, session.configSource, session.readOnly, session.isSensitive, session.configType]).toEqual(['45000', DEFAULT, false, false, 3])
    expect(syn(session)).toEqual([['group.consumer.session.timeout.ms', '45000', DEFAULT]])
    expect(session.documentation).toContain('classic group protocol only')
    expect(syn(d.get('streams.assignor.name'))).toEqual([['group.streams.assignors', 'sticky', DEFAULT]])
    expect(syn(d.get('share.auto.offset.reset'))).toEqual([['share.auto.offset.reset', 'latest', DEFAULT]])
    expect([d.get('streams.rack.aware.assignment.tags').value, d.get('streams.rack.aware.assignment.tags').configType]).toEqual(['', 7])
    // Only the keys asked for; a name Kafka does not know is simply not listed.
    expect((await describeGroup(c, 'g', ['share.delivery.count.limit', 'nope'])).configs.map((x: any) => [x.name, x.value])).toEqual([['share.delivery.count.limit', '5']])
    const empty = await describeGroup(c, '')
    expect([empty.errorCode, empty.errorMessage]).toEqual([INVALID_REQUEST, 'Group name must not be empty'])
  })
})

describe('IncrementalAlterConfigs and AlterConfigs of a group', () => {
  it('SET and DELETE change what DescribeConfigs reports: DYNAMIC_GROUP_CONFIG first, then the default', async () => {
    const { c } = await start()
    expect(await inc(c, 'g1', [['consumer.session.timeout.ms', SET, '50000'], ['share.auto.offset.reset', SET, 'by_duration:PT1H'], ['consumer.assignor.offload.enable', SET, 'false']])).toEqual([0, null])
    let d = await entries(c, 'g1')
    expect([d.get('consumer.session.timeout.ms').value, d.get('consumer.session.timeout.ms').configSource]).toEqual(['50000', DYNAMIC_GROUP])
    expect(syn(d.get('consumer.session.timeout.ms'))).toEqual([['consumer.session.timeout.ms', '50000', DYNAMIC_GROUP], ['group.consumer.session.timeout.ms', '45000', DEFAULT]])
    expect(syn(d.get('share.auto.offset.reset'))).toEqual([['share.auto.offset.reset', 'by_duration:PT1H', DYNAMIC_GROUP], ['share.auto.offset.reset', 'latest', DEFAULT]])
    // An internal config, once set, is listed too.
    expect(syn(d.get('consumer.assignor.offload.enable'))).toEqual([['consumer.assignor.offload.enable', 'false', DYNAMIC_GROUP], ['group.consumer.assignor.offload.enable', 'true', DEFAULT]])
    // Another group is unaffected.
    expect((await entries(c, 'g2')).get('consumer.session.timeout.ms').value).toBe('45000')

    expect(await inc(c, 'g1', [['consumer.session.timeout.ms', DELETE, null], ['never.set', DELETE, null]])).toEqual([0, null])
    d = await entries(c, 'g1')
    expect([d.get('consumer.session.timeout.ms').value, d.get('consumer.session.timeout.ms').configSource]).toEqual(['45000', DEFAULT])
    expect(d.get('share.auto.offset.reset').value).toBe('by_duration:PT1H')

    // AlterConfigs replaces the whole set.
    expect(await alter(c, 'g1', { 'consumer.session.timeout.ms': '55000' })).toEqual([0, null])
    d = await entries(c, 'g1')
    expect(d.get('consumer.session.timeout.ms').value).toBe('55000')
    expect([d.get('share.auto.offset.reset').value, d.has('consumer.assignor.offload.enable')]).toEqual(['latest', false])
  })

  it('refuses as Kafka 4.4 does, and a refused change leaves the group as it was', async () => {
    const { c } = await start()
    expect(await inc(c, 'g', [['share.session.timeout.ms', SET, '50000']])).toEqual([0, null])
    const cases: [Op[], number, string][] = [
      [[['nope.config', SET, '1']], INVALID_CONFIG, 'Unknown group config name: nope.config'],
      [[['consumer.session.timeout.ms', SET, 'abc']], INVALID_CONFIG, 'Invalid value abc for configuration consumer.session.timeout.ms: Not a number of type INT'],
      [[['consumer.session.timeout.ms', SET, '0']], INVALID_CONFIG, 'Invalid value 0 for configuration consumer.session.timeout.ms: Value must be at least 1'],
      [[['consumer.session.timeout.ms', SET, '1000']], INVALID_CONFIG, 'consumer.session.timeout.ms must be in the range 45000 to 60000 inclusive.'],
      [[['consumer.heartbeat.interval.ms', SET, '20000']], INVALID_CONFIG, 'consumer.heartbeat.interval.ms must be in the range 5000 to 15000 inclusive.'],
      [[['consumer.assignment.interval.ms', SET, '20000']], INVALID_CONFIG, 'consumer.assignment.interval.ms must be in the range 0 to 15000 inclusive.'],
      [[['share.record.lock.duration.ms', SET, '500']], INVALID_CONFIG, 'Invalid value 500 for configuration share.record.lock.duration.ms: Value must be at least 1000'],
      [[['share.record.lock.duration.ms', SET, '1000']], INVALID_CONFIG, 'share.record.lock.duration.ms must be in the range 15000 to 60000 inclusive.'],
      [[['share.delivery.count.limit', SET, '100']], INVALID_CONFIG, 'share.delivery.count.limit must be in the range 2 to 10 inclusive.'],
      [[['share.partition.max.record.locks', SET, '100000']], INVALID_CONFIG, 'share.partition.max.record.locks must be in the range 100 to 4000 inclusive.'],
      [[['share.auto.offset.reset', SET, 'by_duration:-PT1H']], INVALID_CONFIG, "Invalid value by_duration:-PT1H for configuration share.auto.offset.reset: Invalid value `by_duration:-PT1H` for configuration share.auto.offset.reset. The value must be either 'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS>'."],
      [[['share.auto.offset.reset', SET, 'foo']], INVALID_CONFIG, "Invalid value foo for configuration share.auto.offset.reset: Invalid value `foo` for configuration share.auto.offset.reset. The value must be either 'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS>'."],
      [[['share.isolation.level', SET, 'x']], INVALID_CONFIG, 'Invalid value x for configuration share.isolation.level: String must be one of: read_committed, read_uncommitted'],
      [[['share.renew.acknowledge.enable', SET, 'maybe']], INVALID_CONFIG, 'Invalid value maybe for configuration share.renew.acknowledge.enable: Expected value to be either true or false'],
      [[['streams.num.standby.replicas', SET, '5']], INVALID_CONFIG, 'streams.num.standby.replicas must be less than or equal to 2'],
      [[['streams.num.warmup.replicas', SET, '50']], INVALID_CONFIG, 'streams.num.warmup.replicas must be less than or equal to 20'],
      [[['streams.task.offset.interval.ms', SET, '100']], INVALID_CONFIG, 'streams.task.offset.interval.ms must be greater than or equal to 15000'],
      [[['streams.assignor.name', SET, 'foo']], INVALID_CONFIG, "streams.assignor.name 'foo' is not a registered task assignor. Registered assignors are: [sticky]."],
      [[['streams.rack.aware.assignment.tags', SET, 'a,a']], INVALID_CONFIG, 'streams.rack.aware.assignment.tags must not contain duplicate tag keys.'],
      [[['streams.rack.aware.assignment.tags', APPEND, 'c']], INVALID_CONFIG, "Can't APPEND to key streams.rack.aware.assignment.tags because its type is not LIST."],
      [[['consumer.session.timeout.ms', SUBTRACT, '1']], INVALID_CONFIG, "Can't SUBTRACT to key consumer.session.timeout.ms because its type is not LIST."],
      [[['errors.deadletterqueue.topic.name', SET, '__x']], INVALID_CONFIG, "errors.deadletterqueue.topic.name: DLQ topic name must not start with '__'"],
      [[['__proto__', SET, '1']], INVALID_CONFIG, 'Unknown group config name: __proto__'],
      [[['consumer.session.timeout.ms', SET, null]], INVALID_REQUEST, 'Null value not supported for : consumer.session.timeout.ms'],
      [[['consumer.session.timeout.ms', SET, '50000'], ['consumer.session.timeout.ms', SET, '51000']], INVALID_REQUEST, 'Error due to duplicate config keys'],
    ]
    for (const [ops, code, message] of cases) expect(await inc(c, 'g', ops), JSON.stringify(ops)).toEqual([code, message])
    expect(await alter(c, 'g', { 'consumer.session.timeout.ms': '1' })).toEqual([INVALID_CONFIG, 'consumer.session.timeout.ms must be in the range 45000 to 60000 inclusive.'])
    expect(await inc(c, '', [['share.session.timeout.ms', SET, '50000']])).toEqual([INVALID_REQUEST, 'Default group resources are not allowed.'])
    // Values Kafka accepts, each alone.
    for (const [name, value] of [['share.auto.offset.reset', 'by_duration:P1DT2H3.5S'], ['streams.assignor.name', 'sticky'], ['streams.rack.aware.assignment.tags', 'a,b'], ['errors.deadletterqueue.topic.name', 'dlq.x'], ['share.heartbeat.interval.ms', ' 6000 ']]) {
      expect(await inc(c, 'ok', [[name!, SET, value!]]), name).toEqual([0, null])
    }
    // validateOnly checks and changes nothing; every refusal above left the one override in place.
    expect(await inc(c, 'g', [['share.session.timeout.ms', SET, '55000']], true)).toEqual([0, null])
    const d = await entries(c, 'g')
    expect([...d.values()].filter((e) => e.configSource === DYNAMIC_GROUP).map((e) => [e.name, e.value])).toEqual([['share.session.timeout.ms', '50000']])
  })
})

describe('a config named __proto__', () => {
  it('is an unknown name for a topic as for a group, never a key of Object.prototype', async () => {
    const { c } = await start()
    const r = await c.request(ApiKeys.CreateTopics, 7, { topics: [{ name: 't', numPartitions: 1, replicationFactor: 1, assignments: [], configs: [] }], timeoutMs: 1000, validateOnly: false })
    expect(r.topics[0].errorCode).toBe(0)
    const t = await c.request(ApiKeys.IncrementalAlterConfigs, 1, { resources: [{ resourceType: 2, resourceName: 't', configs: [{ name: '__proto__', configOperation: SET, value: '1' }] }], validateOnly: false })
    expect([t.responses[0].errorCode, t.responses[0].errorMessage]).toEqual([INVALID_CONFIG, 'Unknown topic config name: __proto__'])
  })
})

describe('persistence and the Admin client', () => {
  it('group configs survive a restart; our Admin sets, reads and deletes them', async () => {
    const dataDir = tempDir()
    const first = await startBroker({ port: 0, dataDir, logLevel: 'error' })
    const admin = new Admin({ brokers: [`127.0.0.1:${first.port}`], clientId: 'group-config-test' })
    try {
      await admin.incrementalAlterConfigs([{ type: 'group', name: 'orders', configs: [{ name: 'consumer.heartbeat.interval.ms', value: '6000' }, { name: 'share.isolation.level', value: 'read_committed' }] }])
      // A group id that is also an Object.prototype key is stored as any other.
      await admin.incrementalAlterConfigs([{ type: 'group', name: '__proto__', configs: [{ name: 'share.delivery.count.limit', value: '3' }] }])
      await expect(admin.incrementalAlterConfigs([{ type: 'group', name: 'orders', configs: [{ name: 'consumer.heartbeat.interval.ms', value: '1' }] }])).rejects.toThrow(
        'consumer.heartbeat.interval.ms must be in the range 5000 to 15000 inclusive.',
      )
    } finally {
      await admin.close()
      await first.close()
    }
    expect(JSON.parse(readFileSync(join(dataDir, 'dynamic-configs.json'), 'utf8')).groups).toEqual({
      orders: { 'consumer.heartbeat.interval.ms': '6000', 'share.isolation.level': 'read_committed' },
      ['__proto__']: { 'share.delivery.count.limit': '3' },
    })

    const { b } = await start({ dataDir })
    const again = new Admin({ brokers: [`127.0.0.1:${b.port}`], clientId: 'group-config-test' })
    try {
      const [orders, proto] = await again.describeConfigs([{ type: 'group', name: 'orders' }, { type: 'group', name: '__proto__' }], { includeSynonyms: true })
      const byName = new Map(orders!.configs.map((e) => [e.name, e]))
      expect([byName.get('consumer.heartbeat.interval.ms')!.value, byName.get('consumer.heartbeat.interval.ms')!.source]).toEqual(['6000', DYNAMIC_GROUP])
      expect(byName.get('share.isolation.level')!.value).toBe('read_committed')
      expect(proto!.configs.find((e) => e.name === 'share.delivery.count.limit')!.value).toBe('3')
      await again.incrementalAlterConfigs([{ type: 'group', name: 'orders', configs: [{ name: 'consumer.heartbeat.interval.ms', op: 'delete' }, { name: 'share.isolation.level', op: 'delete' }] }])
      const [after] = await again.describeConfigs([{ type: 'group', name: 'orders' }])
      expect(after!.configs.filter((e) => e.source === DYNAMIC_GROUP)).toEqual([])
    } finally {
      await again.close()
    }
    // A group left with no configs has no entry in the file.
    expect(Object.keys(JSON.parse(readFileSync(join(dataDir, 'dynamic-configs.json'), 'utf8')).groups)).toEqual(['__proto__'])
  })
})
