/**
 * ListConfigResources (74; KIP-1142) over a real socket, as Kafka 4.4's KafkaApis answers it:
 * v0 (ListClientMetricsResources) lists client-metrics resources only, v1 every supported type
 * in Kafka's order, an unknown type fails the whole request, and DESCRIBE_CONFIGS on the
 * cluster is required. @tidelog/client's Admin.listConfigResources() reads the same answer.
 */
import { ApiKeys, ErrorCodes as E, ProtocolError } from '@tidelog/protocol'
import { Admin } from '@tidelog/client'
import { describe, expect, it } from 'vitest'
import { connectTracked, createTopic, startTracked, trackOpened } from './helpers/opened.js'

const open = trackOpened()
const TOPIC = 2
const BROKER = 4
const BROKER_LOGGER = 8
const GROUP = 32

async function setGroupConfig(c: Awaited<ReturnType<typeof connectTracked>>, group: string) {
  const r = await c.request(ApiKeys.IncrementalAlterConfigs, 1, {
    resources: [{ resourceType: GROUP, resourceName: group, configs: [{ name: 'consumer.session.timeout.ms', configOperation: 0, value: '50000' }] }],
    validateOnly: false,
  })
  expect(r.responses[0].errorCode).toBe(E.NONE)
}

const list = async (c: Awaited<ReturnType<typeof connectTracked>>, version: number, resourceTypes?: number[]) =>
  c.request(ApiKeys.ListConfigResources, version, version >= 1 ? { resourceTypes: resourceTypes ?? [] } : {})

describe('ListConfigResources', () => {
  it('is advertised at v0-v1, as Kafka 4.4 serves it', async () => {
    const c = await connectTracked(open, await startTracked(open))
    const r = await c.request(ApiKeys.ApiVersions, 3, { clientSoftwareName: 'raw', clientSoftwareVersion: '1.0' })
    expect(r.apiKeys.find((k: { apiKey: number }) => k.apiKey === 74)).toMatchObject({ minVersion: 0, maxVersion: 1 })
  })

  it('v1 lists configured groups, the node as broker logger and broker, then every topic; a type filter narrows it', async () => {
    const b = await startTracked(open, { nodeId: 3 })
    const c = await connectTracked(open, b)
    await createTopic(c, 'orders', 1)
    await createTopic(c, 'payments', 2)
    await setGroupConfig(c, 'configured')
    const all = await list(c, 1)
    expect(all.errorCode).toBe(E.NONE)
    expect(all.configResources).toEqual([
      { resourceName: 'configured', resourceType: GROUP },
      { resourceName: '3', resourceType: BROKER_LOGGER },
      { resourceName: '3', resourceType: BROKER },
      { resourceName: 'orders', resourceType: TOPIC },
      { resourceName: 'payments', resourceType: TOPIC },
    ])
    expect((await list(c, 1, [TOPIC])).configResources.map((r: { resourceName: string }) => r.resourceName)).toEqual(['orders', 'payments'])
    expect((await list(c, 1, [GROUP, BROKER])).configResources).toEqual([
      { resourceName: 'configured', resourceType: GROUP },
      { resourceName: '3', resourceType: BROKER },
    ])
    // v0 is ListClientMetricsResources: no client-metrics resource exists here, and nothing else is listed.
    expect(await list(c, 0)).toEqual({ throttleTimeMs: 0, errorCode: E.NONE, configResources: [] })
  })

  it('a type the version does not list fails the whole request with UNSUPPORTED_VERSION, and the broker goes on', async () => {
    const c = await connectTracked(open, await startTracked(open))
    await createTopic(c, 'kept', 1)
    expect(await list(c, 1, [TOPIC, 3])).toEqual({ throttleTimeMs: 0, errorCode: E.UNSUPPORTED_VERSION, configResources: [] })
    expect((await list(c, 1, [TOPIC])).configResources).toEqual([{ resourceName: 'kept', resourceType: TOPIC }])
  })

  it('needs DESCRIBE_CONFIGS on the cluster: CLUSTER_AUTHORIZATION_FAILED and nothing listed otherwise', async () => {
    const b = await startTracked(open, { authorizerClassName: 'org.apache.kafka.metadata.authorizer.StandardAuthorizer' })
    const c = await connectTracked(open, b)
    expect(await list(c, 1)).toEqual({ throttleTimeMs: 0, errorCode: E.CLUSTER_AUTHORIZATION_FAILED, configResources: [] })
  })

  it('Admin.listConfigResources() gives Java\'s (type, name) pairs, and the broker\'s error as a typed error', async () => {
    const b = await startTracked(open)
    const c = await connectTracked(open, b)
    await createTopic(c, 'events', 1)
    await setGroupConfig(c, 'workers')
    const admin = new Admin({ brokers: [`127.0.0.1:${b.port}`] })
    try {
      expect(await admin.listConfigResources()).toEqual([
        { type: 'group', name: 'workers' },
        { type: 'broker-logger', name: String(b.nodeId) },
        { type: 'broker', name: String(b.nodeId) },
        { type: 'topic', name: 'events' },
      ])
      expect(await admin.listConfigResources(['topic', 'group'])).toEqual([
        { type: 'group', name: 'workers' },
        { type: 'topic', name: 'events' },
      ])
      expect(await admin.listConfigResources(['client-metrics'])).toEqual([])
      const err = await admin.listConfigResources([3]).catch((e: unknown) => e)
      expect(err).toBeInstanceOf(ProtocolError)
      expect((err as ProtocolError).code).toBe(E.UNSUPPORTED_VERSION)
    } finally {
      await admin.close()
    }
  })
})
