/**
 * The group member against a scripted coordinator: each request is answered by the test, so
 * every branch of the classic protocol (MEMBER_ID_REQUIRED, coordinator moves, heartbeat errors,
 * fencing, the cooperative second phase) is driven deliberately.
 */
import { ExponentialBackoff, silentLogger, type Cluster } from '@tidelog/client'
import {
  ErrorCodes,
  decodeConsumerProtocolSubscription,
  encodeConsumerProtocolAssignment,
  encodeConsumerProtocolSubscription,
  type ApiDefinition,
} from '@tidelog/protocol'
import { afterEach, describe, expect, it } from 'vitest'
import { GroupMembershipError } from '../src/errors.js'
import { resolveAssignors, type Assignor } from '../src/group/assignors/index.js'
import type { CoordinatorLink } from '../src/group/coordinator-link.js'
import { ConsumerCoordinator } from '../src/group/coordinator.js'
import { resolveOptions } from '../src/options.js'
import type { GroupGeneration, TopicPartition } from '../src/types.js'

type Answer = (body: any) => any

const VERSIONS: Record<string, number> = { JoinGroup: 9, SyncGroup: 5, Heartbeat: 4, LeaveGroup: 5 }

class ScriptedLink {
  readonly groupId = 'g'
  finds = 0
  unknowns = 0
  readonly calls: { api: string; body: any }[] = []
  readonly queues = new Map<string, Answer[]>()
  readonly fallback = new Map<string, Answer>()

  script(api: string, ...answers: Answer[]): void {
    this.queues.set(api, [...(this.queues.get(api) ?? []), ...answers])
  }

  async find() {
    this.finds++
    return { nodeId: 1, host: '127.0.0.1', port: 1, rack: null }
  }

  markUnknown(): void {
    this.unknowns++
  }

  moved(code: number): boolean {
    if (code !== ErrorCodes.NOT_COORDINATOR && code !== ErrorCodes.COORDINATOR_NOT_AVAILABLE) return false
    this.markUnknown()
    return true
  }

  async request(api: ApiDefinition<any, any>, body: any): Promise<any> {
    const b = typeof body === 'function' ? body(VERSIONS[api.name] ?? api.maxVersion) : body
    this.calls.push({ api: api.name, body: b })
    const next = this.queues.get(api.name)?.shift() ?? this.fallback.get(api.name)
    if (next === undefined) return new Promise(() => {}) // never answered: parked like a JoinGroup
    return next(b)
  }

  bodies(api: string): any[] {
    return this.calls.filter((c) => c.api === api).map((c) => c.body)
  }
}

const tp = (partition: number): TopicPartition => ({ topic: 't', partition })
const key = (l: TopicPartition[]) => l.map((x) => x.partition).sort()

const sub = (owned: number[] = []) =>
  encodeConsumerProtocolSubscription({ topics: ['t'], userData: null, ownedPartitions: owned.length > 0 ? [{ topic: 't', partitions: owned }] : [], generationId: -1, rackId: null }, 3)

const joined = (memberId: string, generationId: number, leader: string, members: { memberId: string; metadata: Uint8Array }[] = [], protocolName = 'range') => () => ({
  errorCode: 0,
  generationId,
  protocolType: 'consumer',
  protocolName,
  leader,
  skipAssignment: false,
  memberId,
  members: members.map((m) => ({ ...m, groupInstanceId: null })),
})

const assignment = (partitions: number[]) => () => ({
  errorCode: 0,
  protocolType: 'consumer',
  protocolName: 'range',
  assignment: encodeConsumerProtocolAssignment({ assignedPartitions: [{ topic: 't', partitions }], userData: null }, 3),
})

const coordinators: ConsumerCoordinator[] = []
afterEach(() => {
  for (const c of coordinators.splice(0)) c.dispose()
})

function setup(opts: { assignors?: (string | Assignor)[]; groupInstanceId?: string } = {}) {
  const link = new ScriptedLink()
  link.fallback.set('Heartbeat', () => ({ errorCode: 0 }))
  link.fallback.set('LeaveGroup', () => ({ errorCode: 0, members: [] }))
  const owned = new Map<number, TopicPartition>()
  const events: string[] = []
  const fatal: Error[] = []
  const cluster = { logger: silentLogger, retryBackoff: new ExponentialBackoff(1, 5) } as unknown as Cluster
  const options = resolveOptions({ brokers: 'x:1', groupId: 'g', heartbeatIntervalMs: 15, sessionTimeoutMs: 5000, groupInstanceId: opts.groupInstanceId })
  const gen = (g: GroupGeneration) => `gen${g.generationId}`
  const c = new ConsumerCoordinator(cluster, link as unknown as CoordinatorLink, options, resolveAssignors((opts.assignors ?? ['range']) as never), {
    topics: () => ['t'],
    owned: () => [...owned.values()],
    revoke: async (p, g) => {
      for (const x of p) owned.delete(x.partition)
      events.push(`revoke ${key(p)} ${gen(g)}`)
    },
    lose: async (p, g) => {
      for (const x of p) owned.delete(x.partition)
      events.push(`lose ${key(p)} ${gen(g)}`)
    },
    assign: async (p, g) => {
      for (const x of p) owned.set(x.partition, x)
      events.push(`assign ${key(p)} ${gen(g)}`)
    },
    partitionCounts: async () => new Map([['t', 4]]),
    pollIdleMs: () => 0,
    onFatal: (e) => void fatal.push(e),
  })
  coordinators.push(c)
  return { c, link, owned, events, fatal }
}

const until = async (cond: () => boolean, what: string) => {
  const end = Date.now() + 5000
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 5))
  }
}

describe('ConsumerCoordinator', () => {
  it('rejoins at once with the member id MEMBER_ID_REQUIRED hands out, leads, assigns, syncs', async () => {
    const { c, link, events } = setup()
    link.script('JoinGroup', () => ({ ...joined('', -1, '')(), errorCode: ErrorCodes.MEMBER_ID_REQUIRED, memberId: 'm-1' }), joined('m-1', 1, 'm-1', [{ memberId: 'm-1', metadata: sub() }]))
    link.script('SyncGroup', (b) => ({ errorCode: 0, protocolType: 'consumer', protocolName: 'range', assignment: b.assignments[0].assignment }))
    c.start()
    await until(() => events.length === 1, 'the assignment')
    expect(events).toEqual(['assign 0,1,2,3 gen1'])
    const joins = link.bodies('JoinGroup')
    expect(joins.map((b) => b.memberId)).toEqual(['', 'm-1'])
    expect(joins[0].protocols.map((p: { name: string }) => p.name)).toEqual(['range'])
    expect(decodeConsumerProtocolSubscription(joins[0].protocols[0].metadata).topics).toEqual(['t'])
    const [sync] = link.bodies('SyncGroup')
    expect(sync.generationId).toBe(1)
    expect(sync.protocolName).toBe('range')
    expect(c.membership.state).toBe('stable')
    await until(() => link.bodies('Heartbeat').length > 1, 'heartbeats')
    expect(link.bodies('Heartbeat')[0]).toMatchObject({ generationId: 1, memberId: 'm-1' })
  })

  it('finds the coordinator again after NOT_COORDINATOR and COORDINATOR_NOT_AVAILABLE', async () => {
    const { c, link, events } = setup()
    link.script(
      'JoinGroup',
      () => ({ ...joined('', -1, '')(), errorCode: ErrorCodes.NOT_COORDINATOR }),
      () => ({ ...joined('', -1, '')(), errorCode: ErrorCodes.COORDINATOR_NOT_AVAILABLE }),
      joined('m-1', 1, 'other'),
    )
    link.script('SyncGroup', () => ({ errorCode: ErrorCodes.NOT_COORDINATOR, assignment: new Uint8Array() }), assignment([1, 2]))
    link.script('JoinGroup', joined('m-1', 2, 'other'))
    c.start()
    await until(() => events.length === 1, 'the assignment')
    expect(events).toEqual(['assign 1,2 gen2'])
    expect(link.unknowns).toBe(3)
    expect(link.finds).toBeGreaterThanOrEqual(4)
  })

  it('heartbeat REBALANCE_IN_PROGRESS: an eager member revokes everything, then rejoins with its member id', async () => {
    const { c, link, events } = setup()
    link.script('JoinGroup', joined('m-1', 1, 'x'), joined('m-1', 2, 'x'))
    link.script('SyncGroup', assignment([0, 1]), assignment([1, 2]))
    link.script('Heartbeat', () => ({ errorCode: 0 }), () => ({ errorCode: ErrorCodes.REBALANCE_IN_PROGRESS }))
    c.start()
    await until(() => events.length === 3, 'the second generation')
    expect(events).toEqual(['assign 0,1 gen1', 'revoke 0,1 gen1', 'assign 1,2 gen2'])
    expect(link.bodies('JoinGroup')[1].memberId).toBe('m-1')
  })

  it('heartbeat UNKNOWN_MEMBER_ID: the partitions are lost (not revoked) and the member joins anew', async () => {
    const { c, link, events } = setup()
    link.script('JoinGroup', joined('m-1', 1, 'x'), joined('m-2', 2, 'x'))
    link.script('SyncGroup', assignment([0, 1]), assignment([0, 1]))
    link.script('Heartbeat', () => ({ errorCode: ErrorCodes.UNKNOWN_MEMBER_ID }))
    c.start()
    await until(() => events.length === 3, 'the new membership')
    expect(events).toEqual(['assign 0,1 gen1', 'lose 0,1 gen-1', 'assign 0,1 gen2'])
    expect(link.bodies('JoinGroup')[1].memberId).toBe('')
  })

  it('FENCED_INSTANCE_ID ends the member for good', async () => {
    const { c, link, fatal } = setup({ groupInstanceId: 'static-1' })
    link.script('JoinGroup', joined('m-1', 1, 'x'))
    link.script('SyncGroup', assignment([0]))
    link.script('Heartbeat', () => ({ errorCode: ErrorCodes.FENCED_INSTANCE_ID }))
    c.start()
    await until(() => fatal.length === 1, 'the fatal error')
    expect(fatal[0]).toBeInstanceOf(GroupMembershipError)
    expect(c.membership.state).toBe('failed')
    expect(link.bodies('JoinGroup')[0].groupInstanceId).toBe('static-1')
  })

  it('cooperative: keeps what stays, revokes only what moved, and rejoins for the second phase', async () => {
    const { c, link, events } = setup({ assignors: ['cooperative-sticky'] })
    link.script('JoinGroup', joined('m-1', 1, 'x', [], 'cooperative-sticky'), joined('m-1', 2, 'x', [], 'cooperative-sticky'), joined('m-1', 3, 'x', [], 'cooperative-sticky'))
    link.script('SyncGroup', assignment([0, 1, 2, 3]), assignment([0, 1]), assignment([0, 1]))
    link.script('Heartbeat', () => ({ errorCode: 0 }), () => ({ errorCode: ErrorCodes.REBALANCE_IN_PROGRESS }))
    c.start()
    await until(() => events.length === 4, 'the second phase')
    expect(events).toEqual(['assign 0,1,2,3 gen1', 'revoke 2,3 gen2', 'assign  gen2', 'assign  gen3'])
    const joins = link.bodies('JoinGroup')
    // The rejoin after REBALANCE_IN_PROGRESS reports all four as owned; the second phase two.
    expect(decodeConsumerProtocolSubscription(joins[1].protocols[0].metadata).ownedPartitions).toEqual([{ topic: 't', partitions: [0, 1, 2, 3] }])
    expect(decodeConsumerProtocolSubscription(joins[2].protocols[0].metadata).ownedPartitions).toEqual([{ topic: 't', partitions: [0, 1] }])
    expect(decodeConsumerProtocolSubscription(joins[2].protocols[0].metadata).generationId).toBe(2)
  })

  it('leave() sends LeaveGroup for a dynamic member and forgets the generation', async () => {
    const { c, link, events } = setup()
    link.script('JoinGroup', joined('m-1', 1, 'x'))
    link.script('SyncGroup', assignment([0]))
    c.start()
    await until(() => events.length === 1, 'the assignment')
    c.stop()
    await c.leave('closing')
    expect(link.bodies('LeaveGroup')[0].members).toEqual([{ memberId: 'm-1', groupInstanceId: null, reason: 'closing' }])
    expect(c.membership.hasGeneration).toBe(false)
    expect(c.membership.state).toBe('unjoined')
  })

  it('runs a custom assignor as leader, with its own subscription user data', async () => {
    const seenByAssignor: { topics: string[]; userData: string | null }[] = []
    const everythingToTheLast: Assignor = {
      name: 'last-takes-all',
      subscriptionUserData: ({ generationId }) => Buffer.from(`gen=${generationId}`),
      assign({ members, partitionCounts }) {
        for (const m of members) seenByAssignor.push({ topics: m.topics, userData: m.userData === null ? null : Buffer.from(m.userData).toString() })
        const ids = members.map((m) => m.memberId).sort()
        const out = new Map<string, TopicPartition[]>(ids.map((id) => [id, []]))
        out.set(ids.at(-1)!, Array.from({ length: partitionCounts.get('t')! }, (_, p) => tp(p)))
        return out
      },
    }
    const { c, link, events } = setup({ assignors: [everythingToTheLast] })
    const other = encodeConsumerProtocolSubscription({ topics: ['t'], userData: Buffer.from('peer'), ownedPartitions: [], generationId: -1, rackId: null }, 1)
    link.script('JoinGroup', (b) => joined('m-1', 1, 'm-1', [{ memberId: 'm-1', metadata: b.protocols[0].metadata }, { memberId: 'm-2', metadata: other }], 'last-takes-all')())
    link.script('SyncGroup', (b) => ({ errorCode: 0, protocolType: 'consumer', protocolName: 'last-takes-all', assignment: b.assignments.find((a: { memberId: string }) => a.memberId === 'm-1').assignment }))
    c.start()
    await until(() => events.length === 1, 'the assignment')
    expect(link.bodies('JoinGroup')[0].protocols.map((p: { name: string }) => p.name)).toEqual(['last-takes-all'])
    expect(seenByAssignor).toEqual([
      { topics: ['t'], userData: 'gen=-1' },
      { topics: ['t'], userData: 'peer' },
    ])
    expect(events).toEqual(['assign  gen1'])
    const sync = link.bodies('SyncGroup')[0]
    // m-2 wrote subscription version 1: its assignment is answered in version 1 too.
    const forPeer = sync.assignments.find((a: { memberId: string }) => a.memberId === 'm-2').assignment as Uint8Array
    expect(Buffer.from(forPeer).readInt16BE(0)).toBe(1)
  })
})
