/**
 * Kafka's create.topic.policy.class.name and alter.config.policy.class.name on the Node broker:
 * policy modules written to a temp dir, loaded at startup, consulted over a real socket by
 * CreateTopics (validate_only too), AlterConfigs and IncrementalAlterConfigs, as KRaft's
 * controller consults them; a refusal is POLICY_VIOLATION with the policy's message and
 * changes nothing. Driven through our Admin client, with raw requests where the exact
 * answer matters.
 */
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { ApiKeys, ErrorCodes } from '@tidelog/protocol'
import { Admin, AdminError } from '@tidelog/client'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { type Broker, PolicyLoadError, startBroker } from '../src/index.js'
import { RawClient } from './helpers/raw-client.js'
import { tempDir } from './helpers/tmp.js'

type Calls = { create: any[]; alter: any[]; closed: string[]; configured: number[] }
const calls = (): Calls => (globalThis as any).__tidelogPolicyCalls

// A class export, refusing with an error named PolicyViolationError (no import of this package needed).
const CREATE_POLICY = `
class PolicyViolationError extends Error { constructor(m) { super(m); this.name = 'PolicyViolationError' } }
export default class NoBigTopics {
  configure(config) { globalThis.__tidelogPolicyCalls.configured.push(config.nodeId) }
  async validate(md) {
    globalThis.__tidelogPolicyCalls.create.push({ ...md, replicasAssignments: md.replicasAssignments && [...md.replicasAssignments] })
    await new Promise((r) => setTimeout(r, 5))
    if (md.topic === 'buggy') throw new TypeError('policy bug')
    if ((md.numPartitions ?? md.replicasAssignments.size) > 3) throw new PolicyViolationError('Topic ' + md.topic + ' may have at most 3 partitions')
  }
  close() { globalThis.__tidelogPolicyCalls.closed.push('create') }
}
`
// An object export.
const ALTER_POLICY = `
export default {
  validate(md) {
    globalThis.__tidelogPolicyCalls.alter.push(md)
    const r = md.configs['retention.ms']
    if (r !== undefined && r !== null && Number(r) < 60000) {
      const e = new Error('retention.ms below one minute is not allowed for ' + md.resource.type + ' ' + md.resource.name)
      e.name = 'PolicyViolationError'
      throw e
    }
  },
  close() { globalThis.__tidelogPolicyCalls.closed.push('alter') },
}
`

let broker: Broker | undefined
let client: RawClient | undefined
let admin: Admin | undefined
beforeEach(() => {
  ;(globalThis as any).__tidelogPolicyCalls = { create: [], alter: [], closed: [], configured: [] } satisfies Calls
})
afterEach(async () => {
  await admin?.close()
  client?.close()
  await broker?.close()
  ;[admin, client, broker] = [undefined, undefined, undefined]
})

async function start() {
  const dir = tempDir()
  writeFileSync(join(dir, 'create-policy.mjs'), CREATE_POLICY)
  writeFileSync(join(dir, 'alter-policy.mjs'), ALTER_POLICY)
  broker = await startBroker({
    port: 0,
    dataDir: join(dir, 'data'),
    logLevel: 'error',
    createTopicPolicyClassName: join(dir, 'create-policy.mjs'),
    alterConfigPolicyClassName: join(dir, 'alter-policy.mjs'),
  })
  client = await RawClient.connect(broker.port)
  admin = new Admin({ brokers: [`127.0.0.1:${broker.port}`], clientId: 'policy-test' })
  return { broker, client, admin }
}

const refusal = async (p: Promise<unknown>) => {
  const err = await p.then(() => undefined, (e: unknown) => e)
  expect(err).toBeInstanceOf(AdminError)
  return (err as AdminError).errors.map((e: any) => [e.type, e.serverMessage])
}

describe('create.topic.policy', () => {
  it('sees Kafka\'s RequestMetadata and refuses with POLICY_VIOLATION and its message, validate_only included', async () => {
    const { client, admin } = await start()
    expect(calls().configured).toEqual([1])
    await admin.createTopics([{ name: 'small', partitions: 2, replicationFactor: 1, configs: { 'cleanup.policy': 'compact' } }])
    expect(calls().create).toEqual([{ topic: 'small', numPartitions: 2, replicationFactor: 1, replicasAssignments: null, configs: { 'cleanup.policy': 'compact' } }])

    expect(await refusal(admin.createTopics([{ name: 'big', partitions: 4, replicationFactor: 1 }]))).toEqual([['POLICY_VIOLATION', 'Topic big may have at most 3 partitions']])
    expect(await refusal(admin.createTopics([{ name: 'big', partitions: 4, replicationFactor: 1 }], { validateOnly: true }))).toEqual([['POLICY_VIOLATION', 'Topic big may have at most 3 partitions']])

    // Manual assignments: no count or factor, the assignments instead; -1 partitions: the broker default.
    const r = await client.request(ApiKeys.CreateTopics, 7, {
      topics: [
        { name: 'assigned', numPartitions: -1, replicationFactor: -1, assignments: [0, 1, 2, 3].map((p) => ({ partitionIndex: p, brokerIds: [1] })), configs: [] },
        { name: 'defaulted', numPartitions: -1, replicationFactor: -1, assignments: [], configs: [] },
        { name: 'buggy', numPartitions: 1, replicationFactor: 1, assignments: [], configs: [] },
      ],
      timeoutMs: 5000,
      validateOnly: false,
    })
    expect(r.topics.map((t: any) => [t.name, t.errorCode, t.errorMessage])).toEqual([
      ['assigned', ErrorCodes.POLICY_VIOLATION, 'Topic assigned may have at most 3 partitions'],
      ['defaulted', ErrorCodes.NONE, null],
      // A policy that fails otherwise is a bug of its own: that topic is refused, the broker goes on.
      ['buggy', ErrorCodes.UNKNOWN_SERVER_ERROR, null],
    ])
    expect(calls().create.slice(-3).map((c) => [c.topic, c.numPartitions, c.replicationFactor, c.replicasAssignments])).toEqual([
      ['assigned', null, null, [[0, [1]], [1, [1]], [2, [1]], [3, [1]]]],
      ['defaulted', 1, 1, null],
      ['buggy', 1, 1, null],
    ])
    expect((await admin.listTopics()).sort()).toEqual(['defaulted', 'small'])
  })

  it('is not consulted by CreatePartitions, as in KRaft', async () => {
    const { admin } = await start()
    await admin.createTopics([{ name: 'grow', partitions: 1, replicationFactor: 1 }])
    await admin.createPartitions([{ topic: 'grow', count: 5 }])
    expect(calls().create.map((c) => c.topic)).toEqual(['grow'])
  })
})

describe('alter.config.policy', () => {
  it('sees the configs a change alters (null for a deleted one) and refuses with POLICY_VIOLATION, changing nothing', async () => {
    const { client, admin } = await start()
    // Creating a topic with configs is a config change to KRaft: the alter policy sees it too.
    expect(await refusal(admin.createTopics([{ name: 'short', partitions: 1, replicationFactor: 1, configs: { 'retention.ms': '1000' } }]))).toEqual([
      ['POLICY_VIOLATION', 'retention.ms below one minute is not allowed for TOPIC short'],
    ])
    expect(calls().create).toEqual([])
    await admin.createTopics([{ name: 't', partitions: 1, replicationFactor: 1 }])
    expect(calls().alter).toEqual([{ resource: { type: 'TOPIC', name: 'short' }, configs: { 'retention.ms': '1000' } }])

    await admin.incrementalAlterConfigs([{ type: 'topic', name: 't', configs: [{ name: 'retention.ms', value: '120000' }, { name: 'cleanup.policy', value: 'compact', op: 'append' }] }])
    await admin.incrementalAlterConfigs([{ type: 'topic', name: 't', configs: [{ name: 'cleanup.policy', op: 'delete' }] }])
    expect(calls().alter.slice(-2)).toEqual([
      { resource: { type: 'TOPIC', name: 't' }, configs: { 'retention.ms': '120000', 'cleanup.policy': 'delete,compact' } },
      { resource: { type: 'TOPIC', name: 't' }, configs: { 'cleanup.policy': null } },
    ])
    const bad = [{ type: 'topic' as const, name: 't', configs: [{ name: 'retention.ms', value: '5000' }] }]
    expect(await refusal(admin.incrementalAlterConfigs(bad))).toEqual([['POLICY_VIOLATION', 'retention.ms below one minute is not allowed for TOPIC t']])
    expect(await refusal(admin.incrementalAlterConfigs(bad, { validateOnly: true }))).toEqual([['POLICY_VIOLATION', 'retention.ms below one minute is not allowed for TOPIC t']])
    // AlterConfigs: the configs it sets, not the ones it implicitly removes.
    const legacy = await client.request(ApiKeys.AlterConfigs, 2, { resources: [{ resourceType: 2, resourceName: 't', configs: [{ name: 'retention.ms', value: '30000' }] }], validateOnly: false })
    expect([legacy.responses[0].errorCode, legacy.responses[0].errorMessage]).toEqual([ErrorCodes.POLICY_VIOLATION, 'retention.ms below one minute is not allowed for TOPIC t'])
    expect(calls().alter.at(-1)).toEqual({ resource: { type: 'TOPIC', name: 't' }, configs: { 'retention.ms': '30000' } })
    const [described] = await admin.describeConfigs([{ type: 'topic', name: 't', keys: ['retention.ms'] }])
    expect(described!.configs[0]!.value).toBe('120000')

    // Broker and group resources go through it too, as every resource the KRaft controller stores.
    await admin.incrementalAlterConfigs([{ type: 'broker', name: '1', configs: [{ name: 'log.retention.ms', value: '600000' }] }])
    await admin.incrementalAlterConfigs([{ type: 'group', name: 'g', configs: [{ name: 'consumer.session.timeout.ms', value: '50000' }] }])
    expect(calls().alter.slice(-2).map((c) => c.resource)).toEqual([{ type: 'BROKER', name: '1' }, { type: 'GROUP', name: 'g' }])
    expect(await refusal(admin.incrementalAlterConfigs([{ type: 'broker', name: '', configs: [{ name: 'retention.ms', value: '1' }] }]))).toEqual([
      ['POLICY_VIOLATION', 'retention.ms below one minute is not allowed for BROKER '],
    ])
  })
})

describe('loading', () => {
  it('both policies are closed at shutdown; a module that cannot be used stops startup with PolicyLoadError', async () => {
    await start()
    await broker!.close()
    broker = undefined
    expect(calls().closed).toEqual(['create', 'alter'])

    const dir = tempDir()
    await expect(startBroker({ port: 0, dataDir: join(dir, 'a'), logLevel: 'error', createTopicPolicyClassName: join(dir, 'missing.mjs') })).rejects.toThrow(PolicyLoadError)
    writeFileSync(join(dir, 'not-a-policy.mjs'), 'export default { check() {} }\n')
    await expect(startBroker({ port: 0, dataDir: join(dir, 'b'), logLevel: 'error', alterConfigPolicyClassName: join(dir, 'not-a-policy.mjs') })).rejects.toThrow(
      'alter.config.policy.class.name: the default export of',
    )
  })
})
