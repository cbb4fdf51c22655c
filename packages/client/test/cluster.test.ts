import { createServer } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { FindCoordinator, Metadata, ProtocolError, ZERO_UUID } from '@tidelog/protocol'
import { Cluster, ClusterMetadata, mergeMetadata } from '@tidelog/client'
import { fakeCluster, type FakeRequest } from './fake-broker.js'

const cleanup: (() => Promise<unknown> | unknown)[] = []
afterEach(async () => {
  while (cleanup.length > 0) await cleanup.pop()!()
})

async function setup(n = 2, options: Partial<ConstructorParameters<typeof Cluster>[0]> = {}) {
  const fc = await fakeCluster(n)
  cleanup.push(() => fc.close())
  const cluster = new Cluster({ brokers: fc.brokers.map((b) => b.address), ...options })
  cleanup.push(() => cluster.close())
  return { ...fc, cluster }
}

const metadataRequests = (brokers: { received(k: number): FakeRequest[] }[]) => brokers.reduce((n, b) => n + b.received(Metadata.apiKey).length, 0)

async function deadPort(): Promise<number> {
  const s = createServer()
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r))
  const port = (s.address() as { port: number }).port
  await new Promise((r) => s.close(r))
  return port
}

describe('Cluster: bootstrap and metadata', () => {
  it('bootstraps past a dead address, caches brokers/controller/topics, and reuses the bootstrap socket', async () => {
    const fc = await fakeCluster(2)
    cleanup.push(() => fc.close())
    fc.state.topics = [{ name: 'events', topicId: 'AAAAAAAAAAAAAAAAAAAAAQ', leaders: [0, 1, 0], leaderEpochs: [3, 4, 5] }]
    fc.state.controllerId = 1
    const cluster = new Cluster({ brokers: [`127.0.0.1:${await deadPort()}`, fc.brokers[0]!.address] })
    cleanup.push(() => cluster.close())
    await cluster.refreshMetadata(['events'])
    const m = cluster.metadata
    expect([...m.brokers.keys()].sort()).toEqual([0, 1])
    expect(m.controllerId).toBe(1)
    expect(m.clusterId).toBe('fake-cluster')
    expect(m.partitionCount('events')).toBe(3)
    expect(m.partition('events', 1)).toMatchObject({ leader: 1, leaderEpoch: 4 })
    expect(m.leader('events', 2)?.port).toBe(fc.brokers[0]!.port)
    expect(m.topic('events')!.topicId).toBe('AAAAAAAAAAAAAAAAAAAAAQ')
    // The bootstrap connection now serves node 0: no second socket to it.
    await cluster.connectionTo(0)
    expect(fc.brokers[0]!.connections).toHaveLength(1)
    const req = fc.brokers[0]!.received(Metadata.apiKey)[0]!
    expect(req.header.apiVersion).toBe(12)
    expect(req.body.allowAutoTopicCreation).toBe(false)
  })

  it('shares one in-flight refresh between callers, and queues one more for new topics', async () => {
    const { brokers, cluster } = await setup(1)
    await cluster.connect()
    const before = metadataRequests(brokers)
    await Promise.all(Array.from({ length: 10 }, () => cluster.refreshMetadata()))
    expect(metadataRequests(brokers) - before).toBe(1)
    await Promise.all([cluster.refreshMetadata(), cluster.refreshMetadata(['a']), cluster.refreshMetadata(['b'])])
    expect(metadataRequests(brokers) - before).toBe(3)
    const last = brokers[0]!.received(Metadata.apiKey).at(-1)!
    expect(last.body.topics.map((t: { name: string }) => t.name).sort()).toEqual(['a', 'b'])
  })

  it('refreshes on stale-metadata errors, on connection loss, and every metadataMaxAgeMs', async () => {
    const { brokers, cluster } = await setup(2, { metadataMaxAgeMs: 300 })
    await cluster.connect()
    const count = () => metadataRequests(brokers)
    let n = count()
    expect(cluster.handleError(new ProtocolError(6))).toBe(true) // NOT_LEADER_OR_FOLLOWER
    expect(cluster.handleError(new ProtocolError(36))).toBe(false) // TOPIC_ALREADY_EXISTS
    await cluster.refreshMetadata()
    expect(count()).toBeGreaterThan(n)

    await cluster.connectionTo(1)
    n = count()
    brokers[1]!.dropConnections()
    await waitFor(() => count() > n)

    n = count()
    await new Promise((r) => setTimeout(r, 450))
    expect(count()).toBeGreaterThan(n)
  })

  it('follows a refresh in flight with exactly one more when updates are requested meanwhile', async () => {
    const { brokers, cluster } = await setup(1)
    await cluster.connect()
    const b = brokers[0]!
    let release: (() => void) | undefined
    b.on(Metadata.apiKey, async (req) => {
      if (release === undefined) await new Promise<void>((r) => (release = r))
      return b.metadataResponse(req)
    })
    const before = b.received(Metadata.apiKey).length
    const first = cluster.refreshMetadata()
    await waitFor(() => release !== undefined)
    for (let i = 0; i < 5; i++) cluster.requestMetadataUpdate()
    release!()
    await first
    await waitFor(() => b.received(Metadata.apiKey).length === before + 2)
    await new Promise((r) => setTimeout(r, 50))
    expect(b.received(Metadata.apiKey).length).toBe(before + 2)
  })

  it('falls back to the bootstrap addresses when no advertised broker answers (rebootstrap)', async () => {
    const { brokers, cluster } = await setup(1)
    const b = brokers[0]!
    const dead = await deadPort()
    b.on(Metadata.apiKey, () => ({ brokers: [{ nodeId: 5, host: '127.0.0.1', port: dead, rack: null }], clusterId: 'c', controllerId: 5, topics: [] }))
    await cluster.connect()
    expect([...cluster.metadata.brokers.keys()]).toEqual([5])
    const conn = await cluster.anyConnection()
    expect(conn.port).toBe(b.port)
  })

  it('keeps a partition whose leader epoch went backwards (stale broker, KIP-320)', () => {
    const res = (epoch: number, leader: number) => ({
      brokers: [{ nodeId: 0, host: 'a', port: 1 }, { nodeId: 1, host: 'b', port: 2 }],
      controllerId: 0,
      clusterId: 'c',
      topics: [{ errorCode: 0, name: 't', topicId: ZERO_UUID, partitions: [{ errorCode: 0, partitionIndex: 0, leaderId: leader, leaderEpoch: epoch, replicaNodes: [0, 1], isrNodes: [0, 1] }] }],
    })
    const m1 = mergeMetadata(ClusterMetadata.empty(), res(5, 1), false, 1).metadata
    const m2 = mergeMetadata(m1, res(4, 0), false, 2).metadata
    expect(m2.partition('t', 0)).toMatchObject({ leader: 1, leaderEpoch: 5 })
    const m3 = mergeMetadata(m2, res(6, 0), false, 3).metadata
    expect(m3.partition('t', 0)).toMatchObject({ leader: 0, leaderEpoch: 6 })
    const gone = mergeMetadata(m3, { ...res(6, 0), topics: [{ errorCode: 3, name: 't', partitions: [] }] }, false, 4)
    expect(gone.metadata.topic('t')).toBeUndefined()
    expect(gone.topicErrors.get('t')).toBe(3)
  })
})

describe('Cluster: coordinators', () => {
  it('batches FindCoordinator v4 keys and retries COORDINATOR_NOT_AVAILABLE with backoff', async () => {
    const { brokers, cluster } = await setup(2, { retryBackoffMs: 10, retryBackoffMaxMs: 20 })
    let round = 0
    for (const b of brokers) {
      b.on(FindCoordinator.apiKey, (req) => {
        round++
        return {
          throttleTimeMs: 0,
          coordinators: req.body.coordinatorKeys.map((key: string) => {
            const notYet = key === 'g2' && round === 1
            return { key, nodeId: notYet ? -1 : 1, host: notYet ? '' : '127.0.0.1', port: notYet ? -1 : brokers[1]!.port, errorCode: notYet ? 15 : key === 'denied' ? 30 : 0, errorMessage: null }
          }),
        }
      })
    }
    await cluster.connect()
    const found = await cluster.findCoordinators(['g1', 'g2', 'denied'])
    expect(found.get('g1')).toMatchObject({ nodeId: 1 })
    expect(found.get('g2')).toMatchObject({ nodeId: 1 })
    expect(found.get('denied')).toBeInstanceOf(ProtocolError)
    expect((found.get('denied') as ProtocolError).type).toBe('GROUP_AUTHORIZATION_FAILED')
    expect((found.get('denied') as ProtocolError).groupId).toBe('denied')
    const reqs = brokers.flatMap((b) => b.received(FindCoordinator.apiKey))
    expect(reqs.map((r) => r.body.coordinatorKeys)).toEqual([['g1', 'g2', 'denied'], ['g2']])
    // Cached until invalidated.
    await cluster.findCoordinator('g1')
    expect(brokers.flatMap((b) => b.received(FindCoordinator.apiKey))).toHaveLength(2)
    cluster.invalidateCoordinator('g1')
    await cluster.findCoordinator('g1')
    expect(brokers.flatMap((b) => b.received(FindCoordinator.apiKey))).toHaveLength(3)
  })

  it('asks one key per request of brokers without FindCoordinator v4', async () => {
    const { brokers, cluster } = await setup(1)
    const b = brokers[0]!
    b.apiVersions = b.apiVersions.map((v) => (v.apiKey === FindCoordinator.apiKey ? { ...v, maxVersion: 3 } : v))
    b.on(FindCoordinator.apiKey, (req) => ({ throttleTimeMs: 0, errorCode: 0, errorMessage: null, nodeId: 0, host: '127.0.0.1', port: b.port }))
    const found = await cluster.findCoordinators(['a', 'b'], 'transaction')
    expect(found.get('a')).toMatchObject({ nodeId: 0 })
    expect(b.received(FindCoordinator.apiKey).map((r) => [r.header.apiVersion, r.body.key, r.body.keyType])).toEqual([
      [3, 'a', 1],
      [3, 'b', 1],
    ])
  })

  it('gives up with the last coordinator error at the deadline', async () => {
    const { brokers, cluster } = await setup(1, { retryBackoffMs: 20, retryBackoffMaxMs: 40 })
    brokers[0]!.on(FindCoordinator.apiKey, (req) => ({
      coordinators: req.body.coordinatorKeys.map((key: string) => ({ key, nodeId: -1, host: '', port: -1, errorCode: 14, errorMessage: 'loading' })),
    }))
    const started = performance.now()
    const err = await cluster.findCoordinator('g', 'group', 300).catch((e) => e)
    expect(err).toBeInstanceOf(ProtocolError)
    expect(err.type).toBe('COORDINATOR_LOAD_IN_PROGRESS')
    expect(err.serverMessage).toBe('loading')
    expect(performance.now() - started).toBeLessThan(1000)
    expect(brokers[0]!.received(FindCoordinator.apiKey).length).toBeGreaterThan(2)
  })
})

async function waitFor(cond: () => boolean, timeoutMs = 3000): Promise<void> {
  const end = performance.now() + timeoutMs
  while (!cond()) {
    if (performance.now() > end) throw new Error('condition not met in time')
    await new Promise((r) => setTimeout(r, 10))
  }
}
