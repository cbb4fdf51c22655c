import { describe, expect, it } from 'vitest'
import { assignTasks, type ClientInput } from '../src/runtime/assignment/task-assignor.js'
import { AssignorError, decodeAssignmentInfo, decodeSubscriptionInfo, encodeSubscriptionInfo } from '../src/runtime/assignment/codec.js'
import { streamsAssignor } from '../src/runtime/assignment/streams-assignor.js'

const tasks = (n: number, sub = 0) => Array.from({ length: n }, (_, p) => `${sub}_${p}`)
const client = (processId: string, prev: string[][] = [[]], standby: string[][] = [], sums: Record<string, bigint> = {}): ClientInput => ({
  processId,
  threads: prev.map((p, i) => ({ memberId: `${processId}-t${i}`, prevActive: new Set(p), prevStandby: new Set(standby[i] ?? []) })),
  offsetSums: new Map(Object.entries(sums)),
})

function byClient(result: ReturnType<typeof assignTasks>, kind: 'active' | 'standby'): Map<string, string[]> {
  const out = new Map<string, string[]>()
  for (const [member, a] of result.threads) {
    const pid = member.split('-t')[0]!
    out.set(pid, [...(out.get(pid) ?? []), ...a[kind]].sort())
  }
  return out
}

describe('task assignor: sticky and balanced', () => {
  it('a joining client takes only what balance needs; the others keep their tasks', () => {
    const before = assignTasks({ clients: [client('a'), client('b')], tasks: tasks(6), stateful: new Set(), numStandbyReplicas: 0 })
    const a1 = byClient(before, 'active')
    expect(a1.get('a')!.length).toBe(3)
    expect(a1.get('b')!.length).toBe(3)
    const after = byClient(assignTasks({ clients: [client('a', [a1.get('a')!]), client('b', [a1.get('b')!]), client('c')], tasks: tasks(6), stateful: new Set(), numStandbyReplicas: 0 }), 'active')
    expect([...after.values()].map((l) => l.length)).toEqual([2, 2, 2])
    for (const pid of ['a', 'b']) for (const t of after.get(pid)!) expect(a1.get(pid)).toContain(t)
  })

  it('a leaving client: survivors keep everything and share its tasks', () => {
    const after = byClient(assignTasks({ clients: [client('a', [['0_0', '0_1']]), client('c', [['0_4', '0_5']])], tasks: tasks(6), stateful: new Set(), numStandbyReplicas: 0 }), 'active')
    expect(after.get('a')).toEqual(expect.arrayContaining(['0_0', '0_1']))
    expect(after.get('c')).toEqual(expect.arrayContaining(['0_4', '0_5']))
    expect(after.get('a')!.length + after.get('c')!.length).toBe(6)
    expect(after.get('a')!.length).toBe(3)
  })

  it('balances by thread count: a two-thread client gets twice the tasks, split over its threads', () => {
    const r = assignTasks({ clients: [client('a', [[], []]), client('b')], tasks: tasks(6), stateful: new Set(), numStandbyReplicas: 0 })
    expect(r.threads.get('a-t0')!.active.length).toBe(2)
    expect(r.threads.get('a-t1')!.active.length).toBe(2)
    expect(r.threads.get('b-t0')!.active.length).toBe(2)
  })

  it('the 4-task/3-client case reaches the floor-or-ceiling balance even though stickiness would keep 2/2/0', () => {
    const r = byClient(assignTasks({ clients: [client('a', [['0_0', '0_1']]), client('b', [['0_2', '0_3']]), client('c')], tasks: tasks(4), stateful: new Set(), numStandbyReplicas: 0 }), 'active')
    expect([...r.values()].map((l) => l.length).sort()).toEqual([1, 1, 2])
  })

  it('is deterministic and covers every task exactly once', () => {
    const input = { clients: [client('x', [[], []]), client('y'), client('z', [[]])], tasks: [...tasks(5, 0), ...tasks(3, 1)], stateful: new Set(tasks(5, 0)), numStandbyReplicas: 1 }
    const r1 = assignTasks(input)
    const r2 = assignTasks({ ...input, clients: [...input.clients].reverse() })
    expect([...r1.threads].sort()).toEqual([...r2.threads].sort())
    const all = [...r1.threads.values()].flatMap((a) => a.active).sort()
    expect(all).toEqual([...input.tasks].sort())
  })
})

describe('task assignor: standby replicas', () => {
  it('never puts a standby on the client of its active, and only stateful tasks get one', () => {
    const r = assignTasks({ clients: [client('a'), client('b'), client('c')], tasks: [...tasks(6, 0), ...tasks(6, 1)], stateful: new Set(tasks(6, 0)), numStandbyReplicas: 2 })
    const active = byClient(r, 'active')
    const standby = byClient(r, 'standby')
    expect(r.unassignedStandbys).toBe(0)
    expect([...standby.values()].flat().sort()).toEqual([...tasks(6, 0), ...tasks(6, 0)].sort())
    for (const pid of ['a', 'b', 'c']) for (const t of standby.get(pid)!) expect(active.get(pid)).not.toContain(t)
  })

  it('counts the replicas that found no client', () => {
    const r = assignTasks({ clients: [client('a')], tasks: tasks(3), stateful: new Set(tasks(3)), numStandbyReplicas: 1 })
    expect(r.unassignedStandbys).toBe(3)
  })

  it('a lost active goes to the client that kept its standby, and the standby is re-placed', () => {
    // a ran 0_0..0_2 with standbys of 0_3..0_5 on b; b ran 0_3..0_5; c kept standbys of 0_0..0_2. a is gone.
    const r = assignTasks({
      clients: [client('b', [['0_3', '0_4', '0_5']], [['0_0']]), client('c', [[]], [['0_1', '0_2', '0_3']]), client('d')],
      tasks: tasks(6),
      stateful: new Set(tasks(6)),
      numStandbyReplicas: 1,
    })
    const active = byClient(r, 'active')
    expect(active.get('c')).toEqual(expect.arrayContaining(['0_1', '0_2']))
    expect(active.get('b')).toEqual(expect.arrayContaining(['0_3', '0_4']))
  })

  it('an orphaned task goes to its standby even past that client\'s share (no restore from scratch), as Java\'s HA assignor', () => {
    // b ran 0_0 and 0_1 and keeps the standby of 0_2, whose owner is gone; c is new and holds nothing.
    const r = byClient(assignTasks({ clients: [client('b', [['0_0', '0_1']], [['0_2']]), client('c', [[]], [[]])], tasks: tasks(4), stateful: new Set(tasks(4)), numStandbyReplicas: 1 }), 'active')
    expect(r.get('b')).toEqual(['0_0', '0_1', '0_2'])
    expect(r.get('c')).toEqual(['0_3'])
  })

  it('prefers the client with the most changelog offsets (least lag) for a task nobody ran', () => {
    const r = byClient(assignTasks({ clients: [client('a', [[]], [], { '0_0': 10n }), client('b', [[]], [], { '0_0': 900n })], tasks: tasks(2), stateful: new Set(tasks(2)), numStandbyReplicas: 0 }), 'active')
    expect(r.get('b')).toContain('0_0')
  })
})

describe('streams assignor: userData and SHUTDOWN_REQUESTED', () => {
  const layout = { topicToSub: new Map([['in', 0], ['app-rep', 1]]), statefulSubs: new Set([1]), numStandbyReplicas: 1, changelogTopics: new Map([[1, ['app-store-changelog']]]), acceptableRecoveryLag: 10_000n, maxWarmupReplicas: 2, probingRebalanceIntervalMs: 600_000 }
  const member = (processId: string, errorCode = 0) => ({
    memberId: `m-${processId}`,
    groupInstanceId: null,
    topics: ['in', 'app-rep'],
    userData: encodeSubscriptionInfo({ processId, endpoint: '', prevActive: [], prevStandby: [], offsetSums: {}, errorCode }),
    ownedPartitions: [],
    generationId: -1,
    rackId: null,
  })
  const self = { subscriptionInfo: () => ({ processId: 'p', endpoint: '', prevActive: [], prevStandby: [], offsetSums: {}, errorCode: 0 }), onAssignmentInfo: () => {} }
  const counts = new Map([['in', 2], ['app-rep', 2]])

  it('gives partitions of active tasks and standby tasks in userData', async () => {
    const out = await streamsAssignor(layout, self).assignWithUserData!({ members: [member('p1'), member('p2')], partitionCounts: counts })
    const parts = [...out.partitions.values()].flat().map((tp) => `${tp.topic}-${tp.partition}`).sort()
    expect(parts).toEqual(['app-rep-0', 'app-rep-1', 'in-0', 'in-1'])
    const standbys = [...out.userData.values()].flatMap((u) => decodeAssignmentInfo(u)!.standby).sort()
    expect(standbys).toEqual(['1_0', '1_1'])
  })

  it('one member asking for shutdown gives every member SHUTDOWN_REQUESTED and no partitions', async () => {
    const out = await streamsAssignor(layout, self).assignWithUserData!({ members: [member('p1'), member('p2', AssignorError.SHUTDOWN_REQUESTED)], partitionCounts: counts })
    expect([...out.partitions.values()].flat()).toEqual([])
    for (const u of out.userData.values()) expect(decodeAssignmentInfo(u)!.errorCode).toBe(AssignorError.SHUTDOWN_REQUESTED)
  })

  it('decodes version 1 userData (application.server only) and rejects garbage clearly', async () => {
    expect(decodeSubscriptionInfo(Buffer.concat([Buffer.from([1]), Buffer.from('h:1')]))!.endpoint).toBe('h:1')
    expect(() => decodeSubscriptionInfo(Buffer.from([2, 0x7b]))).toThrow(/unreadable subscription userData/)
    const out = await streamsAssignor(layout, self).assignWithUserData!({ members: [{ ...member('p1'), userData: Buffer.from([2, 0x7b]) }], partitionCounts: counts })
    expect([...out.partitions.values()].flat().length).toBe(4)
  })
})

describe('rack-aware standby placement (KIP-708, Java\'s ClientTagAwareStandbyTaskAssignor)', () => {
  const tagged = (pid: string, tags: Record<string, string>, prev: string[] = []): ClientInput => ({ ...client(pid, [prev]), tags: new Map(Object.entries(tags)) })

  it('a standby goes to a client in another zone than its active, even when a same-zone client is less loaded or warmer', () => {
    const six = tasks(6)
    const clients = [tagged('a1', { zone: 'eu-1a' }), tagged('a2', { zone: 'eu-1a' }), tagged('b1', { zone: 'eu-1b' }), tagged('b2', { zone: 'eu-1b' })]
    const r = assignTasks({ clients, tasks: six, stateful: new Set(six), numStandbyReplicas: 1, rackAwareAssignmentTags: ['zone'] })
    const zone = (pid: string) => clients.find((c) => c.processId === pid)!.tags!.get('zone')
    const active = byClient(r, 'active')
    const standby = byClient(r, 'standby')
    expect(r.unassignedStandbys).toBe(0)
    expect(r.rackUnawareStandbys).toBe(0)
    for (const t of six) {
      const owner = [...active].find(([, l]) => l.includes(t))![0]
      const holder = [...standby].find(([, l]) => l.includes(t))![0]
      expect(zone(holder)).not.toBe(zone(owner))
    }
    // Without the tags, the same group puts some standbys in the active's zone.
    const plain = assignTasks({ clients, tasks: six, stateful: new Set(six), numStandbyReplicas: 1 })
    const sameZone = six.filter((t) => zone([...byClient(plain, 'active')].find(([, l]) => l.includes(t))![0]) === zone([...byClient(plain, 'standby')].find(([, l]) => l.includes(t))![0]))
    expect(sameZone.length).toBeGreaterThan(0)
  })

  it('two replicas over zone and cluster: a tag whose values are all used stops counting, as in Java\'s example (2 clusters x 3 zones)', () => {
    const clients = [['c1', '1a', 'k1'], ['c2', '1b', 'k1'], ['c3', '1c', 'k1'], ['c4', '1a', 'k2'], ['c5', '1b', 'k2'], ['c6', '1c', 'k2']].map(([pid, zone, cluster]) => tagged(pid!, { zone: zone!, cluster: cluster! }))
    const six = tasks(6)
    const r = assignTasks({ clients, tasks: six, stateful: new Set(six), numStandbyReplicas: 2, rackAwareAssignmentTags: ['zone', 'cluster'] })
    const tagsOf = (pid: string) => clients.find((c) => c.processId === pid)!.tags!
    const active = byClient(r, 'active')
    const standby = byClient(r, 'standby')
    expect(r.rackUnawareStandbys).toBe(0)
    for (const t of six) {
      const owner = [...active].find(([, l]) => l.includes(t))![0]
      const holders = [...standby].filter(([, l]) => l.includes(t)).map(([pid]) => pid)
      expect(holders.length).toBe(2)
      // Three distinct zones among the active and its two replicas; the replicas cover both clusters' other one at least once.
      expect(new Set([owner, ...holders].map((p) => tagsOf(p).get('zone'))).size).toBe(3)
      expect(holders.some((p) => tagsOf(p).get('cluster') !== tagsOf(owner).get('cluster'))).toBe(true)
    }
  })

  it('a tag with a single value constrains nothing; a replica no client satisfies is still placed on the best client left, counted as rack-unaware', () => {
    const one = [tagged('a1', { zone: 'z' }), tagged('a2', { zone: 'z' })]
    const r1 = assignTasks({ clients: one, tasks: tasks(2), stateful: new Set(tasks(2)), numStandbyReplicas: 1, rackAwareAssignmentTags: ['zone'] })
    expect([r1.unassignedStandbys, r1.rackUnawareStandbys]).toEqual([0, 0])
    expect([...byClient(r1, 'standby').values()].flat().sort()).toEqual(tasks(2))
    // c1's replica must avoid zone 1a and cluster k1: no client does, so it falls back.
    const two = [tagged('c1', { zone: '1a', cluster: 'k1' }, ['0_0']), tagged('c2', { zone: '1a', cluster: 'k2' }), tagged('c3', { zone: '1b', cluster: 'k1' })]
    const r2 = assignTasks({ clients: two, tasks: tasks(1), stateful: new Set(tasks(1)), numStandbyReplicas: 1, rackAwareAssignmentTags: ['zone', 'cluster'] })
    expect(byClient(r2, 'active').get('c1')).toEqual(['0_0'])
    expect([r2.unassignedStandbys, r2.rackUnawareStandbys]).toEqual([0, 1])
    expect([...byClient(r2, 'standby').values()].flat()).toEqual(['0_0'])
  })

  it('the subscription carries client tags; the configs are validated with Java\'s messages', async () => {
    const { KafkaStreams, StreamsBuilder } = await import('@tidelog/streams')
    const info = decodeSubscriptionInfo(encodeSubscriptionInfo({ processId: 'p', endpoint: '', prevActive: [], prevStandby: [], offsetSums: {}, errorCode: 0, clientTags: { zone: 'eu-1a' } }))!
    expect(info.clientTags).toEqual({ zone: 'eu-1a' })
    const b = new StreamsBuilder()
    b.stream('x').to('y')
    const make = (extra: object) => new KafkaStreams(b.build(), { 'application.id': 'r', 'bootstrap.servers': 'localhost:1', ...extra })
    expect(() => make({ 'rack.aware.assignment.tags': 'zone' })).toThrow("Invalid value [zone] for configuration rack.aware.assignment.tags: Contains invalid value [zone] which doesn't have corresponding tag set via [client.tag.] prefix.")
    expect(() => make({ 'rack.aware.assignment.tags': 'zone,a,b,c,d,e' })).toThrow('Invalid value [zone, a, b, c, d, e] for configuration rack.aware.assignment.tags: exceeds maximum list size of [5].')
    expect(() => make({ 'client.tag.zoneeeeeeeeeeeeeeeeeeeeeeeeeeeeeee': 'eu-1' })).toThrow('Invalid value zoneeeeeeeeeeeeeeeeeeeeeeeeeeeeeee for configuration client.tag.zoneeeeeeeeeeeeeeeeeeeeeeeeeeeeeee: Tag key exceeds maximum length of 20.')
    expect(() => make({ 'client.tag.zone': 'e'.repeat(31) })).toThrow(`Invalid value ${'e'.repeat(31)} for configuration client.tag.zone: Tag value exceeds maximum length of 30.`)
    expect(() => make(Object.fromEntries(['a', 'b', 'c', 'd', 'e', 'f'].map((k) => [`client.tag.${k}`, '1'])))).toThrow('At most 5 client tags can be specified using client.tag. prefix.')
    expect(() => make({ 'rack.aware.assignment.tags': ['zone'], 'client.tag.zone': 'eu-1' })).not.toThrow()
  })
})
