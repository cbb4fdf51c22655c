import { describe, expect, it } from 'vitest'
import { KafkaStreams, StreamsBuilder } from '@tidelog/streams'
import { assignTasks, type ClientInput } from '../src/runtime/assignment/task-assignor.js'
import { isCaughtUp, lagFor, LATEST_LAG } from '../src/runtime/assignment/task-movement.js'
import { decodeAssignmentInfo, encodeSubscriptionInfo } from '../src/runtime/assignment/codec.js'
import { streamsAssignor, type TaskLayout } from '../src/runtime/assignment/streams-assignor.js'
import { ProbingSchedule } from '../src/runtime/probing.js'

const tasks = (n: number, sub = 0) => Array.from({ length: n }, (_, p) => `${sub}_${p}`)
const client = (processId: string, prev: string[] = [], standby: string[] = [], sums: Record<string, bigint> = {}, threads = 1): ClientInput => ({
  processId,
  threads: Array.from({ length: threads }, (_, i) => ({ memberId: `${processId}-t${i}`, prevActive: new Set(i === 0 ? prev : []), prevStandby: new Set(i === 0 ? standby : []) })),
  offsetSums: new Map(Object.entries(sums)),
})
const ends = (list: string[], end: bigint) => new Map(list.map((t) => [t, end]))

function byClient(result: ReturnType<typeof assignTasks>, kind: 'active' | 'standby'): Map<string, string[]> {
  const out = new Map<string, string[]>()
  for (const [member, a] of result.threads) {
    const pid = member.split('-t')[0]!
    out.set(pid, [...(out.get(pid) ?? []), ...a[kind]].sort())
  }
  return out
}

describe('KIP-441 lags', () => {
  it('as Java\'s ClientState.lagFor: the running owner is LATEST, no local state lags by the whole changelog, a position past the end counts as nothing', () => {
    expect(lagFor({ ranActive: true, offsetSum: undefined, endOffsetSum: 900n })).toBe(LATEST_LAG)
    expect(lagFor({ ranActive: false, offsetSum: undefined, endOffsetSum: 900n })).toBe(900n)
    expect(lagFor({ ranActive: false, offsetSum: 850n, endOffsetSum: 900n })).toBe(50n)
    expect(lagFor({ ranActive: false, offsetSum: 950n, endOffsetSum: 900n })).toBe(900n)
    expect(isCaughtUp(LATEST_LAG, 0n)).toBe(true)
    expect(isCaughtUp(50n, 50n)).toBe(true)
    expect(isCaughtUp(51n, 50n)).toBe(false)
  })
})

describe('KIP-441 warm-up replicas (HighAvailabilityTaskAssignor rules)', () => {
  const stateful = new Set(tasks(2))
  const base = { tasks: tasks(2), stateful, numStandbyReplicas: 0, endOffsetSums: ends(tasks(2), 5000n), acceptableRecoveryLag: 100n }

  it('scaling out: the task stays on its caught-up owner and the new client gets a warm-up; a probing rebalance is needed', () => {
    const r = assignTasks({ ...base, clients: [client('a', ['0_0', '0_1'], [], { '0_0': 5000n, '0_1': 5000n }), client('b')] })
    expect(byClient(r, 'active')).toEqual(new Map([['a', ['0_0', '0_1']], ['b', []]]))
    expect(byClient(r, 'standby')).toEqual(new Map([['a', []], ['b', ['0_1']]]))
    expect(r.movements).toEqual([{ task: '0_1', destination: 'b', source: 'a', warmup: true }])
    expect(r.probingRebalanceNeeded).toBe(true)
  })

  it('while the warm-up is behind, nothing moves and the next probe is needed again', () => {
    const r = assignTasks({ ...base, clients: [client('a', ['0_0', '0_1'], [], { '0_0': 5000n, '0_1': 5000n }), client('b', [], ['0_1'], { '0_1': 1200n })] })
    expect(byClient(r, 'active').get('a')).toEqual(['0_0', '0_1'])
    expect(byClient(r, 'standby').get('b')).toEqual(['0_1'])
    expect(r.probingRebalanceNeeded).toBe(true)
  })

  it('once the warm-up is within acceptable.recovery.lag the task moves, and no further probe is needed', () => {
    const r = assignTasks({ ...base, clients: [client('a', ['0_0', '0_1'], [], { '0_0': 5000n, '0_1': 5000n }), client('b', [], ['0_1'], { '0_1': 4900n })] })
    expect(byClient(r, 'active')).toEqual(new Map([['a', ['0_0']], ['b', ['0_1']]]))
    expect(r.movements).toEqual([])
    expect(r.probingRebalanceNeeded).toBe(false)
  })

  it('a changelog shorter than acceptable.recovery.lag counts every client as caught up: the task moves at once', () => {
    const r = assignTasks({ ...base, endOffsetSums: ends(tasks(2), 80n), clients: [client('a', ['0_0', '0_1']), client('b')] })
    expect(byClient(r, 'active')).toEqual(new Map([['a', ['0_0']], ['b', ['0_1']]]))
    expect(r.probingRebalanceNeeded).toBe(false)
  })

  it('stateless tasks move at once; without known end offsets nothing is held back', () => {
    const r = assignTasks({ ...base, stateful: new Set(), clients: [client('a', ['0_0', '0_1']), client('b')] })
    expect(byClient(r, 'active').get('b')).toEqual(['0_1'])
    const { endOffsetSums: _, ...unknown } = base
    const u = assignTasks({ ...unknown, clients: [client('a', ['0_0', '0_1']), client('b')] })
    expect(byClient(u, 'active').get('b')).toEqual(['0_1'])
    expect(u.probingRebalanceNeeded).toBe(false)
  })

  it('max.warmup.replicas caps the warm-ups of one assignment; every held-back movement still asks for a probe', () => {
    const six = tasks(6)
    const r = assignTasks({ tasks: six, stateful: new Set(six), numStandbyReplicas: 0, endOffsetSums: ends(six, 5000n), acceptableRecoveryLag: 100n, maxWarmupReplicas: 2, clients: [client('a', six), client('b'), client('c')] })
    expect(byClient(r, 'active').get('a')).toEqual(six)
    expect(r.movements.length).toBe(4)
    expect(r.movements.filter((m) => m.warmup).length).toBe(2)
    expect([...byClient(r, 'standby').values()].flat().length).toBe(2)
    expect(r.probingRebalanceNeeded).toBe(true)
  })

  it('a caught-up standby is swapped with the active (the wanted client gets the standby, no warm-up is spent)', () => {
    // a ran 0_0..0_2; c keeps a caught-up standby of 0_2; b is new. Balance wants one task on each.
    const three = tasks(3)
    const r = assignTasks({
      tasks: three, stateful: new Set(three), numStandbyReplicas: 1, endOffsetSums: ends(three, 5000n), acceptableRecoveryLag: 100n, maxWarmupReplicas: 1,
      clients: [client('a', three, [], { '0_0': 5000n, '0_1': 5000n, '0_2': 5000n }), client('b'), client('c', [], ['0_2'], { '0_2': 4990n })],
    })
    const active = byClient(r, 'active')
    const standby = byClient(r, 'standby')
    for (const m of r.movements) {
      expect(m.warmup || standby.get(m.destination)!.includes(m.task)).toBe(true)
      expect(active.get(m.source)).toContain(m.task)
    }
    expect(active.get('c')).toContain('0_2')
    expect(active.get('b')).toEqual([])
  })

  it('invariants over many random groups: no active on a client behind while a caught-up one exists, warm-ups within the cap, every task once, no standby beside its active', () => {
    let seed = 7
    const rnd = (n: number) => ((seed = (seed * 1103515245 + 12345) & 0x7fffffff) % n)
    for (let round = 0; round < 300; round++) {
      const all = tasks(1 + rnd(8))
      const stateful = new Set(all.filter(() => rnd(3) > 0))
      const end = ends(all, BigInt(rnd(3000)))
      const clients = Array.from({ length: 1 + rnd(4) }, (_, i) => {
        const prev = all.filter(() => rnd(4) === 0)
        const sb = all.filter((t) => !prev.includes(t) && rnd(4) === 0)
        const sums: Record<string, bigint> = {}
        for (const t of [...prev, ...sb]) sums[t] = BigInt(rnd(3000))
        return client(`c${i}`, prev, sb, sums, 1 + rnd(2))
      })
      // Each task ran on one client at most.
      const seen = new Set<string>()
      for (const c of clients) for (const t of [...c.threads[0]!.prevActive]) if (seen.has(t)) (c.threads[0]!.prevActive as Set<string>).delete(t); else seen.add(t)
      const acceptable = BigInt(rnd(500))
      const maxWarmupReplicas = 1 + rnd(3)
      const r = assignTasks({ clients, tasks: all, stateful, numStandbyReplicas: rnd(2), endOffsetSums: end, acceptableRecoveryLag: acceptable, maxWarmupReplicas })
      const active = byClient(r, 'active')
      const standby = byClient(r, 'standby')
      expect([...active.values()].flat().sort()).toEqual([...all].sort())
      expect(r.movements.filter((m) => m.warmup).length).toBeLessThanOrEqual(maxWarmupReplicas)
      expect(r.probingRebalanceNeeded).toBe(r.movements.length > 0)
      for (const [pid, list] of active) for (const t of list) expect(standby.get(pid)).not.toContain(t)
      for (const t of stateful) {
        const owner = [...active].find(([, l]) => l.includes(t))![0]
        const lag = (c: ClientInput) => lagFor({ ranActive: c.threads.some((x) => x.prevActive.has(t)), offsetSum: c.offsetSums.get(t), endOffsetSum: end.get(t)! })
        const caughtUp = clients.filter((c) => isCaughtUp(lag(c), acceptable)).map((c) => c.processId)
        if (caughtUp.length > 0) expect(caughtUp).toContain(owner)
      }
    }
  })
})

describe('probing rebalances', () => {
  const layout: TaskLayout = {
    topicToSub: new Map([['in', 0]]),
    statefulSubs: new Set([0]),
    numStandbyReplicas: 0,
    changelogTopics: new Map([[0, ['app-counts-changelog']]]),
    acceptableRecoveryLag: 100n,
    maxWarmupReplicas: 2,
    probingRebalanceIntervalMs: 60_000,
  }
  const member = (processId: string, thread: number, prevActive: string[], sums: Record<string, string> = {}) => ({
    memberId: `${processId}-m${thread}`,
    groupInstanceId: null,
    topics: ['in'],
    userData: encodeSubscriptionInfo({ processId, endpoint: '', prevActive, prevStandby: [], offsetSums: sums, errorCode: 0 }),
    ownedPartitions: [],
    generationId: -1,
    rackId: null,
  })
  const leader = { subscriptionInfo: () => ({ processId: 'b', endpoint: '', prevActive: [], prevStandby: [], offsetSums: {}, errorCode: 0 }), onAssignmentInfo: () => {} }
  const members = [member('a', 0, ['0_0', '0_1'], { '0_0': '5000', '0_1': '5000' }), member('b', 1, []), member('b', 0, [])]
  const counts = new Map([['in', 2]])

  it('the leader sums changelog end offsets into lags and gives the next rebalance time to one thread of its own client only', async () => {
    const asked: string[] = []
    const lookups = {
      endOffsets: async (tps: readonly { topic: string; partition: number }[]) => {
        asked.push(...tps.map((tp) => `${tp.topic}:${tp.partition}`))
        return new Map(tps.map((tp) => [`${tp.topic}:${tp.partition}`, 5000n]))
      },
      now: () => 1_000_000,
    }
    const out = await streamsAssignor(layout, leader, undefined, lookups).assignWithUserData!({ members, partitionCounts: counts })
    expect(asked.sort()).toEqual(['app-counts-changelog:0', 'app-counts-changelog:1'])
    expect(out.partitions.get('a-m0')!.length).toBe(2)
    const infos = new Map([...out.userData].map(([m, u]) => [m, decodeAssignmentInfo(u)!]))
    expect([...infos.values()].flatMap((i) => i.standby)).toEqual(['0_1'])
    expect([...infos].filter(([, i]) => i.nextRebalanceMs !== undefined)).toEqual([['b-m0', expect.objectContaining({ nextRebalanceMs: 1_060_000 })]])
  })

  it('end offsets that cannot be looked up: tasks stay where they ran (Java\'s FallbackPriorTaskAssignor) and a probing rebalance retries', async () => {
    const lookups = { endOffsets: async () => Promise.reject(new Error('no leader')), now: () => 5 }
    const out = await streamsAssignor(layout, leader, undefined, lookups).assignWithUserData!({ members, partitionCounts: counts })
    // a ran both tasks and keeps them; b gets neither a task nor a warm-up this time.
    expect(out.partitions.get('a-m0')!.length).toBe(2)
    expect([...out.userData.values()].flatMap((u) => decodeAssignmentInfo(u)!.standby)).toEqual([])
    expect([...out.userData.values()].map((u) => decodeAssignmentInfo(u)!.nextRebalanceMs).filter((x) => x !== undefined)).toEqual([60_005])
  })

  it('the member-side schedule: set by an assignment, fires once when due, cleared by an assignment without a time', () => {
    const p = new ProbingSchedule()
    expect(p.due(Number.MAX_SAFE_INTEGER)).toBe(false)
    p.onAssignment(100)
    expect(p.machine.state).toBe('SCHEDULED')
    expect(p.due(99)).toBe(false)
    expect(p.due(100)).toBe(true)
    expect(p.due(200)).toBe(false)
    expect(p.triggered).toBe(1)
    p.onAssignment(300)
    p.onAssignment(undefined)
    expect(p.machine.state).toBe('IDLE')
    expect(p.due(400)).toBe(false)
  })

  it('validates the three configs as Java\'s StreamsConfig, with its messages', () => {
    const b = new StreamsBuilder()
    b.stream('x').to('y')
    const make = (extra: object) => new KafkaStreams(b.build(), { 'application.id': 'w', 'bootstrap.servers': 'localhost:1', ...extra })
    expect(() => make({ 'probing.rebalance.interval.ms': 1000 })).toThrow('Invalid value 1000 for configuration probing.rebalance.interval.ms: Value must be at least 60000')
    expect(() => make({ 'max.warmup.replicas': 0 })).toThrow('Invalid value 0 for configuration max.warmup.replicas: Value must be at least 1')
    expect(() => make({ 'acceptable.recovery.lag': -1 })).toThrow('Invalid value -1 for configuration acceptable.recovery.lag: Value must be at least 0')
    expect(() => make({ 'acceptable.recovery.lag': 0, 'max.warmup.replicas': 1, 'probing.rebalance.interval.ms': 60_000 })).not.toThrow()
  })
})
