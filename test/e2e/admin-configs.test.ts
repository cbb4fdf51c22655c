/**
 * The Admin client's config and log-dir methods against the tidelog broker in-process,
 * over a real socket: describeConfigs sources and synonyms, alterConfigs /
 * incrementalAlterConfigs / replaceConfigs on topics and on the broker (this node and
 * the cluster default), typed per-resource errors, and describeLogDirs.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type Broker, startBroker } from '@tidelog/broker'
import { ProtocolError } from '@tidelog/protocol'
import { Admin, AdminError, ConfigSource } from '@tidelog/client'

let broker: Broker
let dataDir: string
let admin: Admin

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'tidelog-admin-configs-'))
  broker = await startBroker({ port: 0, dataDir, logLevel: 'error', nodeId: 3, retentionMs: 3_600_000 })
  admin = new Admin({ brokers: [`127.0.0.1:${broker.port}`], clientId: 'admin-configs' })
  await admin.connect()
  await admin.createTopics([{ name: 'cfg', partitions: 2 }])
})

afterAll(async () => {
  await admin?.close()
  await broker?.close()
  rmSync(dataDir, { recursive: true, force: true })
})

async function entry(type: 'topic' | 'broker', name: string, key: string) {
  const [r] = await admin.describeConfigs([{ type, name, keys: [key] }], { includeSynonyms: true })
  return r!.configs.find((c) => c.name === key)
}

async function failure(p: Promise<unknown>): Promise<ProtocolError> {
  const e = await p.then(() => undefined, (err: unknown) => err)
  expect(e).toBeInstanceOf(AdminError)
  const inner = (e as AdminError).errors[0]
  expect(inner).toBeInstanceOf(ProtocolError)
  return inner as ProtocolError
}

describe('Admin configs against the tidelog broker', () => {
  it('alterConfigs and incrementalAlterConfigs change single keys; describeConfigs reports each source in precedence order', async () => {
    await admin.incrementalAlterConfigs([{ type: 'topic', name: 'cfg', configs: [{ name: 'retention.ms', value: '120000' }] }])
    await admin.alterConfigs([{ type: 'broker', name: '', configs: [{ name: 'log.segment.bytes', value: '2097152' }] }])
    await admin.alterConfigs([{ type: 'broker', name: '3', configs: [{ name: 'log.retention.bytes', value: '5000000' }] }])

    const retention = await entry('topic', 'cfg', 'retention.ms')
    expect([retention!.value, retention!.source]).toEqual(['120000', ConfigSource.DYNAMIC_TOPIC_CONFIG])
    expect(retention!.synonyms).toEqual([
      { name: 'retention.ms', value: '120000', source: ConfigSource.DYNAMIC_TOPIC_CONFIG },
      { name: 'log.retention.ms', value: '3600000', source: ConfigSource.STATIC_BROKER_CONFIG },
      { name: 'log.retention.hours', value: '168', source: ConfigSource.DEFAULT_CONFIG },
    ])
    const segment = await entry('topic', 'cfg', 'segment.bytes')
    expect([segment!.value, segment!.source]).toEqual(['2097152', ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG])
    const bytes = await entry('broker', '3', 'log.retention.bytes')
    expect([bytes!.value, bytes!.source, bytes!.readOnly]).toEqual(['5000000', ConfigSource.DYNAMIC_BROKER_CONFIG, false])
    expect((await entry('broker', '3', 'num.partitions'))!.readOnly).toBe(true)

    await admin.incrementalAlterConfigs([{ type: 'broker', name: '3', configs: [{ name: 'log.retention.bytes', op: 'delete' }] }])
    expect((await entry('broker', '3', 'log.retention.bytes'))!.source).toBe(ConfigSource.DEFAULT_CONFIG)
  })

  it('replaceConfigs replaces the whole set; validateOnly changes nothing', async () => {
    await admin.createTopics([{ name: 'rep', partitions: 1, configs: { 'segment.ms': '60000', 'retention.ms': '1000' } }])
    await admin.replaceConfigs([{ type: 'topic', name: 'rep', configs: { 'flush.messages': '10' } }])
    const [r] = await admin.describeConfigs([{ type: 'topic', name: 'rep' }])
    expect(r!.configs.filter((c) => c.source === ConfigSource.DYNAMIC_TOPIC_CONFIG).map((c) => [c.name, c.value])).toEqual([['flush.messages', '10']])
    await admin.incrementalAlterConfigs([{ type: 'topic', name: 'rep', configs: [{ name: 'flush.messages', value: '20' }] }], { validateOnly: true })
    expect((await entry('topic', 'rep', 'flush.messages'))!.value).toBe('10')
  })

  // Per-resource refusals are final (as Java's AdminClient): they come back at once, not after the API timeout.
  it('refusals are typed errors with Kafka\'s codes and messages, per resource', async () => {
    let e = await failure(admin.incrementalAlterConfigs([{ type: 'topic', name: 'cfg', configs: [{ name: 'retention.ms', value: 'soon' }] }]))
    expect([e.type, e.message]).toEqual(['INVALID_CONFIG', expect.stringContaining('Invalid value soon for configuration retention.ms: Not a number of type LONG')])
    const t0 = Date.now()
    e = await failure(admin.incrementalAlterConfigs([{ type: 'topic', name: 'missing', configs: [{ name: 'retention.ms', value: '1' }] }]))
    expect(Date.now() - t0).toBeLessThan(10_000)
    expect(e.type).toBe('UNKNOWN_TOPIC_OR_PARTITION')
    e = await failure(admin.alterConfigs([{ type: 'broker', name: '3', configs: [{ name: 'num.partitions', value: '4' }] }]))
    expect([e.type, e.message]).toEqual(['INVALID_REQUEST', expect.stringContaining('Cannot update these configs dynamically: [num.partitions]')])
    // One bad resource does not stop the others.
    const mixed = await admin
      .incrementalAlterConfigs([
        { type: 'topic', name: 'cfg', configs: [{ name: 'segment.ms', value: '7200000' }] },
        { type: 'topic', name: 'rep', configs: [{ name: 'nope.nope', value: '1' }] },
      ])
      .then(() => undefined, (err: unknown) => err)
    expect(mixed).toBeInstanceOf(AdminError)
    expect((mixed as AdminError).errors.map((x) => (x as ProtocolError).type)).toEqual(['INVALID_CONFIG'])
    expect((await entry('topic', 'cfg', 'segment.ms'))!.value).toBe('7200000')
  })

  it('describeLogDirs lists the data directory, its partitions and the disk', async () => {
    const [node] = await admin.describeLogDirs()
    expect(node!.nodeId).toBe(3)
    const dir = node!.logDirs[0]!
    expect(dir.path).toBe(broker.dataDir)
    expect(dir.error).toBeNull()
    expect(dir.totalBytes).toBeGreaterThan(0n)
    expect(dir.usableBytes).toBeGreaterThan(0n)
    expect(dir.usableBytes).toBeLessThanOrEqual(dir.totalBytes)
    const cfg = dir.partitions.filter((p) => p.topic === 'cfg').map((p) => [p.partition, p.offsetLag, p.isFuture]).sort()
    expect(cfg).toEqual([[0, 0n, false], [1, 0n, false]])
    const only = await admin.describeLogDirs([3], { topics: [{ topic: 'cfg', partitions: [1, 9] }] })
    expect(only[0]!.logDirs[0]!.partitions.map((p) => [p.topic, p.partition])).toEqual([['cfg', 1]])
  })
})
